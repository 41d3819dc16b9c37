//! EPU's I/O overlap (the EPU paper, Section III-B1): data blocks a user
//! read has just brought in are kept, so a scaling unit that needs them
//! (to move them, or to reconstruct parity) takes them from memory instead
//! of reading them again.
//!
//! Blocks are the code's packets, named by their place in the growth's old
//! layout (row, data index, packet). A block enters only from a user read
//! of an old-layout stripe that succeeded, taken while the read still holds
//! its stripe's shared lock (so no write to that stripe is in between); any
//! write to the stripe drops the blocks it touches when it finishes, also
//! under its lock. A window takes blocks only once no user request touches
//! its chunks and new ones wait, so what it takes is what the disks hold.
//! The buffer holds at most `capacity_packets`; the oldest go first.

use super::super::op::{Epoch, OpKind, OpTarget, Parent, StripeOp};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

/// (row, old data index, packet).
pub(in crate::array) type PacketKey = (u64, usize, usize);

pub(in crate::array) struct OverlapBuffer {
    packet_bytes: usize,
    capacity_packets: usize,
    /// Each block with the sequence number it entered under.
    packets: BTreeMap<PacketKey, (u64, Vec<u8>)>,
    /// Entry order, for eviction; an entry whose sequence number no longer
    /// matches its block's is stale and skipped.
    order: VecDeque<(u64, PacketKey)>,
    next_sequence: u64,
}

impl OverlapBuffer {
    pub fn new(packet_bytes: usize, capacity_bytes: u64) -> OverlapBuffer {
        assert!(packet_bytes > 0, "a packet has bytes");
        OverlapBuffer {
            packet_bytes,
            capacity_packets: (capacity_bytes / packet_bytes as u64) as usize,
            packets: BTreeMap::new(),
            order: VecDeque::new(),
            next_sequence: 0,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// A user read returned `bytes` for bytes `intra` of data index
    /// `column` of old row `row`: keep the whole packets among them.
    pub fn capture(&mut self, row: u64, column: usize, intra: Range<u64>, bytes: &[u8]) {
        assert_eq!(bytes.len() as u64, intra.end - intra.start);
        let p = self.packet_bytes as u64;
        for packet in intra.start.div_ceil(p)..intra.end / p {
            let at = (packet * p - intra.start) as usize;
            self.insert(
                (row, column, packet as usize),
                &bytes[at..at + self.packet_bytes],
            );
        }
    }

    fn insert(&mut self, key: PacketKey, bytes: &[u8]) {
        if self.capacity_packets == 0 {
            return;
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.packets.insert(key, (sequence, bytes.to_vec()));
        self.order.push_back((sequence, key));
        while self.packets.len() > self.capacity_packets {
            let (sequence, key) = self.order.pop_front().expect("an entry per block");
            if self.packets.get(&key).is_some_and(|(s, _)| *s == sequence) {
                self.packets.remove(&key);
            }
        }
        if self.order.len() > 2 * self.capacity_packets + 16 {
            let packets = &self.packets;
            self.order
                .retain(|(s, key)| packets.get(key).is_some_and(|(current, _)| current == s));
        }
    }

    /// A write changed bytes `intra` of data index `column` of old row
    /// `row`: its blocks are stale.
    pub fn forget(&mut self, row: u64, column: usize, intra: Range<u64>) {
        let p = self.packet_bytes as u64;
        for packet in intra.start / p..intra.end.div_ceil(p) {
            self.packets.remove(&(row, column, packet as usize));
        }
    }

    /// Every block of old row `row` is stale.
    pub fn forget_row(&mut self, row: u64) {
        let mut after = self.packets.split_off(&(row, 0, 0));
        let beyond = after.split_off(&(row + 1, 0, 0));
        self.packets.extend(beyond);
    }

    /// The block, if a user read brought it in and nothing wrote it since.
    pub fn get(&self, key: PacketKey) -> Option<&[u8]> {
        self.packets.get(&key).map(|(_, bytes)| bytes.as_slice())
    }

    /// Rows below `row` are scaled: their old places are gone.
    pub fn drop_rows_below(&mut self, row: u64) {
        self.packets = self.packets.split_off(&(row, 0, 0));
    }
}

impl super::super::Array {
    /// A stripe op finishes, still holding its stripe's lock: a user read
    /// of an old-layout stripe that succeeded leaves its blocks; a write
    /// drops those it changed (done or not).
    pub(in crate::array) fn overlap_note_op(&mut self, op: &StripeOp, succeeded: bool) {
        let old_stripe = OpTarget {
            epoch: Epoch::Old,
            stripe: op.stripe,
        };
        if op.lock_key != old_stripe.lock_key() {
            return;
        }
        let Some(buffer) = self.reshape.as_mut().and_then(|r| r.overlap.as_mut()) else {
            return;
        };
        match op.kind {
            OpKind::Read => {
                let Parent::User(id) = op.parent else {
                    return;
                };
                let Some(pending) = self.requests.get(&id) else {
                    return;
                };
                let (true, None, Some(read)) = (succeeded, &pending.error, &pending.read) else {
                    return;
                };
                for s in &op.segments {
                    let len = (s.intra.end - s.intra.start) as usize;
                    // Every segment of a successful read op put its piece.
                    let bytes = read.piece_at(s.user_offset).expect("the op's piece");
                    assert_eq!(bytes.len(), len, "a segment's piece has its length");
                    buffer.capture(op.stripe, s.data_index, s.intra.clone(), bytes);
                }
            }
            OpKind::Write | OpKind::Destage => {
                for s in &op.segments {
                    buffer.forget(op.stripe, s.data_index, s.intra.clone());
                }
            }
            // A repair may rewrite any chunk of the stripe.
            OpKind::Scrub { .. } | OpKind::Rebuild => buffer.forget_row(op.stripe),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_packets_enter_and_writes_drop_what_they_touch() {
        let mut buffer = OverlapBuffer::new(4, 1 << 10);
        let bytes: Vec<u8> = (0..10).collect();
        // Bytes 2..12 of a chunk: packets 1 (4..8) and 2 (8..12) are whole.
        buffer.capture(7, 1, 2..12, &bytes);
        assert_eq!(buffer.len(), 2);
        assert_eq!(buffer.get((7, 1, 1)), Some(&bytes[2..6]));
        assert_eq!(buffer.get((7, 1, 2)), Some(&bytes[6..10]));
        assert_eq!(buffer.get((7, 1, 0)), None);
        // One byte of packet 2 written: packet 2 goes, packet 1 stays.
        buffer.forget(7, 1, 11..12);
        assert_eq!(buffer.get((7, 1, 2)), None);
        assert!(buffer.get((7, 1, 1)).is_some());
        buffer.forget(7, 0, 0..100);
        assert!(buffer.get((7, 1, 1)).is_some(), "another column");
        buffer.capture(8, 0, 0..4, &bytes[..4]);
        buffer.capture(6, 0, 0..4, &bytes[..4]);
        buffer.forget_row(7);
        assert_eq!(buffer.len(), 2);
        assert!(buffer.get((7, 1, 1)).is_none());
        buffer.drop_rows_below(8);
        assert_eq!(buffer.len(), 1);
        assert!(buffer.get((8, 0, 0)).is_some());
    }

    #[test]
    fn the_oldest_blocks_go_first_and_the_buffer_stays_bounded() {
        let mut buffer = OverlapBuffer::new(4, 3 * 4);
        for row in 0..100u64 {
            buffer.capture(row, 0, 0..4, &[row as u8; 4]);
            // Re-reading an old block refreshes it.
            buffer.capture(0, 0, 0..4, &[0; 4]);
            assert!(buffer.len() <= 3);
            assert!(buffer.order.len() <= 2 * 3 + 16 + 1);
        }
        assert!(buffer.get((0, 0, 0)).is_some());
        assert_eq!(buffer.get((99, 0, 0)), Some(&[99u8; 4][..]));
        assert_eq!(buffer.get((97, 0, 0)), None);
        let mut off = OverlapBuffer::new(4, 0);
        off.capture(0, 0, 0..4, &[1; 4]);
        assert_eq!(off.len(), 0);
    }
}

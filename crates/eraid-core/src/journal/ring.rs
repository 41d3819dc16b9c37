//! Where records go in the circular log, and what is still needed. Records
//! are numbered by sequence number and laid end to end from the tail; one
//! that does not fit before the end of the journal starts again at the
//! log's start (the scan looks there when the next record is not where the
//! previous one ended). Retiring moves the tail past records whose writes
//! are durable on the members.

use super::format::JournalHeader;
use super::LOG_START_BYTES;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub seq: u64,
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct Ring {
    end_bytes: u64,
    tail_offset_bytes: u64,
    tail_seq: u64,
    head_offset_bytes: u64,
    next_seq: u64,
    /// Records from the tail to the head, oldest first.
    live: VecDeque<Placed>,
}

impl Ring {
    /// The log as the header's checkpoint and the records found after it
    /// (by `scan`) leave it: new records follow the last one found.
    pub fn resume(header: &JournalHeader, found: &[Placed]) -> Ring {
        let mut ring = Ring {
            end_bytes: header.size_bytes,
            tail_offset_bytes: header.tail_offset_bytes,
            tail_seq: header.tail_seq,
            head_offset_bytes: header.tail_offset_bytes,
            next_seq: header.tail_seq,
            live: VecDeque::new(),
        };
        for placed in found {
            assert_eq!(
                placed.seq, ring.next_seq,
                "scan returns consecutive records"
            );
            if ring.live.is_empty() {
                ring.tail_offset_bytes = placed.offset_bytes;
            }
            ring.live.push_back(*placed);
            ring.head_offset_bytes = placed.offset_bytes + placed.len_bytes;
            ring.next_seq += 1;
        }
        ring
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
    pub fn tail_seq(&self) -> u64 {
        self.tail_seq
    }
    pub fn tail_offset_bytes(&self) -> u64 {
        self.tail_offset_bytes
    }
    pub fn capacity_bytes(&self) -> u64 {
        self.end_bytes - LOG_START_BYTES
    }

    /// Bytes from the tail to the head (a skipped end included).
    pub fn used_bytes(&self) -> u64 {
        if self.live.is_empty() {
            0
        } else if self.head_offset_bytes > self.tail_offset_bytes {
            self.head_offset_bytes - self.tail_offset_bytes
        } else {
            (self.end_bytes - self.tail_offset_bytes) + (self.head_offset_bytes - LOG_START_BYTES)
        }
    }

    /// Where a record of `len_bytes` would go, if it fits now.
    fn place(&self, len_bytes: u64) -> Option<u64> {
        let head = self.head_offset_bytes;
        if self.live.is_empty() {
            if head + len_bytes <= self.end_bytes {
                return Some(head);
            }
            return (LOG_START_BYTES + len_bytes <= self.end_bytes).then_some(LOG_START_BYTES);
        }
        let tail = self.tail_offset_bytes;
        if head > tail {
            if head + len_bytes <= self.end_bytes {
                Some(head)
            } else {
                (LOG_START_BYTES + len_bytes <= tail).then_some(LOG_START_BYTES)
            }
        } else {
            (head + len_bytes <= tail).then_some(head)
        }
    }

    /// Whether a record of `len_bytes` fits with `reserve_bytes` left free.
    pub fn fits(&self, len_bytes: u64, reserve_bytes: u64) -> bool {
        self.place(len_bytes).is_some()
            && self.used_bytes() + len_bytes + reserve_bytes <= self.capacity_bytes()
    }

    /// Places the next record, or None if the log has no room for it.
    pub fn append(&mut self, len_bytes: u64) -> Option<Placed> {
        let offset_bytes = self.place(len_bytes)?;
        let placed = Placed {
            seq: self.next_seq,
            offset_bytes,
            len_bytes,
        };
        if self.live.is_empty() {
            self.tail_offset_bytes = offset_bytes;
            self.tail_seq = placed.seq;
        }
        self.next_seq += 1;
        self.head_offset_bytes = offset_bytes + len_bytes;
        self.live.push_back(placed);
        Some(placed)
    }

    /// The parts of the log no live record holds, in offset order. A batch
    /// cut short by a crash can leave intact records there behind a torn
    /// one; the next run writes records of the same numbers and lengths
    /// over the torn one, so a later scan would take the next leftover
    /// for a newer record and replay a write nobody was told of over ones
    /// that were acknowledged. Zeroed at start, before any record is
    /// appended ([`super::scan::leftover_ranges`]), they can hold nothing.
    pub fn free_ranges(&self) -> Vec<std::ops::Range<u64>> {
        let (head, tail, end) = (
            self.head_offset_bytes,
            self.tail_offset_bytes,
            self.end_bytes,
        );
        let ranges: [std::ops::Range<u64>; 2] = if self.live.is_empty() {
            [LOG_START_BYTES..end, end..end]
        } else if head > tail {
            [LOG_START_BYTES..tail, head..end]
        } else {
            [head..tail, end..end]
        };
        ranges.into_iter().filter(|r| r.start < r.end).collect()
    }

    /// The checkpoint that retiring the records below `seq` would leave:
    /// the tail's offset and sequence number.
    pub fn checkpoint_for(&self, seq: u64) -> (u64, u64) {
        match self.live.iter().find(|p| p.seq >= seq) {
            Some(first) => (first.offset_bytes, first.seq),
            None => (self.head_offset_bytes, self.next_seq),
        }
    }

    /// Forgets the records numbered below `seq` (their writes are durable
    /// on the members); returns the checkpoint to record: the tail's offset
    /// and sequence number.
    pub fn retire_below(&mut self, seq: u64) -> (u64, u64) {
        assert!(seq <= self.next_seq, "retiring records not yet written");
        while self.live.front().is_some_and(|p| p.seq < seq) {
            self.live.pop_front();
        }
        (self.tail_offset_bytes, self.tail_seq) = self.checkpoint_for(seq);
        (self.tail_offset_bytes, self.tail_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ranges_are_everything_no_live_record_holds() {
        let size = LOG_START_BYTES + 1000;
        let mut ring = ring(size);
        assert_eq!(ring.free_ranges(), vec![LOG_START_BYTES..size], "empty log");
        ring.append(400).unwrap();
        let b = ring.append(400).unwrap();
        assert_eq!(ring.free_ranges(), vec![LOG_START_BYTES + 800..size]);
        ring.retire_below(b.seq);
        assert_eq!(
            ring.free_ranges(),
            vec![LOG_START_BYTES..b.offset_bytes, LOG_START_BYTES + 800..size],
            "before the tail and after the head"
        );
        let c = ring.append(300).unwrap();
        assert_eq!(c.offset_bytes, LOG_START_BYTES, "wrapped");
        assert_eq!(
            ring.free_ranges(),
            vec![LOG_START_BYTES + 300..b.offset_bytes],
            "between the wrapped head and the tail (the skipped end is free too, but no record starts there that the scan would look for: it jumps to the start)"
        );
    }

    fn ring(size_bytes: u64) -> Ring {
        Ring::resume(&JournalHeader::fresh(size_bytes, 1, "u"), &[])
    }

    #[test]
    fn records_wrap_and_never_overrun_the_tail() {
        let size = LOG_START_BYTES + 1000;
        let mut ring = ring(size);
        let a = ring.append(400).unwrap();
        let b = ring.append(400).unwrap();
        assert_eq!(
            (a.offset_bytes, b.offset_bytes),
            (LOG_START_BYTES, LOG_START_BYTES + 400)
        );
        assert_eq!(ring.append(400), None, "would pass the end and the tail");
        ring.retire_below(b.seq);
        let c = ring.append(300).unwrap();
        assert_eq!(c.offset_bytes, LOG_START_BYTES, "wrapped to the start");
        assert_eq!(
            ring.used_bytes(),
            (1000 - 400) + 300,
            "the skipped end counts"
        );
        assert_eq!(ring.append(200), None, "would overrun b");
        assert_eq!(ring.retire_below(c.seq), (LOG_START_BYTES, c.seq));
        assert_eq!(
            ring.retire_below(c.seq + 1),
            (LOG_START_BYTES + 300, c.seq + 1)
        );
        assert_eq!(ring.used_bytes(), 0);
    }
}

//! Which copy of a mirrored chunk (RAID-10) a user read goes to, as Linux
//! MD's raid10 `read_balance`: the first readable copy whose device has
//! nothing in flight, else the one whose head is nearest, ties to the
//! earlier copy. A device's head is where its last completed read or write
//! ended (MD's `head_position`, set at completion). Without this every read
//! went to the first copy and the mirror served none: on a 4-disk RAID-10
//! under WebSearch one disk of a healthy pair was 78% busy, its mirror idle.

use super::Array;
use crate::geometry::Level;
use crate::io::DeviceOp;

#[derive(Debug, Default)]
pub(super) struct DeviceHeads {
    /// Byte where each device's last completed read or write ended.
    head_bytes: Vec<u64>,
    /// I/Os issued to each device and not completed.
    in_flight: Vec<u32>,
}

impl DeviceHeads {
    fn slot(&mut self, device: usize) {
        if self.head_bytes.len() <= device {
            self.head_bytes.resize(device + 1, 0);
            self.in_flight.resize(device + 1, 0);
        }
    }

    /// `op` went to `device`; returns where it leaves the head (None: a
    /// flush, which does not move it).
    pub fn issued(&mut self, device: usize, op: &DeviceOp) -> Option<u64> {
        self.slot(device);
        self.in_flight[device] += 1;
        match op {
            DeviceOp::Read {
                offset_bytes,
                len_bytes,
            } => Some(offset_bytes + *len_bytes as u64),
            DeviceOp::Write { offset_bytes, data } => Some(offset_bytes + data.len() as u64),
            DeviceOp::WriteZeroes {
                offset_bytes,
                len_bytes,
            } => Some(offset_bytes + len_bytes),
            DeviceOp::Flush => None,
        }
    }

    pub fn completed(&mut self, device: usize, head_bytes: Option<u64>) {
        self.slot(device);
        self.in_flight[device] = self.in_flight[device]
            .checked_sub(1)
            .expect("a device completed an I/O it was not given");
        if let Some(head) = head_bytes {
            self.head_bytes[device] = head;
        }
    }

    /// Index in `copies` ((device, offset_bytes), in the layout's order) of
    /// the copy MD's read balance picks. `copies` is not empty.
    pub fn choose(&self, copies: &[(usize, u64)]) -> usize {
        assert!(!copies.is_empty(), "a read has a copy to go to");
        let in_flight = |d: usize| self.in_flight.get(d).copied().unwrap_or(0);
        if let Some(idle) = copies.iter().position(|&(d, _)| in_flight(d) == 0) {
            return idle;
        }
        let distance = |&(d, offset): &(usize, u64)| {
            offset.abs_diff(self.head_bytes.get(d).copied().unwrap_or(0))
        };
        (0..copies.len())
            .min_by_key(|&i| (distance(&copies[i]), i))
            .expect("not empty")
    }
}

impl Array {
    /// For a user read of mirrored `shards` (readable ones marked in
    /// `readable`) at `intra_bytes` of each copy's chunk: the shard MD's
    /// read balance reads. None: not a mirror, or no copy readable.
    pub(super) fn balanced_copy(
        &self,
        places: &[crate::layout::ChunkPlace],
        readable: &[bool],
        intra_bytes: u64,
    ) -> Option<usize> {
        if self.geometry.level != Level::Raid10 {
            return None;
        }
        let shards: Vec<usize> = (0..places.len()).filter(|&i| readable[i]).collect();
        if shards.is_empty() {
            return None;
        }
        let copies: Vec<(usize, u64)> = shards
            .iter()
            .map(|&i| {
                let place = places[i];
                (
                    self.slot_device[place.member],
                    self.member_offset_bytes(place.member_chunk, intra_bytes),
                )
            })
            .collect();
        Some(shards[self.heads.choose(&copies)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_copy_first_else_the_nearest_head_ties_to_the_first() {
        let mut heads = DeviceHeads::default();
        let read = |offset_bytes: u64| DeviceOp::Read {
            offset_bytes,
            len_bytes: 4096,
        };
        // Nothing in flight anywhere: the first copy.
        assert_eq!(heads.choose(&[(0, 1 << 20), (1, 1 << 20)]), 0);
        let end0 = heads.issued(0, &read(0));
        assert_eq!(heads.choose(&[(0, 1 << 20), (1, 1 << 20)]), 1, "1 is idle");
        let end1 = heads.issued(1, &read(900 << 20));
        heads.completed(1, end1);
        let _busy1 = heads.issued(1, &read(900 << 20));
        // Both busy: device 0's head is at 4 KiB, device 1's at 900 MiB.
        assert_eq!(heads.choose(&[(0, 1 << 20), (1, 1 << 20)]), 0);
        assert_eq!(heads.choose(&[(0, 800 << 20), (1, 800 << 20)]), 1);
        heads.completed(0, end0);
        assert_eq!(heads.choose(&[(0, 800 << 20), (1, 800 << 20)]), 0, "0 idle");
        // A flush does not move the head.
        let flush = heads.issued(0, &DeviceOp::Flush);
        assert_eq!(flush, None);
        let _busy0 = heads.issued(0, &read(4096));
        heads.completed(0, flush);
        assert_eq!(heads.choose(&[(0, 4096), (1, 4096)]), 0);
    }
}

//! Checks user reads against what user writes stored (`DataMode::Store`).
//!
//! Only reads whose outcome is certain are checked: a read that overlapped a
//! write in flight at any moment may see either version, and the result of
//! two overlapping writes in flight together is whichever lands last, so
//! their range is remembered as unknown and not checked afterwards.

use std::collections::BTreeMap;

use super::store::SparseStore;

struct InflightUser {
    start: u64,
    end: u64,
    is_write: bool,
    /// Read: overlapped a write. Write: overlapped another write.
    tainted: bool,
}

#[derive(Default)]
pub struct Oracle {
    reference: SparseStore,
    inflight: BTreeMap<u64, InflightUser>,
    unknown: Vec<(u64, u64)>,
    pub checked_reads: u64,
    pub mismatches: u64,
    /// The first mismatch, for error messages.
    pub first_mismatch: Option<String>,
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

impl Oracle {
    pub fn submitted(&mut self, id: u64, offset_bytes: u64, len_bytes: u64, is_write: bool) {
        let range = (offset_bytes, offset_bytes + len_bytes);
        let mut tainted = false;
        for other in self.inflight.values_mut() {
            if !overlaps(range, (other.start, other.end)) {
                continue;
            }
            match (is_write, other.is_write) {
                (true, _) => {
                    other.tainted = true;
                    tainted |= other.is_write;
                }
                (false, true) => tainted = true,
                (false, false) => {}
            }
        }
        self.inflight.insert(
            id,
            InflightUser {
                start: range.0,
                end: range.1,
                is_write,
                tainted,
            },
        );
    }

    /// A write finished successfully with `data`.
    pub fn write_done(&mut self, id: u64, data: &[u8]) {
        if let Some(w) = self.inflight.remove(&id) {
            if w.tainted {
                self.unknown.push((w.start, w.end));
            } else {
                self.reference.write(w.start, data);
            }
        }
    }

    /// A read finished with `data` (`None`: it failed; nothing to check).
    pub fn read_done(&mut self, id: u64, data: Option<&[u8]>) {
        let Some(r) = self.inflight.remove(&id) else {
            return;
        };
        let Some(data) = data else { return };
        let range = (r.start, r.end);
        if r.tainted || self.unknown.iter().any(|&u| overlaps(u, range)) {
            return;
        }
        self.checked_reads += 1;
        let want = self.reference.read(r.start, (r.end - r.start) as usize);
        if want != data {
            self.mismatches += 1;
            if self.first_mismatch.is_none() {
                let at = want.iter().zip(data).position(|(a, b)| a != b).unwrap_or(0);
                self.first_mismatch = Some(format!(
                    "read of {}+{} differs from what was written at byte {}",
                    r.start,
                    r.end - r.start,
                    r.start + at as u64
                ));
            }
        }
    }

    /// A request failed or was dropped; forget it.
    pub fn forget(&mut self, id: u64) {
        if let Some(w) = self.inflight.remove(&id) {
            if w.is_write {
                // A failed write may have landed partly.
                self.unknown.push((w.start, w.end));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_byte_is_caught_and_racing_reads_are_skipped() {
        let mut o = Oracle::default();
        o.submitted(1, 0, 1024, true);
        o.write_done(1, &[7u8; 1024]);
        o.submitted(2, 512, 512, false);
        o.read_done(2, Some(&[7u8; 512]));
        assert_eq!((o.checked_reads, o.mismatches), (1, 0));
        let mut bad = vec![7u8; 512];
        bad[100] = 0;
        o.submitted(3, 512, 512, false);
        o.read_done(3, Some(&bad));
        assert_eq!((o.checked_reads, o.mismatches), (2, 1));
        assert!(o
            .first_mismatch
            .as_deref()
            .is_some_and(|m| m.contains("byte 612")));
        // A read overlapping a write in flight may see either version.
        o.submitted(4, 0, 512, false);
        o.submitted(5, 0, 512, true);
        o.read_done(4, Some(&[9u8; 512]));
        assert_eq!(o.checked_reads, 2);
    }
}

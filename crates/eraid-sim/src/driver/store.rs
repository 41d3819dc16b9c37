//! What the simulated members hold.
//!
//! Performance runs only need timing, and a member is gigabytes, so by
//! default nothing is kept ([`DataMode::Discard`]: reads return zeroes of the
//! right length). Correctness runs keep what was written in a sparse page map
//! ([`DataMode::Store`]), so only touched pages cost memory.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether simulated members keep the bytes written to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataMode {
    /// Writes are dropped; reads return zeroes. Timing is unaffected.
    #[default]
    Discard,
    /// Writes are kept; reads return them; user reads are checked against
    /// what the user wrote.
    Store,
}

const PAGE_BYTES: u64 = 4096;

/// A sparse byte space: pages never written read as zeroes.
#[derive(Debug, Default, Clone)]
pub struct SparseStore {
    pages: BTreeMap<u64, Box<[u8]>>,
}

impl SparseStore {
    pub fn write(&mut self, offset_bytes: u64, data: &[u8]) {
        let mut at = offset_bytes;
        let mut rest = data;
        while !rest.is_empty() {
            let page = at / PAGE_BYTES;
            let intra = (at % PAGE_BYTES) as usize;
            let piece = rest.len().min(PAGE_BYTES as usize - intra);
            let bytes = self
                .pages
                .entry(page)
                .or_insert_with(|| vec![0u8; PAGE_BYTES as usize].into_boxed_slice());
            bytes[intra..intra + piece].copy_from_slice(&rest[..piece]);
            rest = &rest[piece..];
            at += piece as u64;
        }
    }

    pub fn read(&self, offset_bytes: u64, len_bytes: usize) -> Vec<u8> {
        let mut out = vec![0u8; len_bytes];
        let mut at = offset_bytes;
        let mut done = 0;
        while done < len_bytes {
            let page = at / PAGE_BYTES;
            let intra = (at % PAGE_BYTES) as usize;
            let piece = (len_bytes - done).min(PAGE_BYTES as usize - intra);
            if let Some(bytes) = self.pages.get(&page) {
                out[done..done + piece].copy_from_slice(&bytes[intra..intra + piece]);
            }
            done += piece;
            at += piece as u64;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_round_trip() {
        let mut s = SparseStore::default();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        s.write(4000, &data);
        assert_eq!(s.read(4000, data.len()), data);
        assert_eq!(s.read(0, 4000), vec![0; 4000]);
        assert_eq!(s.read(3999, 2)[1], data[0]);
    }
}

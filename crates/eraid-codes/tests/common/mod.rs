//! Helpers shared by the integration tests: buffers with controlled
//! alignment (to drive ISA-L's aligned fast paths and the fallback) and a
//! byte-at-a-time reference encoder built only on ISA-L's scalar `gf_mul`.
#![allow(dead_code)]

use eraid_codes::{isal, MatrixCode};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A byte buffer starting `misalign` bytes past a 64-byte boundary.
pub struct Buf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl Buf {
    pub fn new(len: usize, misalign: usize) -> Self {
        let raw = vec![0u8; len + 64 + misalign];
        let start = raw.as_ptr().align_offset(64) + misalign;
        Self { raw, start, len }
    }

    pub fn from_bytes(bytes: &[u8], misalign: usize) -> Self {
        let mut b = Self::new(bytes.len(), misalign);
        b.as_mut().copy_from_slice(bytes);
        b
    }

    pub fn as_ref(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    pub fn as_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

pub fn random_bytes(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// parity_i[b] = sum_j G[i][j] * data_j[b], one byte and one `gf_mul` at a time.
pub fn reference_parity(coding_rows: &[u8], data: &[&[u8]]) -> Vec<Vec<u8>> {
    let k = data.len();
    let len = data.first().map_or(0, |d| d.len());
    coding_rows
        .chunks_exact(k)
        .map(|row| {
            (0..len)
                .map(|b| {
                    row.iter()
                        .zip(data)
                        .fold(0u8, |acc, (&g, d)| acc ^ isal::gf_mul(g, d[b]))
                })
                .collect()
        })
        .collect()
}

/// A stripe of k data + m parity buffers, all with the same misalignment.
pub struct Stripe {
    pub k: usize,
    pub shards: Vec<Buf>,
}

impl Stripe {
    pub fn new(data: &[Vec<u8>], parity_count: usize, misalign: usize) -> Self {
        let len = data[0].len();
        let mut shards: Vec<Buf> = data.iter().map(|d| Buf::from_bytes(d, misalign)).collect();
        shards.extend((0..parity_count).map(|_| Buf::new(len, misalign)));
        Self {
            k: data.len(),
            shards,
        }
    }

    pub fn encode(&mut self, code: &MatrixCode) {
        let (data, parity) = self.shards.split_at_mut(self.k);
        let data: Vec<&[u8]> = data.iter().map(Buf::as_ref).collect();
        let mut parity: Vec<&mut [u8]> = parity.iter_mut().map(Buf::as_mut).collect();
        code.encode(&data, &mut parity).expect("encode");
    }

    pub fn data(&self) -> Vec<&[u8]> {
        self.shards[..self.k].iter().map(Buf::as_ref).collect()
    }

    pub fn parity(&self) -> Vec<Vec<u8>> {
        self.shards[self.k..]
            .iter()
            .map(|b| b.as_ref().to_vec())
            .collect()
    }

    pub fn snapshot(&self) -> Vec<Vec<u8>> {
        self.shards.iter().map(|b| b.as_ref().to_vec()).collect()
    }

    pub fn all_mut(&mut self) -> Vec<&mut [u8]> {
        self.shards.iter_mut().map(Buf::as_mut).collect()
    }
}

/// Every subset of `0..n` with at most `max` elements, as sorted index lists.
pub fn subsets_up_to(n: usize, max: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for size in 1..=max.min(n) {
        let mut idx: Vec<usize> = (0..size).collect();
        loop {
            out.push(idx.clone());
            // Next combination in lexicographic order.
            let Some(pos) = (0..size).rev().find(|&i| idx[i] != i + n - size) else {
                break;
            };
            idx[pos] += 1;
            for j in pos + 1..size {
                idx[j] = idx[j - 1] + 1;
            }
        }
    }
    out
}

//! [`CauchyReedSolomon`]: encode and reconstruct with XORs of packets.

use super::bitmatrix::{invert_gf2, matrix_to_bitmatrix, BitMatrix};
use super::gf2w;
use crate::{jerasure, xor_into, CodeError};

/// A CRS code (k data, m parity, w packets per shard) given by its m x k
/// coding matrix over GF(2^w). A shard is w equal packets, back to back;
/// parity packet l of parity shard i is the XOR of the data packets whose
/// bit is set in row i*w + l of the bit-matrix.
#[derive(Clone, Debug)]
pub struct CauchyReedSolomon {
    data_count: usize,
    parity_count: usize,
    w: usize,
    coding_matrix: Vec<u32>,
    bitmatrix: BitMatrix,
}

impl CauchyReedSolomon {
    /// The code Jerasure builds for (k, m, w) with its `cauchy_good`
    /// technique (`cauchy_good_general_coding_matrix`).
    pub fn jerasure(data_count: usize, parity_count: usize, w: usize) -> Result<Self, CodeError> {
        check_shape(data_count, parity_count, w)?;
        let matrix = jerasure::cauchy_good_general_coding_matrix(data_count, parity_count, w)
            .ok_or_else(|| {
                CodeError::BadShape(format!(
                    "Jerasure builds no Cauchy matrix for k = {data_count}, m = {parity_count}, w = {w}"
                ))
            })?;
        Self::from_matrix(data_count, parity_count, w, matrix)
    }

    /// A code with a given m x k row-major matrix over GF(2^w). Only the
    /// shape and element range are checked; an m x k Cauchy matrix with
    /// scaled rows and columns is MDS, anything else is the caller's risk
    /// (some erasure sets then fail with [`CodeError::SingularMatrix`]).
    pub fn from_matrix(
        data_count: usize,
        parity_count: usize,
        w: usize,
        coding_matrix: Vec<u32>,
    ) -> Result<Self, CodeError> {
        check_shape(data_count, parity_count, w)?;
        if coding_matrix.len() != data_count * parity_count {
            return Err(CodeError::BadShape(format!(
                "coding matrix has {} elements, a {parity_count}x{data_count} matrix needs {}",
                coding_matrix.len(),
                data_count * parity_count
            )));
        }
        if let Some(bad) = coding_matrix.iter().find(|&&e| e == 0 || e >= 1 << w) {
            return Err(CodeError::BadShape(format!(
                "coding matrix element {bad} is not a nonzero element of GF(2^{w})"
            )));
        }
        let bitmatrix = matrix_to_bitmatrix(data_count, parity_count, w, &coding_matrix);
        Ok(Self {
            data_count,
            parity_count,
            w,
            coding_matrix,
            bitmatrix,
        })
    }

    /// The smallest w whose field has room for k + m distinct Cauchy
    /// points (k + m <= 2^w), at least 2; None past w = 8.
    pub fn default_w(data_count: usize, parity_count: usize) -> Option<usize> {
        (gf2w::W_MIN..=gf2w::W_MAX).find(|&w| data_count + parity_count <= 1 << w)
    }

    pub fn data_count(&self) -> usize {
        self.data_count
    }

    pub fn parity_count(&self) -> usize {
        self.parity_count
    }

    pub fn w(&self) -> usize {
        self.w
    }

    /// The m x k coding matrix over GF(2^w), row-major.
    pub fn coding_matrix(&self) -> &[u32] {
        &self.coding_matrix
    }

    /// The (m*w) x (k*w) bit-matrix.
    pub fn bitmatrix(&self) -> &BitMatrix {
        &self.bitmatrix
    }

    /// Packet length for shards of `len` bytes, or why `len` cannot be cut.
    fn packet_len(&self, what: &str, len: usize) -> Result<usize, CodeError> {
        if !len.is_multiple_of(self.w) {
            return Err(CodeError::BadShape(format!(
                "{what}: shards of {len} bytes do not cut into w = {} packets",
                self.w
            )));
        }
        Ok(len / self.w)
    }

    /// Computes all m parity shards from the k data shards.
    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<(), CodeError> {
        const WHAT: &str = "crs encode";
        count(WHAT, "data", data.len(), self.data_count)?;
        count(WHAT, "parity", parity.len(), self.parity_count)?;
        let len = data.first().map_or(0, |shard| shard.len());
        let lens = data
            .iter()
            .map(|s| s.len())
            .chain(parity.iter().map(|s| s.len()));
        if let Some(bad) = lens.into_iter().find(|&l| l != len) {
            return Err(CodeError::BadShape(format!(
                "{WHAT}: a shard has {bad} bytes, data shard 0 has {len}"
            )));
        }
        let packet = self.packet_len(WHAT, len)?;
        for (i, shard) in parity.iter_mut().enumerate() {
            self.encode_parity(i, data, shard, packet);
        }
        Ok(())
    }

    fn encode_parity(&self, parity_index: usize, data: &[&[u8]], out: &mut [u8], packet: usize) {
        let w = self.w;
        out.fill(0);
        for l in 0..w {
            let dst = &mut out[l * packet..(l + 1) * packet];
            for col in self.bitmatrix.ones_in_row(parity_index * w + l) {
                let (shard, x) = (col / w, col % w);
                xor_into(dst, &data[shard][x * packet..(x + 1) * packet]);
            }
        }
    }

    /// Read-modify-write update: `delta` = old XOR new contents of data
    /// shard `data_index` (a whole shard); adds its contribution into every
    /// parity shard. Linear, so equal to re-encoding the stripe; also what a
    /// growth uses to add or remove one block's share of a parity.
    pub fn apply_delta(
        &self,
        data_index: usize,
        delta: &[u8],
        parity: &mut [&mut [u8]],
    ) -> Result<(), CodeError> {
        const WHAT: &str = "crs apply_delta";
        if data_index >= self.data_count {
            return Err(CodeError::BadShape(format!(
                "{WHAT}: data index {data_index} out of range, the code has {} data shards",
                self.data_count
            )));
        }
        count(WHAT, "parity", parity.len(), self.parity_count)?;
        if let Some(bad) = parity.iter().map(|p| p.len()).find(|&l| l != delta.len()) {
            return Err(CodeError::BadShape(format!(
                "{WHAT}: a parity shard has {bad} bytes, the delta {}",
                delta.len()
            )));
        }
        let packet = self.packet_len(WHAT, delta.len())?;
        let w = self.w;
        for (i, shard) in parity.iter_mut().enumerate() {
            for l in 0..w {
                let dst = &mut shard[l * packet..(l + 1) * packet];
                for col in self.bitmatrix.ones_in_row(i * w + l) {
                    if col / w == data_index {
                        let x = col % w;
                        xor_into(dst, &delta[x * packet..(x + 1) * packet]);
                    }
                }
            }
        }
        Ok(())
    }

    /// Rebuilds every shard not `present` in place (k data then m parity
    /// shards, one length); present shards are only read.
    pub fn reconstruct(&self, shards: &mut [&mut [u8]], present: &[bool]) -> Result<(), CodeError> {
        const WHAT: &str = "crs reconstruct";
        let (k, total) = (self.data_count, self.data_count + self.parity_count);
        count(WHAT, "total", shards.len(), total)?;
        if present.len() != total {
            return Err(CodeError::BadShape(format!(
                "{WHAT}: `present` has {} entries, the code has {total} shards",
                present.len()
            )));
        }
        let len = shards[0].len();
        if let Some(bad) = shards.iter().map(|s| s.len()).find(|&l| l != len) {
            return Err(CodeError::BadShape(format!(
                "{WHAT}: a shard has {bad} bytes, shard 0 has {len}"
            )));
        }
        let packet = self.packet_len(WHAT, len)?;
        let present_count = present.iter().filter(|&&p| p).count();
        if present_count < k {
            return Err(CodeError::TooFewShards {
                present: present_count,
                needed: k,
            });
        }
        let lost_data: Vec<usize> = (0..k).filter(|&j| !present[j]).collect();
        if !lost_data.is_empty() {
            self.decode_data(shards, present, &lost_data, packet)?;
        }
        let (data, parity) = shards.split_at_mut(k);
        let data: Vec<&[u8]> = data.iter().map(|d| &**d).collect();
        for (i, shard) in parity.iter_mut().enumerate() {
            if !present[k + i] {
                self.encode_parity(i, &data, shard, packet);
            }
        }
        Ok(())
    }

    /// Solves for the lost data shards from the present data shards and as
    /// many present parity shards as data were lost.
    fn decode_data(
        &self,
        shards: &mut [&mut [u8]],
        present: &[bool],
        lost_data: &[usize],
        packet: usize,
    ) -> Result<(), CodeError> {
        let (k, w) = (self.data_count, self.w);
        let sources: Vec<usize> = (0..k)
            .filter(|&j| present[j])
            .chain(
                (k..k + self.parity_count)
                    .filter(|&s| present[s])
                    .take(lost_data.len()),
            )
            .collect();
        // Row r of `known` says which data packets XOR to source packet r.
        let mut known = BitMatrix::zeros(k * w, k * w);
        for (slot, &source) in sources.iter().enumerate() {
            for l in 0..w {
                let row = slot * w + l;
                if source < k {
                    known.set(row, source * w + l, true);
                } else {
                    for col in self.bitmatrix.ones_in_row((source - k) * w + l) {
                        known.set(row, col, true);
                    }
                }
            }
        }
        let solve = invert_gf2(&known).ok_or(CodeError::SingularMatrix)?;
        for &j in lost_data {
            let mut rebuilt = vec![0u8; w * packet];
            for x in 0..w {
                let dst = &mut rebuilt[x * packet..(x + 1) * packet];
                for r in solve.ones_in_row(j * w + x) {
                    let (source, l) = (sources[r / w], r % w);
                    xor_into(dst, &shards[source][l * packet..(l + 1) * packet]);
                }
            }
            shards[j].copy_from_slice(&rebuilt);
        }
        Ok(())
    }
}

fn check_shape(k: usize, m: usize, w: usize) -> Result<(), CodeError> {
    if !(gf2w::W_MIN..=gf2w::W_MAX).contains(&w) {
        return Err(CodeError::BadShape(format!(
            "w = {w}: CRS needs {} <= w <= {}",
            gf2w::W_MIN,
            gf2w::W_MAX
        )));
    }
    if k == 0 || m == 0 {
        return Err(CodeError::BadShape(format!(
            "a CRS code needs at least 1 data and 1 parity shard (got k = {k}, m = {m})"
        )));
    }
    if k + m > 1 << w {
        return Err(CodeError::BadShape(format!(
            "k + m = {} shards exceed the {} points of GF(2^{w}): use a larger w",
            k + m,
            1 << w
        )));
    }
    Ok(())
}

fn count(what: &str, kind: &str, got: usize, expected: usize) -> Result<(), CodeError> {
    if got == expected {
        Ok(())
    } else {
        Err(CodeError::BadShape(format!(
            "{what}: got {got} {kind} shards, the code has {expected}"
        )))
    }
}

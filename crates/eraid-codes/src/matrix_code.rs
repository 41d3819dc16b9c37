//! [`MatrixCode`]: a systematic linear code over GF(2^8) given by its coding
//! matrix, with encode, read-modify-write update and reconstruction.
//!
//! One type covers RAID-5, RAID-6 and k+m Reed-Solomon/Cauchy so the array
//! core has a single parity code path; the special cases only change which
//! ISA-L entry point runs, never the result.

use crate::isal::{self, EcTables};
use crate::CodeError;

/// Which ISA-L kernel `encode` tries before the general `ec_encode_data`.
/// Chosen from the matrix contents, not the constructor, so a hand-built
/// matrix equal to RAID-5/RAID-6 gets the same speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FastPath {
    None,
    /// One all-ones row: `xor_gen`.
    Xor,
    /// Rows `[1, 1, ..]` and `[1, 2, 4, ..]`: `pq_gen`.
    PQ,
}

/// A systematic linear erasure code over GF(2^8): k data shards, m parity
/// shards, `parity_i = sum_j G[i][j] * data_j`, with an explicit m x k
/// generator (coding) matrix. The full generator is `[I; G]`.
#[derive(Clone)]
pub struct MatrixCode {
    data_count: usize,
    parity_count: usize,
    /// G, m*k bytes, row-major.
    coding_rows: Vec<u8>,
    /// ISA-L's expanded tables for G, built once: they cost 32 bytes and a
    /// few table lookups per coefficient, too much to redo per stripe.
    encode_tables: EcTables,
    fast_path: FastPath,
}

impl std::fmt::Debug for MatrixCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixCode")
            .field("data_count", &self.data_count)
            .field("parity_count", &self.parity_count)
            .field("coding_rows", &self.coding_rows)
            .field("fast_path", &self.fast_path)
            .finish()
    }
}

/// Length shared by every shard, or a `BadShape` naming the first mismatch.
fn common_len<'a>(
    what: &str,
    lens: impl IntoIterator<Item = (&'a str, usize, usize)>,
) -> Result<usize, CodeError> {
    let mut expected: Option<(&str, usize, usize)> = None;
    for (kind, index, len) in lens {
        match expected {
            None => expected = Some((kind, index, len)),
            Some((first_kind, first_index, first_len)) if first_len != len => {
                return Err(CodeError::BadShape(format!(
                    "{what}: {kind} shard {index} has {len} bytes but \
                     {first_kind} shard {first_index} has {first_len}"
                )));
            }
            Some(_) => {}
        }
    }
    let len = expected.map_or(0, |(_, _, len)| len);
    if len > i32::MAX as usize {
        return Err(CodeError::BadShape(format!(
            "{what}: shards of {len} bytes exceed 2 GiB"
        )));
    }
    Ok(len)
}

fn count_check(what: &str, kind: &str, got: usize, expected: usize) -> Result<(), CodeError> {
    if got == expected {
        Ok(())
    } else {
        Err(CodeError::BadShape(format!(
            "{what}: got {got} {kind} shards, the code has {expected}"
        )))
    }
}

impl MatrixCode {
    /// Piece size of [`MatrixCode::update_parity`]'s delta: small enough
    /// that the delta stays in L1 between being written and being read by
    /// ISA-L, large enough that ISA-L's per-call setup is amortized. In a
    /// one-off comparison on RAID-6 64 KiB updates, 4 and 8 KiB pieces ran
    /// alike, 16 KiB pieces about 10% slower and 1-2 KiB pieces slower still.
    pub const UPDATE_CHUNK_BYTES: usize = 4096;

    /// A code with `data_count` data shards, `parity_count` parity shards and
    /// the given m x k row-major coding matrix. Only the shape is checked:
    /// 1 <= k, k + m <= 256 (GF(2^8) cannot give more independent rows),
    /// `coding_rows.len() == m * k`. Whether every k rows of `[I; G]` are
    /// independent (MDS) is the caller's choice; if not, some erasure sets
    /// fail with [`CodeError::SingularMatrix`].
    pub fn new(
        data_count: usize,
        parity_count: usize,
        coding_rows: Vec<u8>,
    ) -> Result<Self, CodeError> {
        if data_count == 0 {
            return Err(CodeError::BadShape(
                "a code needs at least 1 data shard".into(),
            ));
        }
        if data_count + parity_count > isal::MAX_VECTORS {
            return Err(CodeError::BadShape(format!(
                "{data_count} data + {parity_count} parity shards exceed the {} GF(2^8) allows",
                isal::MAX_VECTORS
            )));
        }
        if coding_rows.len() != data_count * parity_count {
            return Err(CodeError::BadShape(format!(
                "coding matrix has {} bytes, a {parity_count}x{data_count} matrix needs {}",
                coding_rows.len(),
                data_count * parity_count
            )));
        }
        let encode_tables = EcTables::new(data_count, parity_count, &coding_rows);
        let fast_path = Self::detect_fast_path(data_count, parity_count, &coding_rows);
        Ok(Self {
            data_count,
            parity_count,
            coding_rows,
            encode_tables,
            fast_path,
        })
    }

    fn detect_fast_path(k: usize, m: usize, rows: &[u8]) -> FastPath {
        let all_ones = |row: &[u8]| row.iter().all(|&c| c == 1);
        if m == 1 && all_ones(rows) {
            FastPath::Xor
        } else if m == 2 && all_ones(&rows[..k]) && rows[k..] == raid6_q_row(k)[..] {
            FastPath::PQ
        } else {
            FastPath::None
        }
    }

    /// RAID-5: one parity shard, P = XOR of the data.
    ///
    /// # Panics
    /// If `data_count` is 0 or above 255.
    pub fn raid5(data_count: usize) -> Self {
        Self::new(data_count, 1, vec![1; data_count]).expect("RAID-5 shape")
    }

    /// RAID-6 as Linux MD computes it: P = XOR, Q = sum_j 2^j * d_j in
    /// GF(2^8)/0x11D. These are rows k and k+1 of ISA-L's `gf_gen_rs_matrix`.
    /// MDS while the 2^j are distinct, i.e. up to 255 data shards; the
    /// 256-shard limit caps it at 254.
    ///
    /// # Panics
    /// If `data_count` is 0 or above 254.
    pub fn raid6_pq(data_count: usize) -> Self {
        let mut rows = vec![1; data_count];
        rows.extend(raid6_q_row(data_count));
        Self::new(data_count, 2, rows).expect("RAID-6 shape")
    }

    /// ISA-L's Vandermonde Reed-Solomon (`gf_gen_rs_matrix`). MDS only for the
    /// (k, m) ranges erasure_code.h lists (e.g. m <= 3, or k <= 21 with
    /// m = 4); prefer [`MatrixCode::cauchy`] beyond them.
    ///
    /// # Panics
    /// If `data_count` is 0 or `data_count + parity_count > 256`.
    pub fn reed_solomon(data_count: usize, parity_count: usize) -> Self {
        assert!(data_count >= 1 && data_count + parity_count <= isal::MAX_VECTORS);
        let full = isal::gf_gen_rs_matrix(data_count + parity_count, data_count);
        let rows = full[data_count * data_count..].to_vec();
        Self::new(data_count, parity_count, rows).expect("Reed-Solomon shape")
    }

    /// ISA-L's Cauchy code (`gf_gen_cauchy1_matrix`): MDS for every shape.
    ///
    /// # Panics
    /// If `data_count` is 0 or `data_count + parity_count > 256`.
    pub fn cauchy(data_count: usize, parity_count: usize) -> Self {
        assert!(data_count >= 1 && data_count + parity_count <= isal::MAX_VECTORS);
        let full = isal::gf_gen_cauchy1_matrix(data_count + parity_count, data_count);
        let rows = full[data_count * data_count..].to_vec();
        Self::new(data_count, parity_count, rows).expect("Cauchy shape")
    }

    pub fn data_count(&self) -> usize {
        self.data_count
    }

    pub fn parity_count(&self) -> usize {
        self.parity_count
    }

    /// G, m*k bytes, row-major.
    pub fn coding_rows(&self) -> &[u8] {
        &self.coding_rows
    }

    fn coding_row(&self, parity_index: usize) -> &[u8] {
        let k = self.data_count;
        &self.coding_rows[parity_index * k..(parity_index + 1) * k]
    }

    /// Compute every parity shard from all data shards. All shards must have
    /// one length (any; eraid uses multiples of 512). Zero-length shards are
    /// a no-op. Takes ISA-L's `xor_gen`/`pq_gen` when the matrix and the
    /// buffers allow (32-byte aligned, see `isal`), else `ec_encode_data`.
    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<(), CodeError> {
        const WHAT: &str = "encode";
        count_check(WHAT, "data", data.len(), self.data_count)?;
        count_check(WHAT, "parity", parity.len(), self.parity_count)?;
        let len = common_len(
            WHAT,
            data.iter()
                .enumerate()
                .map(|(i, d)| ("data", i, d.len()))
                .chain(
                    parity
                        .iter()
                        .enumerate()
                        .map(|(i, p)| ("parity", i, p.len())),
                ),
        )?;
        if self.parity_count == 0 || len == 0 {
            return Ok(());
        }
        let done = match (self.fast_path, &mut *parity) {
            // ISA-L's xor_gen wants 32-byte aligned buffers; parity in a
            // plain Vec often is not, and the dot product ec_encode_data
            // would take instead is slower than XOR in Rust.
            (FastPath::Xor, [p]) => isal::xor_gen(data, p) || xor_encode(data, p),
            (FastPath::PQ, [p, q]) => isal::pq_gen(data, p, q),
            _ => false,
        };
        if !done {
            isal::ec_encode_data(&self.encode_tables, data, parity);
        }
        Ok(())
    }

    fn check_data_index(&self, what: &str, data_index: usize) -> Result<(), CodeError> {
        if data_index >= self.data_count {
            return Err(CodeError::BadShape(format!(
                "{what}: data index {data_index} out of range, the code has {} data shards",
                self.data_count
            )));
        }
        Ok(())
    }

    /// Read-modify-write update: `delta` = old XOR new contents of data shard
    /// `data_index`; adds `G[i][data_index] * delta` into each parity shard i.
    /// Because the code is linear, this equals re-encoding the whole stripe.
    pub fn apply_delta(
        &self,
        data_index: usize,
        delta: &[u8],
        parity: &mut [&mut [u8]],
    ) -> Result<(), CodeError> {
        const WHAT: &str = "apply_delta";
        self.check_data_index(WHAT, data_index)?;
        count_check(WHAT, "parity", parity.len(), self.parity_count)?;
        let len = common_len(
            WHAT,
            std::iter::once(("delta", data_index, delta.len())).chain(
                parity
                    .iter()
                    .enumerate()
                    .map(|(i, p)| ("parity", i, p.len())),
            ),
        )?;
        if self.parity_count == 0 || len == 0 {
            return Ok(());
        }
        match (self.fast_path, &mut *parity) {
            // P ^= delta needs no multiplication at all.
            (FastPath::Xor, [p]) => crate::xor_into(p, delta),
            _ => isal::ec_encode_data_update(&self.encode_tables, data_index, delta, parity),
        }
        Ok(())
    }

    /// Read-modify-write in one step: data shard `data_index` changes from
    /// `old_data` to `new_data`; adds `G[i][data_index] * (old XOR new)` into
    /// each parity shard i, in place. Equal to `apply_delta` with the delta
    /// `old XOR new`, and needs no caller-side delta buffer.
    ///
    /// RAID-5 (one all-ones row) is one fused XOR pass, `P ^= old ^ new`:
    /// each input read once, P written once. RAID-6 (the P and Q rows) is
    /// one fused AVX2 pass too, `P ^= old ^ new`, `Q ^= g * (old ^ new)`
    /// with the product looked up in ISA-L's table for g (`pq_update`);
    /// its tail past the last 32-byte vector, and all of it on CPUs without
    /// AVX2, goes the general way. Every other code walks the shard in
    /// [`UPDATE_CHUNK_BYTES`] pieces: the piece's delta goes to a stack
    /// buffer that stays in L1, then one ISA-L multiply-accumulate
    /// (`ec_encode_data_update`, i.e. `gf_2vect_mad`, `gf_3vect_mad`, ..)
    /// adds it into every parity shard at once, so each parity byte is read
    /// and written once, not once per input. RAID-5 and RAID-6 are measured
    /// against the alternatives in `benches/codes.rs` (group `rmw`, figures
    /// in the README); the piece loop beat two whole-shard ISA-L passes by
    /// about 1.6x for Cauchy 4+2 and 4+3 in a one-off comparison.
    ///
    /// [`UPDATE_CHUNK_BYTES`]: MatrixCode::UPDATE_CHUNK_BYTES
    pub fn update_parity(
        &self,
        data_index: usize,
        old_data: &[u8],
        new_data: &[u8],
        parity: &mut [&mut [u8]],
    ) -> Result<(), CodeError> {
        const WHAT: &str = "update_parity";
        self.check_data_index(WHAT, data_index)?;
        count_check(WHAT, "parity", parity.len(), self.parity_count)?;
        let len = common_len(
            WHAT,
            [
                ("old data", data_index, old_data.len()),
                ("new data", data_index, new_data.len()),
            ]
            .into_iter()
            .chain(
                parity
                    .iter()
                    .enumerate()
                    .map(|(i, p)| ("parity", i, p.len())),
            ),
        )?;
        if self.parity_count == 0 || len == 0 {
            return Ok(());
        }
        let done_bytes = match (self.fast_path, &mut *parity) {
            (FastPath::Xor, [p]) => {
                crate::xor::xor2_into(p, old_data, new_data);
                return Ok(());
            }
            (FastPath::PQ, [p, q]) => {
                let q_table = self.encode_tables.coefficient_table(1, data_index);
                crate::pq_update::update_pq_prefix(q_table, old_data, new_data, p, q)
            }
            _ => 0,
        };
        self.update_parity_chunked(data_index, old_data, new_data, parity, done_bytes);
        Ok(())
    }

    /// `update_parity` from byte `start_bytes` on, through ISA-L: each
    /// piece's delta into a stack buffer, then one `ec_encode_data_update`
    /// adds it into every parity shard. Lengths were checked by the caller.
    fn update_parity_chunked(
        &self,
        data_index: usize,
        old_data: &[u8],
        new_data: &[u8],
        parity: &mut [&mut [u8]],
        start_bytes: usize,
    ) {
        let len = old_data.len();
        if start_bytes >= len {
            // Nothing left: skip zeroing the piece buffer (2% of a 64 KiB
            // RAID-6 update in a profile).
            return;
        }
        let mut delta = [0u8; Self::UPDATE_CHUNK_BYTES];
        for offset_bytes in (start_bytes..len).step_by(Self::UPDATE_CHUNK_BYTES) {
            let end = len.min(offset_bytes + Self::UPDATE_CHUNK_BYTES);
            let delta = &mut delta[..end - offset_bytes];
            crate::xor::xor_to(
                delta,
                &old_data[offset_bytes..end],
                &new_data[offset_bytes..end],
            );
            isal::ec_encode_data_update_at(
                &self.encode_tables,
                data_index,
                delta,
                parity,
                offset_bytes,
            );
        }
    }

    /// Reconstruct missing shards in place. `shards` = k data shards then m
    /// parity shards, one length; `present[i]` says which hold valid bytes.
    /// Every non-present shard (data and parity) is overwritten with its
    /// correct contents; present shards are only read.
    ///
    /// Picks the first k present shards, inverts their rows of `[I; G]` and
    /// computes all missing shards in one ISA-L pass over those k.
    pub fn reconstruct(&self, shards: &mut [&mut [u8]], present: &[bool]) -> Result<(), CodeError> {
        const WHAT: &str = "reconstruct";
        let (k, total) = (self.data_count, self.data_count + self.parity_count);
        count_check(WHAT, "total", shards.len(), total)?;
        if present.len() != total {
            return Err(CodeError::BadShape(format!(
                "{WHAT}: `present` has {} entries, the code has {total} shards",
                present.len()
            )));
        }
        let len = common_len(
            WHAT,
            shards.iter().enumerate().map(|(i, s)| {
                if i < k {
                    ("data", i, s.len())
                } else {
                    ("parity", i - k, s.len())
                }
            }),
        )?;
        let present_count = present.iter().filter(|&&p| p).count();
        if present_count < k {
            return Err(CodeError::TooFewShards {
                present: present_count,
                needed: k,
            });
        }
        if present_count == total || len == 0 {
            return Ok(());
        }

        // Shard order puts data first, so the first k present shards use as
        // many identity rows as possible, which keeps the inverse sparse.
        let sources: Vec<usize> = (0..total).filter(|&i| present[i]).take(k).collect();
        let missing: Vec<usize> = (0..total).filter(|&i| !present[i]).collect();

        // Every parity shard lost and no data: that is a plain encode, which
        // keeps the xor_gen/pq_gen fast paths and needs no inversion.
        if missing.len() == self.parity_count && missing[0] == k {
            let (data, parity) = shards.split_at_mut(k);
            let data: Vec<&[u8]> = data.iter().map(|d| &**d).collect();
            return self.encode(&data, parity);
        }
        let decode_rows = self.decode_rows(&sources, &missing)?;

        let mut srcs: Vec<&[u8]> = Vec::with_capacity(k);
        let mut outs: Vec<&mut [u8]> = Vec::with_capacity(missing.len());
        for (i, shard) in shards.iter_mut().enumerate() {
            if !present[i] {
                outs.push(&mut **shard);
            } else if srcs.len() < k {
                srcs.push(&**shard);
            }
        }

        // One lost shard rebuilt as the XOR of the rest (RAID-5, or RAID-6
        // losing one data shard with P alive) is what xor_gen does fastest.
        let all_ones = decode_rows.iter().all(|&c| c == 1);
        if let ([out], true) = (&mut outs[..], all_ones) {
            if isal::xor_gen(&srcs, out) {
                return Ok(());
            }
        }
        let tables = EcTables::new(k, missing.len(), &decode_rows);
        isal::ec_encode_data(&tables, &srcs, &mut outs);
        Ok(())
    }

    /// Coefficients expressing each `missing` shard as a combination of the
    /// `sources` shards (k of them): a `missing.len()` x k matrix.
    fn decode_rows(&self, sources: &[usize], missing: &[usize]) -> Result<Vec<u8>, CodeError> {
        let k = self.data_count;
        // Rows of [I; G] for the surviving shards: survivors = B * data.
        let mut b = vec![0u8; k * k];
        for (r, &s) in sources.iter().enumerate() {
            let row = &mut b[r * k..(r + 1) * k];
            if s < k {
                row[s] = 1;
            } else {
                row.copy_from_slice(self.coding_row(s - k));
            }
        }
        // data = B^-1 * survivors.
        let inverse = isal::gf_invert_matrix(&b, k).ok_or(CodeError::SingularMatrix)?;
        let mut rows = Vec::with_capacity(missing.len() * k);
        for &lost in missing {
            if lost < k {
                rows.extend_from_slice(&inverse[lost * k..(lost + 1) * k]);
            } else {
                // parity = g * data = (g * B^-1) * survivors.
                let g = self.coding_row(lost - k);
                rows.extend((0..k).map(|c| {
                    g.iter().enumerate().fold(0u8, |acc, (j, &gj)| {
                        acc ^ isal::gf_mul(gj, inverse[j * k + c])
                    })
                }));
            }
        }
        Ok(rows)
    }
}

/// Linux MD's RAID-6 Q coefficients: 2^j for data shard j.
fn raid6_q_row(data_count: usize) -> Vec<u8> {
    std::iter::successors(Some(1u8), |&c| Some(isal::gf_mul(c, 2)))
        .take(data_count)
        .collect()
}

/// `p = XOR of data` (at least two shards of `p`'s length), two inputs per
/// pass over `p`.
fn xor_encode(data: &[&[u8]], p: &mut [u8]) -> bool {
    let [first, second, rest @ ..] = data else {
        return false;
    };
    crate::xor::xor_to(p, first, second);
    let mut pairs = rest.chunks_exact(2);
    for pair in &mut pairs {
        crate::xor::xor2_into(p, pair[0], pair[1]);
    }
    if let [last] = pairs.remainder() {
        crate::xor::xor_into(p, last);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{FastPath, MatrixCode};

    #[test]
    fn fast_path_follows_matrix_contents() {
        assert_eq!(MatrixCode::raid5(4).fast_path, FastPath::Xor);
        assert_eq!(MatrixCode::raid6_pq(4).fast_path, FastPath::PQ);
        // Same rows built by hand, and by ISA-L's RS generator.
        let hand = MatrixCode::new(3, 2, vec![1, 1, 1, 1, 2, 4]).unwrap();
        assert_eq!(hand.fast_path, FastPath::PQ);
        assert_eq!(MatrixCode::reed_solomon(6, 2).fast_path, FastPath::PQ);
        assert_eq!(MatrixCode::reed_solomon(6, 1).fast_path, FastPath::Xor);
        assert_eq!(MatrixCode::cauchy(4, 2).fast_path, FastPath::None);
        assert_eq!(
            MatrixCode::new(3, 2, vec![1, 1, 1, 1, 2, 5])
                .unwrap()
                .fast_path,
            FastPath::None
        );
    }

    #[test]
    fn fused_update_equals_the_isal_pieces_it_falls_back_to() {
        // Without AVX2, RAID-5/6 updates go through the ISA-L piece loop;
        // on this machine they take the fused kernels. Both must agree.
        for (code, m) in [(MatrixCode::raid5(5), 1), (MatrixCode::raid6_pq(5), 2)] {
            for len in [1, 31, 32, 100, 4096, 9000] {
                let byte = |i: usize, mul: usize, add: usize| (i * mul + add) as u8;
                let old: Vec<u8> = (0..len).map(|i| byte(i, 31, 7)).collect();
                let new: Vec<u8> = (0..len).map(|i| byte(i, 17, 3)).collect();
                let start: Vec<Vec<u8>> = (0..m)
                    .map(|r| (0..len).map(|i| byte(i, 13 + r, r)).collect())
                    .collect();
                let (mut fused, mut pieces) = (start.clone(), start);
                let mut refs: Vec<&mut [u8]> = fused.iter_mut().map(|p| &mut p[..]).collect();
                code.update_parity(3, &old, &new, &mut refs).unwrap();
                let mut refs: Vec<&mut [u8]> = pieces.iter_mut().map(|p| &mut p[..]).collect();
                code.update_parity_chunked(3, &old, &new, &mut refs, 0);
                assert_eq!(fused, pieces, "m {m} len {len}");
            }
        }
    }
}

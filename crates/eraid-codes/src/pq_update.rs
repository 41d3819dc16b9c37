//! RAID-6 read-modify-write in one pass over its four inputs:
//! `P ^= old ^ new`, `Q ^= g * (old ^ new)`.
//!
//! ISA-L 2.30 has no kernel that takes old and new data together: its
//! multiply-accumulate (`gf_2vect_mad`) wants the delta in memory, which
//! costs a pass to build it. This loop forms the delta in registers and
//! does ISA-L's own multiplication on it: the product comes from ISA-L's
//! 32-byte table for g ([`crate::isal::EcTables::coefficient_table`], the
//! table `gf_2vect_mad` reads), looked up with the same two 16-entry byte
//! shuffles ISA-L's AVX2/AVX-512 kernels use, so the field stays ISA-L's.
//! Only the whole vectors of the shard are done here; the caller finishes
//! the tail with ISA-L.

/// Updates P and Q over the longest prefix of whole 32-byte AVX2 vectors
/// and returns its length in bytes (a multiple of 32), leaving the rest to
/// the caller: 0 on CPUs without AVX2 and on other targets. AVX-512 (64-byte
/// vectors) was no faster in a one-off comparison on the development
/// machine's Zen 4, which splits 512-bit operations in two, so it is not
/// used.
///
/// # Panics
/// If the four lengths differ.
pub(crate) fn update_pq_prefix(
    q_table: &[u8; 32],
    old: &[u8],
    new: &[u8],
    p: &mut [u8],
    q: &mut [u8],
) -> usize {
    let len = old.len();
    assert!(
        new.len() == len && p.len() == len && q.len() == len,
        "update_pq_prefix: old {len} bytes, new {}, P {}, Q {}",
        new.len(),
        p.len(),
        q.len()
    );
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { x86::prefix_avx2(q_table, old, new, p, q) };
        }
    }
    // No SIMD path on this CPU or target: the caller's ISA-L loop does it all.
    let _ = q_table;
    0
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    pub(super) fn prefix_avx2(
        q_table: &[u8; 32],
        old: &[u8],
        new: &[u8],
        p: &mut [u8],
        q: &mut [u8],
    ) -> usize {
        const LANES: usize = std::mem::size_of::<__m256i>();
        // The caller checked the four lengths are equal; the minimum keeps
        // this function sound on its own.
        let len = old.len().min(new.len()).min(p.len()).min(q.len()) / LANES * LANES;
        // SAFETY: two 16-byte loads inside the 32-byte table.
        let (lo_table, hi_table) = unsafe {
            (
                _mm256_broadcastsi128_si256(_mm_loadu_si128(q_table.as_ptr().cast())),
                _mm256_broadcastsi128_si256(_mm_loadu_si128(q_table[16..].as_ptr().cast())),
            )
        };
        let low_nibbles = _mm256_set1_epi8(0x0f);
        let mut at = 0;
        while at < len {
            // SAFETY: at + LANES <= len, and every slice has at least len
            // bytes; unaligned loads and stores; P and Q are distinct
            // `&mut` slices, so no store lands in another input.
            unsafe {
                let delta = _mm256_xor_si256(
                    _mm256_loadu_si256(old.as_ptr().add(at).cast()),
                    _mm256_loadu_si256(new.as_ptr().add(at).cast()),
                );
                let p_at = p.as_mut_ptr().add(at).cast::<__m256i>();
                _mm256_storeu_si256(p_at, _mm256_xor_si256(_mm256_loadu_si256(p_at), delta));
                let lo = _mm256_and_si256(delta, low_nibbles);
                let hi = _mm256_and_si256(_mm256_srli_epi64::<4>(delta), low_nibbles);
                let product = _mm256_xor_si256(
                    _mm256_shuffle_epi8(lo_table, lo),
                    _mm256_shuffle_epi8(hi_table, hi),
                );
                let q_at = q.as_mut_ptr().add(at).cast::<__m256i>();
                _mm256_storeu_si256(q_at, _mm256_xor_si256(_mm256_loadu_si256(q_at), product));
            }
            at += LANES;
        }
        len
    }
}

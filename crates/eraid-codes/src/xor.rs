//! Plain XOR of buffers.
//!
//! XOR is GF(2^8) addition, not multiplication, so this is written in Rust:
//! the compiler vectorizes it, it needs none of the alignment rules ISA-L's
//! `xor_gen` has, and it can update a buffer in place, which `xor_gen`
//! (output = XOR of distinct inputs) does not promise.
//!
//! The two- and three-input forms used by read-modify-write are compiled
//! twice on x86-64, for AVX2 and for the baseline, and picked at run time
//! (`is_x86_feature_detected!`, a cached flag), so a binary built for
//! baseline x86-64 still uses 256-bit vectors where the CPU has them;
//! other targets take the baseline loop.

/// `dst ^= src`, byte by byte.
///
/// # Panics
/// If the lengths differ: that is a caller bug, and silently XORing a prefix
/// would corrupt parity.
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "xor_into: dst has {} bytes, src {}",
        dst.len(),
        src.len()
    );
    const WORD: usize = std::mem::size_of::<u64>();
    let mut dst_words = dst.chunks_exact_mut(WORD);
    let mut src_words = src.chunks_exact(WORD);
    for (d, s) in (&mut dst_words).zip(&mut src_words) {
        let x = u64::from_ne_bytes((&*d).try_into().expect("word"))
            ^ u64::from_ne_bytes(s.try_into().expect("word"));
        d.copy_from_slice(&x.to_ne_bytes());
    }
    for (d, s) in dst_words
        .into_remainder()
        .iter_mut()
        .zip(src_words.remainder())
    {
        *d ^= s;
    }
}

/// Calls `$body` compiled for AVX2 when the CPU has it, else for the
/// target's baseline. Both copies inline the same generic body, so they
/// compute the same bytes; only the instructions differ. (An AVX-512 copy
/// was no faster in a one-off comparison on the development machine's
/// Zen 4, which splits 512-bit operations in two.)
macro_rules! dispatch {
    ($body:ident($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            fn with_avx2(dst: &mut [u8], a: &[u8], b: &[u8]) {
                $body(dst, a, b)
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked just above.
                return unsafe { with_avx2($($arg),*) };
            }
        }
        $body($($arg),*)
    }};
}

/// `dst ^= a ^ b` in one pass: RAID-5's read-modify-write (new P = old P ^
/// old data ^ new data) reads each input once and writes P once.
///
/// # Panics
/// If the lengths differ (a caller bug, as for [`xor_into`]).
pub fn xor2_into(dst: &mut [u8], a: &[u8], b: &[u8]) {
    assert!(
        dst.len() == a.len() && dst.len() == b.len(),
        "xor2_into: dst has {} bytes, a {}, b {}",
        dst.len(),
        a.len(),
        b.len()
    );
    dispatch!(xor2_into_body(dst, a, b))
}

/// `dst = a ^ b`: the delta of a read-modify-write, into a scratch buffer.
///
/// # Panics
/// If the lengths differ (a caller bug, as for [`xor_into`]).
pub fn xor_to(dst: &mut [u8], a: &[u8], b: &[u8]) {
    assert!(
        dst.len() == a.len() && dst.len() == b.len(),
        "xor_to: dst has {} bytes, a {}, b {}",
        dst.len(),
        a.len(),
        b.len()
    );
    dispatch!(xor_to_body(dst, a, b))
}

// Byte loops over zipped slices: the `&mut`/`&` types tell the compiler the
// buffers do not overlap, so it vectorizes to the widest enabled registers.
#[inline(always)]
fn xor2_into_body(dst: &mut [u8], a: &[u8], b: &[u8]) {
    for ((d, x), y) in dst.iter_mut().zip(a).zip(b) {
        *d ^= x ^ y;
    }
}

#[inline(always)]
fn xor_to_body(dst: &mut [u8], a: &[u8], b: &[u8]) {
    for ((d, x), y) in dst.iter_mut().zip(a).zip(b) {
        *d = x ^ y;
    }
}

#[cfg(test)]
mod tests {
    use super::{xor2_into, xor_into, xor_to};

    fn pattern(len: usize, mul: usize, add: usize) -> Vec<u8> {
        (0..len).map(|i| (i * mul + add) as u8).collect()
    }

    #[test]
    fn xor_matches_bytewise_for_odd_lengths() {
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let a = pattern(len, 31, 7);
            let b = pattern(len, 17, 3);
            let mut d = a.clone();
            xor_into(&mut d, &b);
            let expected: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
            assert_eq!(d, expected, "len {len}");
        }
    }

    #[test]
    fn xor2_and_xor_to_match_bytewise_at_every_offset() {
        // Lengths around the 16/32/64-byte vector widths and their tails,
        // each slice starting at its own offset so no two share alignment.
        let backing = |mul, add| pattern(400, mul, add);
        let (a_all, b_all, d_all) = (backing(31, 7), backing(17, 3), backing(13, 11));
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300] {
            for offset in 0..3 {
                let a = &a_all[offset..offset + len];
                let b = &b_all[offset + 1..offset + 1 + len];
                let start = &d_all[offset + 2..offset + 2 + len];

                let mut d = d_all.clone();
                xor2_into(&mut d[offset + 2..offset + 2 + len], a, b);
                let expected: Vec<u8> = (0..len).map(|i| start[i] ^ a[i] ^ b[i]).collect();
                assert_eq!(&d[offset + 2..offset + 2 + len], &expected[..], "len {len}");
                // Nothing outside the slice changed.
                assert_eq!(&d[..offset + 2], &d_all[..offset + 2]);
                assert_eq!(&d[offset + 2 + len..], &d_all[offset + 2 + len..]);

                let mut to = vec![0xA5; len];
                xor_to(&mut to, a, b);
                let expected: Vec<u8> = (0..len).map(|i| a[i] ^ b[i]).collect();
                assert_eq!(to, expected, "len {len}");
            }
        }
    }

    #[test]
    fn baseline_bodies_match_the_dispatched_kernels() {
        // The dispatched kernels take AVX2 on the development machine; the
        // baseline bodies are what other CPUs run, so check them here too.
        let (a, b, start) = (
            pattern(1000, 31, 7),
            pattern(1000, 17, 3),
            pattern(1000, 13, 1),
        );
        for len in [0, 1, 31, 32, 33, 999] {
            let (a, b) = (&a[..len], &b[..len]);
            let (mut dispatched, mut baseline) = (start[..len].to_vec(), start[..len].to_vec());
            xor2_into(&mut dispatched, a, b);
            super::xor2_into_body(&mut baseline, a, b);
            assert_eq!(dispatched, baseline, "len {len}");
            xor_to(&mut dispatched, a, b);
            super::xor_to_body(&mut baseline, a, b);
            assert_eq!(dispatched, baseline, "len {len}");
        }
    }

    #[test]
    #[should_panic(expected = "xor_into")]
    fn xor_rejects_length_mismatch() {
        xor_into(&mut [0u8; 4], &[0u8; 5]);
    }

    #[test]
    #[should_panic(expected = "xor2_into")]
    fn xor2_rejects_length_mismatch() {
        xor2_into(&mut [0u8; 4], &[0u8; 4], &[0u8; 5]);
    }

    #[test]
    #[should_panic(expected = "xor_to")]
    fn xor_to_rejects_length_mismatch() {
        xor_to(&mut [0u8; 4], &[0u8; 3], &[0u8; 4]);
    }
}

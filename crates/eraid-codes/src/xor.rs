//! Plain XOR of one buffer into another.
//!
//! XOR is GF(2^8) addition, not multiplication, so this is written in Rust:
//! over u64 words the compiler vectorizes it, and it needs none of the
//! alignment rules ISA-L's `xor_gen` has.

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

#[cfg(test)]
mod tests {
    use super::xor_into;

    #[test]
    fn xor_matches_bytewise_for_odd_lengths() {
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let a: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
            let b: Vec<u8> = (0..len).map(|i| (i * 17 + 3) as u8).collect();
            let mut d = a.clone();
            xor_into(&mut d, &b);
            let expected: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
            assert_eq!(d, expected, "len {len}");
        }
    }

    #[test]
    #[should_panic(expected = "xor_into")]
    fn xor_rejects_length_mismatch() {
        xor_into(&mut [0u8; 4], &[0u8; 5]);
    }
}

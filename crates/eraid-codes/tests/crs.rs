//! Cauchy Reed-Solomon bit-matrix codes: field arithmetic and bit-matrices
//! equal Jerasure's, encoding equals Jerasure's `jerasure_bitmatrix_encode`
//! and ISA-L's RAID-5 XOR for m = 1, and every erasure set of up to m
//! shards reconstructs exactly.

mod common;

use common::{random_bytes, rng, subsets_up_to};
use eraid_codes::crs::{gf2w, matrix_to_bitmatrix};
use eraid_codes::{jerasure, CauchyReedSolomon, CodeError, MatrixCode};
use proptest::prelude::*;

#[test]
fn field_multiplication_equals_jerasures_for_every_w_and_operand_pair() {
    for w in gf2w::W_MIN..=gf2w::W_MAX {
        for a in 0..1u32 << w {
            for b in 0..1u32 << w {
                assert_eq!(
                    gf2w::multiply(a, b, w),
                    jerasure::galois_single_multiply(a, b, w),
                    "{a} * {b} in GF(2^{w})"
                );
            }
        }
    }
}

#[test]
fn bitmatrices_equal_jerasures_for_every_shape_up_to_w_6() {
    for w in 2..=6usize {
        for m in 1..=5usize {
            for k in 1..=(1usize << w).saturating_sub(m) {
                let matrix = jerasure::cauchy_good_general_coding_matrix(k, m, w)
                    .expect("a shape with k + m <= 2^w has a matrix");
                let ours = matrix_to_bitmatrix(k, m, w, &matrix);
                let theirs = jerasure::matrix_to_bitmatrix(k, m, w, &matrix);
                assert_eq!(ours.bits, theirs, "bit-matrix of (k={k}, m={m}, w={w})");
            }
        }
    }
}

#[test]
fn jerasure_matrix_for_6_3_4_is_cauchy_good_not_cauchy_original() {
    // Jerasure 2.0's output for (k=6, m=3, w=4), pinned: the study's
    // Table I counts depend on exactly these rows.
    let code = CauchyReedSolomon::jerasure(6, 3, 4).unwrap();
    assert_eq!(
        code.coding_matrix(),
        &[1, 1, 1, 1, 1, 1, 9, 6, 4, 12, 2, 1, 1, 5, 10, 9, 13, 6]
    );
    let original = jerasure::cauchy_original_coding_matrix(6, 3, 4).unwrap();
    assert_ne!(code.coding_matrix(), &original[..]);
}

#[test]
fn shapes_outside_the_field_are_refused_with_their_reason() {
    let err = CauchyReedSolomon::jerasure(14, 3, 4).unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("exceed the 16 points")),
        "{err}"
    );
    let err = CauchyReedSolomon::jerasure(4, 2, 9).unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("w = 9")),
        "{err}"
    );
    let err = CauchyReedSolomon::jerasure(4, 0, 4).unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("m = 0")),
        "{err}"
    );
    let err = CauchyReedSolomon::from_matrix(2, 1, 3, vec![1, 8]).unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("element 8")),
        "{err}"
    );
    assert_eq!(CauchyReedSolomon::default_w(4, 2), Some(3));
    assert_eq!(CauchyReedSolomon::default_w(2, 2), Some(2));
    assert_eq!(CauchyReedSolomon::default_w(200, 57), None);
}

#[test]
fn shards_that_do_not_cut_into_w_packets_and_too_many_erasures_are_errors() {
    let code = CauchyReedSolomon::jerasure(3, 2, 3).unwrap();
    let data = [vec![0u8; 10], vec![0u8; 10], vec![0u8; 10]];
    let data: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
    let (mut p0, mut p1) = (vec![0u8; 10], vec![0u8; 10]);
    let err = code.encode(&data, &mut [&mut p0, &mut p1]).unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("10 bytes")),
        "{err}"
    );

    let mut shards: Vec<Vec<u8>> = (0..5).map(|_| vec![0u8; 12]).collect();
    let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| &mut s[..]).collect();
    let err = code
        .reconstruct(&mut refs, &[false, false, true, false, true])
        .unwrap_err();
    assert_eq!(
        err,
        CodeError::TooFewShards {
            present: 2,
            needed: 3
        }
    );

    let (mut p0, mut p1) = (vec![0u8; 12], vec![0u8; 12]);
    let err = code
        .apply_delta(3, &[0u8; 12], &mut [&mut p0, &mut p1])
        .unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("data index 3")),
        "{err}"
    );
    let err = code
        .apply_delta(0, &[0u8; 9], &mut [&mut p0, &mut p1])
        .unwrap_err();
    assert!(
        matches!(&err, CodeError::BadShape(msg) if msg.contains("the delta 9")),
        "{err}"
    );
}

#[test]
fn one_parity_crs_equals_isal_raid5_xor() {
    // Jerasure scales columns so the first row is all ones: with m = 1 the
    // bit-matrix is w identity blocks, i.e. packet-wise XOR, which is
    // byte-wise XOR of whole shards.
    let mut rng = rng(7);
    for (k, w) in [(3usize, 2usize), (5, 3), (7, 4), (12, 4)] {
        let code = CauchyReedSolomon::jerasure(k, 1, w).unwrap();
        let len = w * 64;
        let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
        let data_refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
        let mut ours = vec![0u8; len];
        code.encode(&data_refs, &mut [&mut ours]).unwrap();
        let mut isal = vec![0u8; len];
        MatrixCode::raid5(k)
            .encode(&data_refs, &mut [&mut isal])
            .unwrap();
        assert_eq!(ours, isal, "k={k} w={w}");
    }
}

fn crs_shape() -> impl Strategy<Value = (usize, usize, usize)> {
    (2usize..=6, 1usize..=5)
        .prop_flat_map(|(w, m)| {
            let k_max = (1usize << w).saturating_sub(m).clamp(1, 12);
            (Just(w), Just(m), 1..=k_max)
        })
        .prop_filter("k + m fits the field", |&(w, m, k)| k + m <= 1 << w)
        .prop_map(|(w, m, k)| (k, m, w))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn encode_equals_jerasure_and_every_erasure_set_reconstructs(
        (k, m, w) in crs_shape(),
        packet_words in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let code = CauchyReedSolomon::jerasure(k, m, w).unwrap();
        let len = w * packet_words * 8;
        let mut rng = rng(seed);
        let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
        let data_refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
        let mut parity: Vec<Vec<u8>> = (0..m).map(|_| vec![0u8; len]).collect();
        {
            let mut parity_refs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
            code.encode(&data_refs, &mut parity_refs).unwrap();
        }
        let mut reference: Vec<Vec<u8>> = (0..m).map(|_| vec![0u8; len]).collect();
        {
            let mut refs: Vec<&mut [u8]> = reference.iter_mut().map(|p| &mut p[..]).collect();
            jerasure::bitmatrix_encode(k, m, w, &code.bitmatrix().bits, &data_refs, &mut refs);
        }
        prop_assert_eq!(&parity, &reference);

        let stripe: Vec<Vec<u8>> = data.iter().chain(parity.iter()).cloned().collect();
        for lost in subsets_up_to(k + m, m) {
            let mut shards = stripe.clone();
            for &i in &lost {
                shards[i].fill(0xA5);
            }
            let present: Vec<bool> = (0..k + m).map(|i| !lost.contains(&i)).collect();
            let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| &mut s[..]).collect();
            code.reconstruct(&mut refs, &present).unwrap();
            prop_assert_eq!(&shards, &stripe, "lost {:?}", lost);
        }
    }

    #[test]
    fn apply_delta_equals_reencoding_the_changed_stripe(
        (k, m, w) in crs_shape(),
        packet_len in 1usize..=40,
        seed in any::<u64>(),
        changed in any::<prop::sample::Index>(),
    ) {
        let code = CauchyReedSolomon::jerasure(k, m, w).unwrap();
        let len = w * packet_len;
        let mut rng = rng(seed);
        let mut data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
        let encode = |data: &[Vec<u8>]| {
            let refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
            let mut parity: Vec<Vec<u8>> = (0..m).map(|_| vec![0u8; len]).collect();
            let mut prefs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
            code.encode(&refs, &mut prefs).unwrap();
            parity
        };
        let mut parity = encode(&data);
        let j = changed.index(k);
        let new_shard = random_bytes(&mut rng, len);
        let delta: Vec<u8> = data[j].iter().zip(&new_shard).map(|(a, b)| a ^ b).collect();
        data[j] = new_shard;
        {
            let mut prefs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
            code.apply_delta(j, &delta, &mut prefs).unwrap();
        }
        prop_assert_eq!(parity, encode(&data));
    }
}

//! Property tests: encode agrees with a byte-wise reference, every erasure
//! set of up to m shards reconstructs exactly, and read-modify-write deltas
//! equal a full re-encode. Shapes, lengths (aligned or not) and data vary.

mod common;

use common::{random_bytes, reference_parity, rng, subsets_up_to, Stripe};
use eraid_codes::{CodeError, MatrixCode};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Raid5,
    Raid6,
    ReedSolomon,
    Cauchy,
}

fn make_code(kind: Kind, k: usize, m: usize) -> MatrixCode {
    match kind {
        Kind::Raid5 => MatrixCode::raid5(k),
        Kind::Raid6 => MatrixCode::raid6_pq(k),
        Kind::ReedSolomon => MatrixCode::reed_solomon(k, m),
        Kind::Cauchy => MatrixCode::cauchy(k, m),
    }
}

/// (kind, k, m) within the range each code is MDS for (RS: k <= 21 with m
/// <= 4 is in ISA-L's listed safe set).
fn code_shape() -> impl Strategy<Value = (Kind, usize, usize)> {
    prop_oneof![
        (1..=12usize).prop_map(|k| (Kind::Raid5, k, 1)),
        (1..=12usize).prop_map(|k| (Kind::Raid6, k, 2)),
        (1..=12usize, 0..=4usize).prop_map(|(k, m)| (Kind::ReedSolomon, k, m)),
        (1..=12usize, 0..=5usize).prop_map(|(k, m)| (Kind::Cauchy, k, m)),
    ]
}

/// Shard lengths: arbitrary small ones (ISA-L's scalar tails and overlapped
/// last blocks), multiples of 32 (pq_gen's rule), and eraid-like 4 KiB.
fn shard_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        1..=300usize,
        (1..=20usize).prop_map(|n| n * 32),
        Just(4096usize)
    ]
}

/// 0 = 64-byte aligned (fast paths eligible), else off by that many bytes.
fn misalign() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1..32usize]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn encode_matches_reference_and_every_erasure_set_reconstructs(
        (kind, k, m) in code_shape(),
        len in shard_len(),
        misalign in misalign(),
        seed in any::<u64>(),
    ) {
        let code = make_code(kind, k, m);
        prop_assert_eq!((code.data_count(), code.parity_count()), (k, m));
        let mut rng = rng(seed);
        let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
        let mut stripe = Stripe::new(&data, m, misalign);
        stripe.encode(&code);
        prop_assert_eq!(stripe.parity(), reference_parity(code.coding_rows(), &stripe.data()));

        let original = stripe.snapshot();
        for erased in subsets_up_to(k + m, m) {
            let mut present = vec![true; k + m];
            for &e in &erased {
                present[e] = false;
                // Garbage, so a reconstruction that skips a shard is caught.
                stripe.shards[e].as_mut().fill(0xA5);
            }
            code.reconstruct(&mut stripe.all_mut(), &present).expect("reconstruct");
            prop_assert_eq!(&stripe.snapshot(), &original, "erased {:?}", erased);
        }

        // One more erasure than parity is never recoverable.
        let mut present = vec![true; k + m];
        present[..=m].iter_mut().for_each(|p| *p = false);
        prop_assert_eq!(
            code.reconstruct(&mut stripe.all_mut(), &present),
            Err(CodeError::TooFewShards { present: k - 1, needed: k })
        );
    }

    #[test]
    fn apply_delta_equals_reencode(
        (kind, k, m) in code_shape(),
        len in shard_len(),
        misalign in misalign(),
        index_seed in any::<usize>(),
        seed in any::<u64>(),
    ) {
        let code = make_code(kind, k, m);
        let mut rng = rng(seed);
        let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
        let mut stripe = Stripe::new(&data, m, misalign);
        stripe.encode(&code);

        let index = index_seed % k;
        let new_bytes = random_bytes(&mut rng, len);
        let delta: Vec<u8> = data[index].iter().zip(&new_bytes).map(|(o, n)| o ^ n).collect();
        let delta = common::Buf::from_bytes(&delta, misalign);
        {
            let mut parity: Vec<&mut [u8]> =
                stripe.shards[k..].iter_mut().map(common::Buf::as_mut).collect();
            code.apply_delta(index, delta.as_ref(), &mut parity).expect("apply_delta");
        }

        let mut new_data = data.clone();
        new_data[index] = new_bytes;
        let mut fresh = Stripe::new(&new_data, m, misalign);
        fresh.encode(&code);
        prop_assert_eq!(stripe.parity(), fresh.parity());
    }

    /// The one-step read-modify-write (`update_parity`, old and new data
    /// in) leaves every parity shard exactly as the delta path did
    /// (`apply_delta` with old XOR new): random codes, lengths, starting
    /// parity (not necessarily consistent) and a separate offset for each
    /// buffer, so aligned and unaligned kernels both meet.
    #[test]
    fn update_parity_equals_apply_delta(
        (kind, k, m) in code_shape(),
        len in shard_len(),
        offsets in proptest::array::uniform4(misalign()),
        index_seed in any::<usize>(),
        seed in any::<u64>(),
    ) {
        let code = make_code(kind, k, m);
        let mut rng = rng(seed);
        let index = index_seed % k;
        let [old_offset, new_offset, parity_offset, delta_offset] = offsets;
        let old = common::Buf::from_bytes(&random_bytes(&mut rng, len), old_offset);
        let new = common::Buf::from_bytes(&random_bytes(&mut rng, len), new_offset);
        let start: Vec<Vec<u8>> = (0..m).map(|_| random_bytes(&mut rng, len)).collect();

        let mut by_update: Vec<common::Buf> =
            start.iter().map(|p| common::Buf::from_bytes(p, parity_offset)).collect();
        {
            let mut refs: Vec<&mut [u8]> = by_update.iter_mut().map(common::Buf::as_mut).collect();
            code.update_parity(index, old.as_ref(), new.as_ref(), &mut refs)
                .expect("update_parity");
        }

        let delta: Vec<u8> = old.as_ref().iter().zip(new.as_ref()).map(|(o, n)| o ^ n).collect();
        let delta = common::Buf::from_bytes(&delta, delta_offset);
        let mut by_delta: Vec<common::Buf> =
            start.iter().map(|p| common::Buf::from_bytes(p, parity_offset)).collect();
        {
            let mut refs: Vec<&mut [u8]> = by_delta.iter_mut().map(common::Buf::as_mut).collect();
            code.apply_delta(index, delta.as_ref(), &mut refs).expect("apply_delta");
        }
        let bytes = |bufs: &[common::Buf]| -> Vec<Vec<u8>> {
            bufs.iter().map(|b| b.as_ref().to_vec()).collect()
        };
        prop_assert_eq!(bytes(&by_update), bytes(&by_delta));
        // And both equal the byte-wise reference: start ^ G[i][index] * delta.
        let reference: Vec<Vec<u8>> = start
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let g = code.coding_rows()[i * k + index];
                p.iter().zip(delta.as_ref()).map(|(&p, &d)| p ^ eraid_codes::isal::gf_mul(g, d)).collect()
            })
            .collect();
        prop_assert_eq!(bytes(&by_update), reference);
    }

    /// `update_parity` walks long shards in pieces (RAID-5 and RAID-6 in
    /// vectors with a tail, other codes in `UPDATE_CHUNK_BYTES` pieces): at
    /// lengths just around one, two and three pieces, with every buffer at
    /// its own offset from alignment, every parity byte still equals the
    /// byte-wise reference, start ^ G[i][index] * (old ^ new).
    #[test]
    fn update_parity_across_pieces_matches_reference(
        (kind, k, m) in code_shape(),
        pieces in 1..=3usize,
        around in 0..=80usize,
        offsets in proptest::array::uniform3(misalign()),
        index_seed in any::<usize>(),
        seed in any::<u64>(),
    ) {
        let len = pieces * MatrixCode::UPDATE_CHUNK_BYTES + around - 40;
        let code = make_code(kind, k, m);
        let mut rng = rng(seed);
        let index = index_seed % k;
        let [old_offset, new_offset, parity_offset] = offsets;
        let old = common::Buf::from_bytes(&random_bytes(&mut rng, len), old_offset);
        let new = common::Buf::from_bytes(&random_bytes(&mut rng, len), new_offset);
        let start: Vec<Vec<u8>> = (0..m).map(|_| random_bytes(&mut rng, len)).collect();
        let mut updated: Vec<common::Buf> =
            start.iter().map(|p| common::Buf::from_bytes(p, parity_offset)).collect();
        {
            let mut refs: Vec<&mut [u8]> = updated.iter_mut().map(common::Buf::as_mut).collect();
            code.update_parity(index, old.as_ref(), new.as_ref(), &mut refs)
                .expect("update_parity");
        }
        for (i, (p, start)) in updated.iter().zip(&start).enumerate() {
            let g = code.coding_rows()[i * k + index];
            let reference: Vec<u8> = start
                .iter()
                .zip(old.as_ref().iter().zip(new.as_ref()))
                .map(|(&s, (&o, &n))| s ^ eraid_codes::isal::gf_mul(g, o ^ n))
                .collect();
            prop_assert!(p.as_ref() == &reference[..], "parity {} of {:?} k={} m={} len={}", i, kind, k, m, len);
        }
    }
}

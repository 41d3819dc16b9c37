//! The concrete codes: RAID-5/RAID-6 parity against independent references,
//! and the generator matrices against what ISA-L itself generates.

mod common;

use common::{random_bytes, rng, Buf, Stripe};
use eraid_codes::{isal, MatrixCode};

#[test]
fn raid5_row_is_all_ones_and_parity_is_xor() {
    for k in [1, 2, 3, 4, 8, 17] {
        let code = MatrixCode::raid5(k);
        assert_eq!(code.coding_rows(), vec![1u8; k].as_slice());
        for (len, misalign) in [(4096, 0), (4096, 3), (100, 0), (1, 0)] {
            let mut rng = rng(k as u64 * 7 + len as u64);
            let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
            let mut stripe = Stripe::new(&data, 1, misalign);
            stripe.encode(&code);
            let xor: Vec<u8> = (0..len)
                .map(|b| data.iter().fold(0, |acc, d| acc ^ d[b]))
                .collect();
            assert_eq!(
                stripe.parity(),
                vec![xor],
                "k={k} len={len} misalign={misalign}"
            );
        }
    }
}

/// Q = sum_j gf_mul(2^j, d_j), with the powers of two built by ISA-L's own
/// `gf_mul`, and P = XOR; at k up to 254 where 2^j wraps the field.
#[test]
fn raid6_p_is_xor_and_q_matches_gf_mul_reference() {
    for k in [1, 2, 3, 4, 8, 16, 31, 254] {
        let code = MatrixCode::raid6_pq(k);
        for (len, misalign) in [(4096, 0), (512, 0), (4096, 5), (96, 0), (33, 0), (7, 1)] {
            let mut rng = rng(k as u64 * 1000 + len as u64 + misalign as u64);
            let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, len)).collect();
            let mut stripe = Stripe::new(&data, 2, misalign);
            stripe.encode(&code);
            let p: Vec<u8> = (0..len)
                .map(|b| data.iter().fold(0, |acc, d| acc ^ d[b]))
                .collect();
            let q: Vec<u8> = (0..len)
                .map(|b| {
                    let mut g = 1u8;
                    let mut acc = 0u8;
                    for d in &data {
                        acc ^= isal::gf_mul(g, d[b]);
                        g = isal::gf_mul(g, 2);
                    }
                    acc
                })
                .collect();
            assert_eq!(
                stripe.parity(),
                vec![p, q],
                "k={k} len={len} misalign={misalign}"
            );
        }
    }
}

/// Fixed values of Linux MD's field (0x11D), so a wrong polynomial in the
/// whole stack, reference included, still fails.
#[test]
fn raid6_q_known_values() {
    let code = MatrixCode::raid6_pq(3);
    let (d0, d1, d2) = ([0x01u8; 64], [0x80u8; 64], [0x80u8; 64]);
    let (mut p, mut q) = ([0u8; 64], [0u8; 64]);
    code.encode(&[&d0, &d1, &d2], &mut [&mut p, &mut q])
        .unwrap();
    // Q = 1*0x01 + 2*0x80 + 4*0x80 = 0x01 ^ 0x1D ^ 0x3A
    assert_eq!(q, [0x01 ^ 0x1D ^ 0x3A; 64]);
    assert_eq!(p, [0x01; 64]);
    assert_eq!(&code.coding_rows()[3..], &[1, 2, 4]);
}

/// pq_gen and xor_gen really are used (return true) for aligned buffers of
/// eraid's sizes, and agree with the general ec_encode_data path.
#[test]
fn isal_fast_paths_agree_with_ec_encode_data() {
    for k in [2, 4, 8] {
        let mut rng = rng(k as u64);
        let data: Vec<Buf> = (0..k)
            .map(|_| Buf::from_bytes(&random_bytes(&mut rng, 4096), 0))
            .collect();
        let srcs: Vec<&[u8]> = data.iter().map(Buf::as_ref).collect();

        let code = MatrixCode::raid6_pq(k);
        let tables = isal::EcTables::new(k, 2, code.coding_rows());
        let (mut p_gen, mut q_gen) = (vec![0u8; 4096], vec![0u8; 4096]);
        isal::ec_encode_data(&tables, &srcs, &mut [&mut p_gen, &mut q_gen]);
        let (mut p, mut q) = (Buf::new(4096, 0), Buf::new(4096, 0));
        assert!(
            isal::pq_gen(&srcs, p.as_mut(), q.as_mut()),
            "pq_gen refused aligned input"
        );
        assert_eq!((p.as_ref(), q.as_ref()), (&p_gen[..], &q_gen[..]));

        let mut x = Buf::new(4096, 0);
        assert!(
            isal::xor_gen(&srcs, x.as_mut()),
            "xor_gen refused aligned input"
        );
        assert_eq!(x.as_ref(), &p_gen[..]);
    }
}

#[test]
fn raid6_is_reed_solomon_rows_k_and_k_plus_1() {
    for k in [1, 4, 10, 100, 254] {
        let full = isal::gf_gen_rs_matrix(k + 2, k);
        assert_eq!(MatrixCode::raid6_pq(k).coding_rows(), &full[k * k..]);
        assert_eq!(MatrixCode::reed_solomon(k, 2).coding_rows(), &full[k * k..]);
    }
}

#[test]
fn reed_solomon_rows_match_isal_and_are_powers() {
    for (k, m) in [(1, 1), (4, 2), (8, 3), (10, 4), (20, 4)] {
        let full = isal::gf_gen_rs_matrix(k + m, k);
        let code = MatrixCode::reed_solomon(k, m);
        assert_eq!(code.coding_rows(), &full[k * k..]);
        // Row r, column j = (2^r)^j: checks the layout we slice out, not
        // just that we called the same function twice.
        let mut generator = 1u8;
        for r in 0..m {
            let mut expected = 1u8;
            for j in 0..k {
                assert_eq!(
                    code.coding_rows()[r * k + j],
                    expected,
                    "RS k={k} m={m} r={r} j={j}"
                );
                expected = isal::gf_mul(expected, generator);
            }
            generator = isal::gf_mul(generator, 2);
        }
    }
}

#[test]
fn cauchy_rows_match_isal_and_are_inverses_of_i_xor_j() {
    for (k, m) in [(1, 1), (4, 2), (8, 3), (10, 4), (200, 56)] {
        let full = isal::gf_gen_cauchy1_matrix(k + m, k);
        let code = MatrixCode::cauchy(k, m);
        assert_eq!(code.coding_rows(), &full[k * k..]);
        for r in 0..m {
            for j in 0..k {
                let i = (k + r) as u8;
                let c = code.coding_rows()[r * k + j];
                assert_eq!(
                    isal::gf_mul(c, i ^ j as u8),
                    1,
                    "Cauchy k={k} m={m} r={r} j={j}"
                );
            }
        }
    }
}

/// Big codes work end to end: a wide Cauchy code losing its maximum.
#[test]
fn wide_cauchy_reconstructs_max_erasures() {
    let (k, m) = (200, 56);
    let code = MatrixCode::cauchy(k, m);
    let mut rng = rng(99);
    let data: Vec<Vec<u8>> = (0..k).map(|_| random_bytes(&mut rng, 512)).collect();
    let mut stripe = Stripe::new(&data, m, 0);
    stripe.encode(&code);
    let original = stripe.snapshot();
    // Lose every 4th data shard (50) and 6 parity shards: 56 erasures.
    let mut present = vec![true; k + m];
    for i in (0..k).step_by(4).chain(k..k + 6) {
        present[i] = false;
        stripe.shards[i].as_mut().fill(0);
    }
    code.reconstruct(&mut stripe.all_mut(), &present).unwrap();
    assert_eq!(stripe.snapshot(), original);
}

#[test]
fn shared_across_threads() {
    let code = MatrixCode::cauchy(4, 2);
    let data = [[7u8; 512]; 4];
    let results: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let (mut p, mut q) = (vec![0u8; 512], vec![0u8; 512]);
                    let srcs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
                    code.encode(&srcs, &mut [&mut p, &mut q]).unwrap();
                    [p, q].concat()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results[0], results[1]);
}

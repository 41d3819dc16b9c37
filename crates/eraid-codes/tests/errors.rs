//! Misuse and impossible requests come back as `CodeError`s, never panics.

use eraid_codes::{CodeError, MatrixCode};

fn is_bad_shape<T: std::fmt::Debug>(r: Result<T, CodeError>) -> bool {
    matches!(r, Err(CodeError::BadShape(_)))
}

#[test]
fn new_rejects_bad_shapes() {
    assert!(is_bad_shape(MatrixCode::new(0, 1, vec![])));
    assert!(is_bad_shape(MatrixCode::new(4, 2, vec![1; 7])));
    assert!(is_bad_shape(MatrixCode::new(250, 7, vec![1; 250 * 7])));
    assert!(MatrixCode::new(250, 6, vec![1; 250 * 6]).is_ok());
    // No parity at all is a valid (RAID-0) code.
    assert!(MatrixCode::new(3, 0, vec![]).is_ok());
}

#[test]
fn encode_rejects_wrong_counts_and_lengths() {
    let code = MatrixCode::raid6_pq(3);
    let d = [[0u8; 64]; 4];
    let (mut p, mut q, mut r) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    let short = [0u8; 32];
    let err = code.encode(&[&d[0], &d[1]], &mut [&mut p, &mut q]);
    assert!(is_bad_shape(err.clone()), "{err:?}");
    assert!(is_bad_shape(
        code.encode(&[&d[0], &d[1], &d[2], &d[3]], &mut [&mut p, &mut q])
    ));
    assert!(is_bad_shape(
        code.encode(&[&d[0], &d[1], &d[2]], &mut [&mut p])
    ));
    assert!(is_bad_shape(
        code.encode(&[&d[0], &d[1], &d[2]], &mut [&mut p, &mut q, &mut r])
    ));
    let err = code.encode(&[&d[0], &short, &d[2]], &mut [&mut p, &mut q]);
    let Err(CodeError::BadShape(msg)) = err else {
        panic!("expected BadShape, got {err:?}")
    };
    assert!(
        msg.contains("data shard 1 has 32 bytes"),
        "unclear message: {msg}"
    );
    let mut short_q = [0u8; 32];
    assert!(is_bad_shape(
        code.encode(&[&d[0], &d[1], &d[2]], &mut [&mut p, &mut short_q])
    ));
}

#[test]
fn update_parity_rejects_bad_index_and_lengths() {
    let code = MatrixCode::raid6_pq(4);
    let (old, new) = ([1u8; 64], [2u8; 64]);
    let (mut p, mut q) = ([0u8; 64], [0u8; 64]);
    assert!(is_bad_shape(code.update_parity(
        4,
        &old,
        &new,
        &mut [&mut p, &mut q]
    )));
    assert!(is_bad_shape(code.update_parity(
        0,
        &old,
        &new[..63],
        &mut [&mut p, &mut q]
    )));
    assert!(is_bad_shape(code.update_parity(
        0,
        &old,
        &new,
        &mut [&mut p, &mut q[..32]]
    )));
    assert!(is_bad_shape(code.update_parity(
        0,
        &old,
        &new,
        &mut [&mut p]
    )));
    // Nothing was written by the rejected calls.
    assert_eq!((p, q), ([0u8; 64], [0u8; 64]));
}

#[test]
fn apply_delta_rejects_bad_index_and_lengths() {
    let code = MatrixCode::cauchy(4, 2);
    let delta = [1u8; 64];
    let (mut p, mut q) = ([0u8; 64], [0u8; 64]);
    assert!(is_bad_shape(code.apply_delta(
        4,
        &delta,
        &mut [&mut p, &mut q]
    )));
    assert!(is_bad_shape(code.apply_delta(
        0,
        &delta[..63],
        &mut [&mut p, &mut q]
    )));
    assert!(is_bad_shape(code.apply_delta(0, &delta, &mut [&mut p])));
    // Nothing was written by the rejected calls.
    assert_eq!((p, q), ([0u8; 64], [0u8; 64]));
}

#[test]
fn reconstruct_rejects_too_few_and_bad_shapes() {
    let code = MatrixCode::raid6_pq(4);
    let mut bufs = vec![vec![0u8; 512]; 6];
    let mut shards: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
    assert_eq!(
        code.reconstruct(&mut shards, &[false, false, false, true, true, true]),
        Err(CodeError::TooFewShards {
            present: 3,
            needed: 4
        })
    );
    assert_eq!(
        code.reconstruct(&mut shards, &[false; 6]),
        Err(CodeError::TooFewShards {
            present: 0,
            needed: 4
        })
    );
    assert!(is_bad_shape(code.reconstruct(&mut shards, &[true; 5])));
    assert!(is_bad_shape(code.reconstruct(&mut shards[..5], &[true; 5])));
    let mut odd = vec![0u8; 100];
    shards[5] = &mut odd;
    assert!(is_bad_shape(code.reconstruct(
        &mut shards,
        &[true, false, true, true, true, true]
    )));
}

/// Two equal parity rows cannot replace two lost data shards.
#[test]
fn reconstruct_reports_singular_matrix() {
    let code = MatrixCode::new(2, 2, vec![1, 1, 1, 1]).unwrap();
    let mut bufs = vec![vec![0u8; 64]; 4];
    let mut shards: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
    assert_eq!(
        code.reconstruct(&mut shards, &[false, false, true, true]),
        Err(CodeError::SingularMatrix)
    );
}

#[test]
fn zero_length_and_zero_parity_are_noops() {
    let code = MatrixCode::raid5(2);
    let empty: [u8; 0] = [];
    let mut p: [u8; 0] = [];
    assert_eq!(code.encode(&[&empty, &empty], &mut [&mut p]), Ok(()));
    let raid0 = MatrixCode::new(2, 0, vec![]).unwrap();
    assert_eq!(raid0.encode(&[&[1u8; 8], &[2u8; 8]], &mut []), Ok(()));
    assert_eq!(raid0.apply_delta(1, &[1u8; 8], &mut []), Ok(()));
}

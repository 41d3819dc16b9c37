//! The pre- and post-scaling coding matrices of the study.
//!
//! Before scaling the array uses Jerasure's matrix for (k, m, w). After
//! scaling, the paper compares two (Section IV):
//! - [`MatrixChoice::Jerasure`]: Jerasure's own matrix for (k + t, m, w)
//!   (Table I). Its row scaling depends on k, so for m >= 3 most old
//!   columns change and read-modify-write must read most unmoved data.
//! - [`MatrixChoice::Optimized`]: the post-scaling matrix of Scale-CRS
//!   (ref. [25], Table II), rebuilt here as the matrix that keeps the k old
//!   columns exactly (unmoved data then never enter a parity update) and
//!   appends t columns that keep the code MDS: the same Cauchy points
//!   Jerasure would use (Y_j = m + j) with its row scaling and with column
//!   scaling that keeps row 0 all ones. For m = 2 Jerasure's best-row table
//!   already extends by prefix, and where it does not, the new second-row
//!   values are the unused nonzero elements with the fewest ones.

use crate::crs::gf2w;
use crate::jerasure;

/// Which post-scaling matrix a case uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatrixChoice {
    Jerasure,
    Optimized,
}

impl MatrixChoice {
    pub const ALL: [MatrixChoice; 2] = [MatrixChoice::Jerasure, MatrixChoice::Optimized];

    /// The name used in the CLI's output and JSON.
    pub fn name(self) -> &'static str {
        match self {
            MatrixChoice::Jerasure => "jerasure",
            MatrixChoice::Optimized => "optimized",
        }
    }
}

/// The pre-scaling matrix: Jerasure's for (k, m, w), m x k row-major; None
/// when k + m > 2^w.
pub fn pre_scaling_matrix(k: usize, m: usize, w: usize) -> Option<Vec<u32>> {
    jerasure::cauchy_good_general_coding_matrix(k, m, w)
}

/// The post-scaling m x (k+t) matrix for `choice`; None when k + t + m >
/// 2^w (no Cauchy matrix of that size exists over GF(2^w)).
pub fn post_scaling_matrix(
    choice: MatrixChoice,
    k: usize,
    t: usize,
    m: usize,
    w: usize,
) -> Option<Vec<u32>> {
    match choice {
        MatrixChoice::Jerasure => jerasure::cauchy_good_general_coding_matrix(k + t, m, w),
        MatrixChoice::Optimized => extend_optimized(&pre_scaling_matrix(k, m, w)?, k, t, m, w),
    }
}

/// The optimised post-scaling matrix grown from `old` (m x k, row-major):
/// `old`'s k columns kept, t columns appended. `old` is Jerasure's matrix
/// for (k, m, w) or one this function made (its columns are Jerasure's
/// Cauchy points with the same row and column scaling), so an array can
/// grow again with it. None when k + t + m > 2^w.
pub fn extend_optimized(old: &[u32], k: usize, t: usize, m: usize, w: usize) -> Option<Vec<u32>> {
    assert_eq!(old.len(), m * k, "old is an m x k matrix");
    let jerasure_new = jerasure::cauchy_good_general_coding_matrix(k + t, m, w)?;
    if keeps_old_columns(old, &jerasure_new, k, t, m) {
        return Some(jerasure_new);
    }
    if m == 2 {
        return Some(extend_two_rows(old, k, t, w));
    }
    Some(extend_scaled_cauchy(old, k, t, m, w))
}

fn keeps_old_columns(old: &[u32], new: &[u32], k: usize, t: usize, m: usize) -> bool {
    (0..m).all(|i| old[i * k..(i + 1) * k] == new[i * (k + t)..i * (k + t) + k])
}

/// m = 2, row 0 all ones: MDS iff the second row's entries are nonzero and
/// distinct. New entries: unused elements, fewest bit-matrix ones first.
fn extend_two_rows(old: &[u32], k: usize, t: usize, w: usize) -> Vec<u32> {
    assert!(
        old[..k].iter().all(|&e| e == 1),
        "Jerasure's row 0 is all ones"
    );
    let mut unused: Vec<u32> = (1..1u32 << w).filter(|e| !old[k..].contains(e)).collect();
    unused.sort_by_key(|&e| (bitmatrix_ones(e, w), e));
    assert!(
        unused.len() >= t,
        "k + t + 2 <= 2^w leaves t unused elements"
    );
    let mut matrix = vec![1u32; k + t];
    matrix.extend_from_slice(&old[k..]);
    matrix.extend_from_slice(&unused[..t]);
    matrix
}

/// Ones in the w x w bit-matrix of `element` (Jerasure's cauchy_n_ones).
fn bitmatrix_ones(element: u32, w: usize) -> u32 {
    let mut total = 0;
    let mut column = element;
    for _ in 0..w {
        total += column.count_ones();
        column = gf2w::multiply(column, 2, w);
    }
    total
}

/// Jerasure's matrix is Cauchy's 1/(X_i + Y_j) with row factors r_i and
/// column factors c_j; keep them for the old columns and append Cauchy
/// columns Y_j = m + j (j >= k) with c_j making row 0 one.
fn extend_scaled_cauchy(old: &[u32], k: usize, t: usize, m: usize, w: usize) -> Vec<u32> {
    let original = jerasure::cauchy_original_coding_matrix(k + t, m, w)
        .expect("the caller checked k + t + m <= 2^w");
    let width = k + t;
    let ratio = |i: usize, j: usize| gf2w::divide(old[i * k + j], original[i * width + j], w);
    let column_factor: Vec<u32> = (0..k).map(|j| ratio(0, j)).collect();
    let row_factor: Vec<u32> = (0..m)
        .map(|i| gf2w::divide(ratio(i, 0), column_factor[0], w))
        .collect();
    for (i, &row) in row_factor.iter().enumerate() {
        for (j, &column) in column_factor.iter().enumerate() {
            assert_eq!(
                ratio(i, j),
                gf2w::multiply(row, column, w),
                "Jerasure's matrix is a row- and column-scaled Cauchy matrix"
            );
        }
    }
    let mut matrix = vec![0u32; m * width];
    for i in 0..m {
        matrix[i * width..i * width + k].copy_from_slice(&old[i * k..(i + 1) * k]);
        for j in k..width {
            let column = gf2w::inverse(original[j], w);
            let scale = gf2w::multiply(row_factor[i], column, w);
            matrix[i * width + j] = gf2w::multiply(scale, original[i * width + j], w);
        }
    }
    matrix
}

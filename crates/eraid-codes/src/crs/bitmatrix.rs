//! Bit-matrices: a GF(2^w) matrix expanded so that each element becomes
//! the w x w binary matrix of "multiply by it", and their inversion over
//! GF(2) for decoding.

use super::gf2w;

/// A dense 0/1 matrix, row-major, one byte per bit (the sizes here are at
/// most a few thousand bits a side, and bytes keep the code obvious).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitMatrix {
    pub rows: usize,
    pub cols: usize,
    pub bits: Vec<u8>,
}

impl BitMatrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            bits: vec![0; rows * cols],
        }
    }

    pub fn get(&self, row: usize, col: usize) -> bool {
        self.bits[row * self.cols + col] == 1
    }

    pub fn set(&mut self, row: usize, col: usize, value: bool) {
        self.bits[row * self.cols + col] = u8::from(value);
    }

    /// The columns set in `row`.
    pub fn ones_in_row(&self, row: usize) -> impl Iterator<Item = usize> + '_ {
        let start = row * self.cols;
        self.bits[start..start + self.cols]
            .iter()
            .enumerate()
            .filter(|(_, &bit)| bit == 1)
            .map(|(col, _)| col)
    }
}

/// Jerasure's `jerasure_matrix_to_bitmatrix`: the m x k GF(2^w) matrix
/// becomes (m*w) x (k*w) bits; block (i, j), column x holds the bits of
/// `matrix[i][j] * 2^x` (bit l in row l), so parity packet l of shard i is
/// the XOR of the data packets x of shard j whose bit is set.
pub fn matrix_to_bitmatrix(k: usize, m: usize, w: usize, matrix: &[u32]) -> BitMatrix {
    assert_eq!(matrix.len(), k * m, "matrix must be m x k");
    let mut bits = BitMatrix::zeros(m * w, k * w);
    for i in 0..m {
        for j in 0..k {
            let mut element = matrix[i * k + j];
            for x in 0..w {
                for l in 0..w {
                    bits.set(i * w + l, j * w + x, (element >> l) & 1 == 1);
                }
                element = gf2w::multiply(element, 2, w);
            }
        }
    }
    bits
}

/// The inverse of a square bit-matrix over GF(2), or None if singular.
pub fn invert_gf2(matrix: &BitMatrix) -> Option<BitMatrix> {
    assert_eq!(matrix.rows, matrix.cols, "only square matrices invert");
    let n = matrix.rows;
    let mut work = matrix.clone();
    let mut inverse = BitMatrix::zeros(n, n);
    for i in 0..n {
        inverse.set(i, i, true);
    }
    for col in 0..n {
        let pivot = (col..n).find(|&row| work.get(row, col))?;
        if pivot != col {
            swap_rows(&mut work, pivot, col);
            swap_rows(&mut inverse, pivot, col);
        }
        for row in 0..n {
            if row != col && work.get(row, col) {
                xor_row(&mut work, row, col);
                xor_row(&mut inverse, row, col);
            }
        }
    }
    Some(inverse)
}

fn swap_rows(matrix: &mut BitMatrix, a: usize, b: usize) {
    for col in 0..matrix.cols {
        matrix
            .bits
            .swap(a * matrix.cols + col, b * matrix.cols + col);
    }
}

/// row `target` ^= row `source`.
fn xor_row(matrix: &mut BitMatrix, target: usize, source: usize) {
    let cols = matrix.cols;
    for col in 0..cols {
        matrix.bits[target * cols + col] ^= matrix.bits[source * cols + col];
    }
}

//! Cauchy Reed-Solomon (CRS) codes: k data and m parity shards, each shard
//! cut into w packets, parity computed with XORs only through the
//! bit-matrix of a Cauchy matrix over GF(2^w) (Blomer et al.; Jerasure's
//! `cauchy_good` technique).

mod bitmatrix;
mod code;
pub mod gf2w;

pub use bitmatrix::{invert_gf2, matrix_to_bitmatrix, BitMatrix};
pub use code::CauchyReedSolomon;

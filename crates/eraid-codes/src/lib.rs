//! Erasure codes for eraid: RAID-5 XOR, RAID-6 P+Q (Linux MD's field and
//! generator), ISA-L Reed-Solomon and Cauchy codes over GF(2^8), all as one
//! [`MatrixCode`] type defined by its coding matrix; and Cauchy
//! Reed-Solomon bit-matrix codes over GF(2^w) ([`CauchyReedSolomon`], with
//! Jerasure's matrices) and the EPU paper's scaling study ([`crs_scaling`]).
//!
//! Every GF(2^8) multiplication runs in ISA-L (see [`isal`]) or, for
//! RAID-6's read-modify-write, looks its products up in ISA-L's own
//! multiplication tables (`pq_update`, one fused AVX2 pass that ISA-L 2.30
//! has no kernel for); this crate chooses matrices, validates shapes and
//! picks ISA-L's fastest correct entry point (`xor_gen`, `pq_gen`,
//! `ec_encode_data` or `ec_encode_data_update`). CRS codes need
//! only XOR; their small-field arithmetic is in [`crs::gf2w`].

pub mod crs;
pub mod crs_scaling;
mod error;
pub mod isal;
pub mod jerasure;
mod matrix_code;
mod pq_update;
mod xor;

pub use crs::CauchyReedSolomon;
pub use error::CodeError;
pub use matrix_code::MatrixCode;
pub use xor::xor_into;

// The array core shares one code between its I/O threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MatrixCode>();
    assert_send_sync::<CauchyReedSolomon>();
};

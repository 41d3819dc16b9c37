//! GF(2^8) erasure codes for eraid: RAID-5 XOR, RAID-6 P+Q (Linux MD's
//! field and generator), ISA-L Reed-Solomon and Cauchy codes, all as one
//! [`MatrixCode`] type defined by its coding matrix.
//!
//! Every field multiplication runs in ISA-L (see [`isal`]); this crate only
//! chooses matrices, validates shapes and picks ISA-L's fastest correct
//! entry point (`xor_gen`, `pq_gen` or `ec_encode_data`).

mod error;
pub mod isal;
mod matrix_code;
mod xor;

pub use error::CodeError;
pub use matrix_code::MatrixCode;
pub use xor::xor_into;

// The array core shares one code between its I/O threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MatrixCode>();
};

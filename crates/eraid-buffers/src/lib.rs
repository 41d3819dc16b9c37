//! Byte buffers for the data path.
//!
//! A write's payload is read from the socket once, into a pooled buffer
//! aligned for O_DIRECT, and then travels as [`bytes::Bytes`] slices of it:
//! the array core splits it over chunks and members without copying, a
//! member opened with O_DIRECT writes it without a bounce copy, and the
//! buffer goes back to its pool when the last slice is dropped.
//!
//! A read goes the other way: a member reads into a pooled buffer
//! ([`ReadBuf`]), and the user's result is the pieces of those buffers
//! ([`ReadData`]), sent to the socket one after another, never joined.

mod aligned;
mod deferred;
mod pool;
mod read_buf;
mod read_data;

pub use aligned::{AlignedBuf, DIRECT_ALIGN_BYTES};
pub use deferred::{Deferred, Recipe};
pub use pool::{BufferPool, PoolCounters, PooledBuf};
pub use read_buf::ReadBuf;
pub use read_data::ReadData;

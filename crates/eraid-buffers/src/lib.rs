//! Byte buffers for the data path.
//!
//! A write's payload is read from the socket once, into a pooled buffer
//! aligned for O_DIRECT, and then travels as [`bytes::Bytes`] slices of it:
//! the array core splits it over chunks and members without copying, a
//! member opened with O_DIRECT writes it without a bounce copy, and the
//! buffer goes back to its pool when the last slice is dropped.

mod aligned;
mod pool;

pub use aligned::{AlignedBuf, DIRECT_ALIGN_BYTES};
pub use pool::{BufferPool, PoolCounters, PooledBuf};

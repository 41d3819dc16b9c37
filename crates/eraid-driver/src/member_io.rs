//! The device interface the I/O pool drives.
//!
//! [`crate::MemberFile`] is the real implementation; the trait exists so
//! tests and fault injection (a device that loses or tears writes, or that
//! stalls) can stand in for a file without touching the engine.

use std::io;

/// Positioned, thread-safe I/O on one array member.
///
/// Implementations are called from several pool threads at once.
pub trait MemberIo: Send + Sync {
    /// How the member is named in messages (its path for files).
    fn label(&self) -> &str;
    /// Returns exactly `len_bytes` bytes; bytes beyond the end of the device
    /// read as zeroes.
    fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>>;
    /// Writes all of `data`, retrying short writes.
    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()>;
    /// Makes every write that completed before this call durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// Makes the range read as zeroes, like a write of zeroes, without a
    /// buffer of its size. The default writes zeroes in bounded pieces.
    fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        crate::zeroing::write_zeroes_in_pieces(offset_bytes, len_bytes, |at, zeroes| {
            self.write_at(at, zeroes)
        })
    }
}

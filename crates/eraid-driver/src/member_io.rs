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
    /// Reads `buf.len()` bytes at `offset_bytes` into `buf` (the data
    /// path's pooled buffer, aligned for O_DIRECT), returning how many it
    /// got; fewer means a short read. The default reads a vector and
    /// copies it; a member that can read in place says so by overriding.
    fn read_into(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        let data = self.read_at(offset_bytes, buf.len())?;
        let got_bytes = data.len().min(buf.len());
        buf[..got_bytes].copy_from_slice(&data[..got_bytes]);
        Ok(data.len())
    }
    /// Writes all of `data`, retrying short writes.
    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()>;
    /// Writes `pieces` one after another from `offset_bytes`, as one write
    /// of them joined. By default they are joined (a copy); a file
    /// member writes them as they are (`pwritev`).
    fn write_vectored_at(&self, offset_bytes: u64, pieces: &[&[u8]]) -> io::Result<()> {
        match pieces {
            [one] => self.write_at(offset_bytes, one),
            _ => self.write_at(offset_bytes, &pieces.concat()),
        }
    }
    /// Makes every write that completed before this call durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// True when the member lives in memory (a file on tmpfs or ramfs, no
    /// O_DIRECT): its reads and writes are memory copies that cannot wait
    /// on a device, so the thread running the request may perform them instead
    /// of handing each to a pool worker (two thread wake-ups per I/O, which
    /// cost more than the copy). Devices that can stall must say false.
    fn memory_backed(&self) -> bool {
        false
    }
    /// Makes the range read as zeroes, like a write of zeroes, without a
    /// buffer of its size. The default writes zeroes in bounded pieces.
    fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        crate::zeroing::write_zeroes_in_pieces(offset_bytes, len_bytes, |at, zeroes| {
            self.write_at(at, zeroes)
        })
    }
}

/// Stands in for a device the array does not use (a member missing or
/// stale at the start, one removed by the operator): every read or write
/// fails cleanly, should the core ever address it.
pub struct DetachedMember {
    pub label: String,
}

impl MemberIo for DetachedMember {
    fn label(&self) -> &str {
        &self.label
    }
    fn read_at(&self, _offset_bytes: u64, _len_bytes: usize) -> io::Result<Vec<u8>> {
        Err(self.not_used())
    }
    fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
        Err(self.not_used())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

impl DetachedMember {
    fn not_used(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is not part of the running array", self.label),
        )
    }
}

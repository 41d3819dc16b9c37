//! The one request record every parser and generator produces.

use serde::{Deserialize, Serialize};

/// Bytes in one sector, the address unit of every supported trace format.
pub const SECTOR_BYTES: u64 = 512;

/// One block request as it arrives at the storage system.
///
/// Times are nanoseconds from the trace's own origin (most formats start near
/// zero; MSR traces are rebased so their first request is at zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TraceRequest {
    /// Arrival time in nanoseconds.
    pub arrival_ns: u64,
    /// Device, disk number or SPC application storage unit (ASU).
    pub device: u32,
    /// Start address in bytes.
    pub offset_bytes: u64,
    /// Length in bytes.
    pub len_bytes: u64,
    /// `true` for a read, `false` for a write.
    pub is_read: bool,
}

impl TraceRequest {
    /// One past the last byte addressed, saturating rather than overflowing
    /// so a hostile trace cannot panic a caller.
    pub fn end_bytes(&self) -> u64 {
        self.offset_bytes.saturating_add(self.len_bytes)
    }
}

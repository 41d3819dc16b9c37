//! Folding addresses into a smaller capacity.

use crate::{TraceRequest, SECTOR_BYTES};

/// Maps a request into `[0, capacity_bytes)` while keeping it sector-aligned
/// and whole.
///
/// How: the capacity is rounded down to whole sectors (C sectors). The start
/// sector is `offset / 512` (an unaligned byte offset is rounded down to its
/// sector), then taken modulo C. A request that would then cross the end is
/// pulled back so that it ends exactly at the capacity. A request longer than
/// the capacity is shortened to the capacity.
///
/// Why this and not `offset mod (C - len)`: with a plain modulo, requests that
/// fit keep their address, so two requests to the same block still touch the
/// same folded block whatever their sizes, and locality survives; only the
/// few requests that straddle the end move.
///
/// `capacity_bytes` below one sector leaves the request unchanged;
/// [`super::TraceOptions::validate`] rejects such a capacity.
pub fn fold_request(request: TraceRequest, capacity_bytes: u64) -> TraceRequest {
    let capacity_sectors = capacity_bytes / SECTOR_BYTES;
    if capacity_sectors == 0 {
        return request;
    }
    let len_bytes = request.len_bytes.min(capacity_sectors * SECTOR_BYTES);
    let len_sectors = len_bytes.div_ceil(SECTOR_BYTES);
    let mut start_sector = (request.offset_bytes / SECTOR_BYTES) % capacity_sectors;
    if start_sector + len_sectors > capacity_sectors {
        start_sector = capacity_sectors - len_sectors;
    }
    TraceRequest {
        offset_bytes: start_sector * SECTOR_BYTES,
        len_bytes,
        ..request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(offset_bytes: u64, len_bytes: u64) -> TraceRequest {
        TraceRequest {
            arrival_ns: 7,
            device: 1,
            offset_bytes,
            len_bytes,
            is_read: true,
        }
    }

    #[test]
    fn fitting_requests_wrap_by_modulo() {
        let folded = fold_request(request(10_240 + 1024, 512), 10_240);
        assert_eq!((folded.offset_bytes, folded.len_bytes), (1024, 512));
        assert_eq!((folded.arrival_ns, folded.device), (7, 1));
    }

    #[test]
    fn straddling_requests_end_at_capacity() {
        let folded = fold_request(request(9_728, 4096), 10_240);
        assert_eq!((folded.offset_bytes, folded.len_bytes), (6_144, 4096));
    }

    #[test]
    fn oversized_requests_are_shortened_and_unaligned_offsets_rounded_down() {
        let folded = fold_request(request(100, 1 << 20), 10_000);
        assert_eq!((folded.offset_bytes, folded.len_bytes), (0, 9_728));
        let folded = fold_request(request(1_000, 100), 10_240);
        assert_eq!((folded.offset_bytes, folded.len_bytes), (512, 100));
    }
}

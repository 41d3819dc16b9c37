//! Property tests: folding keeps every request inside the capacity, aligned
//! and whole, and the replay adapter preserves that.

use eraid_trace::options::fold_request;
use eraid_trace::{TraceOptions, TraceRequest, SECTOR_BYTES};
use proptest::prelude::*;

fn request() -> impl Strategy<Value = TraceRequest> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u64>(),
        0u64..(1 << 24),
        any::<bool>(),
    )
        .prop_map(
            |(arrival_ns, device, sector, len_bytes, is_read)| TraceRequest {
                arrival_ns,
                device,
                // Real traces address in sectors; keep offsets aligned and in range.
                offset_bytes: (sector % (u64::MAX / SECTOR_BYTES)) * SECTOR_BYTES,
                len_bytes,
                is_read,
            },
        )
}

proptest! {
    #[test]
    fn folded_requests_lie_inside_and_stay_aligned(
        request in request(),
        capacity_bytes in SECTOR_BYTES..(1u64 << 40),
    ) {
        let folded = fold_request(request, capacity_bytes);
        prop_assert_eq!(folded.offset_bytes % SECTOR_BYTES, 0);
        prop_assert!(folded.offset_bytes + folded.len_bytes <= capacity_bytes);
        prop_assert!(folded.len_bytes <= request.len_bytes);
        prop_assert_eq!(
            (folded.arrival_ns, folded.device, folded.is_read),
            (request.arrival_ns, request.device, request.is_read)
        );
        let whole_sectors = capacity_bytes / SECTOR_BYTES * SECTOR_BYTES;
        if request.len_bytes <= whole_sectors {
            prop_assert_eq!(folded.len_bytes, request.len_bytes);
        }
    }

    #[test]
    fn requests_that_fit_keep_their_address_modulo_capacity(
        request in request(),
        capacity_sectors in 1u64..(1 << 30),
    ) {
        let capacity_bytes = capacity_sectors * SECTOR_BYTES;
        let folded = fold_request(request, capacity_bytes);
        let modulo = request.offset_bytes % capacity_bytes;
        if modulo + request.len_bytes <= capacity_bytes {
            prop_assert_eq!(folded.offset_bytes, modulo);
        }
    }

    #[test]
    fn unaligned_offsets_are_aligned_too(
        offset_bytes in any::<u64>(),
        len_bytes in 0u64..100_000,
        capacity_bytes in SECTOR_BYTES..(1u64 << 36),
    ) {
        let request = TraceRequest { arrival_ns: 0, device: 0, offset_bytes, len_bytes, is_read: false };
        let folded = fold_request(request, capacity_bytes);
        prop_assert_eq!(folded.offset_bytes % SECTOR_BYTES, 0);
        prop_assert!(folded.offset_bytes + folded.len_bytes <= capacity_bytes);
    }

    #[test]
    fn the_replay_adapter_folds_every_request(
        requests in proptest::collection::vec(request(), 0..50),
        capacity_bytes in SECTOR_BYTES..(1u64 << 32),
        loop_count in 1u32..4,
    ) {
        let options = TraceOptions {
            fold_capacity_bytes: Some(capacity_bytes),
            loop_count,
            ..TraceOptions::default()
        };
        let n = requests.len();
        let out: Vec<TraceRequest> = options
            .apply(requests.into_iter().map(Ok))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(out.len(), n * loop_count as usize);
        for r in out {
            prop_assert_eq!(r.offset_bytes % SECTOR_BYTES, 0);
            prop_assert!(r.offset_bytes + r.len_bytes <= capacity_bytes);
        }
    }
}

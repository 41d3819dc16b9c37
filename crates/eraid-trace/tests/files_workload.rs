//! The `files` address pattern (DBench-like concurrent file writers on an
//! ext3-like allocator, for the MSC-CT paper's Fig. 13): windows are handed
//! out in order from one cursor, each window belongs to one file, files of
//! concurrent clients interleave, and a file's end leaves its window's rest
//! unwritten.

use eraid_trace::synthetic::{
    AddressPattern, ArrivalProcess, OpenLoop, SizeDistribution, WorkloadSpec,
};
use std::collections::{BTreeMap, BTreeSet};

const WINDOW_BYTES: u64 = 32 << 10;

fn spec(clients: u32, capacity_bytes: u64) -> WorkloadSpec {
    WorkloadSpec {
        seed: 5,
        capacity_bytes,
        device: 0,
        alignment_bytes: 4096,
        read_fraction: 0.0,
        size: SizeDistribution::Fixed { bytes: 4096 },
        address: AddressPattern::Files {
            clients,
            file_bytes_mean: 20 << 10,
            reservation_bytes: WINDOW_BYTES,
        },
        arrival: ArrivalProcess::Poisson { rate_iops: 1000.0 },
    }
}

/// Offsets of `count` requests (well before the cursor wraps).
fn offsets(clients: u32, count: usize) -> Vec<u64> {
    OpenLoop::new(&spec(clients, 1 << 30))
        .unwrap()
        .take(count)
        .map(|r| r.offset_bytes)
        .collect()
}

#[test]
fn one_client_writes_in_order_leaving_gaps_at_file_ends() {
    let offsets = offsets(1, 5000);
    assert!(offsets.windows(2).all(|w| w[1] > w[0]), "ascending");
    let gaps = offsets.windows(2).filter(|w| w[1] != w[0] + 4096).count();
    // Files of 20 KiB on average in 32 KiB windows: most files leave a gap.
    assert!(gaps > 500, "{gaps} gaps in 5000 writes");
    // A gap never crosses into a third window: it only skips a window's rest.
    for w in offsets.windows(2) {
        assert!(w[1] / WINDOW_BYTES <= w[0] / WINDOW_BYTES + 2, "{w:?}");
    }
}

#[test]
fn concurrent_clients_interleave_their_windows() {
    let offsets = offsets(16, 20_000);
    let unique: BTreeSet<u64> = offsets.iter().copied().collect();
    assert_eq!(unique.len(), offsets.len(), "no block written twice");
    // Within each window, writes go up in order (one file writes it).
    let mut last_in_window: BTreeMap<u64, u64> = BTreeMap::new();
    for &offset in &offsets {
        if let Some(&last) = last_in_window.get(&(offset / WINDOW_BYTES)) {
            assert!(offset > last, "window of {offset} written out of order");
        }
        last_in_window.insert(offset / WINDOW_BYTES, offset);
    }
    // Many consecutive requests land in different windows (interleaved).
    let switches = offsets
        .windows(2)
        .filter(|w| w[0] / WINDOW_BYTES != w[1] / WINDOW_BYTES)
        .count();
    assert!(switches > 15_000, "{switches} window switches in 20000");
}

#[test]
fn the_cursor_wraps_inside_the_capacity() {
    let capacity = 4 << 20;
    let requests: Vec<_> = OpenLoop::new(&spec(8, capacity))
        .unwrap()
        .take(10_000)
        .collect();
    assert!(requests.iter().all(|r| r.offset_bytes + 4096 <= capacity));
    assert!(requests.iter().any(|r| r.offset_bytes < WINDOW_BYTES));
}

#[test]
fn bad_settings_are_named() {
    let with = |clients, mean, window| WorkloadSpec {
        address: AddressPattern::Files {
            clients,
            file_bytes_mean: mean,
            reservation_bytes: window,
        },
        ..spec(1, 1 << 30)
    };
    for (bad, expected) in [
        (with(0, 1 << 14, WINDOW_BYTES), "clients"),
        (with(4, 0, WINDOW_BYTES), "file_bytes_mean"),
        (with(4, 1 << 14, 4000), "reservation_bytes"),
        (with(4, 1 << 14, 2048), "reservation_bytes"),
    ] {
        let error = bad.validate().unwrap_err().to_string();
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

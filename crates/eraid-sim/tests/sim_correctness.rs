//! With `DataMode::Store` the simulated members keep bytes and the driver
//! checks every user read against what user writes stored: random data
//! written through the array and read back must match, at every level.

mod sim_common;

use eraid_core::geometry::Level;
use eraid_sim::driver::{run, DataMode, FeedSpec, SyntheticSource};
use eraid_trace::synthetic::{AddressPattern, ArrivalProcess, SizeDistribution, WorkloadSpec};
use eraid_trace::TraceRequest;
use sim_common::small_array;

/// Writes of assorted sizes and alignments, spaced so they never overlap in
/// time (so every later read has one right answer), then reads of exactly
/// those ranges and of ranges straddling them.
const WRITES: u64 = 80;

fn write_then_read() -> Vec<TraceRequest> {
    let mut requests = Vec::new();
    let mut x: u64 = 12345;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut ranges = Vec::new();
    for i in 0..WRITES {
        let offset = next() % (20 << 20) / 512 * 512;
        let len = (1 + next() % 512) * 512;
        ranges.push((offset, len));
        requests.push(TraceRequest {
            arrival_ns: i * 200_000_000,
            device: 0,
            offset_bytes: offset,
            len_bytes: len,
            is_read: false,
        });
    }
    for (i, &(offset, len)) in ranges.iter().enumerate() {
        let at = 30_000_000_000 + i as u64 * 5_000_000;
        requests.push(TraceRequest {
            arrival_ns: at,
            device: 0,
            offset_bytes: offset,
            len_bytes: len,
            is_read: true,
        });
        let wide = offset.saturating_sub(4096);
        requests.push(TraceRequest {
            arrival_ns: at + 1,
            device: 0,
            offset_bytes: wide,
            len_bytes: len + 8192,
            is_read: true,
        });
    }
    requests
}

#[test]
fn bytes_written_are_read_back_at_every_level() {
    for (level, disks) in [
        (Level::Raid0, 3),
        (Level::Raid5, 4),
        (Level::Raid6, 5),
        (Level::Raid10, 4),
    ] {
        let mut config = small_array(level, disks, 32);
        config.data_mode = DataMode::Store;
        let report = run(&config, &FeedSpec::Requests(write_then_read())).expect("run");
        assert_eq!(report.failed_requests, 0, "{level:?}");
        assert_eq!(
            report.data_checked_reads,
            2 * WRITES,
            "{level:?}: every read is checkable"
        );
        assert_eq!(report.data_mismatches, 0, "{level:?}");
    }
}

#[test]
fn concurrent_random_io_reads_what_was_written() {
    let mut config = small_array(Level::Raid5, 4, 16);
    config.data_mode = DataMode::Store;
    config.max_requests = Some(1500);
    let spec = WorkloadSpec {
        seed: 9,
        capacity_bytes: 4 << 20,
        device: 0,
        alignment_bytes: 512,
        read_fraction: 0.5,
        size: SizeDistribution::UniformSet {
            sizes_bytes: vec![512, 4096, 65536, 200_704],
        },
        address: AddressPattern::Uniform,
        arrival: ArrivalProcess::Poisson { rate_iops: 100.0 },
    };
    let feed = FeedSpec::Synthetic {
        source: SyntheticSource::Spec(Box::new(spec)),
        outstanding: Some(8),
    };
    let report = run(&config, &feed).expect("run");
    assert_eq!(report.summary.requests, 1500);
    assert!(
        report.data_checked_reads > 100,
        "only {} reads checked",
        report.data_checked_reads
    );
    assert_eq!(report.data_mismatches, 0);
}

/// The write-back cache in the simulator (every policy, RAID-5 and RAID-6):
/// random reads and writes of assorted sizes read back what was written,
/// destages happen, and the final flush leaves nothing dirty.
#[test]
fn cached_random_io_reads_what_was_written() {
    use eraid_core::cache::config::{CacheConfig, CachePolicy};
    for (level, disks) in [(Level::Raid5, 5), (Level::Raid6, 6)] {
        for policy in [CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt] {
            let mut config = small_array(level, disks, 16);
            if let eraid_sim::driver::Target::Array { options, .. } = &mut config.target {
                options.cache = CacheConfig {
                    policy,
                    size_bytes: 2 << 20,
                    ..CacheConfig::default()
                };
            }
            config.data_mode = DataMode::Store;
            config.max_requests = Some(1500);
            config.final_flush = true;
            let spec = WorkloadSpec {
                seed: 11,
                capacity_bytes: 8 << 20,
                device: 0,
                alignment_bytes: 512,
                read_fraction: 0.4,
                size: SizeDistribution::UniformSet {
                    sizes_bytes: vec![512, 4096, 8192, 65536],
                },
                address: AddressPattern::Uniform,
                arrival: ArrivalProcess::Poisson { rate_iops: 100.0 },
            };
            let feed = FeedSpec::Synthetic {
                source: SyntheticSource::Spec(Box::new(spec)),
                outstanding: Some(8),
            };
            let what = format!("{level:?} {policy:?}");
            let report = run(&config, &feed).expect("run");
            assert_eq!(report.summary.requests, 1500, "{what}");
            assert!(report.data_checked_reads > 100, "{what}");
            assert_eq!(
                report.data_mismatches, 0,
                "{what}: {:?}",
                report.data_first_mismatch
            );
            assert!(
                report.engine["cache_destages"] > 0,
                "{what}: {:?}",
                report.engine
            );
            assert_eq!(report.engine["cache_dirty_bytes"], 0, "{what}: flushed");
            assert!(report.flushed_throughput_mb_per_s.is_some(), "{what}");
        }
    }
}

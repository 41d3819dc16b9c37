//! A member failure with a hot spare in the simulator: the engine rebuilds
//! the spare while users run, the rebuild finishes, and every byte written
//! before and during the rebuild reads back right afterwards (the reads of
//! the last phase hit the rebuilt member). The simulator runs the same core
//! engine as `eraid serve`.

mod sim_common;

use eraid_core::geometry::Level;
use eraid_core::rebuild::config::{RebuildConfig, RebuildStrategy};
use eraid_sim::driver::{run, DataMode, FailurePlan, FeedSpec, SimConfig, SimReport};
use eraid_trace::TraceRequest;
use sim_common::small_array;

const MEMBER_MIB: u64 = 16;

fn request(arrival_ms: u64, offset_bytes: u64, len_bytes: u64, is_read: bool) -> TraceRequest {
    TraceRequest {
        arrival_ns: arrival_ms * 1_000_000,
        device: 0,
        offset_bytes,
        len_bytes,
        is_read,
    }
}

/// Writes the whole array in 256 KiB pieces (before the failure at 1 s),
/// then small writes and reads scattered over it during the rebuild, then,
/// from `verify_at_ms`, reads the whole array back.
fn phases(capacity_bytes: u64, verify_at_ms: u64) -> Vec<TraceRequest> {
    let piece = 256 << 10;
    let mut requests = Vec::new();
    let pieces = capacity_bytes / piece;
    for i in 0..pieces {
        requests.push(request(i * 500 / pieces, i * piece, piece, false));
    }
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..400 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let offset = (x % (capacity_bytes - 65536)) / 4096 * 4096;
        let len = [4096, 8192, 65536][(x >> 50) as usize % 3];
        requests.push(request(1_000 + i * 5, offset, len, i % 2 == 0));
    }
    for i in 0..pieces {
        requests.push(request(verify_at_ms + i * 2, i * piece, piece, true));
    }
    requests
}

fn failure_run(
    level: Level,
    disks: usize,
    member: usize,
    strategy: RebuildStrategy,
) -> (SimReport, u64) {
    let mut config: SimConfig = small_array(level, disks, MEMBER_MIB);
    config.data_mode = DataMode::Store;
    let rebuild = RebuildConfig {
        strategy,
        hot_zone_bytes: 1 << 20,
        speed_min_kib_s: 10_000,
        speed_max_kib_s: 30_000,
        ..RebuildConfig::default()
    };
    if let eraid_sim::driver::Target::Array { options, .. } = &mut config.target {
        options.rebuild = rebuild.clone();
    }
    config.failure = Some(FailurePlan {
        member,
        at_ns: 1_000_000_000,
        spare: true,
        config: rebuild,
        until_done: false,
        sample_ns: 100_000_000,
    });
    // A probe run without requests tells the capacity.
    let probe = run(&config, &FeedSpec::Requests(Vec::new())).expect("probe run");
    let capacity = probe.target.capacity_bytes;
    // At the 10 MB/s floor a 16 MiB member is rebuilt within 2 s.
    let verify_at_ms = 20_000;
    let feed = FeedSpec::Requests(phases(capacity, verify_at_ms));
    (run(&config, &feed).expect("run"), verify_at_ms)
}

fn assert_rebuilt_and_right(level: Level, disks: usize, member: usize) {
    for strategy in [
        RebuildStrategy::Pr,
        RebuildStrategy::Pro,
        RebuildStrategy::Dor,
        RebuildStrategy::ProDor,
    ] {
        assert_rebuilt_and_right_by(level, disks, member, strategy);
    }
}

fn assert_rebuilt_and_right_by(
    level: Level,
    disks: usize,
    member: usize,
    strategy: RebuildStrategy,
) {
    let (report, verify_at_ms) = failure_run(level, disks, member, strategy);
    let failure = report.failure.as_ref().expect("a failure report");
    assert_eq!(failure.strategy, strategy.name());
    assert_eq!(failure.status["strategy"], strategy.name());
    let finished = failure
        .rebuild_finished_s
        .unwrap_or_else(|| panic!("the rebuild did not finish: {:?}", failure.status));
    assert!(
        finished < verify_at_ms as f64 / 1e3,
        "finished at {finished} s"
    );
    let time = failure.reconstruction_time_s.expect("reconstruction time");
    assert!(time > 0.0, "reconstruction time {time}");
    assert!(
        failure.requests_during > 0,
        "no user request during the rebuild"
    );
    assert!(!failure.samples.is_empty(), "no rebuild samples");
    assert_eq!(failure.status["state"], "done", "{:?}", failure.status);
    assert_eq!(
        failure.status["rebuilt_bytes"].as_u64(),
        failure.status["total_bytes"].as_u64()
    );
    // The spare (the last drive) was written by the rebuild.
    let spare = report.disks.last().expect("disks");
    assert_eq!(report.disks.len(), disks + 1);
    assert!(spare.ios > 0, "the spare saw no I/O");
    assert_eq!(report.failed_requests, 0);
    let full_reads = report.target.capacity_bytes / (256 << 10);
    assert!(
        report.data_checked_reads >= full_reads,
        "checked {} reads, expected at least {full_reads}",
        report.data_checked_reads
    );
    assert_eq!(
        report.data_mismatches, 0,
        "first mismatch: {:?}",
        report.data_first_mismatch
    );
    // Half the requests during the rebuild are reads: the reads' and the
    // writes' means are reported apart and make up the mean.
    assert!(
        failure.reads_during > 0 && failure.reads_during < failure.requests_during,
        "reads {} of {}",
        failure.reads_during,
        failure.requests_during
    );
    let metrics = report.flat_metrics();
    let number = |key: &str| {
        metrics
            .get(key)
            .and_then(|v| v.as_f64())
            .unwrap_or_else(|| panic!("{key}: {:?}", metrics.get(key)))
    };
    let (all, reads) = (
        number("requests_during_rebuild"),
        number("reads_during_rebuild"),
    );
    let mixed = number("mean_read_response_during_rebuild_ms") * reads
        + number("mean_write_response_during_rebuild_ms") * (all - reads);
    let mean = number("mean_response_during_rebuild_ms");
    assert!(
        (mixed / all - mean).abs() < 1e-6 * mean.max(1.0),
        "reads and writes make {} ms, the mean is {mean} ms",
        mixed / all
    );
    for key in [
        "reconstruction_time_s",
        "mean_response_during_rebuild_ms",
        "mean_read_response_during_rebuild_ms",
        "mean_write_response_during_rebuild_ms",
        "p99_response_during_rebuild_ms",
    ] {
        assert!(
            metrics
                .get(key)
                .and_then(|v| v.as_f64())
                .is_some_and(|v| v > 0.0),
            "{key}: {:?}",
            metrics.get(key)
        );
    }
}

#[test]
fn raid5_spare_is_rebuilt_and_data_reads_back() {
    assert_rebuilt_and_right(Level::Raid5, 3, 1);
}

#[test]
fn raid10_spare_is_rebuilt_and_data_reads_back() {
    assert_rebuilt_and_right(Level::Raid10, 4, 2);
}

#[test]
fn rebuild_runs_are_deterministic() {
    let (a, _) = failure_run(Level::Raid5, 3, 0, RebuildStrategy::Pro);
    let (b, _) = failure_run(Level::Raid5, 3, 0, RebuildStrategy::Pro);
    assert_eq!(
        serde_json::to_string(&a).expect("json"),
        serde_json::to_string(&b).expect("json")
    );
}

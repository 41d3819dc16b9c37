//! What one simulation run reports.

use std::collections::BTreeMap;

use eraid_trace::metrics::{CdfPoint, MetricsSummary, WindowStat};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::failure::FailureReport;
use super::growth::GrowthReport;
use super::stats::{cause_name, CauseCount, DiskReport, CAUSES};
use super::target::TargetInfo;

/// Everything measured in one run. Contains no wall-clock figures, so the
/// same inputs and seed serialise to the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    pub target: TargetInfo,
    pub disk_model: String,
    pub seed: u64,
    /// Response times and throughput of the user requests that succeeded.
    pub summary: MetricsSummary,
    /// User requests the target answered with an error.
    pub failed_requests: u64,
    /// First arrival to last completion (the MSC-CT paper's turnaround time).
    pub turnaround_ms: f64,
    /// Virtual time when the run ended.
    pub simulated_end_s: f64,
    /// Reads and writes submitted to the drive models (flushes excluded).
    pub device_requests: u64,
    pub device_ios_by_cause: BTreeMap<String, CauseCount>,
    /// The engine's own counters (from its status), e.g. `metadata_writes`.
    pub engine: BTreeMap<String, u64>,
    pub disks: Vec<DiskReport>,
    /// Local average and maximum response time per window.
    pub windows: Vec<WindowStat>,
    /// Response-time CDF.
    pub cdf: Vec<CdfPoint>,
    /// `DataMode::Store`: user reads compared with what was written.
    pub data_checked_reads: u64,
    pub data_mismatches: u64,
    /// The first mismatch, described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_first_mismatch: Option<String>,
    /// Runs with disks added: what the growth(s) did and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<GrowthReport>,
    /// Runs with a member failure: the rebuild and what users saw meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureReport>,
    /// Engine I/Os the host block layer merged into another's drive command.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub merged_ios: u64,
    /// User requests that found the array holding `admission_limit`
    /// requests and waited at the host (their response time counts it),
    /// and the most that waited at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_waited_requests: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_queue_max: u64,
    /// The most user requests the array held at once.
    #[serde(default)]
    pub admission_limit: u64,
    /// The run stopped at `[run] max_time_s` with work left.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// `[run] final_flush`: bytes written over first arrival to the final
    /// flush's answer (everything cached is on the drives by then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushed_throughput_mb_per_s: Option<f64>,
}

impl SimReport {
    /// The flat metrics of `summary.json` and the CSV results: response-time
    /// statistics, throughput, per-cause device I/O counts, disk averages and
    /// every engine counter. Keys are sorted, so output order is stable.
    pub fn flat_metrics(&self) -> Map<String, Value> {
        let s = &self.summary;
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        put("requests", json!(s.requests));
        put("reads", json!(s.reads));
        put("writes", json!(s.writes));
        put("failed_requests", json!(self.failed_requests));
        put("host_waited_requests", json!(self.host_waited_requests));
        put("host_queue_max", json!(self.host_queue_max));
        put("mean_response_ms", json!(s.mean_response_ms));
        put("p50_response_ms", json!(s.p50_response_ms));
        put("p90_response_ms", json!(s.p90_response_ms));
        put("p95_response_ms", json!(s.p95_response_ms));
        put("p99_response_ms", json!(s.p99_response_ms));
        put("max_response_ms", json!(s.max_response_ms));
        put("mean_read_response_ms", json!(s.mean_read_response_ms));
        put("mean_write_response_ms", json!(s.mean_write_response_ms));
        put("throughput_iops", json!(s.throughput_iops));
        put("throughput_mb_per_s", json!(s.throughput_bytes_per_s / 1e6));
        put("turnaround_ms", json!(self.turnaround_ms));
        put("device_requests", json!(self.device_requests));
        let mut total = 0;
        for cause in CAUSES {
            let name = cause_name(cause);
            let count = self
                .device_ios_by_cause
                .get(name)
                .copied()
                .unwrap_or_default();
            total += count.ios();
            put(&format!("device_ios_{name}"), json!(count.ios()));
        }
        put("device_ios_total", json!(total));
        // By kind over every cause: the cache's transform-added blocks are
        // `cache_transform_reads` and `cache_transform_writes`.
        let kind =
            |f: fn(&CauseCount) -> u64| self.device_ios_by_cause.values().map(f).sum::<u64>();
        put("device_ios_read", json!(kind(|c| c.reads)));
        put("device_ios_write", json!(kind(|c| c.writes)));
        let disks = self.disks.len().max(1) as f64;
        let mean = |f: fn(&DiskReport) -> f64| self.disks.iter().map(f).sum::<f64>() / disks;
        put("mean_utilisation", json!(mean(|d| d.utilisation)));
        put(
            "max_utilisation",
            json!(self.disks.iter().map(|d| d.utilisation).fold(0.0, f64::max)),
        );
        put("mean_queue_length", json!(mean(|d| d.mean_queue_length)));
        put(
            "mean_seek_cylinders",
            json!(mean(|d| d.mean_seek_cylinders)),
        );
        put("metadata_writes", json!(0));
        for (k, v) in &self.engine {
            put(k, json!(v));
        }
        if self.merged_ios > 0 {
            put("merged_ios", json!(self.merged_ios));
        }
        if self.timed_out {
            put("timed_out", json!(1));
        }
        if let Some(t) = self.flushed_throughput_mb_per_s {
            put("flushed_throughput_mb_per_s", json!(t));
        }
        if let Some(g) = &self.growth {
            let total = self.engine.get("metadata_writes").copied().unwrap_or(0);
            put("array_metadata_writes", json!(total));
            growth_metrics(g, self.summary.requests, &mut put);
        }
        if let Some(f) = &self.failure {
            failure_metrics(f, &mut put);
        }
        m
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The growth's flat metrics. `metadata_writes` becomes the growth's
/// checkpoint updates (the ALV paper's "md updates"); the engine's total of
/// superblock and bitmap writes moves to `array_metadata_writes`.
fn growth_metrics(g: &GrowthReport, requests: u64, put: &mut impl FnMut(&str, Value)) {
    let sum = |k: &str| -> u64 {
        g.steps
            .iter()
            .map(|s| s.status.get(k).and_then(Value::as_u64).unwrap_or(0))
            .sum()
    };
    put("growth_done", json!(u64::from(g.done)));
    put("growth_steps", json!(g.steps.len()));
    put("redistribution_time_s", json!(g.redistribution_time_s));
    if g.steps.len() > 1 {
        for (i, s) in g.steps.iter().enumerate() {
            put(
                &format!("redistribution_time_s_{}", i + 1),
                json!(s.redistribution_time_s),
            );
        }
    }
    if let Some(last) = g.steps.last() {
        put("final_member_count", json!(last.new_member_count));
        let progress = last
            .status
            .get("progress")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        put("growth_progress", json!(progress));
    }
    put("growth_requests", json!(g.requests_during));
    put("growth_mean_response_ms", json!(g.mean_response_ms_during));
    put("growth_p99_response_ms", json!(g.p99_response_ms_during));
    put("growth_max_response_ms", json!(g.max_response_ms_during));
    for k in [
        "redistribution_reads",
        "redistribution_writes",
        "moved_bytes",
        "backup_windows",
        "valve_periods",
        "valve_closed_periods",
        "scaling_read_blocks",
        "scaling_write_blocks",
        "zeroed_bytes",
        "rmw_units",
        "rcw_units",
        "overlap_blocks",
    ] {
        put(k, json!(sum(k)));
    }
    put("metadata_writes", json!(sum("metadata_writes")));
    put(
        "redistribution_ios",
        json!(sum("redistribution_reads") + sum("redistribution_writes")),
    );
    put(
        "redistribution_read_bytes",
        json!(g.redistribution_read_bytes),
    );
    put(
        "redistribution_written_bytes",
        json!(g.redistribution_written_bytes),
    );
    put(
        "sequential_read_mb_s",
        json!(g.sequential.read_bytes_s / 1e6),
    );
    put(
        "sequential_write_mb_s",
        json!(g.sequential.write_bytes_s / 1e6),
    );
    if requests == 0 || g.load == super::growth::GrowthLoad::After {
        put("lower_bound_s", json!(g.lower_bound_s));
        put(
            "lower_bound_busiest_disk_s",
            json!(g.lower_bound_busiest_disk_s),
        );
        if let Some(t) = g.redistribution_time_s {
            put(
                "time_over_lower_bound",
                json!(t / g.lower_bound_s.max(1e-12)),
            );
        }
    }
}

/// The failure's flat metrics (the PRO paper's two figures, Tables 3-4).
fn failure_metrics(f: &FailureReport, put: &mut impl FnMut(&str, Value)) {
    put("failed_member", json!(f.member));
    put(
        "rebuild_done",
        json!(u64::from(f.rebuild_finished_s.is_some())),
    );
    put("reconstruction_time_s", json!(f.reconstruction_time_s));
    put("requests_during_rebuild", json!(f.requests_during));
    put(
        "mean_response_during_rebuild_ms",
        json!(f.mean_response_ms_during),
    );
    put(
        "p99_response_during_rebuild_ms",
        json!(f.p99_response_ms_during),
    );
    put(
        "max_response_during_rebuild_ms",
        json!(f.max_response_ms_during),
    );
    let writes = f.requests_during.saturating_sub(f.reads_during);
    let write_sum_ms = f.mean_response_ms_during * f.requests_during as f64
        - f.mean_read_response_ms_during * f.reads_during as f64;
    put("reads_during_rebuild", json!(f.reads_during));
    put(
        "mean_read_response_during_rebuild_ms",
        json!(f.mean_read_response_ms_during),
    );
    put(
        "mean_write_response_during_rebuild_ms",
        json!(if writes == 0 {
            0.0
        } else {
            write_sum_ms / writes as f64
        }),
    );
    let int = |k: &str| f.status.get(k).and_then(Value::as_u64).unwrap_or(0);
    put("rebuilt_bytes", json!(int("rebuilt_bytes")));
    put(
        "rebuild_progress",
        json!(f
            .status
            .get("progress")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)),
    );
}

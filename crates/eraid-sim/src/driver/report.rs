//! What one simulation run reports.

use std::collections::BTreeMap;

use eraid_trace::metrics::{CdfPoint, MetricsSummary, WindowStat};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

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
        put("mean_response_ms", json!(s.mean_response_ms));
        put("p50_response_ms", json!(s.p50_response_ms));
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
        m
    }
}

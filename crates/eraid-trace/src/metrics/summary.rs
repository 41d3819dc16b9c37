//! The serializable summary of a run.

use serde::{Deserialize, Serialize};

use super::latency::LatencyRecorder;
use super::throughput::ThroughputMeter;

const NS_PER_MS: f64 = 1e6;

/// What an experiment reports for one run; serializes to JSON or TOML.
///
/// Field names follow the simulator issue's `summary.json`: `requests`,
/// `mean_response_ms`, `p50_response_ms`, `p99_response_ms`,
/// `max_response_ms` and `throughput_iops` are there by those names.
/// Empty runs give zeros, never NaN, so the JSON stays valid.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MetricsSummary {
    /// Completed requests.
    pub requests: u64,
    /// Completed reads.
    pub reads: u64,
    /// Completed writes.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub written_bytes: u64,
    /// First arrival to last completion, seconds.
    pub elapsed_s: f64,
    /// Completed requests per second over `elapsed_s`.
    pub throughput_iops: f64,
    /// Bytes moved per second over `elapsed_s`.
    pub throughput_bytes_per_s: f64,
    /// Mean response time.
    pub mean_response_ms: f64,
    /// Median response time.
    pub p50_response_ms: f64,
    /// 90th percentile response time (over a latency bound: more than 10%
    /// of the requests were slower than it).
    #[serde(default)]
    pub p90_response_ms: f64,
    /// 95th percentile response time.
    pub p95_response_ms: f64,
    /// 99th percentile response time.
    pub p99_response_ms: f64,
    /// Longest response time.
    pub max_response_ms: f64,
    /// Mean response time of reads.
    pub mean_read_response_ms: f64,
    /// Mean response time of writes.
    pub mean_write_response_ms: f64,
}

impl MetricsSummary {
    pub(crate) fn from_parts(
        all: &LatencyRecorder,
        reads: &LatencyRecorder,
        writes: &LatencyRecorder,
        read_bytes: u64,
        written_bytes: u64,
        meter: &ThroughputMeter,
    ) -> Self {
        let ms = |ns: u64| ns as f64 / NS_PER_MS;
        let throughput = meter.throughput();
        Self {
            requests: all.count(),
            reads: reads.count(),
            writes: writes.count(),
            read_bytes,
            written_bytes,
            elapsed_s: throughput.elapsed_s,
            throughput_iops: throughput.requests_per_s,
            throughput_bytes_per_s: throughput.bytes_per_s,
            mean_response_ms: all.mean_ns() / NS_PER_MS,
            p50_response_ms: ms(all.p50_ns()),
            p90_response_ms: ms(all.p90_ns()),
            p95_response_ms: ms(all.p95_ns()),
            p99_response_ms: ms(all.p99_ns()),
            max_response_ms: ms(all.max_ns()),
            mean_read_response_ms: reads.mean_ns() / NS_PER_MS,
            mean_write_response_ms: writes.mean_ns() / NS_PER_MS,
        }
    }
}

//! Response-time and throughput metrics of a replay.
//!
//! [`MetricsRecorder`] is the one-stop recorder a driver feeds with each
//! completed request; its parts ([`LatencyRecorder`], [`LocalWindows`],
//! [`ThroughputMeter`]) are usable alone.

mod latency;
mod summary;
mod throughput;
mod windows;

pub use latency::{CdfPoint, LatencyRecorder, LATENCY_NS_HIGHEST};
pub use summary::MetricsSummary;
pub use throughput::{Throughput, ThroughputMeter};
pub use windows::{LocalWindows, WindowBy, WindowStat};

use crate::TraceRequest;

/// Records every completed request of a run.
#[derive(Debug, Clone, Default)]
pub struct MetricsRecorder {
    all: LatencyRecorder,
    reads: LatencyRecorder,
    writes: LatencyRecorder,
    read_bytes: u64,
    written_bytes: u64,
    meter: ThroughputMeter,
    windows: Option<LocalWindows>,
}

impl MetricsRecorder {
    /// A recorder without local windows.
    pub fn new() -> Self {
        Self::default()
    }

    /// A recorder that also keeps local average and maximum windows, cut by
    /// completion time or completion order.
    pub fn with_windows(by: WindowBy) -> Self {
        Self {
            windows: Some(LocalWindows::new(by)),
            ..Self::default()
        }
    }

    /// Records `request` completing at `completion_ns`. The response time is
    /// `completion_ns - request.arrival_ns` (0 if the completion is earlier,
    /// which only a driver bug produces).
    pub fn record(&mut self, request: &TraceRequest, completion_ns: u64) {
        let latency_ns = completion_ns.saturating_sub(request.arrival_ns);
        self.all.record(latency_ns);
        if request.is_read {
            self.reads.record(latency_ns);
            self.read_bytes = self.read_bytes.saturating_add(request.len_bytes);
        } else {
            self.writes.record(latency_ns);
            self.written_bytes = self.written_bytes.saturating_add(request.len_bytes);
        }
        self.meter
            .record(request.arrival_ns, completion_ns, request.len_bytes);
        if let Some(windows) = &mut self.windows {
            windows.record(completion_ns, latency_ns);
        }
    }

    /// Response times of all requests.
    pub fn latency(&self) -> &LatencyRecorder {
        &self.all
    }

    /// Response times of reads.
    pub fn read_latency(&self) -> &LatencyRecorder {
        &self.reads
    }

    /// Response times of writes.
    pub fn write_latency(&self) -> &LatencyRecorder {
        &self.writes
    }

    /// The local windows, if enabled.
    pub fn windows(&self) -> Option<&LocalWindows> {
        self.windows.as_ref()
    }

    /// Throughput so far.
    pub fn throughput(&self) -> Throughput {
        self.meter.throughput()
    }

    /// The serializable summary.
    pub fn summary(&self) -> MetricsSummary {
        MetricsSummary::from_parts(
            &self.all,
            &self.reads,
            &self.writes,
            self.read_bytes,
            self.written_bytes,
            &self.meter,
        )
    }
}

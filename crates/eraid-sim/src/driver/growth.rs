//! Online growth in the simulator: what to add and when ([`GrowthPlan`]),
//! and what was measured ([`GrowthReport`]).
//!
//! The simulator creates every drive up front (the array's `m` members and
//! the `n1 + n2 + ...` that will join), builds and opens the array on the
//! first `m`, and at the growth's start time sends the engine
//! `AdminCommand::StartGrow` naming the next `n` drives as member slots
//! `m..m+n`. The engine then moves data itself while serving users; the
//! simulator only honours its `poll_timeout` and watches for
//! `ArrayEvent::ReshapeFinished`. Several additions run one after another:
//! each starts the instant the previous one finished.

use eraid_core::growth::config::ReshapeConfig;
use serde::{Deserialize, Serialize};

/// When user requests are issued relative to the growth(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrowthLoad {
    /// The workload runs from time 0; the growth happens under it.
    During,
    /// No user I/O until every growth is done; then the workload is
    /// replayed on the grown array (its addresses folded into the new
    /// capacity, its arrival times shifted to start then).
    After,
}

/// One addition of disks.
#[derive(Debug, Clone, PartialEq)]
pub struct GrowthStep {
    /// Disks added (at least 1).
    pub add: usize,
    pub config: ReshapeConfig,
}

/// The growth(s) of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct GrowthPlan {
    /// Successive additions; each starts when the previous finished.
    pub steps: Vec<GrowthStep>,
    /// Simulated time of the first addition.
    pub start_ns: u64,
    pub load: GrowthLoad,
    /// Stop issuing user requests when the last growth finishes (the
    /// workload is looped until then); the run ends once those in flight
    /// are answered.
    pub until_done: bool,
    /// Period of the progress samples (`growth.csv`), in ns.
    pub sample_ns: u64,
}

impl GrowthPlan {
    /// Disks added over all steps.
    pub fn added_disks(&self) -> usize {
        self.steps.iter().map(|s| s.add).sum()
    }
}

/// What one addition did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowthStepReport {
    pub strategy: String,
    pub old_member_count: usize,
    pub new_member_count: usize,
    pub start_s: f64,
    /// When `ReshapeFinished` came; `None` if the run ended first.
    pub finish_s: Option<f64>,
    /// Start to `ReshapeFinished`, simulated seconds.
    pub redistribution_time_s: Option<f64>,
    pub old_capacity_bytes: u64,
    pub new_capacity_bytes: Option<u64>,
    /// The engine's `reshape` status when the step ended (or the run did).
    pub status: serde_json::Value,
}

/// One progress sample of the growth (every `sample_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GrowthSample {
    pub time_s: f64,
    /// Which addition (0-based).
    pub step: usize,
    pub progress: f64,
    pub processed_bytes: u64,
    pub moved_bytes: u64,
    pub redistribution_reads: u64,
    pub redistribution_writes: u64,
    pub metadata_writes: u64,
    pub valve_closed_periods: u64,
    pub blocked_requests: u64,
    /// User requests answered since the previous sample, and their mean
    /// and maximum response times.
    pub user_requests: u64,
    pub user_mean_ms: f64,
    pub user_max_ms: f64,
    /// Of those, how many took longer than the step's latency bound (the
    /// ALV valve's latecomers, as the driver sees them).
    pub user_over_bound: u64,
}

/// Sequential transfer rates of the drive model, measured on a fresh
/// drive over the part of it the members use (for the lower bound).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SequentialRates {
    pub read_bytes_s: f64,
    pub write_bytes_s: f64,
}

/// Everything measured about the growth(s) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowthReport {
    pub load: GrowthLoad,
    pub steps: Vec<GrowthStepReport>,
    /// Every step finished before the run ended.
    pub done: bool,
    /// First start to last finish (`None` unless done).
    pub redistribution_time_s: Option<f64>,
    /// User requests that arrived while a growth ran, and their response
    /// times.
    pub requests_during: u64,
    pub mean_response_ms_during: f64,
    pub p99_response_ms_during: f64,
    pub max_response_ms_during: f64,
    /// Redistribution bytes read and written, summed over the drives.
    pub redistribution_read_bytes: u64,
    pub redistribution_written_bytes: u64,
    pub sequential: SequentialRates,
    /// (bytes read / read rate + bytes written / write rate) / drives
    /// involved: the time if every drive streamed its share at its
    /// sequential rate (the ALV paper's lower bound, "bytes read plus bytes
    /// written over the disks' sequential bandwidth").
    pub lower_bound_s: f64,
    /// The same for the busiest drive alone: no schedule can beat it.
    pub lower_bound_busiest_disk_s: f64,
    pub samples: Vec<GrowthSample>,
}

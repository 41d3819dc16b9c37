//! A member failure in the simulator: which member fails and when, whether
//! a hot spare takes over ([`FailurePlan`]), and what the rebuild cost
//! ([`FailureReport`]).
//!
//! With a spare, the simulator builds one more drive than the array has
//! members, hands it to the engine as a hot spare once the array runs
//! (`AdminCommand::AddMember { spare: true }`), and at the failure instant
//! sends `AdminCommand::FailMember`, exactly what `eraid fail` sends on a
//! served array. The engine itself moves the spare into the failed slot
//! and rebuilds it; the simulator only watches `RebuildStarted` and
//! `RebuildFinished` and the user response times around them.

use eraid_core::rebuild::config::RebuildConfig;
use serde::{Deserialize, Serialize};

/// The failure of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct FailurePlan {
    /// The member slot that fails.
    pub member: usize,
    /// Simulated time of the failure.
    pub at_ns: u64,
    /// A hot spare is there to take the slot over.
    pub spare: bool,
    /// Also set as the array's rebuild settings (`ArrayOptions::rebuild`).
    pub config: RebuildConfig,
    /// Stop issuing user requests when the rebuild finishes (the workload
    /// is looped until then).
    pub until_done: bool,
    /// Period of the rebuild samples (`rebuild.csv`), in ns.
    pub sample_ns: u64,
}

/// One sample of the rebuild (every `sample_ns` while it runs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RebuildSample {
    pub time_s: f64,
    pub progress: f64,
    pub rebuilt_bytes: u64,
    pub rate_bytes_per_s: f64,
    /// User requests answered since the previous sample, and their mean
    /// and maximum response times.
    pub user_requests: u64,
    pub user_mean_ms: f64,
    pub user_max_ms: f64,
}

/// What the failure and the rebuild did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureReport {
    pub member: usize,
    pub strategy: String,
    pub spare: bool,
    /// When the member was failed.
    pub failed_s: Option<f64>,
    pub rebuild_started_s: Option<f64>,
    pub rebuild_finished_s: Option<f64>,
    /// `RebuildStarted` to `RebuildFinished`, simulated seconds (`None` if
    /// the run ended first, or without a spare).
    pub reconstruction_time_s: Option<f64>,
    /// User requests that arrived while the rebuild ran (without a spare:
    /// after the failure, degraded), and their response times.
    pub requests_during: u64,
    pub mean_response_ms_during: f64,
    pub p99_response_ms_during: f64,
    pub max_response_ms_during: f64,
    /// Of `requests_during`, the reads, and their mean response time (the
    /// writes' follows from the two means).
    #[serde(default)]
    pub reads_during: u64,
    #[serde(default)]
    pub mean_read_response_ms_during: f64,
    /// The engine's `rebuild` status when it finished (or the run ended).
    pub status: serde_json::Value,
    pub samples: Vec<RebuildSample>,
}

//! The simulated driver: the unmodified eraid engine over modelled drives,
//! in virtual time.
//!
//! [`run`] creates an array's metadata in memory on N simulated members
//! (exactly what `eraid create` writes), assembles and opens the engine,
//! feeds it user requests from a [`FeedSpec`] (a trace or synthetic workload
//! open loop at arrival times, or a closed loop), routes each device I/O to
//! its member's drive model, hands completions back at the model's finish
//! time, calls `handle_tick` at the engine's `poll_timeout()`, and reports
//! response times, per-disk utilisation, queue lengths, seek distances and
//! device I/O counts by cause ([`SimReport`]).
//!
//! The run ends when the feed is exhausted and every user request has been
//! answered; background work still pending then (a lazy bitmap clear) is
//! not waited for, and the array is not closed.
//!
//! Determinism: the agenda orders events by (time, insertion sequence); no
//! wall clock is read; the only randomness (write contents in
//! `DataMode::Store`, synthetic workloads) comes from the seed. The same
//! config, feed and seed give byte-identical reports.

mod disk_choice;
mod event_queue;
pub mod failure;
mod feed;
pub mod growth;
pub mod host_sched;
mod member;
mod oracle;
mod passthrough;
mod report;
pub mod seq_rate;
mod sim;
mod stats;
mod store;
mod target;

pub use disk_choice::{preset, resolve_disk_model, DiskChoice, PRESET_NAMES, SSD_PRESET_SECTORS};
pub use event_queue::{Event, EventQueue};
pub use failure::{FailurePlan, FailureReport, RebuildSample};
pub use feed::{Feed, FeedSpec, StrideSpec, SyntheticSource};
pub use growth::{
    GrowthLoad, GrowthPlan, GrowthReport, GrowthSample, GrowthStep, GrowthStepReport,
    SequentialRates,
};
pub use passthrough::Passthrough;
pub use report::SimReport;
pub use stats::{cause_name, CauseCount, DiskReport, CAUSES};
pub use store::{DataMode, SparseStore};
pub use target::{Target, TargetInfo};

use eraid_trace::metrics::WindowBy;

/// Everything about a run except its requests.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub target: Target,
    /// Members of an array (ignored for `Target::Disk`, which has one).
    pub members: usize,
    pub disk: DiskChoice,
    /// Use at most this many bytes of each drive (small arrays for tests
    /// and `DataMode::Store`); `None` uses the whole drive.
    pub member_bytes_max: Option<u64>,
    pub data_mode: DataMode,
    pub seed: u64,
    /// Stop issuing after this many user requests.
    pub max_requests: Option<u64>,
    /// How local average / maximum response-time windows are cut.
    pub window: WindowBy,
    /// Points kept of the response-time CDF.
    pub cdf_points: usize,
    /// Disks added while the array runs (or before the workload replays);
    /// see [`growth`].
    pub growth: Option<GrowthPlan>,
    /// A member that fails while the array runs, and its rebuild; see
    /// [`failure`].
    pub failure: Option<FailurePlan>,
    /// End the run at this simulated time even if work remains (a growth
    /// not finished is reported as such).
    pub max_time_ns: Option<u64>,
    /// After the workload, send the target one flush and time it: a
    /// write-back cache's flush destages everything, so the run reports
    /// the throughput with every written byte on the drives too.
    pub final_flush: bool,
    /// Host block layer: merge contiguous I/Os the engine issues to a
    /// member at the same instant into one drive command of at most this
    /// many bytes (Linux's elevator merging; `None`: every engine I/O is
    /// its own command).
    pub merge_max_bytes: Option<u64>,
    /// Host block layer: split an engine I/O larger than this into drive
    /// commands of at most this many bytes, handed over together (Linux's
    /// `max_sectors`; `None`: every engine I/O goes whole).
    pub request_max_bytes: Option<u64>,
    /// Open loop: the host keeps at most this many user requests in the
    /// array; later arrivals wait in arrival order, and their response time
    /// includes that wait (the engine, like the ALV paper's controller,
    /// only sees the time from admission). `None`: the block layer's own
    /// limit, [`ADMISSION_LIMIT_DEFAULT`].
    pub host_queue_depth: Option<u32>,
    /// The host's I/O scheduler in front of every drive (see
    /// [`host_sched`]).
    pub host_scheduler: host_sched::HostSchedulerKind,
}

/// User requests an array holds at once when no `host_queue_depth` is set:
/// a host's block layer stops taking requests when its queues are full
/// (Linux: 128 per drive queue), so a workload faster than the array waits
/// above it instead of piling up in the drives' queues. Without a bound an
/// overloaded open-loop replay queued without end, every background I/O
/// waited behind the whole backlog (a growth stalled at a few KB/s) and the
/// simulator's memory grew until it was killed.
pub const ADMISSION_LIMIT_DEFAULT: u32 = 512;

impl SimConfig {
    /// The most user requests in the array at once.
    pub fn admission_limit(&self) -> usize {
        self.host_queue_depth.unwrap_or(ADMISSION_LIMIT_DEFAULT) as usize
    }

    /// A RAID-`level` array of `members` drives of `disk`, defaults elsewhere.
    pub fn new(target: Target, members: usize, disk: DiskChoice) -> SimConfig {
        SimConfig {
            target,
            members,
            disk,
            member_bytes_max: None,
            data_mode: DataMode::Discard,
            seed: 1,
            max_requests: None,
            window: WindowBy::Requests { count: 100 },
            cdf_points: 200,
            growth: None,
            failure: None,
            max_time_ns: None,
            final_flush: false,
            merge_max_bytes: None,
            request_max_bytes: None,
            host_queue_depth: None,
            host_scheduler: host_sched::HostSchedulerKind::Noop,
        }
    }
}

/// Runs one simulation to the end of its feed.
pub fn run(config: &SimConfig, feed: &FeedSpec) -> Result<SimReport, String> {
    sim::Simulation::new(config, feed)?.run()
}

/// Builds a simulation without running it: the drives, the array on them
/// and the workload source, so a setting only a run would refuse (a
/// geometry the array rejects, a trace that cannot be opened) is refused
/// here, before any simulated time passes.
pub fn prepare(config: &SimConfig, feed: &FeedSpec) -> Result<(), String> {
    sim::Simulation::new(config, feed).map(drop)
}

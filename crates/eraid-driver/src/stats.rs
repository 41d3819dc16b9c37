//! Accounting of device I/O by cause and by member, and of user requests.

use std::collections::HashMap;

use eraid_core::io::IoCause;

/// Counts of completed device I/Os of one kind of traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub written_bytes: u64,
    pub flushes: u64,
    /// I/Os that completed with `IoCompletion::Failed` or `ReadError` (not
    /// counted above).
    pub failures: u64,
}

impl IoCounters {
    pub fn add(&mut self, other: &IoCounters) {
        self.reads += other.reads;
        self.read_bytes += other.read_bytes;
        self.writes += other.writes;
        self.written_bytes += other.written_bytes;
        self.flushes += other.flushes;
        self.failures += other.failures;
    }
}

/// Device I/O of one member, as seen by the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberStats {
    /// The member's label (its path for files).
    pub label: String,
    pub io: IoCounters,
}

/// A snapshot of an engine's accounting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Completed device I/O by the reason the core issued it.
    pub by_cause: HashMap<IoCause, IoCounters>,
    /// Completed device I/O by member slot.
    pub by_member: Vec<MemberStats>,
    pub requests_submitted: u64,
    /// Requests answered with `Ok`.
    pub requests_succeeded: u64,
    /// Requests answered with an error (shutdown refusals included).
    pub requests_failed: u64,
    /// Device I/Os issued and not yet completed.
    pub io_in_flight: u64,
    /// The most device I/Os ever in flight at once.
    pub io_in_flight_max: u64,
    /// `handle_tick` calls.
    pub ticks: u64,
    /// False once the engine thread has stopped.
    pub running: bool,
}

impl EngineStats {
    pub(crate) fn new(member_labels: Vec<String>) -> EngineStats {
        EngineStats {
            by_member: member_labels
                .into_iter()
                .map(|label| MemberStats {
                    label,
                    io: IoCounters::default(),
                })
                .collect(),
            running: true,
            ..EngineStats::default()
        }
    }

    /// Counters for one cause (zero if it never issued I/O).
    pub fn cause(&self, cause: IoCause) -> IoCounters {
        self.by_cause.get(&cause).copied().unwrap_or_default()
    }

    /// Counters over every member.
    pub fn total(&self) -> IoCounters {
        let mut total = IoCounters::default();
        for member in &self.by_member {
            total.add(&member.io);
        }
        total
    }
}

//! Per-member accounting: utilisation, queue length, seeks, and device I/Os
//! by why the engine issued them.

use std::collections::BTreeMap;

use eraid_core::io::IoCause;
use serde::{Deserialize, Serialize};

/// Device I/Os of one cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CauseCount {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
}

impl CauseCount {
    pub fn ios(&self) -> u64 {
        self.reads + self.writes + self.flushes
    }

    pub fn add(&mut self, other: &CauseCount) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.flushes += other.flushes;
        self.read_bytes += other.read_bytes;
        self.written_bytes += other.written_bytes;
    }
}

/// The snake_case name of a cause, as used in reports.
pub fn cause_name(cause: IoCause) -> &'static str {
    match cause {
        IoCause::User => "user",
        IoCause::Metadata => "metadata",
        IoCause::Resync => "resync",
        IoCause::Scrub => "scrub",
        IoCause::Redistribution => "redistribution",
        IoCause::Rebuild => "rebuild",
        IoCause::Destage => "destage",
    }
}

/// Every cause, in report order.
pub const CAUSES: [IoCause; 7] = [
    IoCause::User,
    IoCause::Metadata,
    IoCause::Resync,
    IoCause::Scrub,
    IoCause::Redistribution,
    IoCause::Rebuild,
    IoCause::Destage,
];

/// Running totals for one member.
#[derive(Debug, Clone, Default)]
pub struct MemberStats {
    pub by_cause: BTreeMap<&'static str, CauseCount>,
    /// Commands submitted to the drive and not yet completed.
    outstanding: u64,
    outstanding_max: u64,
    /// Time with at least one command outstanding.
    busy_ns: u64,
    /// Integral of `outstanding` over time (queue length × ns).
    queue_area: u128,
    last_change_ns: u64,
    pub seek_cyls_total: u64,
    pub seeks: u64,
    pub cache_hits: u64,
    pub completed: u64,
    pub service_ns_total: u128,
    /// Engine I/Os the host block layer merged into an earlier command.
    pub merged: u64,
}

impl MemberStats {
    fn advance_clock(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_change_ns);
        if self.outstanding > 0 {
            self.busy_ns += dt;
        }
        self.queue_area += u128::from(self.outstanding) * u128::from(dt);
        self.last_change_ns = now_ns.max(self.last_change_ns);
    }

    pub fn submitted(&mut self, now_ns: u64) {
        self.advance_clock(now_ns);
        self.outstanding += 1;
        self.outstanding_max = self.outstanding_max.max(self.outstanding);
    }

    pub fn completed(&mut self, now_ns: u64, service_ns: u64, seek_cyls: u32, cache_hit: bool) {
        self.advance_clock(now_ns);
        self.outstanding = self.outstanding.saturating_sub(1);
        self.completed += 1;
        self.service_ns_total += u128::from(service_ns);
        if seek_cyls > 0 {
            self.seeks += 1;
            self.seek_cyls_total += u64::from(seek_cyls);
        }
        if cache_hit {
            self.cache_hits += 1;
        }
    }

    pub fn count(&mut self, cause: IoCause, f: impl FnOnce(&mut CauseCount)) {
        f(self.by_cause.entry(cause_name(cause)).or_default());
    }

    /// The member's figures over `[0, end_ns]`.
    pub fn report(&mut self, member: usize, end_ns: u64) -> DiskReport {
        self.advance_clock(end_ns);
        let span = end_ns.max(1) as f64;
        let ios: u64 = self.by_cause.values().map(CauseCount::ios).sum();
        DiskReport {
            member,
            ios,
            utilisation: self.busy_ns as f64 / span,
            mean_queue_length: self.queue_area as f64 / span,
            max_queue_length: self.outstanding_max,
            mean_service_ms: if self.completed == 0 {
                0.0
            } else {
                self.service_ns_total as f64 / self.completed as f64 / 1e6
            },
            seeks: self.seeks,
            mean_seek_cylinders: if self.seeks == 0 {
                0.0
            } else {
                self.seek_cyls_total as f64 / self.seeks as f64
            },
            cache_hits: self.cache_hits,
            read_waits: ReadWaitReport::default(),
        }
    }
}

/// Where a hard disk's reads from the media waited, per read (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadWaitReport {
    /// Reads that went to the media (not served from the buffer).
    pub media_reads: u64,
    /// For a free command slot in the drive (its queue depth full).
    pub slot_wait_ms_mean: f64,
    /// In the drive, ready, for the mechanism.
    pub mechanism_wait_ms_mean: f64,
    /// Of that, the mechanism busy destaging write-back data.
    pub behind_destage_ms_mean: f64,
    /// Of that, busy with host writes and with other reads.
    pub behind_writes_ms_mean: f64,
    pub behind_reads_ms_mean: f64,
}

impl ReadWaitReport {
    pub fn from_model(w: &crate::disk::ReadWaits) -> ReadWaitReport {
        let per_read_ms = |ns: f64| ns / w.reads.max(1) as f64 / 1e6;
        ReadWaitReport {
            media_reads: w.reads,
            slot_wait_ms_mean: per_read_ms(w.slot_wait_ns),
            mechanism_wait_ms_mean: per_read_ms(w.mechanism_wait_ns),
            behind_reads_ms_mean: per_read_ms(w.behind_ns[crate::disk::WORK_READ]),
            behind_writes_ms_mean: per_read_ms(w.behind_ns[crate::disk::WORK_HOST_WRITE]),
            behind_destage_ms_mean: per_read_ms(w.behind_ns[crate::disk::WORK_DESTAGE]),
        }
    }
}

/// One member's figures at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskReport {
    pub member: usize,
    /// Device I/Os of every cause (flushes included).
    pub ios: u64,
    /// Fraction of the run with at least one command at the drive.
    pub utilisation: f64,
    /// Commands at the drive (queued or in service), averaged over the run.
    pub mean_queue_length: f64,
    pub max_queue_length: u64,
    /// Mean time from submission to the drive to completion.
    pub mean_service_ms: f64,
    /// Commands that moved the head, and their mean distance.
    pub seeks: u64,
    pub mean_seek_cylinders: f64,
    /// Commands served from the drive's buffer.
    pub cache_hits: u64,
    /// Hard disks: where reads from the media waited.
    #[serde(default)]
    pub read_waits: ReadWaitReport,
}

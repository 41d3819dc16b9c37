//! What the core learns about each device while serving: read errors
//! (corrected and not, with Linux MD's decaying count that fails a member
//! past `max_read_errors`), I/O latency, and the deadline of every device
//! I/O in flight (member timeouts). Indexed by device (`DeviceIo::member`),
//! so a spare or replacement keeps its own record.

use crate::io::{DeviceOp, IoId, TimeNs};
use crate::metadata::superblock::ReadErrorCounts;
use rustc_hash::FxHashMap;
use std::collections::{BTreeSet, VecDeque};

/// Linux MD's `MD_DEFAULT_MAX_CORRECTED_READ_ERRORS` (drivers/md/md.c).
pub const DEFAULT_MAX_READ_ERRORS: u32 = 20;
/// MD halves a member's read-error count for every hour without one
/// (`check_decay_read_errors`), so old errors stop counting.
const READ_ERROR_DECAY_NS: u64 = 3_600 * 1_000_000_000;

#[derive(Clone, Debug, Default)]
pub struct DeviceHealth {
    /// Read errors counted against `max_read_errors` (decayed).
    pub read_errors_recent: u32,
    last_read_error: Option<TimeNs>,
    /// Read errors repaired: rebuilt from the others, rewritten, read back.
    pub read_errors_corrected: u64,
    /// Read errors that could not be repaired (no redundancy left, the
    /// rewrite or the read back failed, or past the threshold).
    pub read_errors_failed: u64,
    /// Device I/Os completed (successfully or not) and their latency.
    pub completed_ios: u64,
    latency_ns_total: u128,
    pub latency_ns_max: u64,
}

impl DeviceHealth {
    pub fn latency_ms_mean(&self) -> f64 {
        if self.completed_ios == 0 {
            return 0.0;
        }
        self.latency_ns_total as f64 / self.completed_ios as f64 / 1e6
    }

    pub fn latency_ms_max(&self) -> f64 {
        self.latency_ns_max as f64 / 1e6
    }

    /// Counts one read error at `now` (after MD's decay); returns the
    /// count that is compared with the threshold.
    fn count_read_error(&mut self, now: TimeNs) -> u32 {
        if let Some(last) = self.last_read_error {
            let hours = now.0.saturating_sub(last.0) / READ_ERROR_DECAY_NS;
            self.read_errors_recent = self
                .read_errors_recent
                .checked_shr(hours.min(32) as u32)
                .unwrap_or(0);
        }
        self.last_read_error = Some(now);
        self.read_errors_recent = self.read_errors_recent.saturating_add(1);
        self.read_errors_recent
    }
}

/// One device I/O in flight, for its deadline and latency.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    device: usize,
    issued: TimeNs,
    /// Where its timeout is counted from: the issue, or the moment another
    /// device was failed for a timeout (see `restart_clocks`).
    clock_from: TimeNs,
    what: &'static str,
}

#[derive(Default)]
pub struct Health {
    devices: Vec<DeviceHealth>,
    in_flight: FxHashMap<IoId, InFlight>,
    /// I/Os in the order they were issued, finished ones dropped lazily
    /// (the first is always in flight). Ids and clocks only grow with it
    /// (`latest_clock`; `restart_clocks` keeps the order), so the first is
    /// the oldest and decides the next deadline: no ordered set per I/O.
    by_age: VecDeque<IoId>,
    /// The latest clock an I/O was given: a new one's is never earlier.
    latest_clock: TimeNs,
    /// I/Os the core gave up on (timed out): their late completion is
    /// dropped.
    abandoned: BTreeSet<IoId>,
}

/// What an expired I/O was, for the member's failure reason.
pub struct Expired {
    pub io: IoId,
    pub device: usize,
    pub what: &'static str,
    pub waited_ns: u64,
}

impl Health {
    pub fn device(&self, device: usize) -> DeviceHealth {
        self.devices.get(device).cloned().unwrap_or_default()
    }

    fn device_mut(&mut self, device: usize) -> &mut DeviceHealth {
        if self.devices.len() <= device {
            self.devices.resize(device + 1, DeviceHealth::default());
        }
        &mut self.devices[device]
    }

    pub fn issued(&mut self, io: IoId, device: usize, op: &DeviceOp, now: TimeNs) {
        let what = match op {
            DeviceOp::Read { .. } => "read",
            DeviceOp::Write { .. } => "write",
            DeviceOp::WriteZeroes { .. } => "zeroing",
            DeviceOp::Flush => "flush",
        };
        if let Some(&last) = self.by_age.back() {
            assert!(last < io, "I/O ids are issued in order");
        }
        self.latest_clock = self.latest_clock.max(now);
        self.in_flight.insert(
            io,
            InFlight {
                device,
                issued: now,
                clock_from: self.latest_clock,
                what,
            },
        );
        self.by_age.push_back(io);
    }

    /// Drops finished I/Os from the front of `by_age`, and from the rest
    /// once they outnumber those in flight (a stuck I/O at the front must
    /// not let it grow without bound).
    fn trim_by_age(&mut self) {
        while let Some(front) = self.by_age.front() {
            if self.in_flight.contains_key(front) {
                break;
            }
            self.by_age.pop_front();
        }
        if self.by_age.len() > 2 * self.in_flight.len() + 64 {
            let in_flight = &self.in_flight;
            self.by_age.retain(|io| in_flight.contains_key(io));
        }
    }

    /// Records the completion's latency. False if the I/O was abandoned
    /// (timed out before): the caller drops the completion.
    pub fn completed(&mut self, io: IoId, now: TimeNs) -> bool {
        if self.abandoned.remove(&io) {
            return false;
        }
        let Some(flight) = self.in_flight.remove(&io) else {
            return true;
        };
        self.trim_by_age();
        let latency_ns = now.0.saturating_sub(flight.issued.0);
        let device = self.device_mut(flight.device);
        device.completed_ios += 1;
        device.latency_ns_total += u128::from(latency_ns);
        device.latency_ns_max = device.latency_ns_max.max(latency_ns);
        true
    }

    pub fn count_read_error(&mut self, device: usize, now: TimeNs) -> u32 {
        self.device_mut(device).count_read_error(now)
    }

    pub fn note_corrected(&mut self, device: usize) {
        self.device_mut(device).read_errors_corrected += 1;
    }

    pub fn note_uncorrected(&mut self, device: usize) {
        self.device_mut(device).read_errors_failed += 1;
    }

    /// The device's counts as the superblock records them.
    pub fn counts(&self, device: usize) -> ReadErrorCounts {
        let health = self.devices.get(device).cloned().unwrap_or_default();
        ReadErrorCounts {
            corrected: health.read_errors_corrected,
            failed: health.read_errors_failed,
        }
    }

    /// Counts go on from what the superblock recorded for the device.
    pub fn restore_counts(&mut self, device: usize, counts: ReadErrorCounts) {
        let health = self.device_mut(device);
        health.read_errors_corrected = counts.corrected;
        health.read_errors_failed = counts.failed;
    }

    /// When the oldest I/O in flight times out, if any does.
    pub fn next_deadline(&self, timeout_ns: u64) -> Option<TimeNs> {
        self.by_age.front().map(|io| {
            let clock_from = self.in_flight[io].clock_from;
            TimeNs(clock_from.0.saturating_add(timeout_ns))
        })
    }

    /// The I/Os in flight longer than `timeout_ns` at `now`, oldest first.
    pub fn expired(&self, now: TimeNs, timeout_ns: u64) -> Vec<Expired> {
        self.by_age
            .iter()
            .filter_map(|&io| self.in_flight.get(&io).map(|flight| (io, *flight)))
            .take_while(|(_, flight)| flight.clock_from.0.saturating_add(timeout_ns) <= now.0)
            .map(|(io, flight)| Expired {
                io,
                device: flight.device,
                what: flight.what,
                waited_ns: now.0.saturating_sub(flight.issued.0),
            })
            .collect()
    }

    /// Every I/O in flight on `device`.
    pub fn in_flight_on(&self, device: usize) -> Vec<IoId> {
        let mut ios: Vec<IoId> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.device == device)
            .map(|(&io, _)| io)
            .collect();
        // HashMap order varies between runs; keep the simulator deterministic.
        ios.sort_unstable();
        ios
    }

    /// The core stops waiting for `io`: it counts as failed now, and its
    /// completion, if it ever comes, is dropped.
    pub fn abandon(&mut self, io: IoId) {
        if self.in_flight.remove(&io).is_some() {
            self.trim_by_age();
            self.abandoned.insert(io);
        }
    }

    /// Every I/O in flight gets a fresh timeout from `now`. After a device
    /// is failed for a timeout: the others' I/Os may have waited behind
    /// its stuck ones in the driver's queue, which is not their fault; a
    /// device really hung too is failed one timeout later.
    pub fn restart_clocks(&mut self, now: TimeNs) {
        // Raising every clock to at least `now` keeps them in issue order.
        for flight in self.in_flight.values_mut() {
            flight.clock_from = flight.clock_from.max(now);
        }
        self.latest_clock = self.latest_clock.max(now);
    }
}

impl super::Array {
    /// Each member's and spare's device with its uuid (a failed member's
    /// device too: its counts this run are still known).
    fn devices_by_uuid(&self) -> Vec<(usize, String)> {
        let slots = (0..self.geometry.member_count)
            .map(|m| (self.slot_device[m], self.superblock.members[m].uuid.clone()));
        let spares = self
            .spare_devices
            .iter()
            .zip(&self.superblock.spares)
            .filter_map(|(d, record)| d.map(|d| (d, record.uuid.clone())));
        slots.chain(spares).collect()
    }

    /// At open: each device's read-error counts go on from the superblock.
    pub(super) fn restore_read_error_counts(&mut self) {
        for (device, uuid) in self.devices_by_uuid() {
            if let Some(&counts) = self.superblock.read_errors.get(&uuid) {
                self.health.restore_counts(device, counts);
            }
        }
    }

    /// Before a superblock write: the counts of every device that has any
    /// (they went on from the record at open, so only grow); a member
    /// absent since the open keeps its record; members no longer in the
    /// array (replaced, removed) lose theirs.
    pub(super) fn record_read_error_counts(&mut self) {
        let superblock = &mut self.superblock;
        let known: BTreeSet<&String> = superblock
            .members
            .iter()
            .chain(&superblock.spares)
            .map(|m| &m.uuid)
            .collect();
        let mut recorded = std::mem::take(&mut superblock.read_errors);
        recorded.retain(|uuid, _| known.contains(uuid));
        for (device, uuid) in self.devices_by_uuid() {
            let counts = self.health.counts(device);
            if counts != ReadErrorCounts::default() {
                recorded.insert(uuid, counts);
            }
        }
        self.superblock.read_errors = recorded;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_errors_halve_per_hour_without_one() {
        let mut health = DeviceHealth::default();
        for _ in 0..8 {
            health.count_read_error(TimeNs(0));
        }
        assert_eq!(health.read_errors_recent, 8);
        // Two hours later: 8 -> 2, then this one.
        assert_eq!(health.count_read_error(TimeNs(2 * READ_ERROR_DECAY_NS)), 3);
        assert_eq!(
            health.count_read_error(TimeNs(200 * READ_ERROR_DECAY_NS)),
            1
        );
    }

    #[test]
    fn oldest_in_flight_io_sets_the_deadline_and_expires_first() {
        let mut health = Health::default();
        let read = DeviceOp::Read {
            offset_bytes: 0,
            len_bytes: 512,
        };
        health.issued(IoId(1), 1, &DeviceOp::Flush, TimeNs(50));
        health.issued(IoId(2), 0, &read, TimeNs(100));
        assert_eq!(health.next_deadline(1_000), Some(TimeNs(1_050)));
        let expired = health.expired(TimeNs(1_060), 1_000);
        assert_eq!(expired.len(), 1);
        assert_eq!((expired[0].io, expired[0].device), (IoId(1), 1));
        assert_eq!(expired[0].what, "flush");
        health.abandon(IoId(1));
        assert_eq!(health.next_deadline(1_000), Some(TimeNs(1_100)));
        assert!(
            !health.completed(IoId(1), TimeNs(5_000)),
            "late completion kept"
        );
        assert!(health.completed(IoId(2), TimeNs(400)));
        let device = health.device(0);
        assert_eq!(device.completed_ios, 1);
        assert_eq!(device.latency_ns_max, 300);
        assert_eq!(health.next_deadline(1_000), None);
    }

    #[test]
    fn a_stuck_io_keeps_the_deadline_while_the_queue_behind_it_stays_bounded() {
        let mut health = Health::default();
        let write = DeviceOp::Write {
            offset_bytes: 0,
            data: vec![0u8; 512].into(),
        };
        health.issued(IoId(0), 2, &write, TimeNs(10));
        for id in 1..10_000u64 {
            health.issued(IoId(id), 0, &write, TimeNs(10 + id));
            assert!(health.completed(IoId(id), TimeNs(20 + id)));
            assert!(
                health.by_age.len() <= 2 * health.in_flight.len() + 64,
                "{} queued behind {} in flight",
                health.by_age.len(),
                health.in_flight.len()
            );
        }
        assert_eq!(health.next_deadline(1_000), Some(TimeNs(1_010)));
        let expired = health.expired(TimeNs(1_000_000), 1_000);
        assert_eq!(expired.len(), 1, "only the stuck one");
        assert_eq!((expired[0].io, expired[0].device), (IoId(0), 2));
        // A later clock restart moves the deadline, order kept.
        health.issued(IoId(10_000), 1, &write, TimeNs(20_000));
        health.restart_clocks(TimeNs(30_000));
        assert_eq!(health.next_deadline(1_000), Some(TimeNs(31_000)));
        let ios: Vec<IoId> = health
            .expired(TimeNs(40_000), 1_000)
            .iter()
            .map(|e| e.io)
            .collect();
        assert_eq!(ios, [IoId(0), IoId(10_000)]);
        health.abandon(IoId(0));
        assert_eq!(health.next_deadline(1_000), Some(TimeNs(31_000)));
        assert!(health.completed(IoId(10_000), TimeNs(41_000)));
        assert_eq!(health.next_deadline(1_000), None);
        assert!(health.by_age.is_empty());
    }
}

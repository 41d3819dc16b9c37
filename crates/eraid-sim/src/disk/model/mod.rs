//! The hard-disk model as a discrete-event component.
//!
//! Inputs are [`DiskModel::submit`] calls at a virtual time; outputs are
//! [`DiskCompletion`]s returned by [`DiskModel::advance`]. The model never
//! reads a clock: the driver asks [`DiskModel::next_event_ns`] when something
//! happens next and calls `advance` with that time. Same inputs, same outputs.
//!
//! What happens to a command:
//! 1. It enters the drive (at once, or when a slot frees if `queue_depth`
//!    commands are already inside). The controller spends the command
//!    overhead on it, one command at a time; read hits and write-back writes
//!    are then served from the buffer over the bus without the mechanism.
//! 2. Otherwise it waits for the head-disk assembly (HDA). When the HDA is
//!    free the scheduler picks one ready command (FCFS, C-LOOK or SPTF). A
//!    read-ahead in progress is cut at the next sector boundary.
//! 3. Media access: seek, rotation to the first sector (the platter angle at
//!    that instant decides it), transfer track by track. A discontiguous
//!    command can only be started once the controller is free, while a
//!    command that continues exactly where the head just stopped streams on.
//! 4. Reads go over the bus as sectors arrive, then read-ahead fills the
//!    segment; writes finish on the media, or, with write-back, complete after
//!    the bus transfer and are destaged later.

mod media;

use std::collections::VecDeque;

use super::cache::{Cache, Segment};
use super::config::{DiskSpec, FastWrite};
use super::geometry::{Geometry, GeometryError};
use super::mechanics::{DataArrival, HeadPos, Mechanics, MediaRun};

const NS_PER_MS: f64 = 1e6;

/// One host command. Sectors are 512 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskRequest {
    pub id: u64,
    pub lbn: u64,
    pub sectors: u32,
    pub is_read: bool,
}

/// A finished host command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskCompletion {
    pub id: u64,
    pub submit_ns: u64,
    pub finish_ns: u64,
    /// Served from the buffer without waiting for the mechanism (read hit or
    /// write-back write).
    pub cache_hit: bool,
    /// Cylinders the head moved to start this command (0 for cache hits).
    pub seek_cyls: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error("request {id}: sectors {lbn}..{end} beyond the disk's {capacity} sectors")]
    OutOfRange {
        id: u64,
        lbn: u64,
        end: u64,
        capacity: u64,
    },
    #[error("request {id}: zero sectors")]
    Empty { id: u64 },
    #[error("request {id}: submitted at {now_ns} ns, before the model's time {model_ns} ns")]
    TimeWentBackwards { id: u64, now_ns: u64, model_ns: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("bad geometry: {0}")]
    Geometry(#[from] GeometryError),
    #[error("bad parameter: {0}")]
    Parameter(String),
}

/// A media operation waiting for the HDA.
#[derive(Debug, Clone)]
struct Op {
    seq: u64,
    /// The host command to complete when the media part ends; `None` for a
    /// background destage of write-back data.
    report: Option<(u64, u64)>,
    lbn: u64,
    sectors: u64,
    is_read: bool,
    ready_ns: f64,
    data: Option<DataArrival>,
    /// A read whose first sectors were already in the buffer: it starts
    /// sending them at this instant rather than reconnecting later.
    send_ns: Option<f64>,
    /// `hda_busy_ns` when the op was queued (to attribute its wait).
    busy_at_ready: [f64; 3],
}

/// What the mechanism works on, to index [`ReadWaits::behind_ns`].
pub const WORK_READ: usize = 0;
pub const WORK_HOST_WRITE: usize = 1;
pub const WORK_DESTAGE: usize = 2;

/// Where the reads that went to the media waited, summed over them (what
/// `disks.csv` reports per read). Measured, not used by the model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadWaits {
    pub reads: u64,
    /// For a command slot in the drive (its queue depth full).
    pub slot_wait_ns: f64,
    /// Queued in the drive until the mechanism took it.
    pub mechanism_wait_ns: f64,
    /// The mechanism's work started while a read waited, by kind (`WORK_*`);
    /// the operation already in progress when it came is not counted.
    pub behind_ns: [f64; 3],
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    finish_ns: f64,
    seq: u64,
    completion: DiskCompletion,
}

/// A read-ahead the HDA is doing and may abandon.
#[derive(Debug, Clone, Copy)]
struct Prefetch {
    segment: usize,
    end_ns: f64,
    end_pos: HeadPos,
    /// Sectors below this must still be read: a hit is waiting for them, or
    /// the minimum read-ahead asks for them.
    pinned_lbn: u64,
}

#[derive(Debug, Clone)]
pub struct DiskModel {
    spec: DiskSpec,
    mech: Mechanics,
    cache: Cache,
    now_ns: u64,
    seq: u64,
    host_queue: VecDeque<(DiskRequest, u64)>,
    inside: usize,
    ops: Vec<Op>,
    completions: Vec<Pending>,
    outbox: Vec<DiskCompletion>,
    ctrl_free_ns: f64,
    bus_free_ns: f64,
    hda_free_ns: f64,
    head: HeadPos,
    prefetch: Option<Prefetch>,
    /// Where and when the last media transfer ended, to recognise streams.
    last_media: Option<(u64, f64, bool)>,
    last_was_read: bool,
    bus_read_ns_per_sector: f64,
    bus_write_ns_per_sector: f64,
    /// Mechanism time spent so far, by kind of work (`WORK_*`).
    hda_busy_ns: [f64; 3],
    read_waits: ReadWaits,
}

impl DiskModel {
    pub fn read_waits(&self) -> ReadWaits {
        self.read_waits
    }

    pub fn new(spec: DiskSpec) -> Result<Self, ModelError> {
        if spec.mechanics.rpm.is_nan() || spec.mechanics.rpm <= 0.0 {
            return Err(ModelError::Parameter(
                "rotation speed must be positive".into(),
            ));
        }
        let bus_ok = |ms: f64| ms >= 0.0 && ms.is_finite();
        if !bus_ok(spec.bus_read_ms_per_sector) || !bus_ok(spec.bus_write_ms_per_sector) {
            return Err(ModelError::Parameter(
                "bus transfer time must be a non-negative number".into(),
            ));
        }
        let geometry = Geometry::new(&spec.geometry)?;
        let mech = Mechanics::new(geometry, &spec.mechanics);
        let segments = if spec.cache.enabled {
            spec.cache.segments.max(1)
        } else {
            1
        };
        Ok(DiskModel {
            cache: Cache::new(segments, spec.cache.segment_sectors.max(1)),
            bus_read_ns_per_sector: spec.bus_read_ms_per_sector * NS_PER_MS,
            bus_write_ns_per_sector: spec.bus_write_ms_per_sector * NS_PER_MS,
            mech,
            spec,
            now_ns: 0,
            seq: 0,
            host_queue: VecDeque::new(),
            inside: 0,
            ops: Vec::new(),
            completions: Vec::new(),
            outbox: Vec::new(),
            ctrl_free_ns: 0.0,
            bus_free_ns: 0.0,
            hda_free_ns: 0.0,
            head: HeadPos::default(),
            prefetch: None,
            last_media: None,
            last_was_read: true,
            hda_busy_ns: [0.0; 3],
            read_waits: ReadWaits::default(),
        })
    }

    pub fn spec(&self) -> &DiskSpec {
        &self.spec
    }
    pub fn capacity_sectors(&self) -> u64 {
        self.mech.geometry.capacity_sectors()
    }
    pub fn geometry(&self) -> &Geometry {
        &self.mech.geometry
    }
    pub fn rotation_period_ns(&self) -> f64 {
        self.mech.period_ns()
    }
    /// Host commands submitted and not yet returned by `advance`.
    pub fn outstanding(&self) -> usize {
        self.inside + self.host_queue.len() + self.outbox.len()
    }

    /// Hands a command to the drive at `now_ns` (not earlier than any time
    /// already given to the model).
    pub fn submit(&mut self, now_ns: u64, req: DiskRequest) -> Result<(), SubmitError> {
        if now_ns < self.now_ns {
            return Err(SubmitError::TimeWentBackwards {
                id: req.id,
                now_ns,
                model_ns: self.now_ns,
            });
        }
        if req.sectors == 0 {
            return Err(SubmitError::Empty { id: req.id });
        }
        let end = req.lbn.saturating_add(u64::from(req.sectors));
        if end > self.capacity_sectors() {
            return Err(SubmitError::OutOfRange {
                id: req.id,
                lbn: req.lbn,
                end,
                capacity: self.capacity_sectors(),
            });
        }
        self.run_until(now_ns);
        self.now_ns = now_ns;
        if self.inside < self.spec.queue_depth.max(1) {
            self.admit(now_ns as f64, req, now_ns);
        } else {
            self.host_queue.push_back((req, now_ns));
        }
        Ok(())
    }

    /// The next instant at which `advance` has something to do.
    pub fn next_event_ns(&self) -> Option<u64> {
        if !self.outbox.is_empty() {
            return Some(self.now_ns);
        }
        let c = self
            .next_completion()
            .map(|i| self.completions[i].finish_ns);
        let d = self.next_dispatch_ns();
        let t = match (c, d) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }?;
        Some((t.ceil() as u64).max(self.now_ns))
    }

    /// Runs the model up to `now_ns` and returns the commands finished by
    /// then, in finishing order.
    pub fn advance(&mut self, now_ns: u64) -> Vec<DiskCompletion> {
        let now_ns = now_ns.max(self.now_ns);
        self.run_until(now_ns);
        self.now_ns = now_ns;
        std::mem::take(&mut self.outbox)
    }

    fn run_until(&mut self, now_ns: u64) {
        let limit = now_ns as f64;
        loop {
            let c = self
                .next_completion()
                .map(|i| (self.completions[i].finish_ns, i));
            let d = self.next_dispatch_ns();
            match (c, d) {
                (Some((tc, i)), d) if tc <= limit && !matches!(d, Some(td) if td < tc) => {
                    let p = self.completions.swap_remove(i);
                    self.finish(p);
                }
                (_, Some(td)) if td <= limit => self.dispatch(td),
                _ => break,
            }
        }
    }

    fn next_completion(&self) -> Option<usize> {
        self.completions
            .iter()
            .enumerate()
            .min_by(|a, b| {
                a.1.finish_ns
                    .total_cmp(&b.1.finish_ns)
                    .then(a.1.seq.cmp(&b.1.seq))
            })
            .map(|(i, _)| i)
    }

    fn next_dispatch_ns(&self) -> Option<f64> {
        let ready = self.ops.iter().map(|o| o.ready_ns).min_by(f64::total_cmp)?;
        Some(ready.max(self.hda_free_ns))
    }

    fn finish(&mut self, p: Pending) {
        self.outbox.push(p.completion);
        self.inside -= 1;
        if let Some((req, submit_ns)) = self.host_queue.pop_front() {
            self.admit(p.finish_ns, req, submit_ns);
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Queues the completion of host command `id` at `finish_ns`. Sending
    /// the status is controller work (the completion overhead), so the
    /// controller is busy until then: that is what makes the head miss a
    /// closely following discontiguous sector.
    fn complete(
        &mut self,
        finish_ns: f64,
        id: u64,
        submit_ns: u64,
        cache_hit: bool,
        seek_cyls: u32,
    ) {
        let seq = self.next_seq();
        let finish = finish_ns.max(submit_ns as f64);
        self.ctrl_free_ns = self.ctrl_free_ns.max(finish);
        self.completions.push(Pending {
            finish_ns: finish,
            seq,
            completion: DiskCompletion {
                id,
                submit_ns,
                finish_ns: finish.ceil() as u64,
                cache_hit,
                seek_cyls,
            },
        });
    }

    /// Controller overhead for a command arriving at `t`; returns when it ends.
    fn command_overhead(&mut self, t: f64, is_read: bool, hit: bool) -> f64 {
        let o = &self.spec.overheads;
        let after_read = self.last_was_read;
        let ms = match (is_read, hit, after_read) {
            (true, true, true) => o.read_hit_after_read_ms,
            (true, true, false) => o.read_hit_after_write_ms,
            (true, false, true) => o.read_miss_after_read_ms,
            (true, false, false) => o.read_miss_after_write_ms,
            (false, true, true) => o.write_hit_after_read_ms,
            (false, true, false) => o.write_hit_after_write_ms,
            (false, false, true) => o.write_miss_after_read_ms,
            (false, false, false) => o.write_miss_after_write_ms,
        };
        self.last_was_read = is_read;
        let done = t.max(self.ctrl_free_ns) + ms * NS_PER_MS;
        self.ctrl_free_ns = done;
        done
    }

    fn completion_overhead_ns(&self, is_read: bool) -> f64 {
        let o = &self.spec.overheads;
        NS_PER_MS
            * if is_read {
                o.read_completion_ms
            } else {
                o.write_completion_ms
            }
    }

    fn admit(&mut self, t: f64, req: DiskRequest, submit_ns: u64) {
        self.inside += 1;
        if req.is_read {
            self.read_waits.slot_wait_ns += (t - submit_ns as f64).max(0.0);
        }
        let sectors = u64::from(req.sectors);
        if req.is_read {
            let (hit, partial) = if self.spec.cache.enabled {
                (
                    self.cache.lookup(req.lbn, sectors, t),
                    self.spec.cache.partial_hits
                        && self.cache.continuing(req.lbn, t).is_some_and(|i| {
                            let s = &self.cache.segments[i];
                            req.lbn < s.end_lbn && s.dirty_until_ns <= t
                        }),
                )
            } else {
                (None, false)
            };
            // A partial hit pays the hit overhead and sends what it has at
            // once; the media supplies the rest.
            let ready = self.command_overhead(t, true, hit.is_some() || partial);
            let send_ns = ready + self.spec.overheads.data_prep_ms * NS_PER_MS;
            match hit {
                Some(seg) => {
                    self.read_from_buffer(seg, send_ns, req.id, req.lbn, sectors, submit_ns)
                }
                None => {
                    let seq = self.next_seq();
                    self.ops.push(Op {
                        seq,
                        report: Some((req.id, submit_ns)),
                        lbn: req.lbn,
                        sectors,
                        is_read: true,
                        ready_ns: ready,
                        data: None,
                        send_ns: partial.then_some(send_ns),
                        busy_at_ready: self.hda_busy_ns,
                    });
                }
            }
        } else {
            self.admit_write(t, req, submit_ns);
        }
    }

    fn admit_write(&mut self, t: f64, req: DiskRequest, submit_ns: u64) {
        let sectors = u64::from(req.sectors);
        let c = self.spec.cache;
        let appends = self
            .cache
            .ending_at(req.lbn)
            .filter(|&i| self.cache.segments[i].dirty_until_ns > t);
        // Write-back needs room: a write that fits a segment, appended to a
        // stream with space left or taken into a segment with nothing left
        // to destage. Otherwise the drive completes it only once it is on
        // the media, as a full buffer makes a real drive hold the host off;
        // acknowledging it anyway let destages pile up without bound.
        let seg_cap = self.cache.segment_sectors;
        let stream_room =
            appends.is_some_and(|i| c.combine_seq_writes && self.cache.room_after(i, sectors));
        let room = sectors <= seg_cap && (stream_room || self.cache.has_clean_segment(t));
        let write_back = c.enabled
            && room
            && match c.fast_write {
                FastWrite::Off => false,
                FastWrite::Sequential => appends.is_some(),
                FastWrite::Always => true,
            };
        let ready = self.command_overhead(t, false, write_back);
        // The host sends the data right after the command overhead and the
        // data preparation.
        let data_prep_ns = self.spec.overheads.data_prep_ms * NS_PER_MS;
        let bus_start = (ready + data_prep_ns).max(self.bus_free_ns);
        let data = DataArrival {
            first_ns: bus_start + self.bus_write_ns_per_sector,
            per_sector_ns: self.bus_write_ns_per_sector,
        };
        let data_end = bus_start + sectors as f64 * self.bus_write_ns_per_sector;
        self.bus_free_ns = data_end;
        if c.enabled {
            self.buffer_write(req.lbn, sectors, bus_start);
        }
        let seq = self.next_seq();
        let report = if write_back {
            let done = data_end + self.completion_overhead_ns(false);
            self.complete(done, req.id, submit_ns, true, 0);
            None
        } else {
            Some((req.id, submit_ns))
        };
        self.ops.push(Op {
            seq,
            report,
            lbn: req.lbn,
            sectors,
            is_read: false,
            ready_ns: ready,
            data: Some(data),
            send_ns: None,
            busy_at_ready: self.hda_busy_ns,
        });
    }

    /// Puts written data in a segment (appending to a sequential stream when
    /// allowed) and drops older copies elsewhere.
    fn buffer_write(&mut self, lbn: u64, sectors: u64, bus_start: f64) {
        let c = self.spec.cache;
        let stream = self
            .cache
            .ending_at(lbn)
            .filter(|&i| c.combine_seq_writes && self.cache.room_after(i, sectors));
        let i = stream.unwrap_or_else(|| self.cache.victim(bus_start));
        self.detach_prefetch(i);
        self.cache.invalidate_overlap(lbn, sectors, Some(i));
        let run = MediaRun {
            lbn,
            sectors,
            start_ns: bus_start,
            sector_ns: self.bus_write_ns_per_sector,
            pos: HeadPos::default(),
        };
        let s = &mut self.cache.segments[i];
        if stream.is_some() {
            s.end_lbn = lbn + sectors;
            s.runs.retain(|r| r.end_ns() > bus_start);
        } else {
            *s = Segment {
                start_lbn: lbn,
                end_lbn: lbn + sectors,
                valid: true,
                ..Segment::default()
            };
        }
        s.readable = c.read_hits_on_write_data;
        s.runs.push(run);
        // Not evictable until its destage is scheduled (which sets the real end).
        s.dirty_until_ns = f64::INFINITY;
        self.cache.touch(i);
    }

    /// A segment is being reused: the read-ahead filling it must stop.
    fn detach_prefetch(&mut self, seg: usize) {
        if self.prefetch.is_some_and(|p| p.segment == seg) {
            self.prefetch = None;
        }
    }

    /// Sends `sectors` from segment `seg` over the bus, starting no earlier
    /// than `start_ns` and never ahead of the data.
    fn read_from_buffer(
        &mut self,
        seg: usize,
        start_ns: f64,
        id: u64,
        lbn: u64,
        sectors: u64,
        submit_ns: u64,
    ) {
        self.cache.touch(seg);
        let end = lbn + sectors;
        if let Some(p) = self.prefetch.as_mut().filter(|p| p.segment == seg) {
            p.pinned_lbn = p.pinned_lbn.max(end);
        }
        let segment = self.cache.segments[seg].clone();
        let done = self.bus_transfer(start_ns, lbn, sectors, |l| segment.ready_ns(l));
        let finish = done + self.completion_overhead_ns(true);
        self.complete(finish, id, submit_ns, true, 0);
    }

    /// Bus transfer of read data `lbn..lbn+sectors`, sector i leaving once it is ready
    /// and the previous one has left. Returns when the last sector has left.
    fn bus_transfer(
        &mut self,
        start_ns: f64,
        lbn: u64,
        sectors: u64,
        ready: impl Fn(u64) -> f64,
    ) -> f64 {
        let bus = self.bus_read_ns_per_sector;
        let start = start_ns.max(self.bus_free_ns);
        // Finish = max(start + n*bus, max_i(ready_i + (n - i) * bus)); ready is
        // piecewise linear in i, so checking each sector is exact but costly
        // for huge requests; requests are small, so do it plainly.
        let mut done = start + sectors as f64 * bus;
        for i in 0..sectors {
            done = done.max(ready(lbn + i) + (sectors - i) as f64 * bus);
        }
        self.bus_free_ns = done;
        done
    }
}

//! The mechanism's side of the drive: picking the next media operation,
//! stopping read-ahead, and reading or writing on the platters.

use super::{DiskModel, Op, Prefetch, NS_PER_MS, WORK_DESTAGE, WORK_HOST_WRITE, WORK_READ};
use crate::disk::config::{Destage, ReadAhead, RequestData, SchedulerKind};
use crate::disk::mechanics::HeadPos;
use crate::disk::scheduler::{choose, Candidate};

impl DiskModel {
    /// Stops the read-ahead at `t` (at a sector boundary, never before its
    /// pinned sectors); returns when the HDA is free and where the head is.
    pub(super) fn stop_prefetch(&mut self, t: f64) -> (f64, HeadPos) {
        let Some(p) = self.prefetch.take() else {
            return (t.max(self.hda_free_ns), self.head);
        };
        if t >= p.end_ns {
            return (t, p.end_pos);
        }
        let seg = &mut self.cache.segments[p.segment];
        // First sector not yet started at t (or the pinned limit, if later).
        let mut cut = seg.end_lbn;
        let mut free = t;
        let mut pos = p.end_pos;
        for r in &seg.runs {
            if r.end_ns() <= t {
                continue;
            }
            let started = if t <= r.start_ns {
                0
            } else {
                (((t - r.start_ns) / r.sector_ns).floor() as u64 + 1).min(r.sectors)
            };
            cut = r.lbn + started;
            free = r.start_ns + started as f64 * r.sector_ns;
            pos = r.pos;
            break;
        }
        if p.pinned_lbn > cut {
            cut = p.pinned_lbn.min(seg.end_lbn);
            free = seg.ready_ns(cut.saturating_sub(1)).max(free);
            if let Some(r) = seg.runs.iter().find(|r| cut > r.lbn && cut <= r.end_lbn()) {
                pos = r.pos;
            }
        }
        seg.truncate(cut);
        (free.max(t), pos)
    }

    /// Whether destages wait at `t`: in the background while a host
    /// command is ready for the mechanism and the buffer still has room.
    fn destages_wait(&self, t: f64) -> bool {
        self.spec.cache.destage == Destage::Background
            && self
                .ops
                .iter()
                .any(|o| o.report.is_some() && o.ready_ns <= t)
            && self.cache.has_clean_segment(t)
    }

    /// The HDA is free at `t`: pick a ready media operation and run it.
    pub(super) fn dispatch(&mut self, t: f64) {
        let destages_wait = self.destages_wait(t);
        let cands: Vec<Candidate> = self
            .ops
            .iter()
            .filter(|o| o.ready_ns <= t && !(destages_wait && o.report.is_none()))
            .map(|o| Candidate {
                seq: o.seq,
                cyl: self.mech.pbn(o.lbn).map_or(0, |p| p.cyl),
                positioning_ns: if self.spec.scheduler == SchedulerKind::Sptf {
                    self.mech.positioning_ns(t, self.head, o.lbn, !o.is_read)
                } else {
                    0.0
                },
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let pick = cands[choose(self.spec.scheduler, &cands, self.head.cyl)].seq;
        let Some(k) = self.ops.iter().position(|o| o.seq == pick) else {
            return;
        };
        let op = self.ops.swap_remove(k);
        let work = match (op.is_read, op.report.is_some()) {
            (true, _) => WORK_READ,
            (false, true) => WORK_HOST_WRITE,
            (false, false) => WORK_DESTAGE,
        };
        if op.is_read {
            let w = &mut self.read_waits;
            w.reads += 1;
            w.mechanism_wait_ns += (t - op.ready_ns).max(0.0);
            for (i, b) in w.behind_ns.iter_mut().enumerate() {
                *b += self.hda_busy_ns[i] - op.busy_at_ready[i];
            }
        }
        let before = self.hda_free_ns.max(t);
        if op.is_read {
            self.media_read(t, op);
        } else {
            self.media_write(t, op);
        }
        self.hda_busy_ns[work] += (self.hda_free_ns - before).max(0.0);
    }

    /// When the mechanism may start moving for `op` at `t`: a new access
    /// needs the controller; a stream continuing where the head stopped does not.
    fn continues_stream(&self, t: f64, lbn: u64, is_read: bool) -> bool {
        self.last_media.is_some_and(|(end_lbn, end_ns, was_read)| {
            end_lbn == lbn && was_read == is_read && t <= end_ns + 1.0
        })
    }

    fn media_start(&self, t: f64, lbn: u64, is_read: bool) -> f64 {
        if self.continues_stream(t, lbn, is_read) {
            t
        } else {
            t.max(self.ctrl_free_ns)
        }
    }

    fn media_read(&mut self, t: f64, op: Op) {
        let (free, pos) = self.stop_prefetch(t);
        self.head = pos;
        let (id, submit_ns) = op.report.unwrap_or((0, 0));
        // An earlier command may have brought the data in meanwhile.
        if self.spec.cache.enabled {
            if let Some(seg) = self.cache.lookup(op.lbn, op.sectors, free) {
                self.hda_free_ns = free;
                self.read_from_buffer(seg, free, id, op.lbn, op.sectors, submit_ns);
                return;
            }
        }
        let start = self.media_start(free, op.lbn, op.is_read);
        let (seg, seg_start, from) = self.segment_for_read(start, op.lbn);
        // A partial hit reads on from the buffered part's end.
        let start = if from == op.lbn {
            start
        } else {
            self.media_start(free, from, op.is_read)
        };
        let target = self.read_ahead_end(op.lbn, op.sectors, seg_start);
        let acc = self
            .mech
            .access(start, self.head, from, target - from, false, None, 0.0);
        let req_end = op.lbn + op.sectors;
        let req_done_ns = acc
            .runs
            .iter()
            .find(|r| req_end > r.lbn && req_end <= r.end_lbn())
            .map_or(acc.end_ns, |r| {
                r.start_ns + (req_end - r.lbn) as f64 * r.sector_ns
            });
        let buffered = {
            let s = &mut self.cache.segments[seg];
            let buffered = s.clone();
            s.valid = true;
            s.readable = true;
            let seg_sectors = self.cache.segment_sectors;
            let wraps = self.spec.cache.segments_wrap;
            s.start_lbn = match self.spec.cache.request_data {
                RequestData::Dropped => seg_start.max(req_end),
                _ if wraps => seg_start,
                _ => seg_start
                    .max(target.saturating_sub(seg_sectors))
                    .min(op.lbn),
            };
            s.end_lbn = target;
            s.runs.retain(|r| r.lbn < from);
            s.runs.extend(acc.runs.iter().copied());
            s.dirty_until_ns = 0.0;
            s.ring_sectors = wraps.then_some(seg_sectors);
            buffered
        };
        self.cache.touch(seg);
        let runs = acc.runs.clone();
        let ready = |l: u64| {
            if l < from {
                return buffered.ready_ns(l);
            }
            runs.iter()
                .find(|r| l >= r.lbn && l < r.end_lbn())
                .map_or(0.0, |r| r.start_ns + (l - r.lbn + 1) as f64 * r.sector_ns)
        };
        let send = op.send_ns.unwrap_or_else(|| {
            ready(op.lbn + self.read_water_sectors(op.sectors) - 1)
                + (self.spec.overheads.reselect_ms + self.spec.overheads.data_prep_ms) * NS_PER_MS
        });
        let done = self.bus_transfer(start.max(send), op.lbn, op.sectors, ready);
        if op.report.is_some() {
            let finish = done + self.completion_overhead_ns(true);
            self.complete(finish, id, submit_ns, false, acc.seek_cyls);
        }
        self.hda_free_ns = req_done_ns;
        self.last_media = Some((target, acc.end_ns, true));
        let last_req_pos = acc
            .runs
            .iter()
            .find(|r| req_end > r.lbn && req_end <= r.end_lbn())
            .map_or(acc.end_pos, |r| r.pos);
        self.head = last_req_pos;
        if target > req_end && self.spec.cache.enabled {
            let min_end = (req_end + self.spec.cache.read_ahead_min_sectors).min(target);
            self.prefetch = Some(Prefetch {
                segment: seg,
                end_ns: acc.end_ns,
                end_pos: acc.end_pos,
                pinned_lbn: min_end,
            });
        } else {
            self.head = acc.end_pos;
        }
    }

    /// Sectors of a read of `sectors` that must be in the buffer before it
    /// reconnects to send them (DiskSim's read water mark, at least one).
    fn read_water_sectors(&self, sectors: u64) -> u64 {
        let c = &self.spec.cache;
        let seg = self.cache.segment_sectors;
        let water = if c.water_by_request {
            (sectors.min(seg) as f64 * c.read_high_water) as u64
        } else {
            (seg as f64 * c.read_high_water).ceil() as u64
        };
        water.clamp(1, sectors)
    }

    /// Segment to read `lbn..` into: the one holding its first sectors or
    /// ending right before it, else a victim. Returns it, the first LBN it
    /// keeps and the first LBN the media must supply.
    fn segment_for_read(&mut self, t: f64, lbn: u64) -> (usize, u64, u64) {
        if self.spec.cache.enabled {
            if let Some(i) = self
                .cache
                .continuing(lbn, t)
                .filter(|&i| self.cache.segments[i].dirty_until_ns <= t)
            {
                let partial_hits = self.spec.cache.partial_hits;
                let s = &mut self.cache.segments[i];
                s.start_lbn = s.start_at(t);
                if !partial_hits {
                    s.truncate(lbn);
                }
                let from = s.end_lbn.max(lbn);
                return (i, s.start_lbn, from);
            }
        }
        let i = self.cache.victim(t);
        self.detach_prefetch(i);
        (i, lbn, lbn)
    }

    /// End (exclusive) of what a read of `lbn..lbn+sectors` brings into the
    /// buffer, read-ahead included.
    fn read_ahead_end(&self, lbn: u64, sectors: u64, seg_start: u64) -> u64 {
        let c = self.spec.cache;
        let req_end = lbn + sectors;
        if !c.enabled {
            return req_end;
        }
        let cap = self.mech.geometry.capacity_sectors();
        let target = if c.segments_wrap {
            self.read_ahead_wrapping(lbn, sectors, seg_start)
        } else {
            self.read_ahead_within_segment(lbn, sectors, seg_start)
        };
        target.min(cap).max(req_end)
    }

    /// As DiskSim sets it for its wrapping segments: the next-track scheme
    /// reads to the end of the track after the request (one track more in a
    /// stream) whatever the limits; the others read up to the maximum
    /// read-ahead, else a segment's worth (from the request's start when
    /// its data must stay), and stop at the end of the track or cylinder
    /// when asked to.
    fn read_ahead_wrapping(&self, lbn: u64, sectors: u64, seg_start: u64) -> u64 {
        let c = self.spec.cache;
        let g = &self.mech.geometry;
        let req_end = lbn + sectors;
        let seg = self.cache.segment_sectors;
        let limit = if c.read_ahead_max_sectors > 0 {
            req_end + c.read_ahead_max_sectors
        } else if c.request_data == RequestData::Kept {
            if sectors >= seg || seg - sectors < c.read_ahead_min_sectors {
                req_end + c.read_ahead_min_sectors
            } else {
                lbn + seg
            }
        } else {
            req_end + seg
        };
        match c.read_ahead {
            ReadAhead::None => req_end,
            ReadAhead::ToTrackEnd => limit.min(g.track_lbn_range(req_end - 1).1),
            ReadAhead::ToCylinderEnd => limit.min(g.cylinder_lbn_range(req_end - 1).1),
            ReadAhead::ToSegmentEnd => limit,
            ReadAhead::NextTrack => self.next_track_end(req_end, seg_start),
        }
    }

    /// For segments that do not wrap: the scheme's end, cut to the maximum
    /// read-ahead and to a segment's worth past the request.
    fn read_ahead_within_segment(&self, lbn: u64, sectors: u64, seg_start: u64) -> u64 {
        let c = self.spec.cache;
        let g = &self.mech.geometry;
        let req_end = lbn + sectors;
        let mut target = match c.read_ahead {
            ReadAhead::None => req_end,
            ReadAhead::ToTrackEnd => g.track_lbn_range(req_end - 1).1,
            ReadAhead::ToCylinderEnd => g.cylinder_lbn_range(req_end - 1).1,
            // The segment slides along a stream: data already sent to the
            // host may be replaced by read-ahead.
            ReadAhead::ToSegmentEnd => lbn + self.cache.segment_sectors,
            ReadAhead::NextTrack => self.next_track_end(req_end, seg_start),
        };
        if c.read_ahead_max_sectors > 0 {
            target = target.min(req_end + c.read_ahead_max_sectors);
        }
        target.min(req_end + self.cache.segment_sectors)
    }

    /// End of the track holding `req_end`, one track further when the
    /// segment already held the track before (a sequential stream).
    fn next_track_end(&self, req_end: u64, seg_start: u64) -> u64 {
        let g = &self.mech.geometry;
        if req_end >= g.capacity_sectors() {
            return req_end;
        }
        let (first, end) = g.track_lbn_range(req_end);
        if seg_start < first {
            end + (end - first)
        } else {
            end
        }
    }

    fn media_write(&mut self, t: f64, op: Op) {
        let (free, pos) = self.stop_prefetch(t);
        self.head = pos;
        let start = self.media_start(free, op.lbn, op.is_read);
        // A write that does not stream on from the last one waits at least
        // the minimum positioning delay before touching the media.
        let min_move_ns = if self.continues_stream(free, op.lbn, op.is_read) {
            0.0
        } else {
            self.spec.overheads.min_write_position_ms * NS_PER_MS
        };
        let acc = self.mech.access(
            start,
            self.head,
            op.lbn,
            op.sectors,
            true,
            op.data,
            min_move_ns,
        );
        self.head = acc.end_pos;
        self.hda_free_ns = acc.end_ns;
        self.last_media = Some((op.lbn + op.sectors, acc.end_ns, false));
        for s in self.cache.segments.iter_mut().filter(|s| {
            s.valid && s.dirty_until_ns.is_infinite() && op.lbn >= s.start_lbn && op.lbn < s.end_lbn
        }) {
            s.dirty_until_ns = acc.end_ns;
        }
        if let Some((id, submit_ns)) = op.report {
            // The drive disconnected while the media worked; it reconnects
            // to report.
            let finish = acc.end_ns
                + self.spec.overheads.reselect_ms * NS_PER_MS
                + self.completion_overhead_ns(false);
            self.complete(finish, id, submit_ns, false, acc.seek_cyls);
        }
    }
}

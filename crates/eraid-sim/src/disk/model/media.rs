//! The mechanism's side of the drive: picking the next media operation,
//! stopping read-ahead, and reading or writing on the platters.

use super::{DiskModel, Op, Prefetch};
use crate::disk::config::{ReadAhead, SchedulerKind};
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

    /// The HDA is free at `t`: pick a ready media operation and run it.
    pub(super) fn dispatch(&mut self, t: f64) {
        let cands: Vec<Candidate> = self
            .ops
            .iter()
            .filter(|o| o.ready_ns <= t)
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
        if op.is_read {
            self.media_read(t, op);
        } else {
            self.media_write(t, op);
        }
    }

    /// When the mechanism may start moving for `op` at `t`: a new access
    /// needs the controller; a stream continuing where the head stopped does not.
    fn media_start(&self, t: f64, op: &Op) -> f64 {
        let continues = self.last_media.is_some_and(|(lbn, end_ns, was_read)| {
            lbn == op.lbn && was_read == op.is_read && t <= end_ns + 1.0
        });
        if continues {
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
            if let Some(seg) = self.cache.lookup(op.lbn, op.sectors) {
                self.hda_free_ns = free;
                self.read_from_buffer(seg, free, id, op.lbn, op.sectors, submit_ns);
                return;
            }
        }
        let start = self.media_start(free, &op);
        let (seg, seg_start) = self.segment_for_read(start, op.lbn);
        let target = self.read_ahead_end(op.lbn, op.sectors, seg_start);
        let total = target - op.lbn;
        let acc = self
            .mech
            .access(start, self.head, op.lbn, total, false, None);
        let req_end = op.lbn + op.sectors;
        let req_done_ns = acc
            .runs
            .iter()
            .find(|r| req_end > r.lbn && req_end <= r.end_lbn())
            .map_or(acc.end_ns, |r| {
                r.start_ns + (req_end - r.lbn) as f64 * r.sector_ns
            });
        {
            let s = &mut self.cache.segments[seg];
            s.valid = true;
            s.readable = true;
            s.start_lbn = seg_start
                .max(target.saturating_sub(self.cache.segment_sectors))
                .min(op.lbn);
            s.end_lbn = target;
            s.runs = acc.runs.clone();
            s.dirty_until_ns = 0.0;
        }
        self.cache.touch(seg);
        let runs = acc.runs.clone();
        let ready = |l: u64| {
            runs.iter()
                .find(|r| l >= r.lbn && l < r.end_lbn())
                .map_or(0.0, |r| r.start_ns + (l - r.lbn + 1) as f64 * r.sector_ns)
        };
        let done = self.bus_transfer(start, op.lbn, op.sectors, ready);
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

    /// Segment to read into: the one this read continues, else a victim.
    /// Returns it and the first LBN it keeps.
    fn segment_for_read(&mut self, t: f64, lbn: u64) -> (usize, u64) {
        if self.spec.cache.enabled {
            if let Some(i) = self
                .cache
                .continuing(lbn)
                .filter(|&i| self.cache.segments[i].dirty_until_ns <= t)
            {
                let s = &mut self.cache.segments[i];
                s.truncate(lbn);
                let start = s.start_lbn;
                return (i, start);
            }
        }
        let i = self.cache.victim(t);
        self.detach_prefetch(i);
        (i, lbn)
    }

    /// End (exclusive) of what a read of `lbn..lbn+sectors` brings into the
    /// buffer, read-ahead included.
    fn read_ahead_end(&self, lbn: u64, sectors: u64, seg_start: u64) -> u64 {
        let c = self.spec.cache;
        let req_end = lbn + sectors;
        if !c.enabled {
            return req_end;
        }
        let g = &self.mech.geometry;
        let cap = g.capacity_sectors();
        let mut target = match c.read_ahead {
            ReadAhead::None => req_end,
            ReadAhead::ToTrackEnd => g.track_lbn_range(req_end - 1).1,
            ReadAhead::ToCylinderEnd => g.cylinder_lbn_range(req_end - 1).1,
            // The segment slides along a stream: data already sent to the
            // host may be replaced by read-ahead.
            ReadAhead::ToSegmentEnd => lbn + self.cache.segment_sectors,
            ReadAhead::NextTrack if req_end >= cap => req_end,
            ReadAhead::NextTrack => {
                let (first, end) = g.track_lbn_range(req_end);
                if seg_start < first {
                    end + (end - first)
                } else {
                    end
                }
            }
        };
        if c.read_ahead_max_sectors > 0 {
            target = target.min(req_end + c.read_ahead_max_sectors);
        }
        target
            .min(req_end + self.cache.segment_sectors)
            .min(cap)
            .max(req_end)
    }

    fn media_write(&mut self, t: f64, op: Op) {
        let (free, pos) = self.stop_prefetch(t);
        self.head = pos;
        let start = self.media_start(free, &op);
        let acc = self
            .mech
            .access(start, self.head, op.lbn, op.sectors, true, op.data);
        self.head = acc.end_pos;
        self.hda_free_ns = acc.end_ns;
        self.last_media = Some((op.lbn + op.sectors, acc.end_ns, false));
        for s in self.cache.segments.iter_mut().filter(|s| {
            s.valid && s.dirty_until_ns.is_infinite() && op.lbn >= s.start_lbn && op.lbn < s.end_lbn
        }) {
            s.dirty_until_ns = acc.end_ns;
        }
        if let Some((id, submit_ns)) = op.report {
            let finish = acc.end_ns + self.completion_overhead_ns(false);
            self.complete(finish, id, submit_ns, false, acc.seek_cyls);
        }
    }
}

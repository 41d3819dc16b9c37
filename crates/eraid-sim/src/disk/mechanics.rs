//! Head and platter motion: seeks, head switches, write settling, and the
//! rotational position of the platter at every instant.
//!
//! The platter turns at a constant rate from time 0 (angle 0), so the angle
//! under the head at time `t` is `frac(t / period)`. Every access therefore
//! pays exactly the rotation between where the platter is when positioning
//! ends and where its first sector begins.

use super::config::MechanicsSpec;
use super::geometry::{Geometry, Pbn};
use super::seek::SeekCurve;

const NS_PER_MS: f64 = 1e6;
/// Rotational waits this close to a full turn are float noise for "the
/// sector is under the head now" (a contiguous continuation).
const ROTATION_SLACK_NS: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeadPos {
    pub cyl: u32,
    pub head: u32,
}

/// Sectors `lbn..lbn+sectors` pass under the head one after another, sector
/// `i` (0-based within the run) ending at `start_ns + (i + 1) * sector_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaRun {
    pub lbn: u64,
    pub sectors: u64,
    pub start_ns: f64,
    pub sector_ns: f64,
    pub pos: HeadPos,
}

impl MediaRun {
    pub fn end_ns(&self) -> f64 {
        self.start_ns + self.sectors as f64 * self.sector_ns
    }
    pub fn end_lbn(&self) -> u64 {
        self.lbn + self.sectors
    }
}

/// When the data of a write is in the buffer: sector `i` of the request at
/// `first_ns + i * per_sector_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataArrival {
    pub first_ns: f64,
    pub per_sector_ns: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MediaAccess {
    pub runs: Vec<MediaRun>,
    pub end_ns: f64,
    pub end_pos: HeadPos,
    pub seek_cyls: u32,
}

#[derive(Debug, Clone)]
pub struct Mechanics {
    pub geometry: Geometry,
    seek: SeekCurve,
    period_ns: f64,
    head_switch_ns: f64,
    write_settle_ns: f64,
}

impl Mechanics {
    pub fn new(geometry: Geometry, spec: &MechanicsSpec) -> Self {
        Mechanics {
            geometry,
            seek: spec.seek.clone(),
            period_ns: 60e9 / spec.rpm.max(1.0),
            head_switch_ns: spec.head_switch_ms * NS_PER_MS,
            write_settle_ns: spec.write_settle_ms * NS_PER_MS,
        }
    }

    pub fn period_ns(&self) -> f64 {
        self.period_ns
    }

    /// Platter angle (revolutions, [0, 1)) under the heads at `t_ns`.
    pub fn angle_at(&self, t_ns: f64) -> f64 {
        (t_ns / self.period_ns).rem_euclid(1.0)
    }

    /// Seek (or head switch, whichever is longer) plus write settling when
    /// the head moves at all, as DiskSim's g1 mechanics do.
    pub fn reposition_ns(&self, from: HeadPos, to: HeadPos, is_write: bool) -> f64 {
        let seek = self.seek.seek_time_ms(from.cyl.abs_diff(to.cyl)) * NS_PER_MS;
        let switch = if from.head != to.head {
            self.head_switch_ns
        } else {
            0.0
        };
        let t = seek.max(switch);
        if t > 0.0 && is_write {
            (t + self.write_settle_ns).max(0.0)
        } else {
            t
        }
    }

    fn rotate_to_ns(&self, t_ns: f64, target_angle: f64) -> f64 {
        let wait = (target_angle - self.angle_at(t_ns)).rem_euclid(1.0) * self.period_ns;
        if wait > self.period_ns - ROTATION_SLACK_NS {
            0.0
        } else {
            wait
        }
    }

    /// Time from `start_ns` until the head is over the first sector of `lbn`
    /// (seek plus rotation), for SPTF.
    pub fn positioning_ns(&self, start_ns: f64, from: HeadPos, lbn: u64, is_write: bool) -> f64 {
        let run = self.geometry.run_at(lbn, 1);
        let to = HeadPos {
            cyl: run.pbn.cyl,
            head: run.pbn.head,
        };
        let t = start_ns + self.reposition_ns(from, to, is_write);
        t + self.rotate_to_ns(t, self.geometry.sector_angle(run.zone, run.pbn)) - start_ns
    }

    /// Reads or writes `sectors` blocks from `lbn`, starting to move at
    /// `start_ns` from `from`. For writes, `data` says when each sector is in
    /// the buffer: a sector can only be written once it is there, so a run
    /// whose data arrives too late waits whole revolutions. The first move
    /// takes at least `min_first_move_ns`.
    #[allow(clippy::too_many_arguments)]
    pub fn access(
        &self,
        start_ns: f64,
        from: HeadPos,
        lbn: u64,
        sectors: u64,
        is_write: bool,
        data: Option<DataArrival>,
        min_first_move_ns: f64,
    ) -> MediaAccess {
        let mut runs = Vec::new();
        let mut t = start_ns;
        let mut pos = from;
        let mut next = lbn;
        let end = lbn + sectors;
        let mut seek_cyls = 0;
        while next < end {
            let run = self.geometry.run_at(next, end - next);
            let to = HeadPos {
                cyl: run.pbn.cyl,
                head: run.pbn.head,
            };
            let mut move_ns = self.reposition_ns(pos, to, is_write);
            if runs.is_empty() {
                seek_cyls = from.cyl.abs_diff(to.cyl);
                move_ns = move_ns.max(min_first_move_ns);
            }
            t += move_ns;
            pos = to;
            let sector_ns = self.period_ns / f64::from(self.geometry.sectors_per_track(run.zone));
            let angle = self.geometry.sector_angle(run.zone, run.pbn);
            let mut begin = t + self.rotate_to_ns(t, angle);
            if let Some(d) = data {
                let earliest =
                    earliest_write_start(d, (run.lbn - lbn) as f64, run.sectors as f64, sector_ns);
                if begin < earliest {
                    begin += ((earliest - begin) / self.period_ns).ceil() * self.period_ns;
                }
            }
            runs.push(MediaRun {
                lbn: run.lbn,
                sectors: run.sectors,
                start_ns: begin,
                sector_ns,
                pos,
            });
            t = begin + run.sectors as f64 * sector_ns;
            next += run.sectors;
        }
        MediaAccess {
            runs,
            end_ns: t,
            end_pos: pos,
            seek_cyls,
        }
    }

    pub fn pbn(&self, lbn: u64) -> Option<Pbn> {
        self.geometry.lbn_to_pbn(lbn)
    }
}

/// Earliest start of a run of `count` sectors beginning at request sector
/// `first` such that every sector's data is in the buffer before the head
/// reaches that sector.
fn earliest_write_start(d: DataArrival, first: f64, count: f64, sector_ns: f64) -> f64 {
    // Sector i (run-relative) needs: start + i * sector_ns >= arrival(first + i).
    // Both sides are linear in i, so the binding sector is the first or the last.
    let need = |i: f64| d.first_ns + (first + i) * d.per_sector_ns - i * sector_ns;
    need(0.0).max(need(count - 1.0))
}

//! The drive's segmented buffer: which LBNs it holds and from when.
//!
//! A segment holds one contiguous LBN range. Sectors still being read by a
//! read-ahead (or still arriving from the host) carry the instant they become
//! valid, so a request can hit on data that is "on its way".

use super::mechanics::MediaRun;

#[derive(Debug, Clone, Default)]
pub struct Segment {
    pub start_lbn: u64,
    pub end_lbn: u64,
    pub valid: bool,
    /// Reads may use this data (false for written data when the drive does
    /// not allow read hits on write data).
    pub readable: bool,
    /// Sectors that become valid later than the segment was filled; sectors
    /// outside every run are valid already.
    pub runs: Vec<MediaRun>,
    /// Dirty data stays until destaged: this segment is not evicted earlier.
    pub dirty_until_ns: f64,
    pub last_use: u64,
    /// Filled from the media as a ring of this many sectors: once more have
    /// been read, the oldest are overwritten (DiskSim's segment wrap).
    pub ring_sectors: Option<u64>,
}

impl Segment {
    /// Instant sector `lbn` is in the buffer.
    pub fn ready_ns(&self, lbn: u64) -> f64 {
        self.runs
            .iter()
            .rev()
            .find(|r| lbn >= r.lbn && lbn < r.end_lbn())
            .map_or(0.0, |r| r.start_ns + (lbn - r.lbn + 1) as f64 * r.sector_ns)
    }

    /// First LBN not yet in the buffer at `t_ns`.
    fn filled_to(&self, t_ns: f64) -> u64 {
        for r in &self.runs {
            if t_ns < r.end_ns() {
                let done = ((t_ns - r.start_ns) / r.sector_ns).floor().max(0.0) as u64;
                return r.lbn + done.min(r.sectors);
            }
        }
        self.end_lbn
    }

    /// First LBN still held at `t_ns`.
    pub fn start_at(&self, t_ns: f64) -> u64 {
        match self.ring_sectors {
            Some(ring) => self
                .start_lbn
                .max(self.filled_to(t_ns).saturating_sub(ring)),
            None => self.start_lbn,
        }
    }

    /// Whether `lbn..lbn+sectors` is (or is being brought) into the buffer
    /// at `t_ns` and readable.
    pub fn covers(&self, lbn: u64, sectors: u64, t_ns: f64) -> bool {
        self.valid && self.readable && lbn >= self.start_at(t_ns) && lbn + sectors <= self.end_lbn
    }

    /// Drops every sector from `lbn` on.
    pub fn truncate(&mut self, lbn: u64) {
        self.end_lbn = self.end_lbn.min(lbn).max(self.start_lbn);
        self.runs.retain(|r| r.lbn < lbn);
        if let Some(r) = self.runs.last_mut() {
            r.sectors = r.sectors.min(lbn - r.lbn);
        }
        if self.end_lbn == self.start_lbn {
            self.valid = false;
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cache {
    pub segments: Vec<Segment>,
    pub segment_sectors: u64,
    clock: u64,
}

impl Cache {
    pub fn new(segments: usize, segment_sectors: u64) -> Self {
        Cache {
            segments: vec![Segment::default(); segments],
            segment_sectors,
            clock: 0,
        }
    }

    pub fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.segments[i].last_use = self.clock;
    }

    /// Segment holding all of `lbn..lbn+sectors` for reading at `t_ns`.
    pub fn lookup(&self, lbn: u64, sectors: u64, t_ns: f64) -> Option<usize> {
        self.segments
            .iter()
            .position(|s| s.covers(lbn, sectors, t_ns))
    }

    /// A valid segment whose data ends exactly at `lbn` (a sequential stream).
    pub fn ending_at(&self, lbn: u64) -> Option<usize> {
        self.segments
            .iter()
            .position(|s| s.valid && s.end_lbn == lbn && s.end_lbn > s.start_lbn)
    }

    /// A readable segment whose range at `t_ns` contains or ends right
    /// before `lbn`.
    pub fn continuing(&self, lbn: u64, t_ns: f64) -> Option<usize> {
        self.segments
            .iter()
            .position(|s| s.valid && s.readable && lbn >= s.start_at(t_ns) && lbn <= s.end_lbn)
    }

    /// Whether segment `i` can take `sectors` more at its end.
    pub fn room_after(&self, i: usize, sectors: u64) -> bool {
        let s = &self.segments[i];
        s.end_lbn - s.start_lbn + sectors <= self.segment_sectors
    }

    /// Whether a segment holds no data still waiting to be destaged at
    /// `now_ns` (so written data can be taken into it).
    pub fn has_clean_segment(&self, now_ns: f64) -> bool {
        self.segments
            .iter()
            .any(|s| !s.valid || s.dirty_until_ns <= now_ns)
    }

    /// Segment to reuse at `now_ns`: an empty one, else the least recently
    /// used among those with no pending dirty data, else the least recently
    /// used of all (the model then lets dirty data and new data share it).
    pub fn victim(&self, now_ns: f64) -> usize {
        if let Some(i) = self.segments.iter().position(|s| !s.valid) {
            return i;
        }
        let lru = |clean_only: bool| {
            self.segments
                .iter()
                .enumerate()
                .filter(|(_, s)| !clean_only || s.dirty_until_ns <= now_ns)
                .min_by_key(|(_, s)| s.last_use)
                .map(|(i, _)| i)
        };
        lru(true).or_else(|| lru(false)).unwrap_or(0)
    }

    /// Forgets data that overlaps a newer write, except in segment `keep`.
    pub fn invalidate_overlap(&mut self, lbn: u64, sectors: u64, keep: Option<usize>) {
        for (i, s) in self.segments.iter_mut().enumerate() {
            if Some(i) != keep && s.valid && lbn < s.end_lbn && s.start_lbn < lbn + sectors {
                if s.start_lbn < lbn {
                    s.truncate(lbn);
                } else {
                    s.valid = false;
                    s.runs.clear();
                }
            }
        }
    }
}

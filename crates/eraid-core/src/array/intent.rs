//! Write-intent tracking: which bitmap regions must be marked on disk before
//! a write may land there, and which can be cleared lazily once idle.

use crate::io::TimeNs;
use crate::metadata::bitmap::IntentBitmap;
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

pub struct Intent {
    /// What we want on disk: set for every region with recent writes.
    pub desired: IntentBitmap,
    /// What the last completed bitmap write holds for sure.
    pub durable: IntentBitmap,
    /// Writes in progress per region. (Both maps are looked up for every
    /// dirty region each time the engine asks for its next timer, so they
    /// use a fast hasher: SipHash here was a quarter of a simulation's
    /// time. Neither is iterated, so their order matters nowhere.)
    pub inflight: FxHashMap<u64, u32>,
    /// Last write start per region, and a counter bumped per write, so a
    /// clean cycle can tell whether a region was written while it flushed.
    pub last_write: FxHashMap<u64, (TimeNs, u64)>,
    /// Regions a resync still has to visit: never cleared before it has.
    pub pinned: BTreeSet<u64>,
    /// Ops waiting for their region to be durable.
    pub waiting: Vec<(u64, u64)>,
    pub sequence: u64,
    pub stripes_per_region: u64,
}

impl Intent {
    pub fn new(bitmap: IntentBitmap, sequence: u64, stripes_per_region: u64) -> Intent {
        Intent {
            desired: bitmap.clone(),
            durable: bitmap,
            inflight: FxHashMap::default(),
            last_write: FxHashMap::default(),
            pinned: BTreeSet::new(),
            waiting: Vec::new(),
            sequence,
            stripes_per_region,
        }
    }

    pub fn region_of(&self, stripe: u64) -> u64 {
        stripe / self.stripes_per_region
    }

    /// True if a write may proceed in `region` now.
    pub fn is_durable(&self, region: u64) -> bool {
        self.desired.get(region) && self.durable.get(region)
    }

    pub fn begin_write(&mut self, region: u64, now: TimeNs) {
        *self.inflight.entry(region).or_default() += 1;
        let entry = self.last_write.entry(region).or_insert((now, 0));
        *entry = (now, entry.1 + 1);
    }

    pub fn end_write(&mut self, region: u64) {
        let count = self
            .inflight
            .get_mut(&region)
            .expect("end_write without begin_write");
        *count -= 1;
        if *count == 0 {
            self.inflight.remove(&region);
        }
    }

    /// Regions set on disk, idle for `delay_ns`, with no writes in flight and
    /// no resync pending: candidates for clearing, with their write counters.
    pub fn clear_candidates(&self, now: TimeNs, delay_ns: u64) -> Vec<(u64, u64)> {
        self.desired
            .dirty_regions()
            .filter(|r| !self.inflight.contains_key(r) && !self.pinned.contains(r))
            .filter_map(|r| match self.last_write.get(&r) {
                Some(&(at, count)) => {
                    (now.0.saturating_sub(at.0) >= delay_ns).then_some((r, count))
                }
                None => Some((r, 0)),
            })
            .collect()
    }

    pub fn write_count(&self, region: u64) -> u64 {
        self.last_write.get(&region).map_or(0, |&(_, c)| c)
    }

    /// The earliest instant some region becomes a clear candidate.
    pub fn next_clear_at(&self, delay_ns: u64) -> Option<TimeNs> {
        self.desired
            .dirty_regions()
            .filter(|r| !self.inflight.contains_key(r) && !self.pinned.contains(r))
            .map(|r| {
                self.last_write
                    .get(&r)
                    .map_or(TimeNs(0), |&(at, _)| TimeNs(at.0 + delay_ns))
            })
            .min()
    }
}

//! PRO's reconstruction scheduler (RS): the replacement is cut into hot
//! zones of `zone_stripes` stripes; a zone users touch gets a
//! reconstruction "thread" (its next stripe), created by the access monitor
//! (pro_init_thread). The most popular zone's thread gets a time slice and
//! rebuilds its remaining stripes in address order until the slice is used
//! up or the zone is done; then the scheduler picks again
//! (pro_sort_threads, pro_schedule_stripe). Zones no user touched are
//! rebuilt by one more thread walking the whole replacement in address
//! order, which runs whenever no hot zone has stripes left: cold zones come
//! after the hot ones, and a zone turning hot later is served at the next
//! slice. The executor (RE) is the engine's stripe pipeline.

use super::access_monitor::AccessMonitor;
use super::rebuilt_map::RebuiltMap;
use crate::io::TimeNs;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::array) enum Thread {
    Zone(u64),
    /// Zones not hot, in address order.
    Cold,
}

pub(in crate::array) struct ZoneScheduler {
    zone_stripes: u64,
    total_stripes: u64,
    time_slice_ns: u64,
    pub monitor: AccessMonitor,
    /// One reconstruction thread per hot zone: its next stripe.
    threads: BTreeMap<u64, u64>,
    /// Zones whose thread found nothing left (never started again).
    finished: BTreeSet<u64>,
    cold_next: u64,
    /// The thread holding the slice and when its slice ends.
    active: Option<(Thread, TimeNs)>,
}

impl ZoneScheduler {
    pub fn new(
        total_stripes: u64,
        zone_stripes: u64,
        time_slice_ms: u64,
        half_life_ms: u64,
    ) -> ZoneScheduler {
        assert!(zone_stripes > 0, "a zone holds at least one stripe");
        ZoneScheduler {
            zone_stripes,
            total_stripes,
            time_slice_ns: time_slice_ms * 1_000_000,
            monitor: AccessMonitor::new(half_life_ms),
            threads: BTreeMap::new(),
            finished: BTreeSet::new(),
            cold_next: 0,
            active: None,
        }
    }

    pub fn zone_of(&self, stripe: u64) -> u64 {
        stripe / self.zone_stripes
    }

    /// A user request touched `zone` (the access monitor's input): its
    /// popularity grows and, unless it is done, it has a thread.
    pub fn user_access(&mut self, zone: u64, now: TimeNs) {
        if zone * self.zone_stripes >= self.total_stripes || self.finished.contains(&zone) {
            return;
        }
        self.monitor.record(zone, now);
        self.threads.entry(zone).or_insert(zone * self.zone_stripes);
    }

    /// The thread with the highest popularity (the lowest zone among
    /// equals), or the cold one when no hot zone is left.
    fn pick(&self, now: TimeNs) -> Thread {
        let mut best: Option<(u64, f64)> = None;
        for &zone in self.threads.keys() {
            let popularity = self.monitor.popularity(zone, now);
            if best.is_none_or(|(_, p)| popularity > p) {
                best = Some((zone, popularity));
            }
        }
        best.map_or(Thread::Cold, |(zone, _)| Thread::Zone(zone))
    }

    /// The thread's next stripe neither rebuilt nor in flight (its cursor
    /// moves past those), or None when it has nothing left.
    fn advance(
        &mut self,
        thread: Thread,
        map: &RebuiltMap,
        busy: &dyn Fn(u64) -> bool,
    ) -> Option<u64> {
        let (cursor, end) = match thread {
            Thread::Zone(zone) => (
                self.threads
                    .get_mut(&zone)
                    .expect("an active zone has a thread"),
                ((zone + 1) * self.zone_stripes).min(self.total_stripes),
            ),
            Thread::Cold => (&mut self.cold_next, self.total_stripes),
        };
        while *cursor < end && (map.is_rebuilt(*cursor) || busy(*cursor)) {
            *cursor += 1;
        }
        (*cursor < end).then_some(*cursor)
    }

    /// The next stripe to rebuild at `now`: the active thread's while its
    /// slice lasts, else the next thread's. None: every stripe is rebuilt
    /// or in flight.
    pub fn next(
        &mut self,
        now: TimeNs,
        map: &RebuiltMap,
        busy: &dyn Fn(u64) -> bool,
    ) -> Option<u64> {
        // Each turn either returns or retires a thread: bounded by their
        // count plus the cold one.
        loop {
            let thread = match self.active {
                Some((thread, slice_end)) if now < slice_end => thread,
                _ => {
                    let thread = self.pick(now);
                    self.active = Some((thread, TimeNs(now.0.saturating_add(self.time_slice_ns))));
                    thread
                }
            };
            if let Some(stripe) = self.advance(thread, map, busy) {
                return Some(stripe);
            }
            self.active = None;
            match thread {
                Thread::Zone(zone) => {
                    self.threads.remove(&zone);
                    self.monitor.forget(zone);
                    // In flight stripes of it finish on their own.
                    self.finished.insert(zone);
                }
                Thread::Cold => return None,
            }
        }
    }

    /// The thread holding the slice (for status).
    pub fn active(&self) -> Option<Thread> {
        self.active.map(|(thread, _)| thread)
    }

    pub fn hot_threads(&self) -> usize {
        self.threads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn drain(s: &mut ZoneScheduler, map: &mut RebuiltMap, now: TimeNs, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for _ in 0..n {
            let Some(stripe) = s.next(now, map, &|_| false) else {
                break;
            };
            map.mark(stripe);
            out.push(stripe);
        }
        out
    }

    #[test]
    fn the_most_popular_zone_goes_first_then_cold_zones_in_address_order() {
        // 8 zones of 4 stripes; zone 5 hot, zone 2 warm.
        let mut s = ZoneScheduler::new(32, 4, 100, 10_000);
        let mut map = RebuiltMap::new(32);
        for _ in 0..5 {
            s.user_access(5, TimeNs(0));
        }
        s.user_access(2, TimeNs(0));
        let order = drain(&mut s, &mut map, TimeNs(MS), 32);
        let mut expected: Vec<u64> = (20..24).chain(8..12).collect();
        expected.extend((0..8).chain(12..20).chain(24..32));
        assert_eq!(order, expected);
        assert_eq!(s.next(TimeNs(MS), &map, &|_| false), None);
    }

    #[test]
    fn a_used_up_slice_goes_to_a_zone_that_became_hotter() {
        let mut s = ZoneScheduler::new(32, 4, 100, 10_000);
        let mut map = RebuiltMap::new(32);
        s.user_access(1, TimeNs(0));
        assert_eq!(drain(&mut s, &mut map, TimeNs(0), 2), vec![4, 5]);
        for _ in 0..3 {
            s.user_access(6, TimeNs(50 * MS));
        }
        // Zone 1 keeps its slice until 100 ms.
        assert_eq!(drain(&mut s, &mut map, TimeNs(60 * MS), 1), vec![6]);
        assert_eq!(
            drain(&mut s, &mut map, TimeNs(150 * MS), 4),
            vec![24, 25, 26, 27]
        );
        assert_eq!(drain(&mut s, &mut map, TimeNs(150 * MS), 1), vec![7]);
        // Stripes in flight are skipped, not repeated.
        assert_eq!(s.next(TimeNs(150 * MS), &map, &|st| st == 0), Some(1));
    }
}

//! PRO's access monitor (AM): counts users' accesses per hot zone, each
//! count decaying with time, so a zone's popularity says how often users
//! hit it lately. The scheduler ranks the zones' reconstruction threads by
//! it. Time comes in as values (the core has no clock).

use crate::io::TimeNs;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug)]
struct Count {
    /// The decayed count as of `at`.
    value: f64,
    at: TimeNs,
}

#[derive(Debug)]
pub(in crate::array) struct AccessMonitor {
    half_life_ns: f64,
    counts: HashMap<u64, Count>,
}

impl AccessMonitor {
    pub fn new(half_life_ms: u64) -> AccessMonitor {
        assert!(half_life_ms > 0, "a validated half-life is positive");
        AccessMonitor {
            half_life_ns: half_life_ms as f64 * 1e6,
            counts: HashMap::new(),
        }
    }

    fn decayed(&self, count: Count, now: TimeNs) -> f64 {
        let elapsed = now.0.saturating_sub(count.at.0) as f64;
        count.value * (-elapsed / self.half_life_ns).exp2()
    }

    /// A user request touched `zone` at `now`.
    pub fn record(&mut self, zone: u64, now: TimeNs) {
        let value = self
            .counts
            .get(&zone)
            .map_or(0.0, |&c| self.decayed(c, now));
        self.counts.insert(
            zone,
            Count {
                value: value + 1.0,
                at: now,
            },
        );
    }

    /// The zone's popularity at `now` (0: never accessed).
    pub fn popularity(&self, zone: u64, now: TimeNs) -> f64 {
        self.counts
            .get(&zone)
            .map_or(0.0, |&c| self.decayed(c, now))
    }

    /// A zone fully rebuilt is no longer ranked.
    pub fn forget(&mut self, zone: u64) {
        self.counts.remove(&zone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn counts_decay_by_half_every_half_life() {
        let mut monitor = AccessMonitor::new(1_000);
        for _ in 0..8 {
            monitor.record(3, TimeNs(0));
        }
        monitor.record(9, TimeNs(4 * S));
        assert_eq!(monitor.popularity(3, TimeNs(0)), 8.0);
        assert!((monitor.popularity(3, TimeNs(S)) - 4.0).abs() < 1e-9);
        assert!((monitor.popularity(3, TimeNs(3 * S)) - 1.0).abs() < 1e-9);
        // Zone 9's single recent access outranks zone 3's old ones.
        assert!(monitor.popularity(9, TimeNs(4 * S)) > monitor.popularity(3, TimeNs(4 * S)));
        assert_eq!(monitor.popularity(5, TimeNs(0)), 0.0);
        monitor.forget(3);
        assert_eq!(monitor.popularity(3, TimeNs(0)), 0.0);
    }
}

//! Rate control of redistribution: a floor and a ceiling on the rate (MD's
//! sync_speed_min/max), MD's "yield while users are busy" rule, and ALV's
//! on/off valve, judged per period from user congestion and latency.

use crate::io::TimeNs;
use crate::reshape::config::{ReshapeConfig, ReshapeStrategy};
use std::collections::VecDeque;

/// How far back the current rate is measured.
const RATE_SPAN_NS: u64 = 3_000_000_000;

#[derive(Debug, Default)]
pub struct Pacing {
    /// (time, array bytes processed) samples, oldest first.
    marks: VecDeque<(TimeNs, u64)>,
    /// No new window before this instant.
    pub not_before: TimeNs,
    pub last_user_io: Option<TimeNs>,
    /// Valve: the current period and what users saw in it.
    period_start: Option<TimeNs>,
    period_requests: u64,
    period_slow: u64,
    period_congested: bool,
    /// Valve: closed (redistribution paused) until this instant.
    valve_closed_until: TimeNs,
    pub valve_closed_periods: u64,
    pub valve_periods: u64,
}

impl Pacing {
    pub fn start_valve(&mut self, now: TimeNs) {
        self.period_start = Some(now);
    }

    pub fn note(&mut self, now: TimeNs, processed_bytes: u64) {
        self.marks.push_back((now, processed_bytes));
        while self.marks.len() > 2 && now.0 - self.marks[1].0 .0 >= RATE_SPAN_NS {
            self.marks.pop_front();
        }
    }

    /// Bytes per second over the recent span (0 before there are two marks).
    pub fn rate_bytes_s(&self, now: TimeNs, processed_bytes: u64) -> f64 {
        match self.marks.front() {
            Some(&(t, bytes)) if now.0 > t.0 => {
                (processed_bytes - bytes) as f64 / ((now.0 - t.0) as f64 / 1e9)
            }
            _ => 0.0,
        }
    }

    pub fn user_arrived(&mut self, now: TimeNs) {
        self.last_user_io = Some(now);
    }

    pub fn user_congested(&mut self) {
        self.period_congested = true;
    }

    pub fn user_finished(&mut self, latency_ns: u64, config: &ReshapeConfig) {
        self.period_requests += 1;
        if latency_ns as f64 > config.latency_bound_ms * 1e6 {
            self.period_slow += 1;
        }
    }

    /// Closes every valve period that ended by `now`: a period whose load
    /// was high (congestion, or more than `slack` of user I/Os slower than
    /// the bound) closes the valve for the next period.
    pub fn advance_valve(&mut self, now: TimeNs, config: &ReshapeConfig) {
        let period_ns = config.valve_period_ms * 1_000_000;
        let start = *self.period_start.get_or_insert(now);
        if now.0 < start.0 + period_ns {
            return;
        }
        let high = self.period_congested
            || (self.period_requests > 0
                && self.period_slow as f64 / self.period_requests as f64 > config.slack);
        let end = start.0 + period_ns;
        self.valve_periods += 1;
        if high {
            self.valve_closed_until = TimeNs(end + period_ns);
            self.valve_closed_periods += 1;
        }
        self.period_requests = 0;
        self.period_slow = 0;
        self.period_congested = false;
        // Idle periods in between had no load: skip them.
        let elapsed_periods = (now.0 - start.0) / period_ns;
        self.period_start = Some(TimeNs(start.0 + elapsed_periods * period_ns));
    }

    pub fn next_valve_boundary(&self, config: &ReshapeConfig) -> Option<TimeNs> {
        self.period_start
            .map(|s| TimeNs(s.0 + config.valve_period_ms * 1_000_000))
    }

    /// Whether a new window may start now; if not, when to ask again.
    pub fn gate(
        &self,
        now: TimeNs,
        processed_bytes: u64,
        config: &ReshapeConfig,
    ) -> Option<TimeNs> {
        if now < self.not_before {
            return Some(self.not_before);
        }
        let rate = self.rate_bytes_s(now, processed_bytes);
        let max = config.speed_max_kib_s as f64 * 1024.0;
        if rate > max {
            let &(t, bytes) = self.marks.front().expect("a rate needs marks");
            let due_ns = ((processed_bytes - bytes) as f64 / max * 1e9) as u64;
            return Some(TimeNs((t.0 + due_ns).max(now.0 + 1)));
        }
        let min = config.speed_min_kib_s as f64 * 1024.0;
        if rate < min {
            return None;
        }
        if config.strategy == ReshapeStrategy::Alv {
            return (now < self.valve_closed_until).then_some(self.valve_closed_until);
        }
        let idle_ns = config.idle_check_ms * 1_000_000;
        match self.last_user_io {
            Some(t) if now.0 < t.0 + idle_ns => Some(TimeNs(now.0 + idle_ns)),
            _ => None,
        }
    }
}

//! Rate control of redistribution: a floor and a ceiling on the rate (MD's
//! sync_speed_min/max), MD's "yield while users are busy" rule, and ALV's
//! on/off valve, judged per period from user congestion and latency.
//!
//! The valve's periods follow ALV's data mover thread (paper, Sec. 4): it
//! moves windows continuously for a period, finishes the window it is
//! moving, and then judges what users saw meanwhile; on a high load it
//! sleeps a period and judges that period (users alone) before it moves
//! again. Periods are thus the mover's own, not fixed wall-clock slots: a
//! window still in flight when a run period ends belongs to that run, not
//! to the sleep after it (with fixed slots its tail made every sleep judged
//! high too, and the valve open one period in three).
//!
//! MD's rule, as Linux 2.6.18's `is_mddev_idle` has it: a member is busy
//! once users have moved more than a threshold (4096 sectors) on it since
//! the last time the array was found busy; the count is only reset by a
//! busy verdict, so slow but steady user traffic still makes MD yield now
//! and then. With the threshold at 0, any user I/O within the idle check
//! time counts (later kernels look at in-flight user I/O the same way).

use crate::growth::config::{ReshapeConfig, ReshapeStrategy};
use crate::io::TimeNs;
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
    /// User bytes per member since the array was last found busy.
    user_bytes_since_busy: Vec<u64>,
    /// `md_idle_in_flight`: per member, user bytes completed, redistribution
    /// bytes in flight, and their difference at the last busy verdict.
    user_done_bytes: Vec<u64>,
    sync_in_flight_bytes: Vec<u64>,
    events_at_busy: Vec<i64>,
    /// Valve: the mover's current period (None before the growth starts)
    /// and what users saw in it.
    valve: Option<Valve>,
    period_requests: u64,
    period_slow: u64,
    period_congested: bool,
    pub valve_closed_periods: u64,
    pub valve_periods: u64,
}

/// `v[member]`, growing `v` as needed.
fn slot<T: Default + Clone>(v: &mut Vec<T>, member: usize) -> &mut T {
    if v.len() <= member {
        v.resize(member + 1, T::default());
    }
    &mut v[member]
}

/// ALV's valve: the period the data mover is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Valve {
    /// Moving windows since this instant; judged once a period has passed
    /// and the window in flight has finished.
    Open { since: TimeNs },
    /// Sleeping until this instant, then judged.
    Closed { until: TimeNs },
}

impl Pacing {
    /// The growth starts: its valve opens, and its rate is measured from
    /// now (without this first mark the first window's bytes had no start
    /// to be measured from, so the second window never waited for the
    /// ceiling and at --speed-max 1 two windows went at full speed).
    pub fn start_valve(&mut self, now: TimeNs) {
        self.valve = Some(Valve::Open { since: now });
        self.note(now, 0);
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

    /// A user device I/O of `bytes` went to `member`.
    pub fn user_io_issued(&mut self, member: usize, bytes: u64) {
        *slot(&mut self.user_bytes_since_busy, member) += bytes;
    }

    /// A user device I/O of `bytes` to `member` completed.
    pub fn user_io_done(&mut self, member: usize, bytes: u64) {
        *slot(&mut self.user_done_bytes, member) += bytes;
    }

    /// A redistribution I/O of `bytes` to `member` was issued.
    pub fn sync_io_issued(&mut self, member: usize, bytes: u64) {
        *slot(&mut self.sync_in_flight_bytes, member) += bytes;
    }

    /// A redistribution I/O of `bytes` to `member` completed.
    pub fn sync_io_done(&mut self, member: usize, bytes: u64) {
        // Saturating: the count only steers pacing, and an I/O issued under
        // an earlier growth's pacing must not stop the engine.
        let in_flight = slot(&mut self.sync_in_flight_bytes, member);
        *in_flight = in_flight.saturating_sub(bytes);
    }

    /// `is_mddev_idle`'s count for `member`: what the disk statistics show
    /// (user and redistribution data, at completion) less what MD submitted
    /// itself (its redistribution, at submission).
    fn events(&self, member: usize) -> i64 {
        let done = self.user_done_bytes.get(member).copied().unwrap_or(0) as i64;
        let in_flight = self.sync_in_flight_bytes.get(member).copied().unwrap_or(0) as i64;
        done - in_flight
    }

    /// Members whose count moved more than the threshold, either way (2.6.18
    /// compares unsigned: `curr - last + 4096 > 8192`), since their last
    /// busy verdict.
    fn members_busy_in_flight(&self, config: &ReshapeConfig) -> Vec<usize> {
        let threshold = (config.idle_user_kib * 1024) as i64;
        let members = self
            .user_done_bytes
            .len()
            .max(self.sync_in_flight_bytes.len());
        (0..members)
            .filter(|&m| {
                let last = self.events_at_busy.get(m).copied().unwrap_or(0);
                (self.events(m) - last).abs() > threshold
            })
            .collect()
    }

    /// MD's idle test: some member moved more user data than the threshold
    /// since the last busy verdict (threshold 0: users seen recently).
    fn users_busy(&self, now: TimeNs, config: &ReshapeConfig) -> bool {
        if config.idle_user_kib == 0 {
            let idle_ns = config.idle_check_ms * 1_000_000;
            return self.last_user_io.is_some_and(|t| now.0 < t.0 + idle_ns);
        }
        if config.md_idle_in_flight {
            return !self.members_busy_in_flight(config).is_empty();
        }
        let threshold = config.idle_user_kib * 1024;
        self.user_bytes_since_busy.iter().any(|&b| b > threshold)
    }

    /// A busy verdict: the counts start again (2.6.18: `last_events` of the
    /// busy members only).
    fn note_busy(&mut self, config: &ReshapeConfig) {
        if config.md_idle_in_flight {
            for m in self.members_busy_in_flight(config) {
                let events = self.events(m);
                *slot(&mut self.events_at_busy, m) = events;
            }
        } else {
            self.user_bytes_since_busy.iter_mut().for_each(|b| *b = 0);
        }
    }

    /// Whether the rate lies where MD asks `is_mddev_idle` (between its
    /// floor and ceiling).
    fn md_judges(&self, now: TimeNs, processed_bytes: u64, config: &ReshapeConfig) -> bool {
        let rate = self.rate_bytes_s(now, processed_bytes);
        config.strategy != ReshapeStrategy::Alv
            && now >= self.not_before
            && rate >= config.speed_min_kib_s as f64 * 1024.0
            && rate <= config.speed_max_kib_s as f64 * 1024.0
    }

    /// `md_idle_in_flight`: MD also judges while its I/O is out (every 128
    /// KiB of progress in 2.6.18); called once a window's reads are issued.
    /// Busy: the next window waits `idle_check_ms` (MD's thread sleeps while
    /// its I/O completes).
    pub fn check_in_flight(&mut self, now: TimeNs, processed_bytes: u64, config: &ReshapeConfig) {
        if !config.md_idle_in_flight
            || config.idle_user_kib == 0
            || !self.md_judges(now, processed_bytes, config)
            || !self.users_busy(now, config)
        {
            return;
        }
        self.note_busy(config);
        self.not_before = TimeNs(now.0 + config.idle_check_ms * 1_000_000);
    }

    /// The growth waits until `wake`, as `gate` said. If that was the idle
    /// test finding users busy (MD evaluates it only between its floor and
    /// ceiling), a new count starts, as `is_mddev_idle` does.
    pub fn wait_until(
        &mut self,
        now: TimeNs,
        wake: TimeNs,
        processed_bytes: u64,
        config: &ReshapeConfig,
    ) {
        if self.md_judges(now, processed_bytes, config) && self.users_busy(now, config) {
            self.note_busy(config);
        }
        self.not_before = wake;
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

    /// Ends the mover's period if it is over: a run period once it has
    /// lasted `valve_period_ms` and no window is in flight (`mover_busy`
    /// false), a sleep once its time is up. A period whose load was high
    /// (congestion, or more than `slack` of the user I/Os that finished in
    /// it slower than the bound) is followed by a sleep of one period,
    /// a low one by a run.
    pub fn advance_valve(&mut self, now: TimeNs, config: &ReshapeConfig, mover_busy: bool) {
        let period_ns = config.valve_period_ms * 1_000_000;
        let over = match self.valve {
            None => {
                self.valve = Some(Valve::Open { since: now });
                false
            }
            Some(Valve::Open { since }) => !mover_busy && now.0 >= since.0 + period_ns,
            Some(Valve::Closed { until }) => now >= until,
        };
        if !over {
            return;
        }
        let high = self.period_congested
            || (self.period_requests > 0
                && self.period_slow as f64 / self.period_requests as f64 > config.slack);
        self.valve_periods += 1;
        self.valve = Some(if high {
            self.valve_closed_periods += 1;
            Valve::Closed {
                until: TimeNs(now.0 + period_ns),
            }
        } else {
            Valve::Open { since: now }
        });
        self.period_requests = 0;
        self.period_slow = 0;
        self.period_congested = false;
    }

    /// When the current valve period is due to end (a run period's end
    /// waits, in addition, for its window in flight).
    pub fn next_valve_boundary(&self, config: &ReshapeConfig) -> Option<TimeNs> {
        let period_ns = config.valve_period_ms * 1_000_000;
        self.valve.map(|v| match v {
            Valve::Open { since } => TimeNs(since.0 + period_ns),
            Valve::Closed { until } => until,
        })
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
            let period_ns = config.valve_period_ms * 1_000_000;
            return match self.valve {
                Some(Valve::Closed { until }) if now < until => Some(until),
                // The run period is over but not yet judged: ask again at
                // once (the caller judges it first when nothing is in flight).
                Some(Valve::Open { since }) if now.0 >= since.0 + period_ns => {
                    Some(TimeNs(now.0 + 1))
                }
                _ => None,
            };
        }
        self.users_busy(now, config)
            .then_some(TimeNs(now.0 + config.idle_check_ms * 1_000_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn md(idle_user_kib: u64) -> ReshapeConfig {
        ReshapeConfig {
            idle_user_kib,
            ..ReshapeConfig::with_strategy(ReshapeStrategy::MdReshape)
        }
    }

    /// A pacing that has moved data well above the floor, so only the idle
    /// rule can hold it.
    fn fast_pacing(now: TimeNs) -> (Pacing, u64) {
        let mut pacing = Pacing::default();
        pacing.note(TimeNs(now.0 - 1_000 * MS), 0);
        let processed = 100 << 20;
        pacing.note(now, processed);
        (pacing, processed)
    }

    #[test]
    fn md_2_6_18_rule_yields_once_users_moved_2_mib_on_a_member_then_counts_again() {
        let config = md(2048);
        let now = TimeNs(10_000 * MS);
        let (mut pacing, processed) = fast_pacing(now);
        // Steady small user traffic below the threshold: no yield, however
        // recent it is.
        pacing.user_arrived(now);
        pacing.user_io_issued(0, 1 << 20);
        pacing.user_io_issued(1, 2 << 20);
        assert_eq!(pacing.gate(now, processed, &config), None);
        // Member 0 passes 2 MiB since the last busy verdict: yield 500 ms.
        pacing.user_io_issued(0, (1 << 20) + 4096);
        let wake = pacing.gate(now, processed, &config).expect("busy");
        assert_eq!(wake, TimeNs(now.0 + 500 * MS));
        pacing.wait_until(now, wake, processed, &config);
        // The verdict reset every member's count: at the wake, idle again.
        assert_eq!(pacing.gate(wake, processed, &config), None);
        pacing.user_io_issued(1, 1 << 20);
        assert_eq!(pacing.gate(wake, processed, &config), None);
    }

    fn md_in_flight(idle_user_kib: u64) -> ReshapeConfig {
        ReshapeConfig {
            md_idle_in_flight: true,
            ..md(idle_user_kib)
        }
    }

    #[test]
    fn md_in_flight_term_alone_makes_a_large_cache_look_busy() {
        let config = md_in_flight(2048);
        let now = TimeNs(10_000 * MS);
        // 2 MiB of MD's own I/O out on a member (a 512-page cache): within
        // the slack, idle.
        let (mut pacing, processed) = fast_pacing(now);
        pacing.sync_io_issued(0, 2 << 20);
        assert_eq!(pacing.gate(now, processed, &config), None);
        // 3 MiB out (a 768-page cache): busy with no user at all, as the
        // ALV paper's MD-Reshape with a 3 MB buffer (Sec. 5.7).
        let (mut pacing, processed) = fast_pacing(now);
        pacing.sync_io_issued(0, 3 << 20);
        let wake = pacing.gate(now, processed, &config).expect("busy");
        pacing.wait_until(now, wake, processed, &config);
        assert_eq!(pacing.gate(wake, processed, &config), None, "verdict taken");
        // It completes: the count swings back the other way, busy again.
        pacing.sync_io_done(0, 3 << 20);
        assert!(pacing.gate(wake, processed, &config).is_some());
    }

    #[test]
    fn md_in_flight_counts_users_at_completion_net_of_its_own_io() {
        let config = md_in_flight(2048);
        let now = TimeNs(10_000 * MS);
        let (mut pacing, processed) = fast_pacing(now);
        // Issued, not completed: not counted yet.
        pacing.user_io_issued(1, 4 << 20);
        assert_eq!(pacing.gate(now, processed, &config), None);
        // 3 MiB of users done while 1.5 MiB of MD's I/O went out since the
        // last verdict: 1.5 MiB net, idle; 2.5 MiB with none out, busy.
        pacing.sync_io_issued(1, 3 << 19);
        pacing.user_io_done(1, 3 << 20);
        assert_eq!(pacing.gate(now, processed, &config), None);
        pacing.sync_io_done(1, 3 << 19);
        assert!(pacing.gate(now, processed, &config).is_some());
        // A check while MD's I/O is out defers the next window.
        pacing.check_in_flight(now, processed, &config);
        assert_eq!(pacing.not_before, TimeNs(now.0 + 500 * MS));
    }

    #[test]
    fn a_wait_at_the_ceiling_keeps_the_user_count() {
        // 100 MiB/s, above a 50 MiB/s ceiling: MD sleeps without asking
        // is_mddev_idle, so the users' count stands for the next check.
        let config = ReshapeConfig {
            speed_max_kib_s: 50 * 1024,
            ..md(2048)
        };
        let now = TimeNs(10_000 * MS);
        let (mut pacing, processed) = fast_pacing(now);
        pacing.user_io_issued(2, 3 << 20);
        let wake = pacing
            .gate(now, processed, &config)
            .expect("above the ceiling");
        pacing.wait_until(now, wake, processed, &config);
        assert!(pacing.users_busy(wake, &config), "the count was kept");
    }

    #[test]
    fn threshold_zero_yields_to_any_recent_user() {
        let config = md(0);
        let now = TimeNs(10_000 * MS);
        let (mut pacing, processed) = fast_pacing(now);
        assert_eq!(pacing.gate(now, processed, &config), None);
        pacing.user_arrived(TimeNs(now.0 - 100 * MS));
        assert_eq!(
            pacing.gate(now, processed, &config),
            Some(TimeNs(now.0 + 500 * MS))
        );
        let later = TimeNs(now.0 + 400 * MS);
        assert_eq!(pacing.gate(later, processed, &config), None);
    }

    fn alv() -> ReshapeConfig {
        ReshapeConfig {
            speed_min_kib_s: 0,
            ..ReshapeConfig::with_strategy(ReshapeStrategy::Alv)
        }
    }

    /// `n` user I/Os finish, `slow` of them over the 15 ms bound.
    fn users(pacing: &mut Pacing, config: &ReshapeConfig, n: u64, slow: u64) {
        for i in 0..n {
            let latency_ms = if i < slow { 40 } else { 5 };
            pacing.user_finished(latency_ms * MS, config);
        }
    }

    #[test]
    fn valve_judges_a_run_period_only_once_its_window_has_finished() {
        let config = alv();
        let mut pacing = Pacing::default();
        pacing.start_valve(TimeNs(0));
        assert_eq!(pacing.gate(TimeNs(500 * MS), 0, &config), None, "open");
        // The period is over, but a window is still in flight: the mover
        // finishes it first, and what users see meanwhile is the run's.
        pacing.advance_valve(TimeNs(1_000 * MS), &config, true);
        assert_eq!(pacing.valve_periods, 0);
        users(&mut pacing, &config, 10, 5);
        pacing.advance_valve(TimeNs(1_060 * MS), &config, false);
        assert_eq!((pacing.valve_periods, pacing.valve_closed_periods), (1, 1));
        // High: the mover sleeps one whole period from the window's end.
        assert_eq!(
            pacing.gate(TimeNs(1_060 * MS), 0, &config),
            Some(TimeNs(2_060 * MS))
        );
        // The sleep is judged on its own users: 1 of 20 late is low.
        users(&mut pacing, &config, 20, 1);
        pacing.advance_valve(TimeNs(2_060 * MS), &config, false);
        assert_eq!((pacing.valve_periods, pacing.valve_closed_periods), (2, 1));
        assert_eq!(pacing.gate(TimeNs(2_060 * MS), 0, &config), None);
        assert_eq!(
            pacing.next_valve_boundary(&config),
            Some(TimeNs(3_060 * MS))
        );
    }

    #[test]
    fn valve_sleeps_again_while_users_alone_are_slow_or_congested() {
        let config = alv();
        let mut pacing = Pacing::default();
        pacing.start_valve(TimeNs(0));
        users(&mut pacing, &config, 10, 2); // 20% late: high
        pacing.advance_valve(TimeNs(1_000 * MS), &config, false);
        users(&mut pacing, &config, 10, 2); // still 20% late while asleep
        pacing.advance_valve(TimeNs(2_000 * MS), &config, false);
        assert_eq!(
            pacing.gate(TimeNs(2_000 * MS), 0, &config),
            Some(TimeNs(3_000 * MS))
        );
        // Congestion alone makes a period high too, however fast users were.
        pacing.user_congested();
        users(&mut pacing, &config, 10, 0);
        pacing.advance_valve(TimeNs(3_000 * MS), &config, false);
        assert_eq!((pacing.valve_periods, pacing.valve_closed_periods), (3, 3));
        // A quiet period (no users at all) is low.
        pacing.advance_valve(TimeNs(4_000 * MS), &config, false);
        assert_eq!(pacing.gate(TimeNs(4_000 * MS), 0, &config), None);
        assert_eq!(pacing.valve_closed_periods, 3);
    }

    #[test]
    fn a_run_period_not_yet_judged_holds_new_windows_until_it_is() {
        let config = alv();
        let mut pacing = Pacing::default();
        pacing.start_valve(TimeNs(0));
        let over = TimeNs(1_500 * MS);
        assert_eq!(pacing.gate(over, 0, &config), Some(TimeNs(over.0 + 1)));
        pacing.advance_valve(over, &config, false);
        assert_eq!(pacing.gate(over, 0, &config), None, "judged low: runs on");
    }

    /// At a ceiling far below a window's worth per second, the first
    /// window is measured from the growth's start: the second waits until
    /// the first one's bytes are paid for at the ceiling.
    #[test]
    fn the_ceiling_holds_from_the_first_window() {
        let config = ReshapeConfig {
            speed_min_kib_s: 0,
            speed_max_kib_s: 1,
            ..ReshapeConfig::with_strategy(ReshapeStrategy::Alv)
        };
        let mut pacing = Pacing::default();
        let start = TimeNs(5_000 * MS);
        pacing.start_valve(start);
        assert_eq!(
            pacing.gate(start, 0, &config),
            None,
            "the first window goes"
        );
        let window_bytes = 3 << 20;
        let done = TimeNs(start.0 + 50 * MS);
        pacing.note(done, window_bytes);
        assert_eq!(
            pacing.gate(done, window_bytes, &config),
            Some(TimeNs(start.0 + 3_072_000 * MS)),
            "3 MiB at 1 KiB/s: 3072 s after the start"
        );
    }

    #[test]
    fn below_the_floor_users_do_not_hold_the_growth() {
        let config = md(2048);
        let now = TimeNs(10_000 * MS);
        let mut pacing = Pacing::default();
        pacing.note(TimeNs(now.0 - 1_000 * MS), 0);
        pacing.note(now, 1024); // 1 KiB/s, below the 1,000 KiB/s floor
        pacing.user_io_issued(0, 64 << 20);
        assert_eq!(pacing.gate(now, 1024, &config), None);
    }
}

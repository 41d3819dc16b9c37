//! Rate control of a rebuild, as Linux MD's: a floor and a ceiling on the
//! rate (sync_speed_min/max), and between them the rebuild goes on only
//! while users are idle (simplified `is_mddev_idle`: no user request
//! arrived within the idle check time).

use crate::io::TimeNs;
use crate::rebuild::config::RebuildConfig;
use std::collections::VecDeque;

/// How far back the current rate is measured.
const RATE_SPAN_NS: u64 = 3_000_000_000;

#[derive(Debug, Default)]
pub(in crate::array) struct RebuildPacing {
    /// (time, rebuilt bytes) samples, oldest first.
    marks: VecDeque<(TimeNs, u64)>,
    /// No new stripe before this instant.
    pub not_before: TimeNs,
}

impl RebuildPacing {
    pub fn note(&mut self, now: TimeNs, rebuilt_bytes: u64) {
        self.marks.push_back((now, rebuilt_bytes));
        while self.marks.len() > 2 && now.0 - self.marks[1].0 .0 >= RATE_SPAN_NS {
            self.marks.pop_front();
        }
    }

    /// Bytes per second over the recent span (0 before there are two marks).
    pub fn rate_bytes_s(&self, now: TimeNs, rebuilt_bytes: u64) -> f64 {
        match self.marks.front() {
            Some(&(t, bytes)) if now.0 > t.0 => {
                rebuilt_bytes.saturating_sub(bytes) as f64 / ((now.0 - t.0) as f64 / 1e9)
            }
            _ => 0.0,
        }
    }

    /// Whether the next stripe may start now; if not, when to ask again.
    pub fn gate(
        &self,
        now: TimeNs,
        rebuilt_bytes: u64,
        config: &RebuildConfig,
        last_user_request: Option<TimeNs>,
    ) -> Option<TimeNs> {
        if now < self.not_before {
            return Some(self.not_before);
        }
        let rate = self.rate_bytes_s(now, rebuilt_bytes);
        let max = config.speed_max_kib_s as f64 * 1024.0;
        if rate > max {
            let &(t, bytes) = self.marks.front().expect("a rate needs marks");
            let due_ns = (rebuilt_bytes.saturating_sub(bytes) as f64 / max * 1e9) as u64;
            return Some(TimeNs((t.0.saturating_add(due_ns)).max(now.0 + 1)));
        }
        if rate < config.speed_min_kib_s as f64 * 1024.0 {
            return None;
        }
        let idle_ns = config.idle_check_ms * 1_000_000;
        last_user_request
            .is_some_and(|t| now.0 < t.0.saturating_add(idle_ns))
            .then_some(TimeNs(now.0 + idle_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn config() -> RebuildConfig {
        RebuildConfig {
            speed_min_kib_s: 1_024,
            speed_max_kib_s: 10 * 1_024,
            ..RebuildConfig::default()
        }
    }

    #[test]
    fn between_floor_and_ceiling_only_while_users_are_idle() {
        let config = config();
        let now = TimeNs(10_000 * MS);
        // 5 MiB/s over the last second: between 1 and 10 MiB/s.
        let mut pacing = RebuildPacing::default();
        pacing.note(TimeNs(now.0 - 1_000 * MS), 0);
        pacing.note(now, 5 << 20);
        assert_eq!(pacing.gate(now, 5 << 20, &config, None), None);
        let user = Some(TimeNs(now.0 - 100 * MS));
        assert_eq!(
            pacing.gate(now, 5 << 20, &config, user),
            Some(TimeNs(now.0 + 500 * MS)),
            "a user seen 100 ms ago holds it"
        );
        let long_ago = Some(TimeNs(now.0 - 600 * MS));
        assert_eq!(pacing.gate(now, 5 << 20, &config, long_ago), None);
    }

    #[test]
    fn below_the_floor_users_do_not_hold_it_and_the_ceiling_always_does() {
        let config = config();
        let now = TimeNs(10_000 * MS);
        let user = Some(now);
        let mut slow = RebuildPacing::default();
        slow.note(TimeNs(now.0 - 1_000 * MS), 0);
        slow.note(now, 512 << 10);
        assert_eq!(slow.gate(now, 512 << 10, &config, user), None);
        let mut fast = RebuildPacing::default();
        fast.note(TimeNs(now.0 - 1_000 * MS), 0);
        fast.note(now, 20 << 20);
        // 20 MiB at 10 MiB/s is due 2 s after the first mark.
        assert_eq!(
            fast.gate(now, 20 << 20, &config, None),
            Some(TimeNs(now.0 + 1_000 * MS))
        );
    }
}

//! The papers' "local average" and "local maximum" response times.
//!
//! ALV (§5.1) "broke the response-time sequence into equal-sized short
//! sequences, and obtained an average response time from each", and the
//! FastScale slides plot "local max latencies as the time increases". Both
//! are per-window statistics, over windows of a fixed number of requests
//! ([`WindowBy::Requests`]) or of fixed time ([`WindowBy::Time`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How consecutive windows are cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum WindowBy {
    /// Every `count` requests, in the order they are recorded.
    Requests {
        /// Requests per window, at least 1.
        count: u64,
    },
    /// Every `width_ns` of the recorded time stamps, starting at time 0.
    Time {
        /// Window width in nanoseconds, at least 1.
        width_ns: u64,
    },
}

/// The statistics of one window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowStat {
    /// Window number from 0 (for time windows, `start_ns / width_ns`).
    pub index: u64,
    /// Time windows: the window's start. Request windows: the earliest time
    /// stamp recorded in it.
    pub start_ns: u64,
    /// Time windows: the window's end (exclusive). Request windows: the
    /// latest time stamp recorded in it.
    pub end_ns: u64,
    /// Requests in the window.
    pub requests: u64,
    /// Local average response time.
    pub latency_mean_ns: f64,
    /// Local maximum response time.
    pub latency_max_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct Accumulator {
    first_ns: u64,
    last_ns: u64,
    requests: u64,
    latency_sum_ns: u128,
    latency_max_ns: u64,
}

impl Accumulator {
    fn new(time_ns: u64) -> Self {
        Self {
            first_ns: time_ns,
            last_ns: time_ns,
            requests: 0,
            latency_sum_ns: 0,
            latency_max_ns: 0,
        }
    }

    fn add(&mut self, time_ns: u64, latency_ns: u64) {
        self.first_ns = self.first_ns.min(time_ns);
        self.last_ns = self.last_ns.max(time_ns);
        self.requests += 1;
        self.latency_sum_ns += u128::from(latency_ns);
        self.latency_max_ns = self.latency_max_ns.max(latency_ns);
    }

    fn stat(&self, index: u64, start_ns: u64, end_ns: u64) -> WindowStat {
        WindowStat {
            index,
            start_ns,
            end_ns,
            requests: self.requests,
            latency_mean_ns: self.latency_sum_ns as f64 / self.requests.max(1) as f64,
            latency_max_ns: self.latency_max_ns,
        }
    }
}

/// Collects per-window local average and local maximum response times.
///
/// Pass the completion time as `time_ns` to window by when responses were
/// seen (what the papers plot). Time windows accept stamps in any order;
/// windows without requests are left out.
#[derive(Debug, Clone)]
pub struct LocalWindows {
    by: WindowBy,
    closed: Vec<WindowStat>,
    open: Option<Accumulator>,
    by_time: BTreeMap<u64, Accumulator>,
}

impl LocalWindows {
    /// Windows cut as `by` says; a zero count or width is treated as 1.
    pub fn new(by: WindowBy) -> Self {
        let by = match by {
            WindowBy::Requests { count } => WindowBy::Requests {
                count: count.max(1),
            },
            WindowBy::Time { width_ns } => WindowBy::Time {
                width_ns: width_ns.max(1),
            },
        };
        Self {
            by,
            closed: Vec::new(),
            open: None,
            by_time: BTreeMap::new(),
        }
    }

    /// How the windows are cut.
    pub fn by(&self) -> WindowBy {
        self.by
    }

    /// Records one response of `latency_ns` seen at `time_ns`.
    pub fn record(&mut self, time_ns: u64, latency_ns: u64) {
        match self.by {
            WindowBy::Requests { count } => {
                let open = self.open.get_or_insert_with(|| Accumulator::new(time_ns));
                open.add(time_ns, latency_ns);
                if open.requests == count {
                    let index = self.closed.len() as u64;
                    self.closed
                        .push(open.stat(index, open.first_ns, open.last_ns));
                    self.open = None;
                }
            }
            WindowBy::Time { width_ns } => {
                let index = time_ns / width_ns;
                self.by_time
                    .entry(index)
                    .or_insert_with(|| Accumulator::new(time_ns))
                    .add(time_ns, latency_ns);
            }
        }
    }

    /// All windows so far, in order; a partly filled last request window is
    /// included (its `requests` tells how full it is).
    pub fn windows(&self) -> Vec<WindowStat> {
        match self.by {
            WindowBy::Requests { .. } => {
                let mut windows = self.closed.clone();
                if let Some(open) = &self.open {
                    let index = windows.len() as u64;
                    windows.push(open.stat(index, open.first_ns, open.last_ns));
                }
                windows
            }
            WindowBy::Time { width_ns } => self
                .by_time
                .iter()
                .map(|(&index, accumulator)| {
                    let start_ns = index.saturating_mul(width_ns);
                    accumulator.stat(index, start_ns, start_ns.saturating_add(width_ns))
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_windows_average_and_max() {
        let mut windows = LocalWindows::new(WindowBy::Requests { count: 3 });
        for (i, latency_ns) in [10u64, 20, 30, 100, 1, 1, 7].into_iter().enumerate() {
            windows.record(i as u64 * 10, latency_ns);
        }
        let stats = windows.windows();
        assert_eq!(stats.len(), 3);
        assert_eq!(
            (stats[0].latency_mean_ns, stats[0].latency_max_ns),
            (20.0, 30)
        );
        assert_eq!((stats[0].start_ns, stats[0].end_ns), (0, 20));
        assert_eq!(
            (stats[1].latency_mean_ns, stats[1].latency_max_ns),
            (34.0, 100)
        );
        assert_eq!((stats[2].requests, stats[2].latency_max_ns), (1, 7));
    }

    #[test]
    fn time_windows_skip_empty_and_accept_disorder() {
        let mut windows = LocalWindows::new(WindowBy::Time { width_ns: 100 });
        windows.record(250, 8);
        windows.record(10, 2);
        windows.record(90, 4);
        let stats = windows.windows();
        assert_eq!(stats.len(), 2);
        assert_eq!(
            (stats[0].index, stats[0].requests, stats[0].latency_mean_ns),
            (0, 2, 3.0)
        );
        assert_eq!(
            (stats[1].index, stats[1].start_ns, stats[1].end_ns),
            (2, 200, 300)
        );
    }
}

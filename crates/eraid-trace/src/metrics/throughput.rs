//! Throughput over a run.

use serde::{Deserialize, Serialize};

const NS_PER_S: f64 = 1e9;

/// Requests and bytes per second over an interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Throughput {
    /// Length of the interval in seconds.
    pub elapsed_s: f64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Transferred bytes per second.
    pub bytes_per_s: f64,
}

impl Throughput {
    /// Throughput of `requests` moving `bytes` in `elapsed_ns`; all zero
    /// rates for an empty interval rather than infinities.
    pub fn over(requests: u64, bytes: u64, elapsed_ns: u64) -> Self {
        if elapsed_ns == 0 {
            return Self::default();
        }
        let elapsed_s = elapsed_ns as f64 / NS_PER_S;
        Self {
            elapsed_s,
            requests_per_s: requests as f64 / elapsed_s,
            bytes_per_s: bytes as f64 / elapsed_s,
        }
    }
}

/// Counts completions from the first arrival to the last completion.
#[derive(Debug, Clone, Default)]
pub struct ThroughputMeter {
    requests: u64,
    bytes: u64,
    first_arrival_ns: Option<u64>,
    last_completion_ns: u64,
}

impl ThroughputMeter {
    /// Records one request that arrived at `arrival_ns` and completed at
    /// `completion_ns` after moving `bytes`.
    pub fn record(&mut self, arrival_ns: u64, completion_ns: u64, bytes: u64) {
        self.requests += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        let first = self.first_arrival_ns.get_or_insert(arrival_ns);
        *first = (*first).min(arrival_ns);
        self.last_completion_ns = self.last_completion_ns.max(completion_ns);
    }

    /// Completed requests.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// From the first arrival to the last completion.
    pub fn elapsed_ns(&self) -> u64 {
        self.first_arrival_ns
            .map_or(0, |first| self.last_completion_ns.saturating_sub(first))
    }

    /// The rates over [`ThroughputMeter::elapsed_ns`].
    pub fn throughput(&self) -> Throughput {
        Throughput::over(self.requests, self.bytes, self.elapsed_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_over_first_arrival_to_last_completion() {
        let mut meter = ThroughputMeter::default();
        assert_eq!(meter.throughput(), Throughput::default());
        meter.record(1_000_000_000, 1_200_000_000, 4096);
        meter.record(1_500_000_000, 3_000_000_000, 4096);
        let throughput = meter.throughput();
        assert_eq!(throughput.elapsed_s, 2.0);
        assert_eq!(throughput.requests_per_s, 1.0);
        assert_eq!(throughput.bytes_per_s, 4096.0);
    }
}

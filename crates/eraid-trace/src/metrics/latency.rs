//! Response-time distribution on an HdrHistogram.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Longest response time resolved: one hour. Longer ones count at this value
/// in the percentiles (the exact maximum and mean are kept separately).
pub const LATENCY_NS_HIGHEST: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits kept: quantiles are within 0.1%.
const SIGNIFICANT_DIGITS: u8 = 3;

/// One point of the response-time CDF.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CdfPoint {
    /// Response time in nanoseconds.
    pub latency_ns: u64,
    /// Fraction of requests that took at most `latency_ns`, in (0, 1].
    pub cumulative_fraction: f64,
}

/// Records response times with nanosecond resolution.
///
/// Quantiles come from the histogram (3 significant digits); count, mean,
/// minimum and maximum are exact.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        // Constant, valid bounds: 1 <= 1 h and 3 digits are always accepted.
        let histogram = Histogram::new_with_bounds(1, LATENCY_NS_HIGHEST, SIGNIFICANT_DIGITS)
            .expect("constant histogram bounds are valid");
        Self {
            histogram,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Records one response time.
    pub fn record(&mut self, latency_ns: u64) {
        self.histogram.saturating_record(latency_ns);
        self.count += 1;
        self.sum_ns += u128::from(latency_ns);
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
    }

    /// Adds another recorder's samples to this one.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        // Same bounds on both sides, so adding cannot fail; saturate anyway.
        for value in other.histogram.iter_recorded() {
            self.histogram
                .saturating_record_n(value.value_iterated_to(), value.count_at_value());
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Number of responses recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean in nanoseconds (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// Exact minimum (0 when empty).
    pub fn min_ns(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min_ns
        }
    }

    /// Exact maximum (0 when empty).
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The response time at `percentile` (0-100), 0 when empty. Capped at the
    /// exact maximum so p100 never exceeds it through bucket rounding.
    pub fn percentile_ns(&self, percentile: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let quantile = (percentile / 100.0).clamp(0.0, 1.0);
        self.histogram.value_at_quantile(quantile).min(self.max_ns)
    }

    /// Median.
    pub fn p50_ns(&self) -> u64 {
        self.percentile_ns(50.0)
    }

    /// 90th percentile: ALV's valve at slack 0.1 asks whether it exceeds
    /// the latency bound.
    pub fn p90_ns(&self) -> u64 {
        self.percentile_ns(90.0)
    }

    /// 95th percentile.
    pub fn p95_ns(&self) -> u64 {
        self.percentile_ns(95.0)
    }

    /// 99th percentile.
    pub fn p99_ns(&self) -> u64 {
        self.percentile_ns(99.0)
    }

    /// The CDF as at most `max_points` points (one per distinct histogram
    /// bucket, thinned evenly when there are more, always keeping the last).
    pub fn cdf(&self, max_points: usize) -> Vec<CdfPoint> {
        let all: Vec<CdfPoint> = self
            .histogram
            .iter_recorded()
            .map(|value| CdfPoint {
                latency_ns: value.value_iterated_to().min(self.max_ns),
                cumulative_fraction: value.quantile_iterated_to(),
            })
            .collect();
        if max_points == 0 {
            return Vec::new();
        }
        if all.len() <= max_points {
            return all;
        }
        let last = all.len() - 1;
        (1..=max_points)
            .map(|i| all[i * last / max_points])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_one_to_a_thousand_ms() {
        let mut recorder = LatencyRecorder::new();
        for ms in 1..=1000u64 {
            recorder.record(ms * 1_000_000);
        }
        assert_eq!(recorder.count(), 1000);
        assert!((recorder.mean_ns() - 500.5e6).abs() < 1.0);
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 1e-3;
        assert!(
            close(recorder.p50_ns(), 500_000_000),
            "{}",
            recorder.p50_ns()
        );
        assert!(close(recorder.p90_ns(), 900_000_000));
        assert!(close(recorder.p95_ns(), 950_000_000));
        assert!(close(recorder.p99_ns(), 990_000_000));
        assert_eq!(recorder.max_ns(), 1_000_000_000);
        assert_eq!(recorder.min_ns(), 1_000_000);
        let cdf = recorder.cdf(10);
        assert_eq!(cdf.len(), 10);
        assert!(cdf.windows(2).all(|w| w[0].latency_ns <= w[1].latency_ns
            && w[0].cumulative_fraction <= w[1].cumulative_fraction));
        assert_eq!(cdf.last().map(|p| p.cumulative_fraction), Some(1.0));
    }

    #[test]
    fn extremes_do_not_panic() {
        let mut recorder = LatencyRecorder::new();
        assert_eq!(
            (recorder.p99_ns(), recorder.mean_ns(), recorder.min_ns()),
            (0, 0.0, 0)
        );
        recorder.record(0);
        recorder.record(u64::MAX);
        assert_eq!(recorder.max_ns(), u64::MAX);
        assert!(recorder.percentile_ns(100.0) >= LATENCY_NS_HIGHEST);
        let mut other = LatencyRecorder::new();
        other.record(5);
        recorder.merge(&other);
        assert_eq!(recorder.count(), 3);
    }
}

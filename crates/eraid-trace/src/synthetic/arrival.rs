//! Open-loop arrival processes.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::TraceError;

const NS_PER_S: f64 = 1e9;

/// When open-loop requests arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArrivalProcess {
    /// Exponential gaps with mean `1 / rate_iops`.
    Poisson {
        /// Mean arrival rate, requests per second.
        rate_iops: f64,
    },
    /// Bursty traffic: a two-state Markov-modulated Poisson process. The
    /// source alternates between "on" and "off" periods of exponentially
    /// distributed length, arriving as a Poisson process of the period's rate.
    /// Mean rate:
    /// `(on_rate·on_mean + off_rate·off_mean) / (on_mean + off_mean)`.
    OnOff {
        /// Rate during bursts, requests per second (positive).
        on_rate_iops: f64,
        /// Rate between bursts, requests per second (may be 0).
        off_rate_iops: f64,
        /// Mean burst length in seconds.
        on_mean_s: f64,
        /// Mean quiet period in seconds.
        off_mean_s: f64,
    },
}

impl ArrivalProcess {
    /// Checks rates and period lengths.
    pub fn validate(&self) -> Result<(), TraceError> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let ok = match *self {
            ArrivalProcess::Poisson { rate_iops } => positive(rate_iops),
            ArrivalProcess::OnOff {
                on_rate_iops,
                off_rate_iops,
                on_mean_s,
                off_mean_s,
            } => {
                positive(on_rate_iops)
                    && off_rate_iops.is_finite()
                    && off_rate_iops >= 0.0
                    && positive(on_mean_s)
                    && positive(off_mean_s)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(TraceError::InvalidSetting(format!(
                "arrival rates and period lengths must be positive and finite: {self:?}"
            )))
        }
    }

    /// The long-run mean arrival rate in requests per second.
    pub fn mean_rate_iops(&self) -> f64 {
        match *self {
            ArrivalProcess::Poisson { rate_iops } => rate_iops,
            ArrivalProcess::OnOff {
                on_rate_iops,
                off_rate_iops,
                on_mean_s,
                off_mean_s,
            } => (on_rate_iops * on_mean_s + off_rate_iops * off_mean_s) / (on_mean_s + off_mean_s),
        }
    }
}

/// An exponential variate with the given mean, in ns.
fn exponential_ns<R: Rng>(rng: &mut R, mean_s: f64) -> u64 {
    // 1 - u is in (0, 1], so the log is finite.
    let u: f64 = rng.gen();
    (-(1.0 - u).ln() * mean_s * NS_PER_S).round() as u64
}

/// Generates arrival times from a validated [`ArrivalProcess`].
#[derive(Debug, Clone)]
pub(crate) struct ArrivalGenerator {
    process: ArrivalProcess,
    now_ns: u64,
    /// On/off state: whether bursting, and when the current period ends.
    on: bool,
    period_end_ns: u64,
}

impl ArrivalGenerator {
    pub fn new<R: Rng>(process: ArrivalProcess, rng: &mut R) -> Self {
        let mut generator = Self {
            process,
            now_ns: 0,
            on: true,
            period_end_ns: 0,
        };
        if let ArrivalProcess::OnOff { on_mean_s, .. } = generator.process {
            generator.period_end_ns = exponential_ns(rng, on_mean_s);
        }
        generator
    }

    pub fn next_arrival_ns<R: Rng>(&mut self, rng: &mut R) -> u64 {
        match self.process {
            ArrivalProcess::Poisson { rate_iops } => {
                self.now_ns = self
                    .now_ns
                    .saturating_add(exponential_ns(rng, 1.0 / rate_iops));
            }
            ArrivalProcess::OnOff {
                on_rate_iops,
                off_rate_iops,
                on_mean_s,
                off_mean_s,
            } => loop {
                let rate_iops = if self.on { on_rate_iops } else { off_rate_iops };
                if rate_iops > 0.0 {
                    let candidate_ns = self
                        .now_ns
                        .saturating_add(exponential_ns(rng, 1.0 / rate_iops));
                    if candidate_ns < self.period_end_ns {
                        self.now_ns = candidate_ns;
                        break;
                    }
                }
                // Memorylessness lets us drop the candidate and redraw from
                // the period boundary in the next state.
                self.now_ns = self.period_end_ns;
                self.on = !self.on;
                let mean_s = if self.on { on_mean_s } else { off_mean_s };
                self.period_end_ns = self
                    .now_ns
                    .saturating_add(exponential_ns(rng, mean_s).max(1));
            },
        }
        self.now_ns
    }
}

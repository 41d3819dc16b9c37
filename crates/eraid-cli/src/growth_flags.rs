//! The rate and valve flags of `grow` and `reshape set`, checked one by one
//! so that an error names the flag the user typed (the engine's own check
//! names the fields of its settings, which is right for the control socket
//! but not for the command line).

use anyhow::{bail, Result};
use eraid_core::growth::config::{ReshapeStrategy, AGGREGATION_BYTES_MAX};

/// What was given on the command line (None: not given).
#[derive(Clone, Copy, Debug, Default)]
pub struct GrowthFlags {
    pub aggregation_kib: Option<u64>,
    pub speed_min: Option<u64>,
    pub speed_max: Option<u64>,
    pub latency_bound: Option<f64>,
    pub slack: Option<f64>,
    /// Whether --valve-latency was given.
    pub valve_latency: bool,
}

impl GrowthFlags {
    /// Each value on its own, and --speed-min against --speed-max.
    pub fn check(&self) -> Result<()> {
        let aggregation_kib_max = AGGREGATION_BYTES_MAX >> 10;
        if let Some(kib) = self.aggregation_kib {
            if kib == 0 || kib > aggregation_kib_max {
                bail!("--aggregation-kib must be within 1..={aggregation_kib_max}, got {kib}");
            }
        }
        if self.speed_max == Some(0) {
            bail!("--speed-max must be at least 1 (KiB/s), got 0");
        }
        if let (Some(min), Some(max)) = (self.speed_min, self.speed_max) {
            if min > max {
                bail!("--speed-min {min} is above --speed-max {max}");
            }
        }
        if let Some(ms) = self.latency_bound {
            if !(ms.is_finite() && ms > 0.0) {
                bail!("--latency-bound must be a positive number of milliseconds, got {ms}");
            }
        }
        if let Some(slack) = self.slack {
            if !(0.0..=1.0).contains(&slack) {
                bail!("--slack must be within 0..1, got {slack}");
            }
        }
        Ok(())
    }

    /// The valve flags steer ALV only.
    pub fn check_strategy(&self, strategy: ReshapeStrategy) -> Result<()> {
        let valve_flags: Vec<&str> = [
            (self.latency_bound.is_some(), "--latency-bound"),
            (self.slack.is_some(), "--slack"),
            (self.valve_latency, "--valve-latency"),
        ]
        .iter()
        .filter(|(given, _)| *given)
        .map(|(_, flag)| *flag)
        .collect();
        if strategy != ReshapeStrategy::Alv && !valve_flags.is_empty() {
            bail!(
                "{} steer{} alv's valve only; this {} growth has no valve (only its rate floor \
                 and ceiling pace it)",
                valve_flags.join(" and "),
                if valve_flags.len() == 1 { "s" } else { "" },
                strategy.name()
            );
        }
        Ok(())
    }

    /// Against a running growth's floor and ceiling (`reshape set` changes
    /// one without the other).
    pub fn check_against(&self, floor_kib_s: u64, ceiling_kib_s: u64) -> Result<()> {
        match (self.speed_min, self.speed_max) {
            (None, Some(max)) if max < floor_kib_s => bail!(
                "--speed-max {max} is below the growth's floor of {floor_kib_s} KiB/s; \
                 give a lower --speed-min too"
            ),
            (Some(min), None) if min > ceiling_kib_s => bail!(
                "--speed-min {min} is above the growth's ceiling of {ceiling_kib_s} KiB/s; \
                 give a higher --speed-max too"
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(flags: GrowthFlags) -> String {
        flags.check().unwrap_err().to_string()
    }

    #[test]
    fn each_error_names_the_flag_given_and_no_other() {
        let cases = [
            (
                GrowthFlags {
                    speed_max: Some(0),
                    ..Default::default()
                },
                "--speed-max",
            ),
            (
                GrowthFlags {
                    aggregation_kib: Some(0),
                    ..Default::default()
                },
                "--aggregation-kib",
            ),
            (
                GrowthFlags {
                    latency_bound: Some(0.0),
                    ..Default::default()
                },
                "--latency-bound",
            ),
            (
                GrowthFlags {
                    slack: Some(2.0),
                    ..Default::default()
                },
                "--slack",
            ),
        ];
        let all = [
            "--speed-max",
            "--speed-min",
            "--aggregation-kib",
            "--latency-bound",
            "--slack",
        ];
        for (flags, flag) in cases {
            let message = error(flags);
            assert!(message.contains(flag), "{message}");
            for other in all.iter().filter(|f| **f != flag) {
                assert!(!message.contains(other), "{message} names {other}");
            }
            assert!(
                !message.contains("_kib_s") && !message.contains("_ms"),
                "{message}"
            );
        }
        let message = error(GrowthFlags {
            speed_min: Some(100),
            speed_max: Some(10),
            ..Default::default()
        });
        assert!(message.contains("--speed-min 100") && message.contains("--speed-max 10"));
    }
}

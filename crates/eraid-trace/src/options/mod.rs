//! Replay options: an iterator adapter between a trace and a simulator.
//!
//! Per request of the first pass, in this order:
//! 1. drop devices not in [`TraceOptions::devices`];
//! 2. if [`TraceOptions::rebase_time`], subtract the first kept arrival;
//! 3. multiply the arrival by [`TraceOptions::time_scale`];
//! 4. fold the address into [`TraceOptions::fold_capacity_bytes`] (see
//!    [`fold_request`]).
//!
//! Then the pass is repeated [`TraceOptions::loop_count`] times (see
//! [`Replay`] for the spacing), and finally [`TraceOptions::max_requests`]
//! and [`TraceOptions::max_duration_ns`] cut the stream.

mod fold;
mod replay;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use fold::fold_request;
pub use replay::Replay;

use crate::{TraceError, TraceRequest};

/// How to shape a trace for replay. `Default` changes nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceOptions {
    /// Factor applied to every arrival time: 0.5 replays twice as fast
    /// (twice the IOPS), 2.0 half as fast. Must be finite and positive.
    pub time_scale: f64,
    /// Shift arrivals so the first kept request arrives at 0.
    pub rebase_time: bool,
    /// Keep only these devices (SPC: these ASUs); `None` keeps all.
    pub devices: Option<BTreeSet<u32>>,
    /// Fold addresses into this many bytes; see [`fold_request`].
    pub fold_capacity_bytes: Option<u64>,
    /// Stop after this many requests (over all passes).
    pub max_requests: Option<u64>,
    /// Stop at the first request arriving this long or longer after the
    /// first request emitted.
    pub max_duration_ns: Option<u64>,
    /// Passes over the trace; 0 repeats forever and then needs a
    /// request or duration limit.
    pub loop_count: u32,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            time_scale: 1.0,
            rebase_time: false,
            devices: None,
            fold_capacity_bytes: None,
            max_requests: None,
            max_duration_ns: None,
            loop_count: 1,
        }
    }
}

impl TraceOptions {
    /// Checks every setting, so [`Replay`] never meets a nonsense value.
    pub fn validate(&self) -> Result<(), TraceError> {
        let invalid = |message: String| Err(TraceError::InvalidSetting(message));
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return invalid(format!(
                "time_scale must be finite and positive, got {}",
                self.time_scale
            ));
        }
        if let Some(capacity_bytes) = self.fold_capacity_bytes {
            if capacity_bytes < crate::SECTOR_BYTES {
                return invalid(format!(
                    "fold_capacity_bytes must be at least one sector, got {capacity_bytes}"
                ));
            }
        }
        if self.loop_count == 0 && self.max_requests.is_none() && self.max_duration_ns.is_none() {
            return invalid(
                "loop_count 0 (forever) needs max_requests or max_duration_ns".to_string(),
            );
        }
        Ok(())
    }

    /// Wraps a request stream (a [`crate::TraceReader`] or any iterator of
    /// results) in the adapter described in the module docs.
    pub fn apply<I>(self, requests: I) -> Result<Replay<I::IntoIter>, TraceError>
    where
        I: IntoIterator<Item = Result<TraceRequest, TraceError>>,
    {
        self.validate()?;
        Ok(Replay::new(requests.into_iter(), self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_from_an_experiment_file() {
        let text = r#"
            time_scale = 0.5
            devices = [0, 2]
            fold_capacity_bytes = 1073741824
            max_duration_ns = 60000000000
            loop_count = 0
        "#;
        let options: TraceOptions = toml::from_str(text).unwrap();
        assert_eq!(options.devices, Some(BTreeSet::from([0, 2])));
        assert_eq!(options.max_requests, None);
        assert!(!options.rebase_time);
        options.validate().unwrap();
        assert!(toml::from_str::<TraceOptions>("loops = 3").is_err());
    }
}

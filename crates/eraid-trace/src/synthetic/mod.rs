//! Seeded, deterministic synthetic workloads.
//!
//! A [`WorkloadSpec`] says where requests go ([`AddressPattern`]), how big
//! they are ([`SizeDistribution`]), how many read, and (open loop) when they
//! arrive ([`ArrivalProcess`]). [`OpenLoop`] turns it into an endless
//! iterator of [`crate::TraceRequest`]; [`ClosedLoop`] hands out the next
//! request whenever the caller reports a completion, keeping a fixed number
//! outstanding. [`Preset`] builds specs matching the papers' traces.
//!
//! Same spec and seed, same requests, on every platform: the generators use
//! ChaCha8 and draw in a fixed order. Sizes, addresses and read/write come
//! from one random stream and arrival times from another, so changing the
//! arrival process does not change which requests are issued.

mod address;
mod arrival;
mod closed_loop;
mod open_loop;
mod presets;
mod shaper;
mod size;
mod zipf;

use serde::{Deserialize, Serialize};

pub use address::AddressPattern;
pub use arrival::ArrivalProcess;
pub use closed_loop::ClosedLoop;
pub use open_loop::OpenLoop;
pub use presets::{Preset, PublishedStatistics};
pub use size::{SizeDistribution, WeightedSize};

use crate::{TraceError, SECTOR_BYTES};

/// Everything that defines a synthetic workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Seed of the random streams.
    pub seed: u64,
    /// Addressable bytes; every request lies inside.
    pub capacity_bytes: u64,
    /// Device number put on every request.
    #[serde(default)]
    pub device: u32,
    /// Request starts are multiples of this (a multiple of 512).
    #[serde(default = "default_alignment_bytes")]
    pub alignment_bytes: u64,
    /// Probability that a request is a read, in [0, 1].
    pub read_fraction: f64,
    /// Request sizes.
    pub size: SizeDistribution,
    /// Request addresses.
    pub address: AddressPattern,
    /// Arrival times (ignored by [`ClosedLoop`]).
    pub arrival: ArrivalProcess,
}

fn default_alignment_bytes() -> u64 {
    SECTOR_BYTES
}

impl WorkloadSpec {
    /// Checks every setting so the generators cannot misbehave.
    pub fn validate(&self) -> Result<(), TraceError> {
        let invalid = |message: String| Err(TraceError::InvalidSetting(message));
        if self.alignment_bytes == 0 || !self.alignment_bytes.is_multiple_of(SECTOR_BYTES) {
            return invalid(format!(
                "alignment_bytes must be a positive multiple of {SECTOR_BYTES}, got {}",
                self.alignment_bytes
            ));
        }
        if !(0.0..=1.0).contains(&self.read_fraction) {
            return invalid(format!(
                "read_fraction must be in [0, 1], got {}",
                self.read_fraction
            ));
        }
        self.size.validate()?;
        let max_request_bytes = self.size.max_bytes();
        if self.capacity_bytes < max_request_bytes.max(self.alignment_bytes) {
            return invalid(format!(
                "capacity_bytes {} is smaller than the largest request ({max_request_bytes} bytes) \
                 or the alignment",
                self.capacity_bytes
            ));
        }
        self.address
            .validate(self.capacity_bytes, self.alignment_bytes, max_request_bytes)?;
        self.arrival.validate()
    }
}

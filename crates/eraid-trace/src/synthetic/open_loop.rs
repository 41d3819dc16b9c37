//! Open-loop generation: arrivals independent of service.

use rand_chacha::ChaCha8Rng;

use super::arrival::ArrivalGenerator;
use super::shaper::{arrival_rng, RequestShaper};
use super::WorkloadSpec;
use crate::{TraceError, TraceRequest};

/// An endless, deterministic stream of requests with arrival times from the
/// spec's [`super::ArrivalProcess`]; bound it with `take` or
/// [`crate::TraceOptions`] (wrap items in `Ok`).
#[derive(Debug, Clone)]
pub struct OpenLoop {
    shaper: RequestShaper,
    arrivals: ArrivalGenerator,
    arrival_rng: ChaCha8Rng,
}

impl OpenLoop {
    /// Validates `spec` and starts the stream at time 0.
    pub fn new(spec: &WorkloadSpec) -> Result<Self, TraceError> {
        spec.validate()?;
        let mut arrival_rng = arrival_rng(spec.seed);
        let arrivals = ArrivalGenerator::new(spec.arrival.clone(), &mut arrival_rng);
        Ok(Self {
            shaper: RequestShaper::new(spec),
            arrivals,
            arrival_rng,
        })
    }
}

impl Iterator for OpenLoop {
    type Item = TraceRequest;

    fn next(&mut self) -> Option<TraceRequest> {
        let arrival_ns = self.arrivals.next_arrival_ns(&mut self.arrival_rng);
        Some(self.shaper.next_request(arrival_ns))
    }
}

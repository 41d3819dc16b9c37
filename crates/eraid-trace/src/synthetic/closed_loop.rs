//! Closed-loop generation: a new request each time one completes.

use super::shaper::RequestShaper;
use super::WorkloadSpec;
use crate::{TraceError, TraceRequest};

/// Keeps `outstanding_count` requests in flight: the driver takes
/// [`ClosedLoop::start`]'s requests at the start, then calls
/// [`ClosedLoop::next_request`] once per completion, passing the completion
/// time, which becomes the new request's arrival (zero think time). The
/// spec's arrival process is ignored. Requests are the same sequence an
/// [`super::OpenLoop`] of the same spec would produce, only timed by the
/// system under test.
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    shaper: RequestShaper,
    outstanding_count: u32,
    issued_count: u64,
}

impl ClosedLoop {
    /// Validates `spec`; `outstanding_count` must be at least 1.
    pub fn new(spec: &WorkloadSpec, outstanding_count: u32) -> Result<Self, TraceError> {
        spec.validate()?;
        if outstanding_count == 0 {
            return Err(TraceError::InvalidSetting(
                "a closed loop needs at least one outstanding request".to_string(),
            ));
        }
        Ok(Self {
            shaper: RequestShaper::new(spec),
            outstanding_count,
            issued_count: 0,
        })
    }

    /// How many requests the loop keeps in flight.
    pub fn outstanding_count(&self) -> u32 {
        self.outstanding_count
    }

    /// Requests handed out so far.
    pub fn issued_count(&self) -> u64 {
        self.issued_count
    }

    /// The initial batch: `outstanding_count` requests arriving at `now_ns`.
    pub fn start(&mut self, now_ns: u64) -> Vec<TraceRequest> {
        (0..self.outstanding_count)
            .map(|_| self.next_request(now_ns))
            .collect()
    }

    /// The request that replaces one completing at `now_ns`.
    pub fn next_request(&mut self, now_ns: u64) -> TraceRequest {
        self.issued_count += 1;
        self.shaper.next_request(now_ns)
    }
}

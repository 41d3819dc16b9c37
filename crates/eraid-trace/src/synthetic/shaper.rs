//! Draws everything about a request except its arrival time.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::address::AddressGenerator;
use super::size::SizeSampler;
use super::WorkloadSpec;
use crate::TraceRequest;

/// Size, address and direction of successive requests, from the spec's
/// first random stream.
#[derive(Debug, Clone)]
pub(crate) struct RequestShaper {
    rng: ChaCha8Rng,
    sizes: SizeSampler,
    addresses: AddressGenerator,
    read_fraction: f64,
    device: u32,
}

impl RequestShaper {
    /// `spec` must be validated.
    pub fn new(spec: &WorkloadSpec) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            sizes: SizeSampler::new(&spec.size),
            addresses: AddressGenerator::new(
                &spec.address,
                spec.capacity_bytes,
                spec.alignment_bytes,
            ),
            read_fraction: spec.read_fraction,
            device: spec.device,
        }
    }

    pub fn next_request(&mut self, arrival_ns: u64) -> TraceRequest {
        let len_bytes = self.sizes.sample(&mut self.rng);
        let offset_bytes = self.addresses.next(&mut self.rng, len_bytes);
        let is_read = self.rng.gen::<f64>() < self.read_fraction;
        TraceRequest {
            arrival_ns,
            device: self.device,
            offset_bytes,
            len_bytes,
            is_read,
        }
    }
}

/// The arrival stream's generator: same seed, separate ChaCha stream.
pub(crate) fn arrival_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1);
    rng
}

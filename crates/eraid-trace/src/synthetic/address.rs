//! Where synthetic requests land.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::zipf::ZipfSampler;
use crate::TraceError;

/// The spatial pattern of a synthetic workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AddressPattern {
    /// Every aligned start equally likely: no locality at all.
    Uniform,
    /// `streams` sequential streams, each confined to its own equal slice of
    /// the capacity and wrapping to the slice start at its end. Each request
    /// picks a stream at random, so the streams interleave the way
    /// concurrent sequential readers or writers do.
    Sequential {
        /// Number of concurrent streams, at least 1.
        streams: u32,
    },
    /// A fraction of accesses goes to a hot region at the start of the space,
    /// the rest spreads uniformly over the cold remainder (e.g. 80% of
    /// accesses to 20% of the space).
    HotSpot {
        /// Share of the capacity that is hot, in (0, 1).
        hot_space_fraction: f64,
        /// Share of requests sent to the hot region, in [0, 1].
        hot_access_fraction: f64,
    },
    /// Blocks of `block_bytes` are ranked by popularity with
    /// `P(rank k) ∝ k^-exponent`. Unscattered, rank 1 is the first block and
    /// popular blocks sit together (spatial and temporal locality, hot zones
    /// form); scattered, ranks go through a fixed affine permutation of the
    /// blocks (like YCSB's scrambled Zipfian), keeping the skew but not the
    /// spatial clustering.
    Zipf {
        /// Skew, finite and positive; 0.99 is YCSB's default.
        exponent: f64,
        /// Size of a ranked block in bytes.
        block_bytes: u64,
        /// Spread popular blocks over the space.
        scatter: bool,
    },
    /// DBench-like concurrent file writers on an ext2/ext3-like allocator
    /// (the MSC-CT paper's Fig. 13): `clients` each write files
    /// sequentially; each request picks a client at random. A file takes
    /// space in reservation windows of `reservation_bytes` handed out in
    /// order from one shared allocation cursor (ext3's per-file block
    /// reservation), so the windows of concurrent files interleave, and a
    /// file that ends leaves the rest of its window unwritten (the
    /// pre-allocated blocks between files). File sizes are exponential with
    /// mean `file_bytes_mean`, rounded up to whole requests. The cursor
    /// wraps at the end of the capacity.
    Files {
        clients: u32,
        file_bytes_mean: u64,
        reservation_bytes: u64,
    },
}

impl AddressPattern {
    /// Checks the pattern fits a capacity and the largest request.
    pub fn validate(
        &self,
        capacity_bytes: u64,
        alignment_bytes: u64,
        max_request_bytes: u64,
    ) -> Result<(), TraceError> {
        let invalid = |message: String| Err(TraceError::InvalidSetting(message));
        match *self {
            AddressPattern::Uniform => Ok(()),
            AddressPattern::Sequential { streams } => {
                if streams == 0 {
                    return invalid("sequential workloads need at least one stream".into());
                }
                let slice_bytes =
                    capacity_bytes / u64::from(streams) / alignment_bytes * alignment_bytes;
                if slice_bytes < max_request_bytes {
                    return invalid(format!(
                        "{streams} streams leave {slice_bytes} bytes each, \
                         less than the largest request ({max_request_bytes} bytes)"
                    ));
                }
                Ok(())
            }
            AddressPattern::HotSpot {
                hot_space_fraction,
                hot_access_fraction,
            } => {
                if !(hot_space_fraction > 0.0 && hot_space_fraction < 1.0) {
                    return invalid(format!(
                        "hot_space_fraction must be in (0, 1), got {hot_space_fraction}"
                    ));
                }
                if !(0.0..=1.0).contains(&hot_access_fraction) {
                    return invalid(format!(
                        "hot_access_fraction must be in [0, 1], got {hot_access_fraction}"
                    ));
                }
                Ok(())
            }
            AddressPattern::Zipf {
                exponent,
                block_bytes,
                ..
            } => {
                if !(exponent.is_finite() && exponent > 0.0) {
                    return invalid(format!("zipf exponent must be positive, got {exponent}"));
                }
                if block_bytes == 0 || block_bytes > capacity_bytes {
                    return invalid(format!(
                        "zipf block_bytes must be in 1..={capacity_bytes}, got {block_bytes}"
                    ));
                }
                Ok(())
            }
            AddressPattern::Files {
                clients,
                file_bytes_mean,
                reservation_bytes,
            } => {
                if clients == 0 || clients > FILE_CLIENTS_MAX {
                    return invalid(format!(
                        "files workloads need 1 to {FILE_CLIENTS_MAX} clients, got {clients}"
                    ));
                }
                if file_bytes_mean == 0 {
                    return invalid("files workloads need file_bytes_mean above 0".into());
                }
                if reservation_bytes < max_request_bytes
                    || !reservation_bytes.is_multiple_of(alignment_bytes)
                    || reservation_bytes > capacity_bytes
                {
                    return invalid(format!(
                        "reservation_bytes must be a multiple of alignment_bytes ({alignment_bytes}), \
                         at least the largest request ({max_request_bytes}) and at most the \
                         capacity ({capacity_bytes}), got {reservation_bytes}"
                    ));
                }
                Ok(())
            }
        }
    }
}

/// The most clients a `files` workload keeps state for.
pub const FILE_CLIENTS_MAX: u32 = 1 << 16;

/// One `files` client: where its current window ends, where it writes
/// next, and what is left of its current file.
#[derive(Debug, Clone, Default)]
struct FileClient {
    next_bytes: u64,
    window_end_bytes: u64,
    file_left_bytes: u64,
}

/// State for drawing addresses from a validated pattern.
#[derive(Debug, Clone)]
pub(crate) struct AddressGenerator {
    capacity_bytes: u64,
    alignment_bytes: u64,
    kind: GeneratorKind,
}

#[derive(Debug, Clone)]
enum GeneratorKind {
    Uniform,
    Sequential {
        slice_bytes: u64,
        cursors_bytes: Vec<u64>,
    },
    HotSpot {
        hot_end_bytes: u64,
        hot_access_fraction: f64,
    },
    Zipf {
        sampler: ZipfSampler,
        block_bytes: u64,
        blocks: u64,
        permutation: Option<AffinePermutation>,
    },
    Files {
        clients: Vec<FileClient>,
        file_bytes_mean: u64,
        reservation_bytes: u64,
        cursor_bytes: u64,
    },
}

impl AddressGenerator {
    pub fn new(pattern: &AddressPattern, capacity_bytes: u64, alignment_bytes: u64) -> Self {
        let kind = match *pattern {
            AddressPattern::Uniform => GeneratorKind::Uniform,
            AddressPattern::Sequential { streams } => {
                let slice_bytes =
                    capacity_bytes / u64::from(streams) / alignment_bytes * alignment_bytes;
                GeneratorKind::Sequential {
                    slice_bytes,
                    cursors_bytes: vec![0; streams as usize],
                }
            }
            AddressPattern::HotSpot {
                hot_space_fraction,
                hot_access_fraction,
            } => GeneratorKind::HotSpot {
                hot_end_bytes: ((capacity_bytes as f64 * hot_space_fraction) as u64)
                    .max(alignment_bytes),
                hot_access_fraction,
            },
            AddressPattern::Zipf {
                exponent,
                block_bytes,
                scatter,
            } => {
                let blocks = (capacity_bytes / block_bytes).max(1);
                GeneratorKind::Zipf {
                    sampler: ZipfSampler::new(blocks, exponent),
                    block_bytes,
                    blocks,
                    permutation: scatter.then(|| AffinePermutation::new(blocks)),
                }
            }
            AddressPattern::Files {
                clients,
                file_bytes_mean,
                reservation_bytes,
            } => GeneratorKind::Files {
                clients: vec![FileClient::default(); clients as usize],
                file_bytes_mean,
                reservation_bytes,
                cursor_bytes: 0,
            },
        };
        Self {
            capacity_bytes,
            alignment_bytes,
            kind,
        }
    }

    /// An aligned start such that `[start, start + len_bytes)` lies inside
    /// the capacity (`len_bytes <= capacity_bytes` is validated upstream).
    pub fn next<R: Rng>(&mut self, rng: &mut R, len_bytes: u64) -> u64 {
        let capacity_bytes = self.capacity_bytes;
        let alignment_bytes = self.alignment_bytes;
        match &mut self.kind {
            GeneratorKind::Uniform => uniform_in(
                rng,
                0,
                capacity_bytes,
                len_bytes,
                capacity_bytes,
                alignment_bytes,
            ),
            GeneratorKind::Sequential {
                slice_bytes,
                cursors_bytes,
            } => {
                let stream = rng.gen_range(0..cursors_bytes.len());
                let slice_start = stream as u64 * *slice_bytes;
                let cursor = &mut cursors_bytes[stream];
                if *cursor + len_bytes > *slice_bytes {
                    *cursor = 0;
                }
                let start = slice_start + *cursor;
                // Keep the next request aligned even after an odd-sized one.
                *cursor = (*cursor + len_bytes).div_ceil(alignment_bytes) * alignment_bytes;
                start
            }
            GeneratorKind::HotSpot {
                hot_end_bytes,
                hot_access_fraction,
            } => {
                let (low, high) = if rng.gen::<f64>() < *hot_access_fraction {
                    (0, *hot_end_bytes)
                } else {
                    (*hot_end_bytes, capacity_bytes)
                };
                uniform_in(rng, low, high, len_bytes, capacity_bytes, alignment_bytes)
            }
            GeneratorKind::Zipf {
                sampler,
                block_bytes,
                blocks,
                permutation,
            } => {
                let rank_index = sampler.sample(rng) - 1;
                let block = match permutation {
                    Some(permutation) => permutation.apply(rank_index, *blocks),
                    None => rank_index,
                };
                let start = block * *block_bytes / alignment_bytes * alignment_bytes;
                clamp_inside(start, len_bytes, capacity_bytes, alignment_bytes)
            }
            GeneratorKind::Files {
                clients,
                file_bytes_mean,
                reservation_bytes,
                cursor_bytes,
            } => {
                let index = rng.gen_range(0..clients.len());
                let client = &mut clients[index];
                let len_bytes = len_bytes.div_ceil(alignment_bytes) * alignment_bytes;
                if client.file_left_bytes == 0 {
                    // A new file: its own window; the last one's rest stays
                    // unwritten. Inverse transform: -mean * ln(U), U in (0, 1].
                    let u: f64 = 1.0 - rng.gen::<f64>();
                    let drawn = (-(*file_bytes_mean as f64) * u.ln()) as u64;
                    client.file_left_bytes = drawn.div_ceil(len_bytes).max(1) * len_bytes;
                    client.next_bytes = client.window_end_bytes;
                }
                if client.next_bytes + len_bytes > client.window_end_bytes {
                    if *cursor_bytes + *reservation_bytes > capacity_bytes {
                        *cursor_bytes = 0;
                    }
                    client.next_bytes = *cursor_bytes;
                    client.window_end_bytes = *cursor_bytes + *reservation_bytes;
                    *cursor_bytes += *reservation_bytes;
                }
                let start = client.next_bytes;
                client.next_bytes += len_bytes;
                client.file_left_bytes = client.file_left_bytes.saturating_sub(len_bytes);
                clamp_inside(start, len_bytes, capacity_bytes, alignment_bytes)
            }
        }
    }
}

/// A uniform aligned start in `[low, high)`, pulled back inside the capacity.
fn uniform_in<R: Rng>(
    rng: &mut R,
    low: u64,
    high: u64,
    len_bytes: u64,
    capacity_bytes: u64,
    alignment_bytes: u64,
) -> u64 {
    let first_slot = low.div_ceil(alignment_bytes);
    let last_end = high.min(capacity_bytes.saturating_sub(len_bytes) + 1);
    let slots_end = last_end.div_ceil(alignment_bytes).max(first_slot + 1);
    let start = rng.gen_range(first_slot..slots_end) * alignment_bytes;
    clamp_inside(start, len_bytes, capacity_bytes, alignment_bytes)
}

/// Moves `start` back (keeping alignment) until the request fits.
fn clamp_inside(start: u64, len_bytes: u64, capacity_bytes: u64, alignment_bytes: u64) -> u64 {
    let latest = capacity_bytes.saturating_sub(len_bytes) / alignment_bytes * alignment_bytes;
    start.min(latest)
}

/// `x -> (a·x + b) mod n` with `gcd(a, n) = 1`: a cheap fixed bijection.
#[derive(Debug, Clone)]
struct AffinePermutation {
    multiplier: u64,
    offset: u64,
}

impl AffinePermutation {
    fn new(n: u64) -> Self {
        // Start near n/φ so neighbouring ranks land far apart.
        let mut multiplier = ((n as f64 * 0.618_033_988_749_895) as u64).max(1);
        while gcd(multiplier, n) != 1 {
            multiplier += 1;
        }
        Self {
            multiplier,
            offset: n / 3,
        }
    }

    fn apply(&self, x: u64, n: u64) -> u64 {
        ((u128::from(x) * u128::from(self.multiplier) + u128::from(self.offset)) % u128::from(n))
            as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::collections::HashSet;

    #[test]
    fn affine_permutation_is_a_bijection() {
        for n in [1u64, 2, 10, 97, 1000, 4096] {
            let permutation = AffinePermutation::new(n);
            let images: HashSet<u64> = (0..n).map(|x| permutation.apply(x, n)).collect();
            assert_eq!(images.len() as u64, n);
        }
    }

    #[test]
    fn sequential_streams_advance_in_their_slices() {
        let pattern = AddressPattern::Sequential { streams: 2 };
        let mut generator = AddressGenerator::new(&pattern, 1 << 20, 4096);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut last = [None::<u64>; 2];
        for _ in 0..1000 {
            let start = generator.next(&mut rng, 8192);
            let stream = (start >> 19) as usize;
            if let Some(previous) = last[stream] {
                let wrapped = start == (stream as u64) << 19;
                assert!(wrapped || start == previous + 8192, "{previous} -> {start}");
            }
            assert!(start + 8192 <= (stream as u64 + 1) << 19);
            last[stream] = Some(start);
        }
    }

    #[test]
    fn hot_spot_concentrates_accesses() {
        let pattern = AddressPattern::HotSpot {
            hot_space_fraction: 0.2,
            hot_access_fraction: 0.8,
        };
        let capacity_bytes = 1 << 30;
        let mut generator = AddressGenerator::new(&pattern, capacity_bytes, 4096);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let hot = (0..10_000)
            .filter(|_| generator.next(&mut rng, 4096) < capacity_bytes / 5)
            .count();
        assert!((7_700..8_300).contains(&hot), "{hot}");
    }
}

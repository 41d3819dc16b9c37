//! Where user requests come from: a trace or a synthetic workload replayed
//! open loop (at their arrival times), or a closed loop that issues the next
//! request when one completes (zero think time).
//!
//! Traces: every `device` of a trace is mapped onto the one simulated array
//! (unless the options select devices), and addresses are folded into the
//! array's capacity with [`eraid_trace::options::fold_request`] when the
//! options name no capacity; so requests of different trace devices at the
//! same offset meet at the same array address.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use eraid_trace::synthetic::{ClosedLoop, OpenLoop, Preset, WorkloadSpec};
use eraid_trace::{TraceError, TraceFormat, TraceOptions, TraceReader, TraceRequest};

/// A recipe for a feed, turned into one once the target's capacity is known.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedSpec {
    /// Replay a trace file, open loop.
    Trace {
        path: PathBuf,
        /// `None`: detect from the first lines.
        format: Option<TraceFormat>,
        options: TraceOptions,
    },
    /// A synthetic workload; `outstanding` makes it closed loop.
    Synthetic {
        source: SyntheticSource,
        outstanding: Option<u32>,
    },
    /// The MSC-CT stride benchmark pattern, closed loop.
    Stride(StrideSpec),
    /// Given requests, open loop (for tests and small tools).
    Requests(Vec<TraceRequest>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SyntheticSource {
    /// A preset over the whole capacity, seeded with the run's seed.
    Preset(Preset),
    /// A full spec; its capacity is capped at the target's.
    Spec(Box<WorkloadSpec>),
}

/// The MSC-CT paper's stride pattern (Fig. 8): from block 0 to the same
/// end block, one block is accessed, the next `stride_blocks - 1` are
/// skipped, and so on. Stride 1 is the contiguous sequence. With
/// `exponential_mean_blocks` the strides are drawn instead (the paper's
/// Fig. 1 and Fig. 15 workloads) and `stride_blocks` is their cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrideSpec {
    pub is_read: bool,
    pub block_bytes: u64,
    pub stride_blocks: u64,
    /// Strides exponentially distributed with this mean (rounded to whole
    /// blocks, at least 1, at most `stride_blocks`), seeded by `seed`.
    pub exponential_mean_blocks: Option<f64>,
    pub seed: u64,
    /// Blocks from the start to the (exclusive) end, the same for every stride.
    pub span_blocks: u64,
    pub start_bytes: u64,
    /// Requests the host keeps in flight (the paper's benchmark kept 32-64).
    pub outstanding: u32,
}

impl StrideSpec {
    pub fn requests(&self) -> Vec<TraceRequest> {
        self.blocks()
            .into_iter()
            .map(|block| TraceRequest {
                arrival_ns: 0,
                device: 0,
                offset_bytes: self.start_bytes + block * self.block_bytes,
                len_bytes: self.block_bytes,
                is_read: self.is_read,
            })
            .collect()
    }

    /// The block indices accessed, ascending, all below `span_blocks`.
    fn blocks(&self) -> Vec<u64> {
        let cap = self.stride_blocks.max(1);
        let Some(mean) = self.exponential_mean_blocks else {
            return (0..self.span_blocks).step_by(cap as usize).collect();
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut blocks = Vec::new();
        let mut block = 0;
        while block < self.span_blocks {
            blocks.push(block);
            // Inverse transform: -mean * ln(U), U in (0, 1].
            let u: f64 = 1.0 - rng.gen::<f64>();
            let stride = (-mean * u.ln()).round() as u64;
            block += stride.clamp(1, cap);
        }
        blocks
    }
}

pub type OpenStream = Box<dyn Iterator<Item = Result<TraceRequest, TraceError>>>;
pub type ClosedStream = Box<dyn FnMut(u64) -> Option<TraceRequest>>;

/// A ready request source.
pub enum Feed {
    Open(OpenStream),
    Closed {
        /// The next request, arriving at the given completion time.
        next: ClosedStream,
        outstanding: u32,
    },
}

impl FeedSpec {
    /// Opens the source for a target of `capacity_bytes`; `seed` seeds
    /// presets.
    pub fn open(&self, capacity_bytes: u64, seed: u64) -> Result<Feed, String> {
        match self {
            FeedSpec::Trace {
                path,
                format,
                options,
            } => {
                let name = path.display().to_string();
                let file =
                    File::open(path).map_err(|e| format!("{name}: cannot open trace: {e}"))?;
                let reader = BufReader::new(file);
                let mut options = options.clone();
                if options.fold_capacity_bytes.is_none() {
                    options.fold_capacity_bytes = Some(capacity_bytes);
                }
                let stream: OpenStream = match format {
                    Some(format) => Box::new(
                        options
                            .apply(TraceReader::new(reader, name, *format))
                            .map_err(|e| e.to_string())?,
                    ),
                    None => Box::new(
                        options
                            .apply(
                                TraceReader::autodetect(reader, name).map_err(|e| e.to_string())?,
                            )
                            .map_err(|e| e.to_string())?,
                    ),
                };
                Ok(Feed::Open(stream))
            }
            FeedSpec::Synthetic {
                source,
                outstanding,
            } => {
                let spec = match source {
                    SyntheticSource::Preset(preset) => preset.spec(seed, capacity_bytes),
                    SyntheticSource::Spec(spec) => WorkloadSpec {
                        capacity_bytes: spec.capacity_bytes.min(capacity_bytes),
                        ..(**spec).clone()
                    },
                };
                match outstanding {
                    None => {
                        let open = OpenLoop::new(&spec).map_err(|e| e.to_string())?;
                        Ok(Feed::Open(Box::new(open.map(Ok))))
                    }
                    Some(outstanding) => {
                        let mut closed =
                            ClosedLoop::new(&spec, *outstanding).map_err(|e| e.to_string())?;
                        Ok(Feed::Closed {
                            next: Box::new(move |now_ns| Some(closed.next_request(now_ns))),
                            outstanding: *outstanding,
                        })
                    }
                }
            }
            FeedSpec::Stride(stride) => {
                if stride.block_bytes == 0 || stride.block_bytes % 512 != 0 {
                    return Err(format!(
                        "stride block size must be a positive multiple of 512 bytes, got {}",
                        stride.block_bytes
                    ));
                }
                let end = stride.start_bytes + stride.span_blocks * stride.block_bytes;
                if end > capacity_bytes {
                    return Err(format!(
                        "stride span ends at byte {end}, beyond the target's {capacity_bytes} bytes"
                    ));
                }
                let mut requests = stride.requests().into_iter();
                Ok(Feed::Closed {
                    next: Box::new(move |now_ns| {
                        requests.next().map(|r| TraceRequest {
                            arrival_ns: now_ns,
                            ..r
                        })
                    }),
                    outstanding: stride.outstanding.max(1),
                })
            }
            FeedSpec::Requests(requests) => {
                let requests = requests.clone();
                Ok(Feed::Open(Box::new(requests.into_iter().map(Ok))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_pattern_keeps_start_and_end() {
        let spec = StrideSpec {
            is_read: false,
            block_bytes: 4096,
            stride_blocks: 4,
            span_blocks: 16,
            start_bytes: 0,
            outstanding: 1,
            exponential_mean_blocks: None,
            seed: 1,
        };
        let blocks: Vec<u64> = spec
            .requests()
            .iter()
            .map(|r| r.offset_bytes / 4096)
            .collect();
        assert_eq!(blocks, vec![0, 4, 8, 12]);
    }

    #[test]
    fn exponential_strides_have_their_mean_and_cap() {
        let spec = StrideSpec {
            is_read: false,
            block_bytes: 4096,
            stride_blocks: 64,
            span_blocks: 1 << 20,
            start_bytes: 0,
            outstanding: 1,
            exponential_mean_blocks: Some(10.0),
            seed: 7,
        };
        let blocks = spec.blocks();
        let strides: Vec<u64> = blocks.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(strides.iter().all(|&s| (1..=64).contains(&s)));
        let mean = strides.iter().sum::<u64>() as f64 / strides.len() as f64;
        assert!((9.5..10.5).contains(&mean), "mean stride {mean}");
        assert!(strides.contains(&1) && strides.iter().any(|&s| s > 30));
        assert_eq!(blocks, spec.blocks(), "seeded");
    }
}

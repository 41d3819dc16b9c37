//! The MSC-CT stride benchmark (the paper's Section III-D, Figs. 8-9) on
//! the drive model: measures S_r_max and S_w_max for an experiment whose
//! `[cache]` leaves them out, as the paper measures them on a member disk
//! when the array is created.
//!
//! Every stride S from 1 to [`BENCH_STRIDE_MAX`] reads (then writes) the
//! same span of 4 KiB blocks, one block every S, with 32 requests in
//! flight; the turnaround (first request to last completion) of each is
//! divided by the contiguous one's. [`choose_rule`] (in the core, shared
//! with the benchmark on real members) then applies the paper's selection.

use eraid_core::cache::config::StrideRule;
pub use eraid_core::cache::stride_choice::{choose_rule, NORMALISED_TURNAROUND_LIMIT};
use serde::Serialize;

use crate::driver::{run, DiskChoice, FeedSpec, SimConfig, StrideSpec, Target};

/// Strides measured: a 128 KiB strip holds 64 blocks of 4 KiB, so no
/// transform inside a strip spans more (the paper's Fig. 15 limit).
pub const BENCH_STRIDE_MAX: u32 = 64;
const BENCH_BLOCK_BYTES: u64 = 4096;
const BENCH_SPAN_BLOCKS: u64 = 4096;
const BENCH_OUTSTANDING: u32 = 32;

/// One direction's measurement and the rule chosen from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectionMeasurement {
    /// (stride, turnaround in ms), strides 1, 2, ... in order.
    pub turnaround_ms: Vec<(u32, f64)>,
    pub s_max: u32,
    /// Inclusive stride ranges below `s_max` that are not penalised.
    pub except: Vec<(u32, u32)>,
}

impl DirectionMeasurement {
    pub fn rule(&self) -> StrideRule {
        StrideRule {
            s_max: self.s_max,
            except: self.except.clone(),
        }
    }
}

/// Both directions measured on one drive model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrideBenchmark {
    /// The drive, as the experiment configured it.
    pub disk: String,
    pub read: DirectionMeasurement,
    pub write: DirectionMeasurement,
}

fn measure_direction(
    disk: &DiskChoice,
    seed: u64,
    is_read: bool,
) -> Result<DirectionMeasurement, String> {
    let mut config = SimConfig::new(Target::Disk, 1, disk.clone());
    config.seed = seed;
    let mut turnaround_ms = Vec::new();
    for stride in 1..=BENCH_STRIDE_MAX {
        let feed = FeedSpec::Stride(StrideSpec {
            is_read,
            block_bytes: BENCH_BLOCK_BYTES,
            stride_blocks: stride as u64,
            span_blocks: BENCH_SPAN_BLOCKS,
            start_bytes: 0,
            outstanding: BENCH_OUTSTANDING,
            exponential_mean_blocks: None,
            seed,
        });
        let report = run(&config, &feed).map_err(|e| format!("stride {stride}: {e}"))?;
        turnaround_ms.push((stride, report.turnaround_ms));
    }
    let (s_max, except) = choose_rule(&turnaround_ms)?;
    Ok(DirectionMeasurement {
        turnaround_ms,
        s_max,
        except,
    })
}

/// Runs the stride benchmark for reads and writes on one bare `disk`.
pub fn measure(disk: &DiskChoice, disk_label: &str, seed: u64) -> Result<StrideBenchmark, String> {
    let read = measure_direction(disk, seed, true)
        .map_err(|e| format!("stride benchmark (read) on {disk_label}: {e}"))?;
    let write = measure_direction(disk, seed, false)
        .map_err(|e| format!("stride benchmark (write) on {disk_label}: {e}"))?;
    Ok(StrideBenchmark {
        disk: disk_label.to_string(),
        read,
        write,
    })
}

//! The MSC-CT stride benchmark (the paper's Section III-D, Figs. 8-9) on
//! the drive model: measures S_r_max and S_w_max for an experiment whose
//! `[cache]` leaves them out, as the paper measures them on a member disk
//! when the array is created.
//!
//! Every stride S from 1 to [`BENCH_STRIDE_MAX`] reads (then writes) the
//! same span of 4 KiB blocks, one block every S, with 32 requests in
//! flight; the turnaround (first request to last completion) of each is
//! divided by the contiguous one's. [`choose_rule`] then applies the
//! paper's selection.

use eraid_core::cache::config::StrideRule;
use serde::Serialize;

use crate::driver::{run, DiskChoice, FeedSpec, SimConfig, StrideSpec, Target};

/// The paper's threshold: a stride whose normalised turnaround is below
/// this is not worth a transform.
pub const NORMALISED_TURNAROUND_LIMIT: f64 = 1.2;
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

/// The paper's selection from turnarounds by stride (1, 2, ... with no
/// gap): S_max is the smallest S such that every measured stride from S
/// up has a normalised turnaround below 1.2 (1 when no stride is
/// penalised: no transform at all). Strides in 2..S_max that are below
/// 1.2 anyway form the exception ranges (the paper's Fig. 9(d)).
pub fn choose_rule(turnaround_ms: &[(u32, f64)]) -> Result<(u32, Vec<(u32, u32)>), String> {
    let Some(&(1, contiguous_ms)) = turnaround_ms.first() else {
        return Err("the stride benchmark must start at stride 1 (contiguous)".into());
    };
    // NaN too: it would make every ratio false.
    if contiguous_ms.is_nan() || contiguous_ms <= 0.0 {
        return Err(format!(
            "the contiguous run's turnaround is {contiguous_ms} ms; cannot normalise"
        ));
    }
    for (index, &(stride, _)) in turnaround_ms.iter().enumerate() {
        if stride as usize != index + 1 {
            return Err(format!(
                "stride benchmark strides must be 1, 2, 3, ... without gaps; found {stride} at position {}",
                index + 1
            ));
        }
    }
    let penalised = |ms: f64| ms / contiguous_ms >= NORMALISED_TURNAROUND_LIMIT;
    let s_max = turnaround_ms
        .iter()
        .rev()
        .find(|&&(_, ms)| penalised(ms))
        .map_or(1, |&(stride, _)| stride + 1);
    let mut except: Vec<(u32, u32)> = Vec::new();
    for &(stride, ms) in turnaround_ms.iter().skip(1) {
        if stride >= s_max || penalised(ms) {
            continue;
        }
        match except.last_mut() {
            Some((_, end)) if *end + 1 == stride => *end = stride,
            _ => except.push((stride, stride)),
        }
    }
    Ok((s_max, except))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(normalised: &[f64]) -> Vec<(u32, f64)> {
        normalised
            .iter()
            .enumerate()
            .map(|(i, &n)| (i as u32 + 1, 10.0 * n))
            .collect()
    }

    #[test]
    fn s_max_is_one_past_the_last_penalised_stride() {
        let (s_max, except) = choose_rule(&curve(&[1.0, 3.0, 2.5, 1.3, 0.9, 0.5])).unwrap();
        assert_eq!(s_max, 5);
        assert!(except.is_empty());
    }

    #[test]
    fn dips_below_s_max_become_exceptions() {
        let (s_max, except) =
            choose_rule(&curve(&[1.0, 2.0, 1.1, 1.0, 2.0, 1.19, 1.5, 0.4])).unwrap();
        assert_eq!(s_max, 8);
        assert_eq!(except, vec![(3, 4), (6, 6)]);
    }

    #[test]
    fn nothing_penalised_means_no_transform() {
        let (s_max, except) = choose_rule(&curve(&[1.0, 0.6, 0.4])).unwrap();
        assert_eq!(s_max, 1);
        assert!(except.is_empty());
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(choose_rule(&[]).is_err());
        assert!(choose_rule(&[(2, 1.0)]).is_err());
        assert!(choose_rule(&[(1, 0.0), (2, 1.0)]).is_err());
        assert!(choose_rule(&[(1, 1.0), (3, 1.0)]).is_err());
    }
}

//! The MSC-CT contiguity transform's performance rule (S_r_max, S_w_max)
//! as `create` and `eraid tune` decide it: given by hand, the stated
//! default (`--no-tune`, or a member whose timings would mean nothing),
//! or measured by the stride benchmark on the array's first member
//! (`eraid_driver::stride_bench`, the paper's Section III-D), with the
//! selection rule the simulator uses (`eraid_core::cache::stride_choice`).

use crate::output::say;
use anyhow::{bail, Result};
use clap::Args;
use eraid_core::cache::config::StrideRule;
use eraid_core::cache::stride_choice::{choose_stride_rule, NORMALISED_TURNAROUND_LIMIT};
use eraid_core::cache::BLOCK_BYTES;
use eraid_core::geometry::Geometry;
use eraid_core::metadata::stride_record::{StrideRecord, StrideSource, STRIDE_BLOCKS_MAX};
use eraid_driver::stride_bench::{measure_member, StrideBenchConfig, StrideBenchError};
use eraid_driver::MemberIo;

/// S_r_max and S_w_max set by hand (both, or neither).
#[derive(Args, Debug, Default)]
pub struct ManualStride {
    /// Set S_r_max by hand instead of measuring it: read transforms join
    /// two reads of a strip whose stride (in 4 KiB blocks) is below this;
    /// 1 turns read transforms off. With --stride-max-write.
    #[arg(long, value_name = "BLOCKS", requires = "stride_max_write",
          value_parser = clap::value_parser!(u32).range(1..=STRIDE_BLOCKS_MAX as i64))]
    pub stride_max_read: Option<u32>,
    /// Set S_w_max by hand (as --stride-max-read, for writes).
    #[arg(long, value_name = "BLOCKS", requires = "stride_max_read",
          value_parser = clap::value_parser!(u32).range(1..=STRIDE_BLOCKS_MAX as i64))]
    pub stride_max_write: Option<u32>,
}

impl ManualStride {
    pub fn given(&self) -> bool {
        self.stride_max_read.is_some()
    }

    /// The record of the values given, if any.
    pub fn record(&self) -> Option<StrideRecord> {
        let (read, write) = (self.stride_max_read?, self.stride_max_write?);
        let rule = |s_max| StrideRule {
            s_max,
            except: Vec::new(),
        };
        Some(StrideRecord::new(
            &rule(read),
            &rule(write),
            StrideSource::Manual,
            Some("set by hand".into()),
        ))
    }
}

/// The member the benchmark runs on.
pub struct BenchTarget<'a> {
    pub device: &'a dyn MemberIo,
    pub label: String,
    /// Its I/O bypasses the page cache (O_DIRECT).
    pub direct: bool,
    pub is_nbd: bool,
}

/// Measures the rule on `target` (the array's first member): a few
/// seconds, progress on stderr. A member whose timings would mean nothing
/// (an NBD export, a file system refusing O_DIRECT) or that is too slow to
/// finish a sweep gets the stated default, with a warning saying why. An
/// I/O error is an error.
pub fn measure(target: &BenchTarget, geometry: &Geometry) -> Result<StrideRecord> {
    let label = &target.label;
    let fallback = |why: String| {
        let record = StrideRecord::default_rule(Some(why.clone()));
        say!(
            "warning: stride benchmark: {why}; using the default rule ({})",
            record.summary()
        );
        Ok(record)
    };
    if target.is_nbd {
        return fallback(format!(
            "{label} is an NBD export, not measured (the server's own caching decides its timings)"
        ));
    }
    if target.device.memory_backed() {
        return fallback(format!(
            "{label} is in memory (tmpfs or ramfs), not measured (it is served without \
             O_DIRECT, and memory has no strides to time)"
        ));
    }
    if !target.direct {
        return fallback(format!(
            "{label} refused O_DIRECT, not measured (its timings would be the page cache's)"
        ));
    }
    let config = StrideBenchConfig::for_strip(
        geometry.data_offset_bytes,
        geometry.chunk_bytes / BLOCK_BYTES,
    );
    let size_bytes = geometry.data_offset_bytes + geometry.member_data_bytes;
    say!(
        "stride benchmark on {label}: strides 1 to {} over {} KiB, reads then writes \
         (writes put back what was there; a few seconds)",
        config.stride_max,
        (config.span_blocks * BLOCK_BYTES) >> 10
    );
    let timings = match measure_member(target.device, size_bytes, &config, &mut |line| {
        say!("  {line}")
    }) {
        Ok(timings) => timings,
        Err(error @ (StrideBenchError::TooSmall { .. } | StrideBenchError::TooSlow { .. })) => {
            return fallback(format!("{label}: {error}"))
        }
        Err(StrideBenchError::Io(error)) => {
            bail!("stride benchmark on {label}: {error}")
        }
    };
    let read = choose_stride_rule(&timings.read.turnaround_ms).map_err(anyhow::Error::msg)?;
    let write = choose_stride_rule(&timings.write.turnaround_ms).map_err(anyhow::Error::msg)?;
    let normalised = |d: &[(u32, f64)]| -> String {
        let contiguous = d[0].1;
        d.iter()
            .map(|&(_, ms)| format!("{:.2}", ms / contiguous))
            .collect::<Vec<_>>()
            .join(" ")
    };
    say!(
        "  normalised turnaround by stride (1 = contiguous; {NORMALISED_TURNAROUND_LIMIT} and \
         above is penalised):\n    read  {}\n    write {}",
        normalised(&timings.read.turnaround_ms),
        normalised(&timings.write.turnaround_ms)
    );
    let record = StrideRecord::new(
        &read,
        &write,
        StrideSource::Measured,
        Some(format!(
            "{label}: strides 1 to {}, {} read and {} write sweeps in {:.1} s",
            config.stride_max,
            timings.read.sweeps,
            timings.write.sweeps,
            timings.elapsed.as_secs_f64()
        )),
    );
    say!("stride rule: {}", record.summary());
    if read.s_max == 1 && write.s_max == 1 {
        say!("  (no stride was penalised: msc-ct makes no transform on this member)");
    }
    Ok(record)
}

/// The record `create` or `tune` stores: by hand, the default, or measured.
pub fn decide(
    manual: &ManualStride,
    no_tune: bool,
    target: &BenchTarget,
    geometry: &Geometry,
) -> Result<StrideRecord> {
    if let Some(record) = manual.record() {
        return Ok(record);
    }
    if no_tune {
        return Ok(StrideRecord::default_rule(Some("--no-tune".into())));
    }
    measure(target, geometry)
}

/// The `stride` object of `detail --json`'s `cache`: what the superblock
/// records, or the default a start would use.
pub fn stride_json(record: Option<&StrideRecord>) -> serde_json::Value {
    let default;
    let record = match record {
        Some(record) => record,
        None => {
            default = StrideRecord::default_rule(Some("not recorded".into()));
            &default
        }
    };
    serde_json::json!({
        "s_r_max": record.s_r_max,
        "s_r_except": record.s_r_except,
        "s_w_max": record.s_w_max,
        "s_w_except": record.s_w_except,
        "source": record.source.name(),
        "note": record.note,
    })
}

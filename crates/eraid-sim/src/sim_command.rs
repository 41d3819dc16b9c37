//! What `eraid sim` does, apart from argument parsing: turn its options into
//! a run, and format the report. Kept here so it is tested with the crate.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use eraid_core::geometry::Level;
use eraid_core::ArrayOptions;
use eraid_trace::synthetic::Preset;
use eraid_trace::{TraceFormat, TraceOptions};
use serde_json::{json, Value};

use crate::driver::{
    resolve_disk_model, FeedSpec, SimConfig, SimReport, SyntheticSource, Target, CAUSES,
};
use crate::experiment::plan::{load_workload_spec, SYNTHETIC_REQUESTS_DEFAULT};
use crate::units::parse_size_bytes;

/// The options of `eraid sim`.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// 0, 5, 6, 10, or "disk" for one bare drive.
    pub level: String,
    pub disks: usize,
    pub chunk: String,
    /// A preset name or a DiskSim .diskspecs file/folder.
    pub disk_model: String,
    pub trace: Option<PathBuf>,
    /// `None`: detect the format.
    pub trace_format: Option<String>,
    /// A preset name (financial1, websearch, cello99) or a TOML spec file.
    pub workload: Option<String>,
    /// Closed loop with this many requests outstanding (workloads only).
    pub outstanding: Option<u32>,
    pub seed: u64,
    pub max_requests: Option<u64>,
    /// Trace arrival-time factor (0.5 = twice as fast).
    pub time_scale: Option<f64>,
    /// Use only this much of each drive, e.g. "2G".
    pub member_size: Option<String>,
    /// Open loop: at most this many requests in the array, the rest wait
    /// at the host (`None`: the block layer's 512).
    pub host_queue_depth: Option<u32>,
    /// The host's I/O scheduler in front of each drive: noop or cfq.
    pub host_scheduler: Option<String>,
}

impl SimOptions {
    /// The run these options describe.
    pub fn plan(&self) -> Result<(SimConfig, FeedSpec), String> {
        let disk =
            resolve_disk_model(&self.disk_model, None).map_err(|e| format!("--disk-model: {e}"))?;
        let target = if matches!(self.level.to_ascii_lowercase().as_str(), "disk" | "none") {
            Target::Disk
        } else {
            Target::Array {
                level: Level::parse(&self.level).map_err(|e| format!("--level: {e}"))?,
                layout: None,
                chunk_bytes: parse_size_bytes(&self.chunk).map_err(|e| format!("--chunk: {e}"))?,
                options: Box::new(ArrayOptions::default()),
            }
        };
        let mut config = SimConfig::new(target, self.disks, disk);
        config.seed = self.seed;
        config.max_requests = self.max_requests;
        config.member_bytes_max = self
            .member_size
            .as_deref()
            .map(|s| parse_size_bytes(s).map_err(|e| format!("--member-size: {e}")))
            .transpose()?;
        let feed = match (&self.trace, &self.workload) {
            (Some(path), None) => {
                let format = self
                    .trace_format
                    .as_deref()
                    .map(|f| {
                        f.parse::<TraceFormat>()
                            .map_err(|e| format!("--trace-format: {e}"))
                    })
                    .transpose()?;
                let options = TraceOptions {
                    rebase_time: true,
                    time_scale: self.time_scale.unwrap_or(1.0),
                    ..TraceOptions::default()
                };
                options
                    .validate()
                    .map_err(|e| format!("--time-scale: {e}"))?;
                FeedSpec::Trace {
                    path: path.clone(),
                    format,
                    options,
                }
            }
            (None, Some(spec)) => {
                let source = workload_source(spec, self.seed)?;
                if config.max_requests.is_none() {
                    config.max_requests = Some(SYNTHETIC_REQUESTS_DEFAULT);
                }
                FeedSpec::Synthetic {
                    source,
                    outstanding: self.outstanding,
                }
            }
            _ => return Err("give either --trace PATH or --workload SPEC".to_string()),
        };
        if let Some(depth) = self.host_queue_depth {
            if depth == 0 {
                return Err("--host-queue-depth: must be at least 1".into());
            }
            if self.outstanding.is_some() {
                return Err(
                    "--host-queue-depth: only for open loop (not with --outstanding)".into(),
                );
            }
            config.host_queue_depth = Some(depth);
        }
        if let Some(name) = &self.host_scheduler {
            config.host_scheduler = crate::driver::host_sched::HostSchedulerKind::parse(name)
                .map_err(|e| format!("--host-scheduler: {e}"))?;
        }
        Ok((config, feed))
    }
}

fn workload_source(spec: &str, seed: u64) -> Result<SyntheticSource, String> {
    let path = Path::new(spec);
    if path.is_file() {
        return Ok(SyntheticSource::Spec(Box::new(load_workload_spec(
            path, seed,
        )?)));
    }
    spec.parse::<Preset>()
        .map(SyntheticSource::Preset)
        .map_err(|e| format!("--workload: {e}, and no file {spec} exists"))
}

/// The report as one JSON object: the flat metrics at the top level (so
/// `mean_response_ms`, `p99_response_ms` ... are there), plus the target,
/// per-disk figures and device I/Os by cause.
pub fn report_json(report: &SimReport) -> Value {
    let mut out = report.flat_metrics();
    out.insert("target".into(), json!(report.target));
    out.insert("disk_model".into(), json!(report.disk_model));
    out.insert("seed".into(), json!(report.seed));
    out.insert("disks".into(), json!(report.disks));
    out.insert(
        "device_ios_by_cause".into(),
        json!(report.device_ios_by_cause),
    );
    Value::Object(out)
}

/// The report for people.
pub fn report_text(report: &SimReport) -> String {
    let s = &report.summary;
    let t = &report.target;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} of {} x {}; capacity {:.1} GiB; seed {}",
        t.kind,
        t.members,
        report.disk_model,
        t.capacity_bytes as f64 / (1u64 << 30) as f64,
        report.seed
    );
    let _ = writeln!(
        out,
        "requests        {} ({} reads, {} writes, {} failed)",
        s.requests, s.reads, s.writes, report.failed_requests
    );
    if report.host_waited_requests > 0 {
        let _ = writeln!(
            out,
            "host queue      {} requests found {} in the array and waited above it (at most {} at once); their response times count the wait",
            report.host_waited_requests, report.admission_limit, report.host_queue_max
        );
    }
    let _ = writeln!(
        out,
        "response ms     mean {:.3}  p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
        s.mean_response_ms,
        s.p50_response_ms,
        s.p95_response_ms,
        s.p99_response_ms,
        s.max_response_ms
    );
    let _ = writeln!(
        out,
        "throughput      {:.1} IOPS, {:.2} MB/s over {:.3} s simulated",
        s.throughput_iops,
        s.throughput_bytes_per_s / 1e6,
        s.elapsed_s
    );
    out.push_str("disk  util   queue  max-q  service-ms  seeks  mean-seek-cyl  ios\n");
    for d in &report.disks {
        let _ = writeln!(
            out,
            "{:>4}  {:>5.1}%  {:>5.2}  {:>5}  {:>10.3}  {:>5}  {:>13.1}  {}",
            d.member,
            d.utilisation * 100.0,
            d.mean_queue_length,
            d.max_queue_length,
            d.mean_service_ms,
            d.seeks,
            d.mean_seek_cylinders,
            d.ios
        );
    }
    out.push_str("device I/Os by cause:");
    let mut any = false;
    for cause in CAUSES {
        let name = crate::driver::cause_name(cause);
        if let Some(c) = report.device_ios_by_cause.get(name) {
            any = true;
            let _ = write!(
                out,
                " {name} {} ({}r/{}w/{}f)",
                c.ios(),
                c.reads,
                c.writes,
                c.flushes
            );
        }
    }
    if !any {
        out.push_str(" none");
    }
    out.push('\n');
    if !report.engine.is_empty() {
        out.push_str("engine:");
        for (k, v) in &report.engine {
            let _ = write!(out, " {k} {v}");
        }
        out.push('\n');
    }
    out
}

//! Machine-readable results: `summary.json`, `results.json`, and CSV files.
//! Nothing here writes a time stamp or a wall-clock figure, so two runs of
//! the same experiment write identical files.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::experiment::ExperimentResult;

/// `{"experiment": NAME, "seed": N, "variants": [{"name", "metrics"}]}`.
pub fn summary_json(result: &ExperimentResult) -> String {
    let variants: Vec<Value> = result
        .runs
        .iter()
        .map(|r| json!({ "name": r.name, "metrics": r.metrics }))
        .collect();
    let mut summary = json!({
        "experiment": result.name,
        "seed": result.seed,
        "variants": variants,
    });
    if !result.stride_benchmarks.is_empty() {
        summary["stride_benchmark"] = stride_benchmark_json(result);
    }
    pretty(&summary)
}

/// What the stride benchmark measured and chose, per drive configuration:
/// normalised turnaround by stride (stride 1 = 1.0) for reads and writes.
fn stride_benchmark_json(result: &ExperimentResult) -> Value {
    let direction = |d: &crate::experiment::stride_bench::DirectionMeasurement| {
        let contiguous_ms = d.turnaround_ms.first().map_or(0.0, |t| t.1);
        let normalised: Vec<Value> = d
            .turnaround_ms
            .iter()
            .map(|&(stride, ms)| json!({ "stride": stride, "turnaround_ms": ms, "normalized_turnaround": ms / contiguous_ms }))
            .collect();
        json!({ "s_max": d.s_max, "except": d.except, "turnarounds": normalised })
    };
    Value::Array(
        result
            .stride_benchmarks
            .iter()
            .map(|b| json!({ "disk": b.disk, "read": direction(&b.read), "write": direction(&b.write) }))
            .collect(),
    )
}

/// Every run's full report (disks, causes, windows, CDF).
pub fn results_json(result: &ExperimentResult) -> String {
    let runs: Vec<Value> = result
        .runs
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "variant": r.variant,
                "sweep": r.sweep.as_ref().map(|(label, _)| label),
                "metrics": r.metrics,
                "report": r.report,
            })
        })
        .collect();
    pretty(&json!({ "experiment": result.name, "seed": result.seed, "runs": runs }))
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

/// Quotes a CSV field when it needs it.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => field(s),
        Some(other) => other.to_string(),
    }
}

/// One row per run, one column per metric (the union over runs, sorted).
pub fn results_csv(result: &ExperimentResult) -> String {
    let keys: BTreeSet<&String> = result.runs.iter().flat_map(|r| r.metrics.keys()).collect();
    let mut out = String::from("name,variant,sweep");
    for k in &keys {
        out.push(',');
        out.push_str(&field(k));
    }
    out.push('\n');
    for r in &result.runs {
        let sweep = r
            .sweep
            .as_ref()
            .map(|(label, _)| label.as_str())
            .unwrap_or("");
        let _ = write!(
            out,
            "{},{},{}",
            field(&r.name),
            field(&r.variant),
            field(sweep)
        );
        for k in &keys {
            out.push(',');
            out.push_str(&cell(r.metrics.get(*k)));
        }
        out.push('\n');
    }
    out
}

/// Local average and maximum response time per window, per run.
pub fn windows_csv(result: &ExperimentResult) -> String {
    let mut out =
        String::from("name,window,start_s,end_s,requests,mean_response_ms,max_response_ms\n");
    for r in &result.runs {
        for w in &r.report.windows {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{}",
                field(&r.name),
                w.index,
                w.start_ns as f64 / 1e9,
                w.end_ns as f64 / 1e9,
                w.requests,
                w.latency_mean_ns / 1e6,
                w.latency_max_ns as f64 / 1e6
            );
        }
    }
    out
}

/// The response-time CDF of each run.
pub fn cdf_csv(result: &ExperimentResult) -> String {
    let mut out = String::from("name,response_ms,cumulative_fraction\n");
    for r in &result.runs {
        for p in &r.report.cdf {
            let _ = writeln!(
                out,
                "{},{},{}",
                field(&r.name),
                p.latency_ns as f64 / 1e6,
                p.cumulative_fraction
            );
        }
    }
    out
}

/// Per-disk figures of each run.
pub fn disks_csv(result: &ExperimentResult) -> String {
    let mut out = String::from(
        "name,member,ios,utilisation,mean_queue_length,max_queue_length,mean_service_ms,seeks,mean_seek_cylinders,cache_hits,media_reads,read_slot_wait_ms_mean,read_mechanism_wait_ms_mean,read_behind_destage_ms_mean,read_behind_writes_ms_mean,read_behind_reads_ms_mean\n",
    );
    for r in &result.runs {
        for d in &r.report.disks {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&r.name),
                d.member,
                d.ios,
                d.utilisation,
                d.mean_queue_length,
                d.max_queue_length,
                d.mean_service_ms,
                d.seeks,
                d.mean_seek_cylinders,
                d.cache_hits,
                d.read_waits.media_reads,
                d.read_waits.slot_wait_ms_mean,
                d.read_waits.mechanism_wait_ms_mean,
                d.read_waits.behind_destage_ms_mean,
                d.read_waits.behind_writes_ms_mean,
                d.read_waits.behind_reads_ms_mean
            );
        }
    }
    out
}

/// Progress samples of every run with a growth: one row per sample, with
/// the user response times seen since the previous sample.
pub fn growth_csv(result: &ExperimentResult) -> String {
    let mut out = String::from(
        "name,step,time_s,progress,processed_bytes,moved_bytes,redistribution_reads,redistribution_writes,metadata_writes,valve_closed_periods,blocked_requests,user_requests,user_mean_ms,user_max_ms,user_over_bound\n",
    );
    for r in &result.runs {
        let Some(g) = &r.report.growth else {
            continue;
        };
        for s in &g.samples {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&r.name),
                s.step + 1,
                s.time_s,
                s.progress,
                s.processed_bytes,
                s.moved_bytes,
                s.redistribution_reads,
                s.redistribution_writes,
                s.metadata_writes,
                s.valve_closed_periods,
                s.blocked_requests,
                s.user_requests,
                s.user_mean_ms,
                s.user_max_ms,
                s.user_over_bound
            );
        }
    }
    out
}

/// Rebuild samples of every run with a member failure: one row per sample,
/// with the user response times seen since the previous sample (response
/// time over time during the rebuild, the PRO paper's Fig. 1).
pub fn rebuild_csv(result: &ExperimentResult) -> String {
    let mut out = String::from(
        "name,time_s,progress,rebuilt_bytes,rate_bytes_per_s,user_requests,user_mean_ms,user_max_ms\n",
    );
    for r in &result.runs {
        let Some(f) = &r.report.failure else {
            continue;
        };
        for s in &f.samples {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                field(&r.name),
                s.time_s,
                s.progress,
                s.rebuilt_bytes,
                s.rate_bytes_per_s,
                s.user_requests,
                s.user_mean_ms,
                s.user_max_ms
            );
        }
    }
    out
}

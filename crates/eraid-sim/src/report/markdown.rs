//! The human summary: a Markdown table of every run with its ratios to a
//! baseline, and for a normalised sweep the curve as a table.
//!
//! Baselines: without a sweep, the first run; with a sweep, the first
//! variant at the same sweep point, so runs are compared like for like
//! (RAID-5 on a trace against RAID-0 on the same trace).

use std::fmt::Write as _;

use serde_json::Value;

use crate::experiment::{Experiment, ExperimentResult, RunResult};

fn metric(run: &RunResult, key: &str) -> f64 {
    run.metrics.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".to_string()
    }
}

pub fn summary_md(experiment: &Experiment, result: &ExperimentResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Experiment `{}`\n", result.name);
    if let Some(d) = &experiment.description {
        let _ = writeln!(out, "{}\n", d.trim());
    }
    let _ = writeln!(
        out,
        "Seed {}; {} runs. Response times in ms; ratios are run / baseline (the first variant{}).\n",
        result.seed,
        result.runs.len(),
        if experiment.sweep.is_some() { " at the same sweep point" } else { "" }
    );
    out.push_str(
        "| run | baseline | requests | mean | p50 | p99 | max | IOPS | mean util | device I/Os | mean ratio | p99 ratio | IOPS ratio |\n",
    );
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in &result.runs {
        let base = result
            .runs
            .iter()
            .find(|b| b.sweep.as_ref().map(|s| &s.0) == run.sweep.as_ref().map(|s| &s.0))
            .unwrap_or(run);
        let _ =
            writeln!(
            out,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.3} | {} | {} | {} | {} |",
            run.name,
            base.name,
            metric(run, "requests"),
            metric(run, "mean_response_ms"),
            metric(run, "p50_response_ms"),
            metric(run, "p99_response_ms"),
            metric(run, "max_response_ms"),
            metric(run, "throughput_iops"),
            metric(run, "mean_utilisation"),
            metric(run, "device_ios_total"),
            ratio(metric(run, "mean_response_ms"), metric(base, "mean_response_ms")),
            ratio(metric(run, "p99_response_ms"), metric(base, "p99_response_ms")),
            ratio(metric(run, "throughput_iops"), metric(base, "throughput_iops")),
        );
    }
    if let Some(n) = experiment.sweep.as_ref().and_then(|s| s.normalize.as_ref()) {
        out.push_str(&sweep_table(result, &n.output));
    }
    out
}

/// Sweep points as rows, variants as columns, `output` in the cells.
fn sweep_table(result: &ExperimentResult, output: &str) -> String {
    let mut variants: Vec<&str> = Vec::new();
    let mut points: Vec<&str> = Vec::new();
    for r in &result.runs {
        if !variants.contains(&r.variant.as_str()) {
            variants.push(&r.variant);
        }
        if let Some((label, _)) = &r.sweep {
            if !points.contains(&label.as_str()) {
                points.push(label);
            }
        }
    }
    let mut out = format!("\n## `{output}` by sweep point\n\n| point |");
    for v in &variants {
        let _ = write!(out, " {v} |");
    }
    out.push_str("\n|---:|");
    out.push_str(&"---:|".repeat(variants.len()));
    out.push('\n');
    for p in &points {
        let _ = write!(out, "| {p} |");
        for v in &variants {
            let cell = result
                .runs
                .iter()
                .find(|r| r.variant == *v && r.sweep.as_ref().is_some_and(|s| s.0 == *p))
                .and_then(|r| r.metrics.get(output).and_then(Value::as_f64))
                .map_or("-".to_string(), |x| format!("{x:.3}"));
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

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
        if result.runs.iter().any(|r| r.sweep.is_some()) {
            " at the same sweep point or group"
        } else {
            ""
        }
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
    for b in &result.stride_benchmarks {
        let _ = writeln!(
            out,
            "\nStride benchmark on {} (normalised turnaround below 1.2 from these strides up): S_r_max = {} (exceptions {:?}), S_w_max = {} (exceptions {:?}).",
            b.disk, b.read.s_max, b.read.except, b.write.s_max, b.write.except
        );
    }
    if let Some(n) = experiment.sweep.as_ref().and_then(|s| s.normalize.as_ref()) {
        out.push_str(&sweep_table(result, &n.output));
    }
    if result.runs.iter().any(|r| r.report.growth.is_some()) {
        out.push_str(&growth_table(result));
    }
    out
}

fn optional(run: &RunResult, key: &str, digits: usize) -> String {
    match run.metrics.get(key).and_then(Value::as_f64) {
        Some(x) => format!("{x:.digits$}"),
        None => "-".to_string(),
    }
}

/// The growth runs: redistribution time and cost, user response times
/// during the growth, and the lower bound for unloaded runs.
fn growth_table(result: &ExperimentResult) -> String {
    let mut out = String::from(
        "\n## Growth\n\nRedistribution time is simulated seconds from the growth's start to `ReshapeFinished` \
         (over all additions); response times are of user requests that arrived during the growth; \
         `time ratio` and `mean ratio` are to the first growth run at the same sweep point or group. \
         Reads, writes: redistribution device I/Os; md updates: checkpoint (reshape position) writes.\n\n",
    );
    out.push_str(
        "| run | strategy | disks | done | redistribution s | time ratio | mean ms | mean ratio | p99 ms | reads | writes | md updates | moved MiB | backup windows | valve closed / periods | lower bound s | time / bound |\n",
    );
    out.push_str(
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let growth_runs: Vec<&RunResult> = result
        .runs
        .iter()
        .filter(|r| r.report.growth.is_some())
        .collect();
    for run in &growth_runs {
        let g = run.report.growth.as_ref().expect("growth run");
        let base = growth_runs
            .iter()
            .find(|b| b.sweep.as_ref().map(|s| &s.0) == run.sweep.as_ref().map(|s| &s.0))
            .copied()
            .unwrap_or(run);
        let strategy = g
            .steps
            .first()
            .map_or("-".to_string(), |s| s.strategy.clone());
        let disks = match g.steps.first() {
            Some(first) => {
                let adds: Vec<String> = g
                    .steps
                    .iter()
                    .map(|s| (s.new_member_count - s.old_member_count).to_string())
                    .collect();
                format!("{}+{}", first.old_member_count, adds.join("+"))
            }
            None => "-".to_string(),
        };
        let time = metric(run, "redistribution_time_s");
        let base_time = metric(base, "redistribution_time_s");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.3} | {} | {:.3} | {} | {} | {} | {:.1} | {} | {} / {} | {} | {} |",
            run.name,
            strategy,
            disks,
            if g.done { "yes" } else { "no" },
            optional(run, "redistribution_time_s", 1),
            if g.done { ratio(time, base_time) } else { "-".to_string() },
            metric(run, "growth_mean_response_ms"),
            ratio(
                metric(run, "growth_mean_response_ms"),
                metric(base, "growth_mean_response_ms")
            ),
            metric(run, "growth_p99_response_ms"),
            metric(run, "redistribution_reads"),
            metric(run, "redistribution_writes"),
            metric(run, "metadata_writes"),
            metric(run, "moved_bytes") / 1048576.0,
            metric(run, "backup_windows"),
            metric(run, "valve_closed_periods"),
            metric(run, "valve_periods"),
            optional(run, "lower_bound_s", 1),
            optional(run, "time_over_lower_bound", 2),
        );
    }
    if growth_runs
        .iter()
        .any(|r| r.metrics.contains_key("lower_bound_s"))
    {
        out.push_str(
            "\nLower bound (runs without user load during the growth): each drive's redistribution bytes \
             read over the drive's sequential read rate plus bytes written over its sequential write rate, \
             summed over the drives that took part and divided by their number, i.e. \
             (bytes read + bytes written) / aggregate sequential bandwidth. The rates are measured on the \
             drive model itself (4 MiB commands, four outstanding, at four places over the members' span; \
             `sequential_read_mb_s`, `sequential_write_mb_s` in summary.json). `lower_bound_busiest_disk_s` \
             is the same for the busiest drive alone.\n",
        );
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

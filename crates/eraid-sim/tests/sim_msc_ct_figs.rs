//! The MSC-CT figure experiments (Fig. 12 and Fig. 15 of the paper) parse
//! and run at a tiny scale, and the stride benchmark that sets S_r_max and
//! S_w_max for them chooses what its own measured turnarounds imply.

mod sim_common;

use eraid_sim::experiment::stride_bench::{DirectionMeasurement, NORMALISED_TURNAROUND_LIMIT};
use eraid_sim::experiment::{load, run_experiment, Experiment, ExperimentResult};
use serde_json::Value;
use sim_common::experiments_dir;

/// `file` with only its first sweep point per variant, each run cut to
/// `requests` user requests.
fn tiny(file: &str, requests: u64) -> Experiment {
    let mut experiment = load(&experiments_dir().join(file)).expect("load");
    let first_point = experiment.runs[0].sweep.clone();
    experiment.runs.retain(|r| r.sweep == first_point);
    for run in &mut experiment.runs {
        run.config.max_requests = Some(requests);
    }
    experiment
}

/// The paper's selection, written out again here: the smallest S such that
/// every stride from S up stays below 1.2 times the contiguous turnaround.
fn expected_s_max(d: &DirectionMeasurement) -> u32 {
    let contiguous = d.turnaround_ms[0].1;
    let below =
        |s: u32| d.turnaround_ms[s as usize - 1].1 / contiguous < NORMALISED_TURNAROUND_LIMIT;
    let largest = d.turnaround_ms.len() as u32;
    (1..=largest)
        .find(|&s| (s..=largest).all(below))
        .unwrap_or(largest + 1)
}

fn check_direction(d: &DirectionMeasurement, what: &str) {
    assert_eq!(d.turnaround_ms.len(), 64, "{what}: strides 1..=64");
    assert_eq!(
        d.s_max,
        expected_s_max(d),
        "{what}: S_max from {:?}",
        d.turnaround_ms
    );
    let contiguous = d.turnaround_ms[0].1;
    for &(stride, ms) in &d.turnaround_ms[1..d.s_max as usize - 1] {
        let excepted = d.except.iter().any(|&(s, e)| s <= stride && stride <= e);
        let below = ms / contiguous < NORMALISED_TURNAROUND_LIMIT;
        assert_eq!(
            excepted,
            below,
            "{what}: stride {stride} ({:.3}x) vs exceptions {:?}",
            ms / contiguous,
            d.except
        );
    }
}

fn metric(result: &ExperimentResult, run: &str, key: &str) -> f64 {
    result
        .runs
        .iter()
        .find(|r| r.name == run)
        .unwrap_or_else(|| panic!("no run {run}"))
        .metrics
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("run {run}: no metric {key}"))
}

#[test]
fn writes_experiment_runs_and_measures_its_stride_limits() {
    let experiment = tiny("msc-ct-writes.toml", 400);
    assert_eq!(experiment.runs.len(), 3, "pbgc, sc and msc-ct at 40k");
    let result = run_experiment(&experiment, 2, &|_, _, _| {}).expect("run");
    assert_eq!(result.stride_benchmarks.len(), 1, "one drive configuration");
    let bench = &result.stride_benchmarks[0];
    check_direction(&bench.read, "read");
    check_direction(&bench.write, "write");
    // The drive misses revolutions on close strided writes (stride.toml):
    // the measurement found a limit to apply.
    assert!(bench.write.s_max > 2, "write S_max {}", bench.write.s_max);
    assert_eq!(
        metric(&result, "msc-ct-40k", "cache_s_w_max"),
        bench.write.s_max as f64
    );
    assert_eq!(
        metric(&result, "msc-ct-40k", "cache_s_r_max"),
        bench.read.s_max as f64
    );
    for run in ["pbgc-40k", "sc-40k", "msc-ct-40k"] {
        assert_eq!(metric(&result, run, "writes"), 400.0, "{run}");
        assert!(metric(&result, run, "throughput_mb_per_s") > 0.0, "{run}");
        assert!(
            metric(&result, run, "flushed_throughput_mb_per_s") > 0.0,
            "{run}"
        );
    }
    let summary: Value =
        serde_json::from_str(&eraid_sim::report::tables::summary_json(&result)).expect("json");
    assert_eq!(
        summary["stride_benchmark"][0]["write"]["s_max"].as_u64(),
        Some(bench.write.s_max as u64)
    );
}

#[test]
fn stride_limits_set_by_hand_are_not_measured() {
    let experiment = tiny("msc-ct-random.toml", 50);
    assert!(experiment.runs.iter().all(|r| r.stride_bench.is_none()));
}

#[test]
fn stride_sweep_experiment_runs_with_exponential_strides() {
    let mut experiment = load(&experiments_dir().join("msc-ct-stride-sweep.toml")).expect("load");
    assert_eq!(
        experiment.runs.len(),
        40,
        "two variants x 20 S_w_max values"
    );
    // Tiny: S_w_max 1 and 8 only, 300 writes each.
    experiment
        .runs
        .retain(|r| r.name.ends_with("-sw-1") || r.name.ends_with("-sw-8"));
    for run in &mut experiment.runs {
        run.config.max_requests = Some(300);
    }
    let measured: Vec<bool> = experiment
        .runs
        .iter()
        .map(|r| r.stride_bench.is_some())
        .collect();
    assert_eq!(
        measured,
        vec![true, true, false, false],
        "read-measured leaves S_r_max out"
    );
    let result = run_experiment(&experiment, 2, &|_, _, _| {}).expect("run");
    assert_eq!(result.stride_benchmarks.len(), 1);
    let s_r_max = result.stride_benchmarks[0].read.s_max as f64;
    assert_eq!(
        metric(&result, "read-measured-sw-8", "cache_s_r_max"),
        s_r_max
    );
    assert_eq!(metric(&result, "read-all-sw-8", "cache_s_r_max"), 65.0);
    assert_eq!(metric(&result, "read-all-sw-8", "cache_s_w_max"), 8.0);
    for run in [
        "read-measured-sw-1",
        "read-measured-sw-8",
        "read-all-sw-1",
        "read-all-sw-8",
    ] {
        assert_eq!(metric(&result, run, "writes"), 300.0, "{run}");
        assert!(
            metric(&result, run, "normalized_flushed_throughput") > 0.0,
            "{run}"
        );
    }
    assert_eq!(
        metric(&result, "read-all-sw-1", "normalized_flushed_throughput"),
        1.0
    );
    // S_w_max = 1 permits no write transform; 8 over strides of mean 10 does.
    for variant in ["read-measured", "read-all"] {
        let at = |s: u32, key: &str| metric(&result, &format!("{variant}-sw-{s}"), key);
        assert_eq!(at(1, "cache_transform_writes"), 0.0, "{variant}");
        assert!(at(8, "cache_transform_writes") > 0.0, "{variant}");
    }
}

/// Fig. 13: the concurrent-writers experiments parse (the client count
/// swept through the workload spec and the outstanding writes together,
/// the strip through the chunk) and run at a tiny scale.
#[test]
fn concurrent_writers_experiments_parse_and_run() {
    let concurrent = load(&experiments_dir().join("msc-ct-concurrent.toml")).expect("load");
    assert_eq!(
        concurrent.runs.len(),
        6 * 9,
        "six variants x nine client counts"
    );
    let strip = load(&experiments_dir().join("msc-ct-concurrent-strip.toml")).expect("load");
    assert_eq!(strip.runs.len(), 6 * 6, "six variants x six strip sizes");
    let mut experiment = concurrent;
    experiment
        .runs
        .retain(|r| r.name == "sc-256" || r.name == "msc-ct-256");
    for run in &mut experiment.runs {
        run.config.max_requests = Some(600);
    }
    let result = run_experiment(&experiment, 2, &|_, _, _| {}).expect("run");
    for run in ["sc-256", "msc-ct-256"] {
        assert_eq!(metric(&result, run, "writes"), 600.0, "{run}");
        assert!(metric(&result, run, "flushed_throughput_mb_per_s") > 0.0);
    }
    assert_eq!(metric(&result, "sc-256", "cache_transform_writes"), 0.0);
}

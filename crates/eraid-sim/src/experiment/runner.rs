//! Runs an experiment's simulations side by side on worker threads.
//!
//! Each run is independent and deterministic, and results are stored by
//! run index, so neither the number of threads nor which finishes first
//! changes any result.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use eraid_core::cache::config::CachePolicy;
use serde_json::{Map, Value};

use super::plan::{Experiment, RunPlan};
use super::stride_bench::{measure, StrideBenchmark};
use crate::driver::{run, SimReport, Target};

/// One finished run.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub name: String,
    pub variant: String,
    pub sweep: Option<(String, toml::Value)>,
    pub report: SimReport,
    /// `flat_metrics` plus derived ones (the sweep's normalised metric).
    pub metrics: Map<String, Value>,
}

/// All runs of an experiment, in the file's order.
#[derive(Debug, Clone)]
pub struct ExperimentResult {
    pub name: String,
    pub seed: u64,
    pub runs: Vec<RunResult>,
    /// Stride benchmarks run for `msc-ct` caches without S_r_max or
    /// S_w_max set, one per drive configuration.
    pub stride_benchmarks: Vec<StrideBenchmark>,
}

/// Runs every plan of `experiment` on up to `threads` threads (at least
/// one). `progress(done, total, name)` is called after each run finishes.
pub fn run_experiment(
    experiment: &Experiment,
    threads: usize,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<ExperimentResult, String> {
    let (plans, stride_benchmarks) = with_measured_stride_rules(experiment)?;
    let total = plans.len();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<SimReport, String>>>> = Mutex::new(vec![None; total]);
    let worker = || loop {
        let index = next.fetch_add(1, Ordering::SeqCst);
        let Some(plan) = plans.get(index) else {
            break;
        };
        let result = run_one(plan);
        if let Ok(mut slots) = slots.lock() {
            slots[index] = Some(result);
        }
        let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
        progress(finished, total, &plan.name);
    };
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, total.max(1)) {
            scope.spawn(worker);
        }
    });
    let slots = slots
        .into_inner()
        .map_err(|_| "a simulation thread panicked".to_string())?;
    let mut runs = Vec::with_capacity(total);
    for (plan, slot) in plans.iter().zip(slots) {
        let report = match slot {
            Some(Ok(report)) => report,
            Some(Err(e)) => return Err(format!("run '{}': {e}", plan.name)),
            None => {
                return Err(format!(
                    "run '{}' did not finish (a thread panicked)",
                    plan.name
                ))
            }
        };
        let mut metrics = report.flat_metrics();
        if let Target::Array { options, .. } = &plan.config.target {
            if options.cache.policy == CachePolicy::MscCt {
                metrics.insert("cache_s_r_max".into(), options.cache.read_rule.s_max.into());
                metrics.insert(
                    "cache_s_w_max".into(),
                    options.cache.write_rule.s_max.into(),
                );
            }
        }
        runs.push(RunResult {
            name: plan.name.clone(),
            variant: plan.variant.clone(),
            sweep: plan.sweep.clone(),
            metrics,
            report,
        });
    }
    if let Some(normalize) = experiment.sweep.as_ref().and_then(|s| s.normalize.as_ref()) {
        normalise(
            &mut runs,
            &normalize.metric,
            &normalize.at,
            &normalize.output,
        )?;
    }
    Ok(ExperimentResult {
        name: experiment.name.clone(),
        seed: experiment.seed,
        runs,
        stride_benchmarks,
    })
}

/// The plans with S_r_max / S_w_max the file left out set from the stride
/// benchmark on their drive model, measured once per drive configuration.
fn with_measured_stride_rules(
    experiment: &Experiment,
) -> Result<(Vec<RunPlan>, Vec<StrideBenchmark>), String> {
    let mut measured: Vec<(String, StrideBenchmark)> = Vec::new();
    let mut plans = experiment.runs.clone();
    for plan in &mut plans {
        let Some(need) = &plan.stride_bench else {
            continue;
        };
        let key = format!("{:?}", plan.config.disk);
        let index = match measured.iter().position(|(k, _)| *k == key) {
            Some(index) => index,
            None => {
                let bench = measure(&plan.config.disk, &need.disk_label, experiment.seed)
                    .map_err(|e| format!("run '{}': {e}", plan.name))?;
                measured.push((key, bench));
                measured.len() - 1
            }
        };
        let bench = &measured[index].1;
        if let Target::Array { options, .. } = &mut plan.config.target {
            if need.read {
                options.cache.read_rule = bench.read.rule();
            }
            if need.write {
                options.cache.write_rule = bench.write.rule();
            }
        }
    }
    Ok((plans, measured.into_iter().map(|(_, b)| b).collect()))
}

fn run_one(plan: &RunPlan) -> Result<SimReport, String> {
    // A panic in one run must not take the others down with it.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(&plan.config, &plan.feed)
    }))
    .unwrap_or_else(|_| Err("the simulation panicked (a bug; please report it)".to_string()))
}

/// Adds `output` = metric / metric of the same variant at sweep value `at`.
fn normalise(
    runs: &mut [RunResult],
    metric: &str,
    at: &toml::Value,
    output: &str,
) -> Result<(), String> {
    let value = |r: &RunResult| r.metrics.get(metric).and_then(Value::as_f64);
    let mut baselines = Vec::new();
    for r in runs.iter() {
        if r.sweep.as_ref().is_some_and(|(_, v)| v == at) {
            let v = value(r).ok_or_else(|| {
                format!("sweep.normalize: run '{}' has no metric '{metric}'", r.name)
            })?;
            baselines.push((r.variant.clone(), v));
        }
    }
    for r in runs.iter_mut() {
        let base = baselines
            .iter()
            .find(|(variant, _)| *variant == r.variant)
            .map(|b| b.1);
        if let (Some(base), Some(v)) = (base, value(r)) {
            let ratio = if base > 0.0 { v / base } else { 0.0 };
            r.metrics
                .insert(output.to_string(), serde_json::json!(ratio));
        }
    }
    Ok(())
}

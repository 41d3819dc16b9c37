//! The shipped stride experiment (MSC-CT Figs. 8-9) shows the missed
//! revolution: closely spaced discontiguous writes take longer than the
//! contiguous sequence over the same blocks, with far fewer blocks written.

mod sim_common;

use eraid_sim::experiment::{load, run_experiment};
use serde_json::Value;
use sim_common::experiments_dir;

#[test]
fn stride_experiment_shows_the_missed_revolution() {
    let experiment = load(&experiments_dir().join("stride.toml")).expect("load stride.toml");
    assert_eq!(
        experiment.runs.len(),
        128,
        "read and write at strides 1..=64"
    );
    let result = run_experiment(&experiment, 2, &|_, _, _| {}).expect("run");
    let normalised = |name: &str| -> f64 {
        let run = result
            .runs
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no run {name}"));
        run.metrics["normalized_turnaround"]
            .as_f64()
            .expect("number")
    };
    assert_eq!(normalised("write-stride-1"), 1.0);
    assert_eq!(normalised("read-stride-1"), 1.0);
    let worst_small = (2..=8)
        .map(|s| normalised(&format!("write-stride-{s}")))
        .fold(0.0, f64::max);
    assert!(
        worst_small >= 1.2,
        "no write stride in 2..=8 reaches 1.2: max {worst_small:.3}"
    );
    // Far strides skip a revolution's worth of blocks anyway: no penalty.
    assert!(normalised("write-stride-64") < 1.0);
    let summary: Value =
        serde_json::from_str(&eraid_sim::report::tables::summary_json(&result)).expect("json");
    let names: Vec<&str> = summary["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(names.contains(&"write-stride-4") && names.contains(&"read-stride-64"));
}

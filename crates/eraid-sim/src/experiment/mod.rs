//! Experiments: a TOML file naming the array, drives, workload, variants to
//! compare and an optional parameter sweep ([`file`] documents the format);
//! [`plan`] turns it into runs, [`runner`] runs them side by side, and
//! [`crate::report`] writes the results.

pub mod failure;
pub mod file;
pub mod plan;
pub mod rates;
pub mod runner;
pub mod stride_bench;

pub use plan::{load, parse, Experiment, RunPlan, StrideBenchNeed};
pub use runner::{run_experiment, ExperimentResult, RunResult};

//! `eraid experiment run FILE --out DIR`: runs an experiment's variants side
//! by side in the simulator and writes its results, plots and summary.

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use eraid_sim::experiment::{load, run_experiment};
use eraid_sim::report::write_all;

#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Run an experiment file (see experiments/*.toml) and write its results.
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Folder for the results (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// Simulations run at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl ExperimentCommand {
    pub fn run(self) -> anyhow::Result<i32> {
        match self {
            ExperimentCommand::Run(args) => args.run(),
        }
    }
}

impl RunArgs {
    pub fn run(self) -> anyhow::Result<i32> {
        let text = std::fs::read_to_string(&self.file)
            .with_context(|| format!("cannot read {}", self.file.display()))?;
        if eraid_sim::examination::is_examination(&text) {
            // Layout arithmetic only: no disks, no runs to schedule.
            let file = self.file.display().to_string();
            let summary =
                eraid_sim::examination::run(&file, &text, &self.out).map_err(|e| anyhow!(e))?;
            println!(
                "{}: layout examination; wrote summary.json, summary.md, a CSV and an SVG to {}",
                summary["name"].as_str().unwrap_or("examination"),
                self.out.display()
            );
            return Ok(0);
        }
        let experiment = load(&self.file).map_err(|e| anyhow!(e))?;
        let threads = self
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let total = experiment.runs.len() as u64;
        let bar = if self.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(total)
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(experiment.name.clone());
        let progress = |done: usize, _total: usize, name: &str| {
            bar.set_position(done as u64);
            bar.set_message(name.to_string());
        };
        let result = run_experiment(&experiment, threads, &progress).map_err(|e| anyhow!(e));
        bar.finish_and_clear();
        let result = result.with_context(|| format!("experiment {}", self.file.display()))?;
        let written = write_all(&experiment, &result, &self.out).map_err(|e| anyhow!(e))?;
        println!(
            "{}: {} runs; wrote {} files to {}",
            experiment.name,
            result.runs.len(),
            written.len(),
            self.out.display()
        );
        for name in written {
            println!("  {}", self.out.join(name).display());
        }
        Ok(0)
    }
}

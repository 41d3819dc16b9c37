//! `eraid disk validate --model PATH --trace PATH [--json]`: replays a
//! measured drive trace (DiskSim "validate" format) closed loop on a DiskSim
//! drive model and prints the demerit figure and mean service times.
//! DiskSim's own figures for its validation drives are in the README.

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};

use eraid_sim::disk::validate::{parse_validate_trace, replay};
use eraid_sim::disk::DiskModel;
use eraid_sim::diskspec::load_disksim_model;

#[derive(Debug, Subcommand)]
pub enum DiskCommand {
    /// Compare a drive model with measurements of the real drive.
    Validate(ValidateArgs),
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A DiskSim run file (.parv: its first disk and the bus it sits on), a
    /// .diskspecs file, or a folder holding one .parv (else one .diskspecs).
    #[arg(long)]
    pub model: PathBuf,
    /// The measured trace: `R|W Hit|Miss block count service_us think_us`.
    #[arg(long)]
    pub trace: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl DiskCommand {
    pub fn run(self) -> anyhow::Result<i32> {
        match self {
            DiskCommand::Validate(args) => args.run(),
        }
    }
}

impl ValidateArgs {
    pub fn run(self) -> anyhow::Result<i32> {
        let spec = load_disksim_model(&self.model).map_err(|e| anyhow!(e))?;
        let text = std::fs::read_to_string(&self.trace)
            .with_context(|| format!("{}: cannot read", self.trace.display()))?;
        let records = parse_validate_trace(&self.trace.display().to_string(), &text)
            .map_err(|e| anyhow!(e))?;
        let mut disk =
            DiskModel::new(spec).map_err(|e| anyhow!("{}: {e}", self.model.display()))?;
        let report =
            replay(&mut disk, &records).map_err(|e| anyhow!("{}: {e}", self.trace.display()))?;
        if self.json {
            let value = serde_json::json!({
                "demerit_ms": report.demerit_ms,
                "mean_service_ms_measured": report.mean_service_ms_measured,
                "mean_service_ms_simulated": report.mean_service_ms_simulated,
                "requests": report.requests,
            });
            println!("{value}");
        } else {
            let error_pct = 100.0
                * (report.mean_service_ms_simulated - report.mean_service_ms_measured)
                / report.mean_service_ms_measured;
            println!("requests                   {}", report.requests);
            println!("demerit                    {:.3} ms", report.demerit_ms);
            println!(
                "mean service, measured     {:.3} ms",
                report.mean_service_ms_measured
            );
            println!(
                "mean service, simulated    {:.3} ms ({error_pct:+.1}%)",
                report.mean_service_ms_simulated
            );
        }
        Ok(0)
    }
}

//! `eraid check`: verify every stripe's parity or mirror copy.

use anyhow::{bail, Result};
use clap::Args;
use eraid_core::io::AdminCommand;
use eraid_core::ArrayOptions;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Duration;

/// Verify (and with --repair, fix) parity or mirror copies of every stripe
///
/// Reads every stripe, compares its parity (RAID-5/6) or second copy
/// (RAID-10) with its data and prints the number of mismatches. Exits 0
/// when there are none and 1 when there are (also with --repair, which
/// rewrites them from the data). The members are locked while checking, so
/// a served array is refused.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Rewrite parity / second copies that do not match their data.
    #[arg(long)]
    repair: bool,
    /// Member files or block devices of the array (any order).
    #[arg(required = true)]
    members: Vec<PathBuf>,
}

impl CheckArgs {
    pub fn run(self) -> Result<i32> {
        let _locks = crate::members::lock_members(&self.members)?;
        let running = crate::runtime::start(&self.members, ArrayOptions::default())?;
        crate::runtime::wait_for_resync(&running, false)?;
        let handle = running.handle();
        let started = handle.admin(AdminCommand::StartCheck {
            repair: self.repair,
        })?;
        if let Some(error) = started.get("error") {
            running.close()?;
            bail!("cannot check: {}", error.as_str().unwrap_or("unknown"));
        }
        let total = started["activity"]["stripes_total"].as_u64().unwrap_or(0);
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "checking {bar:40} {pos}/{len} stripes {per_sec} eta {eta}",
            )
            .expect("valid template"),
        );
        let activity = loop {
            let status = handle.admin(AdminCommand::Status)?;
            let activity = status["activity"].clone();
            bar.set_position(activity["stripes_done"].as_u64().unwrap_or(0));
            if activity["state"] == "done" {
                break activity;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        bar.finish_and_clear();
        running.close()?;
        let mismatches = activity["mismatches"].as_u64().unwrap_or(0);
        let skipped = activity["skipped_degraded_stripes"].as_u64().unwrap_or(0);
        let verb = if self.repair { "repaired" } else { "found" };
        println!(
            "{mismatches} mismatches {verb} in {} stripes",
            activity["stripes_done"]
        );
        if skipped > 0 {
            println!(
                "{skipped} stripes not checked: the array is degraded (no redundancy to compare)"
            );
        }
        Ok(if mismatches == 0 { 0 } else { 1 })
    }
}

//! `eraid check`: verify every stripe's parity or mirror copy.

use crate::control::ControlClient;
use anyhow::{bail, Result};
use clap::Args;
use eraid_core::growth::record::ReshapeState;
use eraid_core::io::AdminCommand;
use eraid_core::metadata::assemble::{Assembly, SlotState};
use eraid_core::metadata::superblock::MemberState;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// Verify (and with --repair, fix) parity or mirror copies of every stripe
///
/// Reads every stripe, compares its parity (RAID-5/6) or second copy
/// (RAID-10) with its data and prints the number of mismatches. Exits 0
/// when there are none and 1 when there are (also with --repair, which
/// rewrites them from the data). RAID-0 has nothing to check: that is said
/// and the exit status is 0. A check is refused while a growth is
/// unfinished, and when a member is missing, stale or failed (a degraded
/// array has nothing to compare; nothing is changed). The members are locked while checking, so a served array is
/// refused, unless it is reached through its control socket (--control PATH
/// of `eraid serve`), where the check runs while the array is served.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Rewrite parity / second copies that do not match their data.
    #[arg(long)]
    repair: bool,
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// Member files, block devices or NBD exports (nbd://HOST:PORT/EXPORT,
    /// nbd+unix:///EXPORT?socket=PATH, nbds://...) of the array (any order).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

const NOTHING_TO_CHECK: &str = "RAID-0 has no redundancy: nothing to check";

impl CheckArgs {
    pub fn run(self) -> Result<i32> {
        match &self.control {
            Some(path) => self.run_control(&mut ControlClient::connect(path)?),
            None => self.run_offline(),
        }
    }

    fn run_control(&self, client: &mut ControlClient) -> Result<i32> {
        let status = client.status()?;
        refuse_during_growth(&status["reshape"])?;
        if status["level"] == 0 {
            println!("{NOTHING_TO_CHECK}");
            return Ok(0);
        }
        let started = client.call(&json!({"command": "check", "repair": self.repair}))?;
        self.follow(&started, &mut || client.status())
    }

    fn run_offline(&self) -> Result<i32> {
        let mut locks = crate::members::lock_members(&self.members)?;
        // Decide from the metadata alone, opened read-only, whether there is
        // anything to check.
        let assembly = crate::members::assemble_read_only(&self.members)?;
        locks.extend(crate::locks::lock_array(&assembly.superblock.array_uuid)?);
        refuse_degraded(&assembly)?;
        let assembled = crate::members::assemble_members(&self.members)?;
        let sb = &assembled.assembly.superblock;
        if let Some(record) = &sb.reshape {
            if record.state != ReshapeState::Done {
                bail!(
                    "cannot check: a growth ({}, {} -> {} members) is unfinished ({}, {:.1}% checkpointed); \
                     serve the array with all its members so it finishes, then check",
                    record.config.strategy.name(),
                    record.old_geometry.member_count,
                    sb.geometry.member_count,
                    record.state.name(),
                    100.0 * record.checkpoint_chunk as f64 / record.total_chunks.max(1) as f64
                );
            }
        }
        if sb.geometry.level.redundancy() == 0 {
            println!("{NOTHING_TO_CHECK}");
            return Ok(0);
        }
        let running = crate::runtime::start_assembled(
            assembled,
            crate::runtime::real_member_options(),
            None,
        )?;
        crate::runtime::wait_for_resync(&running, false)?;
        let handle = running.handle();
        let started = handle.admin(AdminCommand::StartCheck {
            repair: self.repair,
        })?;
        if let Some(error) = started.get("error") {
            running.close()?;
            bail!("cannot check: {}", error.as_str().unwrap_or("unknown"));
        }
        let result = self.follow(&started, &mut || {
            handle
                .admin(AdminCommand::Status)
                .map_err(anyhow::Error::from)
        });
        running.close()?;
        result
    }

    /// Follows a started check to its end and reports it.
    fn follow(&self, started: &Value, status: &mut dyn FnMut() -> Result<Value>) -> Result<i32> {
        let total = started["activity"]["stripes_total"].as_u64().unwrap_or(0);
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "checking {bar:40} {pos}/{len} stripes {per_sec} eta {eta}",
            )
            .expect("valid template"),
        );
        let activity = loop {
            let activity = status()?["activity"].clone();
            if activity["kind"] != "check" {
                bar.finish_and_clear();
                bail!("the check stopped before it finished (the array is closing?)");
            }
            bar.set_position(activity["stripes_done"].as_u64().unwrap_or(0));
            if activity["state"] == "done" {
                break activity;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        bar.finish_and_clear();
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

/// A check compares redundant copies; with a member absent there is
/// nothing to compare them with, and opening the array would record the
/// absent member as failed. So a check needs every member, in sync.
fn refuse_degraded(assembly: &Assembly) -> Result<()> {
    let sb = &assembly.superblock;
    let absent: Vec<String> = assembly
        .slots
        .iter()
        .enumerate()
        .filter_map(|(slot, state)| {
            let record = &sb.members[slot];
            match state {
                SlotState::Present { .. } => None,
                SlotState::Stale { .. } if assembly.re_add.contains(&slot) => Some(format!(
                    "member {slot} ({}) is out of date: `eraid serve` with every member \
                     re-adds it from the write-intent bitmap",
                    record.path_hint
                )),
                SlotState::Stale { .. } => Some(format!(
                    "member {slot} ({}) is stale: out of date, it needs a rebuild",
                    record.path_hint
                )),
                SlotState::Missing if record.state == MemberState::Faulty => Some(format!(
                    "member {slot} (last seen at {}) is recorded as failed",
                    record.path_hint
                )),
                SlotState::Missing => Some(format!(
                    "member {slot} (last seen at {}) was not named",
                    record.path_hint
                )),
            }
        })
        .collect();
    if !absent.is_empty() {
        bail!(
            "cannot check: {}. A check of a degraded array verifies nothing; name every member \
             of the array (nothing was changed)",
            absent.join("; ")
        );
    }
    Ok(())
}

fn refuse_during_growth(reshape: &Value) -> Result<()> {
    match reshape["state"].as_str() {
        Some(state @ ("running" | "paused")) => bail!(
            "cannot check: a growth ({}) is {state}, {:.1}% done; check the array when it is done",
            reshape["strategy"].as_str().unwrap_or("?"),
            100.0 * reshape["progress"].as_f64().unwrap_or(0.0)
        ),
        _ => Ok(()),
    }
}

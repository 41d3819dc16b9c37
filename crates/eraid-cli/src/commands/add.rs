//! `eraid add`: add a replacement for a failed member (rebuilt at once) or
//! a hot spare to an array (served, or offline on its members).

use super::offline::OfflineArray;
use super::rebuild::{follow_rebuild, rebuild_line};
use crate::control::ControlClient;
use crate::members::{check_added_members, member_bytes_needed};
use anyhow::{Context, Result};
use clap::Args;
use eraid_core::metadata::member_change::MemberChange;
use serde_json::json;
use std::path::PathBuf;

/// Add a replacement or a hot spare to an array (served or offline)
///
/// On an array with a failed or missing member, NEW takes that member's
/// place and is rebuilt from the others while the array serves, by
/// --strategy (default: the array's recorded one, else pro):
///   pr       Linux MD's pipelined rebuild: stripes in address order, at
///            most --speed-max, above --speed-min only while users are idle
///   dor      RAIDframe's disk-oriented reconstruction: each surviving disk
///            reads ahead in address order, below users' I/O priority,
///            no rate limits
///   pro      PRO on top of pr: the hot zones users access most first
///   pro-dor  PRO on top of dor
/// (see `eraid rebuild`). With
/// --spare it is kept as a hot spare instead: it carries the array's
/// metadata and takes over by itself when a member fails.
///   eraid add d4 --control ctl.sock
///   eraid add --strategy pro-dor d4 --control ctl.sock
///   eraid add --spare d4 --control ctl.sock
///
/// NEW must exist, be at least as large as the members, and carry no eraid
/// metadata; otherwise nothing changes. A failed member the server still
/// holds (failed by `eraid fail`, or stale at the start) goes back into its
/// slot instead: re-added from the write-intent bitmap when it left without
/// losing a write (MD's --re-add: only the regions written since are
/// copied), else rebuilt in full. RAID-0 has nothing to rebuild and
/// no use for spares; a healthy array takes a new member only as a spare.
/// With --wait, a progress bar follows the rebuild until it is done.
/// Offline, given the array's MEMBERS instead of --control, the same rules
/// apply and the superblocks record NEW (as the replacement to rebuild, or
/// a spare); the next `eraid serve` with NEW among the members rebuilds it:
///   eraid add d4 d0 d2 d3
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct AddArgs {
    /// Keep NEW as a hot spare.
    #[arg(long)]
    spare: bool,
    /// Follow the rebuild NEW starts until it is done (exit 0) or stops
    /// or is paused (exit 1).
    #[arg(long)]
    wait: bool,
    /// The rebuild strategy: pr, dor, pro or pro-dor (for a spare: of the
    /// rebuild it starts when it takes over). Kept for later rebuilds.
    #[arg(long, value_name = "NAME", value_parser = super::rebuild::parse_strategy)]
    strategy: Option<eraid_core::rebuild::config::RebuildStrategy>,
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// The file, block device or NBD export (nbd://HOST:PORT/EXPORT) to add.
    new: PathBuf,
    /// The array's members, when no server runs it (offline).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

impl AddArgs {
    pub fn run(self) -> Result<i32> {
        let Some(control) = self.control.clone() else {
            return self.run_offline();
        };
        let mut client = ControlClient::connect(&control)?;
        // The server resolves paths against its own directory.
        let path = crate::member_name::absolute(&self.new);
        let status = client
            .call(&json!({
                "command": "add",
                "path": path.display().to_string(),
                "spare": self.spare,
                "strategy": self.strategy.map(|s| s.name()),
            }))
            .with_context(|| format!("cannot add {}", self.new.display()))?;
        for warning in status["warnings"].as_array().into_iter().flatten() {
            eprintln!("{}", warning.as_str().unwrap_or_default());
        }
        let rebuild = &status["rebuild"];
        let rebuilding = rebuild["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["path"].as_str() == Some(&path.display().to_string()))
            && rebuild["state"] == "running";
        let added_back = &status["added_back"];
        if !added_back.is_null() {
            let how = if added_back["kind"] == "re-add" {
                "re-added from the write-intent bitmap (only the regions written while it was \
                 away are copied)"
            } else {
                "added back and rebuilt in full (the bitmap does not cover what it missed)"
            };
            println!(
                "{} is member {} again, {how}: {}",
                self.new.display(),
                added_back["slot"],
                rebuild_line(rebuild)
            );
            if self.wait {
                return follow_rebuild(&mut client, &control);
            }
            return Ok(0);
        }
        if rebuilding {
            println!(
                "{} replaces a failed member: {}",
                self.new.display(),
                rebuild_line(rebuild)
            );
        } else if self.spare {
            println!("{} is a hot spare", self.new.display());
        } else {
            println!(
                "{} is kept as a spare until the rebuild running now is done",
                self.new.display()
            );
        }
        if self.wait && rebuilding {
            return follow_rebuild(&mut client, &control);
        }
        Ok(0)
    }

    fn run_offline(self) -> Result<i32> {
        if self.wait {
            anyhow::bail!(
                "--wait needs --control: offline, the rebuild runs when the array is next served"
            );
        }
        if let Some(strategy) = self.strategy {
            anyhow::bail!(
                "--strategy {} needs --control: offline, the rebuild runs with the array's \
                 recorded settings (eraid rebuild set --strategy on the served array changes them)",
                strategy.name()
            );
        }
        let array = OfflineArray::open(&self.members)?;
        let needed = member_bytes_needed(&array.superblock().geometry);
        let added = check_added_members(
            std::slice::from_ref(&self.new),
            &array.assembled.paths,
            needed,
        )?;
        let (mut members, _added_locks) = added.into_grow_members();
        let member = members.pop().expect("one member checked");
        let changed = array.apply(
            MemberChange::Add {
                member: member.member,
                spare: self.spare,
            },
            Some(member.device.as_ref()),
        )?;
        let count = changed.superblock.geometry.member_count;
        match changed.added_at {
            Some(slot) if slot < count => println!(
                "{} replaces member {slot}; the next eraid serve with it among the members rebuilds it",
                self.new.display()
            ),
            _ if self.spare => println!("{} is a hot spare", self.new.display()),
            _ => println!(
                "{} is kept as a spare until the unfinished rebuild is done",
                self.new.display()
            ),
        }
        Ok(0)
    }
}

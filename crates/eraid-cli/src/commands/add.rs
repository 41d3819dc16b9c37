//! `eraid add`: add a replacement for a failed member (rebuilt at once) or
//! a hot spare to a running array.

use super::rebuild::{follow_rebuild, rebuild_line};
use crate::control::ControlClient;
use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;

/// Add a replacement or a hot spare to a running array
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
/// metadata; otherwise nothing changes. RAID-0 has nothing to rebuild and
/// no use for spares; a healthy array takes a new member only as a spare.
/// With --wait, a progress bar follows the rebuild until it is done.
/// Only on a running server (--control) for now.
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
    #[arg(long, value_name = "PATH")]
    control: PathBuf,
    /// The file or block device to add.
    new: PathBuf,
}

impl AddArgs {
    pub fn run(self) -> Result<i32> {
        let mut client = ControlClient::connect(&self.control)?;
        // The server resolves paths against its own directory.
        let path = std::path::absolute(&self.new).unwrap_or_else(|_| self.new.clone());
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
            return follow_rebuild(&mut client, &self.control);
        }
        Ok(0)
    }
}

//! `eraid fail` and `eraid remove`: an operator fails a member of an array
//! (served, or offline on its members), or forgets a failed one / drops a
//! spare.

use super::offline::OfflineArray;
use super::rebuild::rebuild_line;
use crate::control::ControlClient;
use anyhow::{Context, Result};
use clap::Args;
use eraid_core::metadata::member_change::MemberChange;
use serde_json::json;
use std::path::PathBuf;

/// Fail a member of an array (served or offline) (as if its device had failed)
///
/// The member is no longer used; a hot spare, if there is one, takes its
/// place and is rebuilt at once. Refused, changing nothing, if the array
/// would lose data without it (a second member of a RAID-5, any member of
/// a RAID-0). MEMBER is the path the member is served from.
///   eraid fail d1 --control ctl.sock
/// Offline, given the array's MEMBERS instead of --control, the same rules
/// apply and the superblocks of every member present record it:
///   eraid fail d1 d0 d1 d2 d3
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct FailArgs {
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// The member to fail.
    member: PathBuf,
    /// The array's members, when no server runs it (offline).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

/// Forget a failed member, or drop a hot spare, of an array
///
/// A failed or missing member is recorded as removed (it is never taken
/// back as current) and the server lets go of its file; a spare is dropped
/// from the array. An active member must be failed first (eraid fail).
///   eraid remove d1 --control ctl.sock
/// Offline, given the array's MEMBERS instead of --control (the failed
/// member need not be among them):
///   eraid remove d1 d0 d2 d3
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct RemoveArgs {
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// The member or spare to remove.
    member: PathBuf,
    /// The array's members, when no server runs it (offline).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

/// The member's path as the server should read it (it resolves relative
/// paths against its own directory).
fn absolute(path: &std::path::Path) -> String {
    crate::member_name::absolute(path).display().to_string()
}

impl FailArgs {
    pub fn run(self) -> Result<i32> {
        let Some(control) = self.control.clone() else {
            let array = OfflineArray::open(&self.members)?;
            let slot = array.index_of(&self.member)?;
            array
                .apply(MemberChange::Fail { slot }, None)
                .with_context(|| format!("cannot fail {}", self.member.display()))?;
            println!(
                "{} failed (recorded on the members); a spare, if any, takes over when the \
                 array is next served",
                self.member.display()
            );
            return Ok(0);
        };
        let mut client = ControlClient::connect(&control)?;
        let status = client
            .call(&json!({"command": "fail", "member": absolute(&self.member)}))
            .with_context(|| format!("cannot fail {}", self.member.display()))?;
        println!("{} failed", self.member.display());
        let rebuild = &status["rebuild"];
        let spare_here = status["members"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["state"] == "spare"));
        if rebuild["state"] == "running" {
            println!("a spare took over: {}", rebuild_line(rebuild));
        } else if spare_here && status["reshape"]["state"] == "paused" {
            // The growth first records what it copied (its position is
            // where the rebuild cuts its rows), then the spare takes over.
            println!(
                "the growth is paused; a spare takes over once its position is recorded, \
                 and the growth goes on by itself after the rebuild"
            );
        } else {
            println!(
                "the array is degraded; add a replacement: eraid add NEW --control {}",
                control.display()
            );
        }
        Ok(0)
    }
}

impl RemoveArgs {
    pub fn run(self) -> Result<i32> {
        let Some(control) = self.control.clone() else {
            let array = OfflineArray::open(&self.members)?;
            let index = array.index_of(&self.member)?;
            array
                .apply(MemberChange::Remove { index }, None)
                .with_context(|| format!("cannot remove {}", self.member.display()))?;
            println!(
                "{} removed (recorded on the members)",
                self.member.display()
            );
            return Ok(0);
        };
        let mut client = ControlClient::connect(&control)?;
        client
            .call(&json!({"command": "remove", "member": absolute(&self.member)}))
            .with_context(|| format!("cannot remove {}", self.member.display()))?;
        println!("{} removed", self.member.display());
        Ok(0)
    }
}

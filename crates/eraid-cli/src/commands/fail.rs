//! `eraid fail` and `eraid remove`: an operator fails a member of a running
//! array, or forgets a failed one / drops a spare.

use super::rebuild::rebuild_line;
use crate::control::ControlClient;
use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;

/// Fail a member of a running array (as if its device had failed)
///
/// The member is no longer used; a hot spare, if there is one, takes its
/// place and is rebuilt at once. Refused, changing nothing, if the array
/// would lose data without it (a second member of a RAID-5, any member of
/// a RAID-0). MEMBER is the path the member is served from.
///   eraid fail d1 --control ctl.sock
/// Only on a running server (--control) for now.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct FailArgs {
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH")]
    control: PathBuf,
    /// The member to fail.
    member: PathBuf,
}

/// Forget a failed member, or drop a hot spare, of a running array
///
/// A failed or missing member is recorded as removed (it is never taken
/// back as current) and the server lets go of its file; a spare is dropped
/// from the array. An active member must be failed first (eraid fail).
///   eraid remove d1 --control ctl.sock
/// Only on a running server (--control) for now.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct RemoveArgs {
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH")]
    control: PathBuf,
    /// The member or spare to remove.
    member: PathBuf,
}

/// The member's path as the server should read it (it resolves relative
/// paths against its own directory).
fn absolute(path: &std::path::Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

impl FailArgs {
    pub fn run(self) -> Result<i32> {
        let mut client = ControlClient::connect(&self.control)?;
        let status = client
            .call(&json!({"command": "fail", "member": absolute(&self.member)}))
            .with_context(|| format!("cannot fail {}", self.member.display()))?;
        println!("{} failed", self.member.display());
        let rebuild = &status["rebuild"];
        if rebuild["state"] == "running" {
            println!("a spare took over: {}", rebuild_line(rebuild));
        } else {
            println!(
                "the array is degraded; add a replacement: eraid add NEW --control {}",
                self.control.display()
            );
        }
        Ok(0)
    }
}

impl RemoveArgs {
    pub fn run(self) -> Result<i32> {
        let mut client = ControlClient::connect(&self.control)?;
        client
            .call(&json!({"command": "remove", "member": absolute(&self.member)}))
            .with_context(|| format!("cannot remove {}", self.member.display()))?;
        println!("{} removed", self.member.display());
        Ok(0)
    }
}

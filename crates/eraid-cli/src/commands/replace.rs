//! `eraid replace`: copy a member onto a new one while it keeps serving,
//! then retire it (Linux MD's `--replace`).

use super::rebuild::{follow_rebuild, follow_rebuild_with, rebuild_line};
use crate::control::ControlClient;
use crate::members::{check_added_members, check_distinct, member_bytes_needed, same_file};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use eraid_core::io::AdminCommand;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Copy a member onto a new one while it serves, then retire it
///
/// OLD keeps serving while its contents are copied onto NEW (stripe by
/// stripe, at the rebuild's rate; only where OLD fails are they rebuilt
/// from the others), and user writes go to both, so the array never runs
/// without redundancy. When the copy is done, NEW takes OLD's slot and OLD
/// is retired: its superblock is marked so it is never assembled as a
/// member again. The copy is checkpointed: after a crash the next `serve`
/// (with OLD and NEW among the members) resumes it.
///   eraid replace d0 --with d4 --control ctl.sock
///   eraid replace d0 --with d4 d0 d1 d2 d3       (offline, on the members)
///
/// NEW must exist, be at least as large as the members and carry no eraid
/// metadata. Refused, changing nothing, on RAID-0 (nothing would cover OLD
/// if it failed mid-copy), for a member that is failed or missing (add a
/// replacement instead), or while a rebuild or another replace runs.
/// Without --no-wait a progress bar follows the copy until it is done
/// (exit 0) or stops or is paused (exit 1). `eraid remove NEW` cancels it.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ReplaceArgs {
    /// The member to replace.
    old: PathBuf,
    /// The file or block device to copy it onto.
    #[arg(long = "with", value_name = "NEW")]
    with: PathBuf,
    /// Start the replace and return at once (offline: it is recorded and
    /// continues when the array is next served).
    #[arg(long)]
    no_wait: bool,
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// The array's members, when no server runs it (offline).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

fn absolute(path: &Path) -> String {
    crate::member_name::absolute(path).display().to_string()
}

/// What the end of the wait means, in words.
fn report_end(status: &Value, old: &Path, new: &Path) {
    let rebuild = &status["rebuild"];
    if rebuild["kind"] == "replace" {
        println!(
            "{} replaced {} as member {}; {} is retired",
            new.display(),
            old.display(),
            rebuild["source"]["slot"],
            old.display()
        );
    } else {
        println!(
            "{} failed during the copy; {} was rebuilt from the others and is member {}",
            old.display(),
            new.display(),
            rebuild["target"]["slot"]
        );
    }
}

impl ReplaceArgs {
    pub fn run(self) -> Result<i32> {
        if same_file(&self.old, &self.with) {
            bail!("{} cannot replace itself", self.old.display());
        }
        match self.control.clone() {
            Some(path) => self.run_control(&path),
            None => self.run_offline(),
        }
    }

    fn run_control(self, path: &Path) -> Result<i32> {
        let mut client = ControlClient::connect(path)?;
        let status = client
            .call(&json!({
                "command": "replace",
                "member": absolute(&self.old),
                "with": absolute(&self.with),
            }))
            .with_context(|| format!("cannot replace {}", self.old.display()))?;
        println!("{}", rebuild_line(&status["rebuild"]));
        if self.no_wait {
            println!(
                "follow it with: eraid rebuild wait --control {}",
                path.display()
            );
            return Ok(0);
        }
        let code = follow_rebuild(&mut client, path)?;
        if code == 0 {
            let status = client.status()?;
            report_end(&status, &self.old, &self.with);
            // The server no longer uses the old member: let go of its lock.
            client
                .call(&json!({"command": "remove", "member": absolute(&self.old)}))
                .with_context(|| format!("cannot release {}", self.old.display()))?;
        }
        Ok(code)
    }

    fn run_offline(self) -> Result<i32> {
        check_distinct(&self.members)?;
        // Everything below reads only, until the engine starts.
        let (mut locks, assembled) = crate::members::lock_and_assemble(&self.members)?;
        let geometry = assembled.assembly.superblock.geometry;
        let count = geometry.member_count;
        let slot = assembled.paths[..count]
            .iter()
            .position(|p| same_file(p, &self.old))
            .ok_or_else(|| {
                anyhow!(
                    "{} is not a member slot of the array on these members (its members: {})",
                    self.old.display(),
                    assembled.paths[..count]
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        let added = check_added_members(
            std::slice::from_ref(&self.with),
            &assembled.paths,
            member_bytes_needed(&geometry),
        )?;
        let running = crate::runtime::start_assembled(
            assembled,
            crate::runtime::real_member_options(),
            None,
        )?;
        for line in &running.report {
            eprintln!("{line}");
        }
        crate::runtime::wait_for_resync(&running, false)?;
        let (mut members, added_locks) = added.into_grow_members();
        locks.extend(added_locks);
        let handle = running.handle();
        let member = members.pop().expect("one member checked");
        let started = match handle.replace_member(slot, member) {
            Ok(status) => status,
            Err(error) => {
                running.close()?;
                bail!("cannot replace {}: {error}", self.old.display());
            }
        };
        println!("{}", rebuild_line(&started["rebuild"]));
        if self.no_wait {
            running.close()?;
            println!(
                "the replace is recorded on the members and continues when the array is next \
                 served (with {} and {} among the members)",
                self.old.display(),
                self.with.display()
            );
            return Ok(0);
        }
        let code = follow_rebuild_with(
            &mut || {
                handle
                    .admin(AdminCommand::Status)
                    .map_err(|e| anyhow!("the array stopped: {e}"))
            },
            "interrupted: the copy is checkpointed and resumes when the array is next served",
        );
        let last = handle.admin(AdminCommand::Status);
        let closed = running.close();
        let code = code?;
        closed?;
        drop(locks);
        if code == 0 {
            report_end(&last?, &self.old, &self.with);
        }
        Ok(code)
    }
}

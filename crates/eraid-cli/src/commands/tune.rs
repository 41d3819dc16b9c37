//! `eraid tune`: re-run the MSC-CT stride benchmark on a stopped array and
//! record the new S_r_max / S_w_max in its superblocks.

use crate::commands::offline::OfflineArray;
use crate::tune::{decide, BenchTarget, ManualStride};
use anyhow::{bail, Context, Result};
use clap::Args;
use eraid_core::metadata::assemble::SlotState;
use eraid_core::metadata::superblock::Superblock;
use std::path::PathBuf;

/// Re-measure the msc-ct cache's stride rule (S_r_max, S_w_max) on a stopped array
///
/// Runs the stride benchmark that `create` runs (the MSC-CT paper's
/// Section III-D) on the array's first member and records the result in
/// every member's superblock; the next `serve` uses it. For each stride S
/// from 1 to the strip's blocks (at most 64), the same 2 MiB of the data
/// area is read, then written, one 4 KiB block every S, with 32 requests
/// in flight; S_max is the smallest S from which every stride's time stays
/// below 1.2 times the contiguous one (1: no transform), and strides below
/// S_max that are not penalised become exception ranges. Writes put back
/// the bytes that were there, so the data is unchanged. It takes a few
/// seconds (a direction gives up after 5 s without a full sweep and the
/// default rule, 8 blocks, is recorded instead).
///
/// Timings only mean something without the page cache: a member that
/// refuses O_DIRECT, or an NBD export, is not measured (the default is
/// recorded, with a warning). On tmpfs (O_DIRECT accepted since Linux 6.6)
/// memory has no missed revolutions: no stride is penalised and the rule
/// is 1 (msc-ct then destages as sc). --stride-max-read/--stride-max-write
/// record values given by hand instead.
///
/// The array must be stopped: its members are locked, as `check` locks
/// them, and a served array (or --control) is refused.
///   eraid tune d0 d1 d2 d3 d4
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct TuneArgs {
    /// A running server's control socket: refused (tune needs the array
    /// stopped), with what to do instead.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    #[command(flatten)]
    manual: ManualStride,
    /// The array's members (files, block devices or NBD exports).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

impl TuneArgs {
    pub fn run(self) -> Result<i32> {
        if let Some(control) = &self.control {
            bail!(
                "tune measures a member directly and rewrites the superblocks, so it needs the \
                 array stopped: {} is a running server's control socket; stop `eraid serve` and \
                 run `eraid tune MEMBERS...` (the next start uses the new rule)",
                control.display()
            );
        }
        let array = OfflineArray::open(&self.members)?;
        let sb = array.superblock();
        let Some(cache) = &sb.cache else {
            bail!(
                "array {} records no write-back cache (created with --cache none or without \
                 --journal): only the msc-ct cache uses the stride rule; nothing changed",
                sb.array_uuid
            );
        };
        if let Some((slot, _)) = array
            .assembled
            .assembly
            .slots
            .iter()
            .enumerate()
            .find(|(_, s)| !matches!(s, SlotState::Present { .. }))
        {
            bail!(
                "tune needs every member of the array: slot {slot} ({}) is missing or out of \
                 date; nothing changed",
                sb.members[slot].path_hint
            );
        }
        if cache.policy != "msc-ct" {
            crate::output::say!(
                "note: the array's cache is {}; the rule is used when it is served with --cache msc-ct",
                cache.policy
            );
        }
        let assembled = &array.assembled;
        let target = BenchTarget {
            device: assembled.devices[0].as_ref(),
            label: assembled.paths[0].display().to_string(),
            direct: assembled.direct[0],
            is_nbd: eraid_driver::is_nbd_uri(&assembled.paths[0]),
        };
        let record = decide(&self.manual, false, &target, &sb.geometry)?;
        let mut new = sb.clone();
        new.events += 1;
        new.cache
            .as_mut()
            .expect("checked above: the array records a cache")
            .stride = Some(record.clone());
        write_everywhere(&array, &new)?;
        crate::output::say_out!(
            "recorded stride rule for array {}: {}",
            new.array_uuid,
            record.summary()
        );
        Ok(0)
    }
}

/// Writes `new` to every member and spare present (the slot its events
/// choose), each synced.
fn write_everywhere(array: &OfflineArray, new: &Superblock) -> Result<()> {
    let offset = Superblock::slot_offset_bytes(new.events);
    let assembled = &array.assembled;
    let count = new.geometry.member_count;
    let mut targets: Vec<usize> = (0..count).collect();
    targets.extend(
        assembled
            .assembly
            .spares
            .iter()
            .enumerate()
            .filter(|(_, probe)| probe.is_some())
            .map(|(j, _)| count + j),
    );
    for index in targets {
        let device = assembled.devices[index].as_ref();
        device
            .write_at(offset, &new.encode_for(index))
            .and_then(|()| device.sync_data())
            .with_context(|| format!("cannot write the superblock of {}", device.label()))?;
    }
    Ok(())
}

//! Member changes without a server (`eraid add|fail|remove MEMBERS...`):
//! the array is assembled and locked as `serve` does, the core decides the
//! new superblock with the rules a running array applies
//! (`eraid_core::metadata::member_change`), and only then is it written:
//! to a member being added first, then to every member and spare present,
//! events bumped. A refusal writes nothing.

use crate::members::{Assembled, MemberLocks};
use anyhow::{anyhow, bail, Context, Result};
use eraid_core::metadata::assemble::SlotState;
use eraid_core::metadata::member_change::{apply, ChangedSuperblock, MemberChange};
use eraid_core::metadata::superblock::Superblock;
use eraid_driver::MemberIo;
use std::path::{Path, PathBuf};

pub struct OfflineArray {
    pub locks: MemberLocks,
    pub assembled: Assembled,
}

impl OfflineArray {
    /// Locks and assembles the array on `members` (reading only).
    pub fn open(members: &[PathBuf]) -> Result<OfflineArray> {
        crate::members::check_distinct(members)?;
        let (locks, assembled) = crate::members::lock_and_assemble(members)?;
        Ok(OfflineArray { locks, assembled })
    }

    pub fn superblock(&self) -> &Superblock {
        &self.assembled.assembly.superblock
    }

    /// The slot (or `member_count + j` for spare j) `name` is: the path a
    /// member was given as, or the path its superblock remembers.
    pub fn index_of(&self, name: &Path) -> Result<usize> {
        let sb = self.superblock();
        let count = sb.geometry.member_count;
        let given = self
            .assembled
            .paths
            .iter()
            .position(|p| crate::members::same_file(p, name));
        let given = given.filter(|&i| match i.checked_sub(count) {
            None => !matches!(self.assembled.assembly.slots[i], SlotState::Missing),
            Some(j) => self
                .assembled
                .assembly
                .spares
                .get(j)
                .is_some_and(|s| s.is_some()),
        });
        let full = crate::member_name::canonical_or_absolute(name);
        let remembered = sb
            .members
            .iter()
            .chain(&sb.spares)
            .position(|m| Path::new(&m.path_hint) == full || Path::new(&m.path_hint) == name);
        match given.or(remembered) {
            Some(index) => Ok(index),
            None => {
                let known: Vec<String> = sb
                    .members
                    .iter()
                    .chain(&sb.spares)
                    .enumerate()
                    .map(|(i, m)| format!("{i} {}", m.path_hint))
                    .collect();
                bail!(
                    "{} is not a member or spare of the array; it has: {}",
                    name.display(),
                    known.join(", ")
                )
            }
        }
    }

    /// Decides `change`; if allowed, writes it (`added`: the device of a
    /// member being added, written first).
    pub fn apply(
        self,
        change: MemberChange,
        added: Option<&dyn MemberIo>,
    ) -> Result<ChangedSuperblock> {
        let assembly = &self.assembled.assembly;
        let changed = apply(assembly, change).map_err(|e| anyhow!("{e}; nothing changed"))?;
        let sb = &changed.superblock;
        let offset = Superblock::slot_offset_bytes(sb.events);
        let write = |device: &dyn MemberIo, index: usize| -> Result<()> {
            device
                .write_at(offset, &sb.encode_for(index))
                .and_then(|()| device.sync_data())
                .with_context(|| format!("cannot write the superblock of {}", device.label()))
        };
        if let (Some(device), Some(index)) = (added, changed.added_at) {
            write(device, index)?;
        }
        let count = sb.geometry.member_count;
        for (slot, state) in assembly.slots.iter().enumerate() {
            if matches!(state, SlotState::Present { .. }) {
                write(self.assembled.devices[slot].as_ref(), slot)?;
            }
        }
        for (j, probe) in assembly.spares.iter().enumerate() {
            let uuid = &assembly.superblock.spares[j].uuid;
            // A spare removed by this change keeps its old copy.
            let now_at = sb.spares.iter().position(|s| &s.uuid == uuid);
            if let (Some(_), Some(now_at)) = (probe, now_at) {
                write(self.assembled.devices[count + j].as_ref(), count + now_at)?;
            }
        }
        drop(self.locks);
        Ok(changed)
    }
}

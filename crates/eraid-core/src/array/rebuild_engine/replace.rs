//! Replace (Linux MD's `--replace`): a rebuild-engine mode that copies a
//! serving member ("source") onto a new one while the source keeps serving,
//! so no moment runs without redundancy. The new member is kept among the
//! spares (its own superblock copy names it there) until the copy is done.
//!
//! The pass walks stripes in address order like a rebuild; each copy op
//! reads the source's shard and writes it to the new member's device. User
//! writes to the source's shards go to both devices (and flushes flush both),
//! so every stripe the rebuilt-units map holds is current on the new
//! member. The map is checkpointed like a rebuild's (flush, then record),
//! so a crash resumes from the record (less the regions the write-intent
//! bitmap marks). If the source fails meanwhile, the replace becomes an
//! ordinary rebuild of that slot onto the new member, keeping the map (what
//! it holds is already copied). If the new member
//! fails, the replace stops and the source goes on serving. When the last
//! stripe is recorded, the new member takes the slot, and the source gets a
//! superblock copy marked retired, so it is never assembled again.

use super::super::{Array, Ready};
use super::rebuilt_map::RebuiltMap;
use crate::growth::config::NewMember;
use crate::io::ArrayEvent;
use crate::metadata::superblock::{MemberRecord, MemberState, Retirement, Superblock};
use crate::rebuild::record::{
    RebuildCounters, RebuildKind, RebuildRecord, RebuildState, ReplaceRecord,
};
use std::collections::BTreeSet;

/// The runtime part of a replace.
#[derive(Clone, Copy, Debug)]
pub(in crate::array) struct ReplaceRun {
    /// The member slot being copied (its device serves meanwhile).
    pub source: usize,
    /// The new member's device.
    pub device: usize,
}

/// The devices one write goes to: the member's, and while a replace of
/// it runs, the new member's (inline, no allocation).
pub(in crate::array) type WriteDevices = smallvec::SmallVec<[usize; 2]>;

impl Array {
    fn replace_run(&self) -> Option<ReplaceRun> {
        self.rebuild.as_ref().and_then(|r| r.replace)
    }

    /// `member` is the slot a running replace copies (until the copy is
    /// done; then the new member serves the slot).
    pub(in crate::array) fn is_replace_source(&self, member: usize) -> bool {
        self.rebuild
            .as_ref()
            .is_some_and(|r| !r.replace_done && r.replace.is_some_and(|run| run.source == member))
    }

    /// The devices a write to `member`'s shard goes to: its own, and the
    /// new member's while a replace copies it (or, once copied, the old
    /// member's until the record naming the new one is durable: a crash
    /// before would resume the replace from the old one).
    pub(in crate::array) fn write_devices(&self, member: usize) -> WriteDevices {
        let mut devices: WriteDevices = smallvec::smallvec![self.slot_device[member]];
        if let Some(run) = self.replace_run().filter(|r| r.source == member) {
            devices.push(run.device);
        }
        devices
    }

    /// The new member's device, while a replace runs (flushed with the
    /// members: what a checkpoint records must be durable there).
    pub(in crate::array) fn replace_device(&self) -> Option<(usize, usize)> {
        self.replace_run().map(|r| (r.device, r.source))
    }

    /// For a rebuild op of `stripe` while a replace runs: the shard index
    /// of the source in `map` and the device its copy goes to.
    pub(in crate::array) fn replace_copy_plan(
        &self,
        map: &crate::layout::StripeMap,
    ) -> Option<(usize, usize)> {
        let run = self.replace_run()?;
        if !self.present[run.source] {
            return None;
        }
        let shard = map.shards().position(|p| p.member == run.source)?;
        Some((shard, run.device))
    }

    /// Whether a copy op's destination still takes the copy: the replace's
    /// new member, or the slot it took over when the source failed.
    pub(in crate::array) fn copy_destination_live(&self, member: usize, device: usize) -> bool {
        self.replace_run().is_some_and(|r| r.device == device)
            || (self.slot_device[member] == device
                && self.present[member]
                && self.is_rebuild_target(member))
    }

    /// `AdminCommand::ReplaceMember`: copy `slot` onto `member` (which the
    /// driver serves as device `device_count` already).
    pub(in crate::array) fn start_replace(
        &mut self,
        slot: usize,
        member: NewMember,
    ) -> Result<(), String> {
        let count = self.geometry.member_count;
        if slot >= count {
            return Err(format!(
                "there is no member slot {slot}: the array has {count} members; only a member is replaced"
            ));
        }
        let level = self.geometry.level;
        if level.redundancy() == 0 {
            return Err(format!(
                "{} has no redundancy: a replace needs the other members to cover the \
                 source if it fails during the copy (Linux MD refuses it too)",
                level.name()
            ));
        }
        self.check_new_member(&member)?;
        if self
            .reshape_record()
            .is_some_and(|r| r.state != crate::growth::record::ReshapeState::Done)
        {
            return Err("a growth is unfinished; replace once it is done".into());
        }
        let name = self.member_name(slot);
        if let Some(rebuild) = &self.rebuild {
            let what = if rebuild.targets.contains(&slot) {
                format!("{name} is being rebuilt")
            } else if rebuild.replace.is_some() {
                "a replace is running".to_string()
            } else {
                format!("a rebuild of member {:?} is running", rebuild.targets)
            };
            return Err(format!("{what}; replace once it is done"));
        }
        if !self.present[slot] {
            return Err(format!(
                "{name} is failed or missing: there is nothing to copy; add {} as its \
                 replacement instead (eraid add), which rebuilds it from the others",
                member.path_hint
            ));
        }
        let source_uuid = self.superblock.members[slot].uuid.clone();
        let replacement = member.uuid.clone();
        self.superblock.spares.push(MemberRecord {
            uuid: member.uuid,
            state: MemberState::Spare,
            path_hint: member.path_hint,
            failure: None,
            absent_unwritten_since_events: None,
            re_add_from_events: None,
        });
        let device = self.device_count;
        self.spare_devices.push(Some(device));
        self.device_count += 1;
        let config = self
            .superblock
            .rebuild
            .take()
            .map_or_else(|| self.options.rebuild.clone(), |r| r.config);
        let total = self.geometry.stripe_count();
        self.superblock.rebuild = Some(RebuildRecord {
            growth_checkpoint_chunk: None,
            config: config.clone(),
            targets: Vec::new(),
            checkpoint_stripe: 0,
            total_stripes: total,
            kind: RebuildKind::Full,
            state: RebuildState::Running,
            held: false,
            reason: None,
            counters: RebuildCounters::default(),
            rebuilt_units: None,
            replace: Some(ReplaceRecord {
                source: slot,
                source_uuid,
                replacement,
            }),
        });
        // Copied in its settings' order (address order for PR, the
        // default); the map keeps any order safe.
        let mut rebuild = self.new_rebuild(Vec::new(), RebuiltMap::new(total), &config);
        rebuild.replace = Some(ReplaceRun {
            source: slot,
            device,
        });
        self.rebuild = Some(rebuild);
        self.request_superblock_write();
        self.outbox_event.push_back(ArrayEvent::RebuildStarted {
            members: vec![slot],
        });
        self.ready.push(Ready::Rebuild);
        Ok(())
    }

    /// At open: a replace recorded unfinished goes on if both its source
    /// and its new member are here; with the source gone it becomes a
    /// rebuild of the slot onto the new member from the checkpoint; with
    /// the new member gone it stops.
    pub(super) fn resume_replace(&mut self) {
        let record = self.superblock.rebuild.as_ref().expect("rebuild record");
        let replace = record.replace.clone().expect("replace record");
        let spare = self
            .superblock
            .spares
            .iter()
            .position(|s| s.uuid == replace.replacement);
        let device = spare.and_then(|j| self.spare_devices[j]);
        let stripes = self.geometry.stripe_count();
        let (Some(device), true) = (device, record.total_stripes == stripes) else {
            let record = self.superblock.rebuild.as_mut().expect("rebuild record");
            record.state = RebuildState::Stopped;
            record.reason = Some(
                "its new member was missing when the array started; the source serves on".into(),
            );
            return;
        };
        let held = record.held;
        let map = self.replace_resume_map();
        let record = self.superblock.rebuild.as_mut().expect("record");
        // The record must not claim more than the map holds: a second
        // crash before the next checkpoint resumes from it.
        record.checkpoint_stripe = map.prefix();
        record.rebuilt_units = map.recorded();
        let config = record.config.clone();
        let mut rebuild = self.new_rebuild(Vec::new(), map, &config);
        rebuild.replace = Some(ReplaceRun {
            source: replace.source,
            device,
        });
        self.rebuild = Some(rebuild);
        if !held {
            self.superblock.rebuild.as_mut().expect("record").state = RebuildState::Running;
        }
        if !self.present[replace.source] {
            self.replace_source_failed(replace.source);
        }
    }

    /// The source failed (or is missing at a start): the new member takes
    /// the slot as a rebuild target, the stripes the map holds being
    /// copied already, and the rest is rebuilt from the others.
    pub(super) fn replace_source_failed(&mut self, slot: usize) {
        let run = self.replace_run().expect("a replace runs with this source");
        let spare = self
            .spare_devices
            .iter()
            .position(|&d| d == Some(run.device))
            .expect("the new member is a spare while the replace runs");
        let mut record = self.superblock.spares.remove(spare);
        self.spare_devices.remove(spare);
        record.state = MemberState::Rebuilding;
        self.superblock.members[slot] = record;
        self.slot_device[slot] = run.device;
        self.present[slot] = true;
        self.absent_unrecorded.retain(|&s| s != slot);
        let rebuild = self.rebuild.as_mut().expect("rebuild");
        rebuild.replace = None;
        rebuild.targets = vec![slot];
        let record = self.rebuild_record_mut();
        record.replace = None;
        record.targets = vec![slot];
        self.request_superblock_write();
        self.ready.push(Ready::Rebuild);
    }

    /// A spare's device failed or was removed (already dropped from the
    /// spares): if it was the replace's new member, the replace stops and
    /// the source serves on.
    pub(in crate::array) fn replace_spare_failed(&mut self, device: usize, reason: &str) {
        if self.replace_run().is_none_or(|r| r.device != device) {
            return;
        }
        self.rebuild = None;
        let reason = format!("its new member is gone: {reason}");
        let record = self.rebuild_record_mut();
        record.state = RebuildState::Stopped;
        record.reason = Some(reason.clone());
        self.request_superblock_write();
        self.outbox_event
            .push_back(ArrayEvent::RebuildStopped { reason });
        // A spare that waited for the replace may take a failed slot now.
        self.ready.push(Ready::Rebuild);
    }

    /// The map of a recorded replace at open: the stripes recorded copied,
    /// except, after an unclean stop, those in regions the write-intent
    /// bitmap marks (a write in flight at the crash may have reached only
    /// one of the source and the new member); without a bitmap nothing is
    /// known current then, so the copy starts over.
    fn replace_resume_map(&self) -> RebuiltMap {
        let record = self.rebuild_record().expect("rebuild record");
        let stripes = self.geometry.stripe_count();
        // Checked at decode; a map that no longer decodes only costs redoing.
        let bits = record
            .rebuilt_units
            .as_ref()
            .and_then(|m| m.decode(stripes).ok());
        let recorded = RebuiltMap::from_record(stripes, record.checkpoint_stripe, bits.as_deref());
        if !self.opened_unclean {
            return recorded;
        }
        let mut map = RebuiltMap::new(stripes);
        if !self.options.write_intent_bitmap {
            return map;
        }
        let per_region = self.intent.stripes_per_region.max(1);
        let marked: BTreeSet<u64> = self.intent.desired.dirty_regions().collect();
        for stripe in 0..stripes {
            if recorded.is_rebuilt(stripe) && !marked.contains(&(stripe / per_region)) {
                map.mark(stripe);
            }
        }
        map
    }

    /// The last stripe is copied and durable: the new member takes the
    /// source's slot in the record about to be written.
    pub(super) fn replace_copied(&mut self) {
        let Some(run) = self.replace_run() else {
            return;
        };
        let spare = self
            .spare_devices
            .iter()
            .position(|&d| d == Some(run.device))
            .expect("the new member is a spare while the replace runs");
        let mut record = self.superblock.spares.remove(spare);
        self.spare_devices.remove(spare);
        record.state = MemberState::Active;
        self.superblock.members[run.source] = record;
        let old_device = self.slot_device[run.source];
        self.slot_device[run.source] = run.device;
        let rebuild = self.rebuild.as_mut().expect("rebuild");
        // The slot's device is the new member's now; writes and flushes
        // still reach the old one until this record is durable, and it is
        // retired then.
        rebuild.replace = Some(ReplaceRun {
            source: run.source,
            device: old_device,
        });
        rebuild.replace_done = true;
    }

    /// The record naming the new member is durable: the old member gets a
    /// copy marked retired (so it is never assembled again), then the
    /// replace is over.
    pub(super) fn retire_replaced(&mut self, old: ReplaceRun) {
        let new = &self.superblock.members[old.source];
        let mut copy = self.superblock.clone();
        copy.retired = Some(Retirement {
            replaced_by_uuid: new.uuid.clone(),
            replaced_by_path: new.path_hint.clone(),
        });
        // The old member's newest copy is one event older, in the other
        // slot: a torn write here leaves that one, which the others' newer
        // record refuses anyway (the member was replaced).
        let offset_bytes = Superblock::slot_offset_bytes(copy.events);
        let bytes = copy.encode_for(old.source);
        self.request_retirement_write(old.device, offset_bytes, bytes);
        self.outbox_event.push_back(ArrayEvent::RebuildFinished {
            members: vec![old.source],
        });
    }
}

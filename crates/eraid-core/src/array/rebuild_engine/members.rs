//! The member lifecycle around rebuilds: adding a replacement or a hot
//! spare, failing and removing members, spares taking failed slots over,
//! and the operator's hand on a running rebuild.

use super::super::{Array, Phase, Ready};
use super::JOIN_FRACTION_MAX;
use crate::growth::config::NewMember;
use crate::growth::record::ReshapeState;
use crate::io::ArrayEvent;
use crate::metadata::superblock::{MemberRecord, MemberState};
use crate::rebuild::config::RebuildTuning;
use crate::rebuild::record::RebuildState;

/// Most hot spares an array records (each is a superblock entry).
pub use crate::metadata::SPARES_MAX;

impl Array {
    fn growth_unfinished(&self) -> bool {
        self.reshape_record()
            .is_some_and(|r| r.state != ReshapeState::Done)
    }

    pub(super) fn member_name(&self, slot: usize) -> String {
        format!(
            "member {slot} ({})",
            self.superblock.members[slot].path_hint
        )
    }

    /// `AdminCommand::AddMember`: the driver serves `member` as device
    /// `device_count` already.
    pub(in crate::array) fn add_member(
        &mut self,
        member: NewMember,
        spare: bool,
    ) -> Result<(), String> {
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        let level = self.geometry.level;
        if level.redundancy() == 0 {
            return Err(format!(
                "{} has no redundancy: nothing can be rebuilt onto {} and a spare would never be used",
                level.name(),
                member.path_hint
            ));
        }
        self.check_new_member(&member)?;
        // A paused growth takes a replacement or a spare: the rebuild runs
        // beside it, then the growth goes on (`growth_regions`).
        if self.growth_unfinished()
            && self
                .reshape_record()
                .is_some_and(|r| r.state == ReshapeState::Running)
        {
            return Err(
                "a growth is running; add members once it is done (or pause it first)".into(),
            );
        }
        if !spare && self.present.iter().all(|&p| p) {
            return Err(format!(
                "the array has no failed or missing member for {} to replace; add it as a \
                 hot spare (--spare) to keep it ready",
                member.path_hint
            ));
        }
        // A replacement is a spare that is taken over at once (in this
        // handler's `run_ready`), or after the rebuild running now.
        self.superblock.spares.push(MemberRecord {
            uuid: member.uuid,
            state: MemberState::Spare,
            path_hint: member.path_hint,
            failure: None,
            absent_unwritten_since_events: None,
            re_add_from_events: None,
        });
        self.spare_devices.push(Some(self.device_count));
        self.device_count += 1;
        self.request_superblock_write();
        self.ready.push(Ready::Rebuild);
        Ok(())
    }

    /// What a new member (a replacement, spare or replace's copy) must be:
    /// large enough, unknown to the array, and room left to record it.
    pub(super) fn check_new_member(&self, member: &NewMember) -> Result<(), String> {
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        let needed_bytes = self.geometry.data_offset_bytes + self.geometry.member_data_bytes;
        if member.size_bytes < needed_bytes {
            return Err(format!(
                "{} is too small: {} bytes, but every member of this array needs at least {needed_bytes} bytes",
                member.path_hint, member.size_bytes
            ));
        }
        let known = self
            .superblock
            .members
            .iter()
            .chain(&self.superblock.spares)
            .any(|m| m.uuid == member.uuid);
        if known {
            return Err(format!("{} is already a member or spare", member.path_hint));
        }
        if self.superblock.spares.len() >= SPARES_MAX {
            return Err(format!(
                "the array has {SPARES_MAX} spares already, the most it can record"
            ));
        }
        Ok(())
    }

    /// `AdminCommand::FailMember`.
    pub(in crate::array) fn fail_member_by_operator(&mut self, slot: usize) -> Result<(), String> {
        let count = self.geometry.member_count;
        if slot >= count {
            return Err(format!(
                "there is no member slot {slot}: the array has {count} members (0..{}); spares \
                 are removed, not failed",
                count - 1
            ));
        }
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        if !self.present[slot] {
            return Err(format!(
                "{} is already failed or missing",
                self.member_name(slot)
            ));
        }
        if !self.survivable_without(Some(slot)) {
            let others: Vec<String> = (0..count)
                .filter(|&m| m != slot && !self.member_whole(m))
                .map(|m| self.member_name(m))
                .collect();
            let why = if others.is_empty() {
                format!("{} has no redundancy", self.geometry.level.name())
            } else {
                format!(
                    "{} already failed, missing or rebuilding",
                    others.join(", ")
                )
            };
            return Err(format!(
                "failing {} would lose data: {why}; nothing changed",
                self.member_name(slot)
            ));
        }
        // Nothing is lost on it: it may come back by a re-add.
        let re_add_from = self.re_add_mark_on_operator_fail(slot);
        self.fail_member_marked(slot, "failed by the operator".into(), re_add_from);
        Ok(())
    }

    /// `AdminCommand::RemoveMember`: a failed or missing member slot is
    /// recorded as removed (it is never taken back as current), a spare
    /// is dropped.
    pub(in crate::array) fn remove_member(&mut self, slot: usize) -> Result<(), String> {
        let count = self.geometry.member_count;
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        if let Some(spare) = slot.checked_sub(count) {
            if spare >= self.superblock.spares.len() {
                return Err(format!(
                    "there is no member or spare {slot}: the array has {count} members and {} spares",
                    self.superblock.spares.len()
                ));
            }
            self.superblock.spares.remove(spare);
            let device = self.spare_devices.remove(spare);
            self.request_superblock_write();
            // Removing a replace's new member cancels the replace.
            if let Some(device) = device {
                self.replace_spare_failed(device, "removed by the operator");
            }
            return Ok(());
        }
        if self.present[slot] {
            let what = if self.is_rebuild_target(slot) {
                "being rebuilt"
            } else {
                "active"
            };
            return Err(format!(
                "{} is {what}; fail it first (eraid fail)",
                self.member_name(slot)
            ));
        }
        let record = &mut self.superblock.members[slot];
        record.state = MemberState::Faulty;
        record.absent_unwritten_since_events = None;
        record.failure = Some(match record.failure.take() {
            Some(why) if !why.starts_with("removed") => {
                crate::metadata::superblock::bounded_failure_reason(&format!(
                    "removed by the operator after: {why}"
                ))
            }
            Some(why) => why,
            None => "removed by the operator".into(),
        });
        self.absent_unrecorded.retain(|&s| s != slot);
        self.request_superblock_write();
        Ok(())
    }

    /// A spare's device failed: it is no longer used nor recorded.
    pub(in crate::array) fn drop_spare(&mut self, spare: usize, reason: &str) {
        let record = self.superblock.spares.remove(spare);
        let device = self.spare_devices.remove(spare);
        self.outbox_event.push_back(ArrayEvent::SpareFailed {
            path_hint: record.path_hint,
            reason: reason.to_string(),
        });
        self.request_superblock_write();
        if let Some(device) = device {
            self.replace_spare_failed(device, reason);
        }
    }

    /// Spares that are here take failed or missing member slots over (in
    /// slot and spare order) and a rebuild starts onto them, unless a
    /// rebuild has gone too far to be joined (they wait for its end).
    pub(super) fn take_over_failed_slots(&mut self) {
        if self.phase != Phase::Running || self.geometry.level.redundancy() == 0 {
            return;
        }
        let total = self.geometry.stripe_count();
        if self.rebuild.as_ref().is_some_and(|r| r.replace.is_some()) {
            // Spares wait for the replace to end (one pass at a time).
            return;
        }
        if let Some(rebuild) = &self.rebuild {
            let finishing = self
                .rebuild_record()
                .is_some_and(|r| r.state == RebuildState::Done);
            if finishing || rebuild.done_stripes().saturating_mul(JOIN_FRACTION_MAX) >= total {
                return;
            }
        }
        let failed: Vec<usize> = (0..self.geometry.member_count)
            .filter(|&s| !self.present[s])
            .collect();
        let spares: Vec<usize> = (0..self.spare_devices.len())
            .filter(|&j| self.spare_devices[j].is_some())
            .collect();
        let pairs: Vec<(usize, usize)> = failed.into_iter().zip(spares).collect();
        // Beside a growth, only once it is paused and still (its cut where
        // a crash would resume); asked only when a spare waits.
        if pairs.is_empty() || !self.growth_quiet_for_rebuild() {
            return;
        }
        // Highest spare first, so the lower indices stay valid.
        for &(slot, spare) in pairs.iter().rev() {
            let mut record = self.superblock.spares.remove(spare);
            let device = self.spare_devices.remove(spare).expect("spare is here");
            record.state = MemberState::Rebuilding;
            record.failure = None;
            record.absent_unwritten_since_events = None;
            self.superblock.members[slot] = record;
            self.slot_device[slot] = device;
            self.present[slot] = true;
            self.absent_unrecorded.retain(|&s| s != slot);
        }
        let mut targets: Vec<usize> = pairs.iter().map(|&(slot, _)| slot).collect();
        targets.sort_unstable();
        self.begin_rebuild(targets);
    }

    fn rebuild_unfinished(&self) -> Result<(), String> {
        match (&self.rebuild, self.rebuild_record()) {
            (Some(_), Some(record)) if record.state.unfinished() => Ok(()),
            _ => Err("no rebuild is in progress".into()),
        }
    }

    /// `AdminCommand::PauseRebuild`: stripes in flight finish and what was
    /// rebuilt is recorded; nothing more until resumed (across restarts).
    pub(in crate::array) fn hold_rebuild(&mut self) -> Result<(), String> {
        self.rebuild_unfinished()?;
        let record = self.rebuild_record_mut();
        if record.held {
            return Err("the rebuild is already paused".into());
        }
        record.held = true;
        record.state = RebuildState::Paused;
        self.request_superblock_write();
        self.ready.push(Ready::Rebuild);
        Ok(())
    }

    pub(in crate::array) fn release_rebuild(&mut self) -> Result<(), String> {
        self.rebuild_unfinished()?;
        let record = self.rebuild_record_mut();
        if !record.held {
            return Err("the rebuild is not paused".into());
        }
        record.held = false;
        record.state = RebuildState::Running;
        self.request_superblock_write();
        self.ready.push(Ready::Rebuild);
        Ok(())
    }

    pub(in crate::array) fn tune_rebuild(&mut self, tuning: &RebuildTuning) -> Result<(), String> {
        if tuning.is_empty() {
            return Err(
                "no setting to change (strategy, speed_min_kib_s, speed_max_kib_s, \
                 hot_zone_bytes, time_slice_ms, popularity_half_life_ms)"
                    .into(),
            );
        }
        let config = self
            .rebuild_record()
            .map_or_else(|| self.options.rebuild.clone(), |r| r.config.clone());
        let tuned = tuning.applied_to(&config)?;
        // Before any rebuild, the settings are kept for the first one.
        let total = self.geometry.stripe_count();
        self.superblock
            .rebuild
            .get_or_insert_with(|| crate::rebuild::record::RebuildRecord {
                growth_checkpoint_chunk: None,
                config: config.clone(),
                kind: Default::default(),
                targets: Vec::new(),
                checkpoint_stripe: total,
                total_stripes: total,
                state: RebuildState::Done,
                held: false,
                reason: None,
                counters: Default::default(),
                replace: None,
                rebuilt_units: None,
            })
            .config = tuned.clone();
        self.rebuild_config_changed(&tuned);
        self.request_superblock_write();
        self.ready.push(Ready::Rebuild);
        Ok(())
    }
}

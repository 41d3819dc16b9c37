//! Re-add (Linux MD's `--re-add`, bitmap-based recovery): a member that
//! left without losing a write comes back and only the regions the
//! write-intent bitmap marked meanwhile are copied onto it, through the
//! same stripe pipeline as a full rebuild: its rebuilt-units map starts
//! with every stripe outside the marked regions rebuilt, so whichever
//! strategy orders it copies only the marked ones. While such a member is away or being
//! re-added, no mark is cleared, so the marks cover every write it missed
//! (`metadata::readd` states the whole rule).

use super::super::{Array, Phase, Ready};
use super::rebuilt_map::RebuiltMap;
use super::Rebuild;
use crate::io::ArrayEvent;
use crate::metadata::readd::re_add_refusal;
use crate::metadata::superblock::{MemberState, Superblock};
use crate::rebuild::record::{RebuildCounters, RebuildKind, RebuildRecord, RebuildState};

impl Array {
    /// Whether bitmap marks must stay: a member that may come back by a
    /// re-add is away or still being re-added.
    pub(in crate::array) fn keeps_bits_for_re_add(&self) -> bool {
        (0..self.geometry.member_count).any(|slot| {
            !self.member_whole(slot) && self.superblock.members[slot].re_add_from_events.is_some()
        })
    }

    /// The events from which a member the operator fails now could be
    /// re-added: it holds all its data (or is itself being re-added, and
    /// keeps its mark), else None.
    pub(in crate::array) fn re_add_mark_on_operator_fail(&self, slot: usize) -> Option<u64> {
        if self.member_whole(slot) {
            return Some(self.superblock.events);
        }
        let re_adding = self
            .rebuild_record()
            .is_some_and(|r| r.kind == RebuildKind::ReAdd);
        if re_adding && self.is_rebuild_target(slot) {
            return self.superblock.members[slot].re_add_from_events;
        }
        None
    }

    /// At open: the stale members assembly found re-addable (served by
    /// their own devices) become targets of a re-add. Left stale if a
    /// rebuild is already under way (assembly refuses that case too).
    pub(in crate::array) fn start_re_adds_at_open(&mut self, slots: &[usize]) {
        if slots.is_empty() || self.rebuild.is_some() {
            return;
        }
        for &slot in slots {
            assert!(!self.present[slot], "a re-add target was in sync");
            self.present[slot] = true;
            let record = &mut self.superblock.members[slot];
            assert!(record.re_add_from_events.is_some(), "re-add without a mark");
            record.state = MemberState::Rebuilding;
            self.absent_unrecorded.retain(|&s| s != slot);
        }
        self.begin_re_add(slots.to_vec());
    }

    /// Starts copying the marked regions onto `targets` (present already,
    /// recorded `Rebuilding`).
    pub(in crate::array) fn begin_re_add(&mut self, targets: Vec<usize>) {
        assert!(self.rebuild.is_none(), "a re-add next to a running rebuild");
        let total = self.geometry.stripe_count();
        let config = self
            .superblock
            .rebuild
            .take()
            .map_or_else(|| self.options.rebuild.clone(), |r| r.config);
        let mut rebuild = self.new_rebuild(targets.clone(), RebuiltMap::new(total), &config);
        self.skip_unmarked_regions(&mut rebuild);
        self.superblock.rebuild = Some(RebuildRecord {
            growth_checkpoint_chunk: None,
            config,
            kind: RebuildKind::ReAdd,
            targets: targets.clone(),
            checkpoint_stripe: 0,
            total_stripes: total,
            state: RebuildState::Running,
            held: false,
            reason: None,
            counters: RebuildCounters::default(),
            rebuilt_units: None,
            replace: None,
        });
        self.rebuild = Some(rebuild);
        self.request_superblock_write();
        self.outbox_event
            .push_back(ArrayEvent::RebuildStarted { members: targets });
        self.ready.push(Ready::Rebuild);
    }

    /// A re-add's map: every stripe outside the regions the bitmap marks
    /// is current on the targets already, so it counts as rebuilt (marks
    /// being set for writes in flight count too: `desired`).
    pub(super) fn skip_unmarked_regions(&self, rebuild: &mut Rebuild) {
        let total = self.geometry.stripe_count();
        let per_region = self.intent.stripes_per_region;
        let mut marked = 0;
        let mut unmarked_from = 0;
        for region in self.intent.desired.dirty_regions() {
            let start = (region * per_region).min(total);
            rebuild.map.mark_range(unmarked_from, start);
            unmarked_from = (start + per_region).min(total);
            marked += 1;
        }
        rebuild.map.mark_range(unmarked_from, total);
        // Only what was recorded before a restart may already be marked.
        rebuild.recorded_done = rebuild.map.done_stripes();
        rebuild.marked_regions = Some(marked);
    }

    /// `AdminCommand::ReAddMember`: the member of `slot`, whose device the
    /// driver still serves (failed by the operator, or stale at the start),
    /// comes back: re-added from the bitmap when the rule allows, else
    /// rebuilt in full. Returns nothing; the status shows which.
    pub(in crate::array) fn re_add_member(
        &mut self,
        slot: usize,
        copy: &Superblock,
    ) -> Result<(), String> {
        let count = self.geometry.member_count;
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        if slot >= count {
            return Err(format!(
                "there is no member slot {slot}: the array has {count} members"
            ));
        }
        if self.geometry.level.redundancy() == 0 {
            return Err(format!(
                "{} has no redundancy: nothing can be rebuilt",
                self.geometry.level.name()
            ));
        }
        let record = &self.superblock.members[slot];
        if copy.array_uuid != self.superblock.array_uuid {
            return Err(format!(
                "it belongs to another array (uuid {}, this one is {})",
                copy.array_uuid, self.superblock.array_uuid
            ));
        }
        if copy.this_member >= copy.members.len() || copy.this_member_uuid() != record.uuid {
            return Err(format!(
                "it is not the member of slot {slot} (that is uuid {}, last seen at {})",
                record.uuid, record.path_hint
            ));
        }
        if self.present[slot] {
            return Err(format!(
                "member {slot} ({}) is {}; nothing to add back",
                record.path_hint,
                if self.is_rebuild_target(slot) {
                    "being rebuilt"
                } else {
                    "active"
                }
            ));
        }
        if self
            .reshape_record()
            .is_some_and(|r| r.state != crate::growth::record::ReshapeState::Done)
        {
            return Err("a growth is unfinished; add it back once it is done".into());
        }
        if self.rebuild.is_some() {
            return Err(
                "a rebuild is running; add it back once it is done (eraid rebuild wait)".into(),
            );
        }
        let refusal = re_add_refusal(copy, &self.superblock, slot);
        self.present[slot] = true;
        self.absent_unrecorded.retain(|&s| s != slot);
        let record = &mut self.superblock.members[slot];
        record.state = MemberState::Rebuilding;
        record.absent_unwritten_since_events = None;
        match refusal {
            None => self.begin_re_add(vec![slot]),
            Some(why) => {
                // Not covered by the bitmap: its old contents count for
                // nothing, as a new member's.
                record.re_add_from_events = None;
                record.failure = Some(crate::metadata::superblock::bounded_failure_reason(
                    &format!("rebuilt in full: {why}"),
                ));
                self.begin_rebuild(vec![slot]);
            }
        }
        Ok(())
    }
}

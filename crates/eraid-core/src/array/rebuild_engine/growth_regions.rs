//! A rebuild while a growth is paused. The array then has two layouts, cut
//! at the growth's checkpoint C (in logical chunks, with nothing copied
//! past it, so the cut is where a crash would resume too): rows below
//! C / (new data chunks per row) are new-layout stripes; rows from
//! C / (old data chunks per row) on are old-layout stripes, whole (the
//! window rule keeps every shard of an old stripe with an unmoved chunk);
//! the rows between hold nothing live: every place in them is rewritten by
//! a later window before anyone reads it. For parity levels a stripe's
//! number is its row in both layouts, so the rebuilt-units map stays one
//! bit per row and means the same thing on both sides of the cut.
//!
//! The rebuild reconstructs each row in the layout that owns it (a member
//! the growth added has shards in new-layout rows only). The growth does
//! not move while the rebuild runs (the cut stays put; the record says
//! where it was, and a rebuild resumed against another cut starts again
//! from row 0); once the rebuild is done, the growth goes on by itself.

use super::super::op::{Epoch, OpTarget};
use super::super::Array;
use crate::geometry::Level;
use crate::growth::record::ReshapeState;

/// Where a paused growth cuts the rows (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::array) struct GrowthRegions {
    /// The growth's checkpoint the cut is at, in logical chunks.
    pub checkpoint_chunk: u64,
    /// Rows below are new-layout stripes.
    pub new_rows_end: u64,
    /// Rows from here on are old-layout stripes.
    pub old_rows_start: u64,
}

impl Array {
    fn growth_unfinished_now(&self) -> bool {
        self.reshape.is_some()
            && self
                .reshape_record()
                .is_some_and(|r| r.state != ReshapeState::Done)
    }

    /// The cut of the growth as it stands (None: no growth). Only
    /// meaningful while `growth_quiet_for_rebuild` holds.
    pub(super) fn growth_regions_now(&self) -> Option<GrowthRegions> {
        if !self.growth_unfinished_now() {
            return None;
        }
        let reshape = self.reshape.as_ref().expect("growth");
        let record = self.reshape_record().expect("growth record");
        let old_k = record.old_geometry.data_per_stripe() as u64;
        let new_k = reshape.new_row_chunks;
        let checkpoint = reshape.checkpoint;
        assert!(
            checkpoint.is_multiple_of(new_k) || checkpoint == record.total_chunks,
            "a growth checkpoint is whole new rows"
        );
        Some(GrowthRegions {
            checkpoint_chunk: checkpoint,
            new_rows_end: checkpoint.div_ceil(new_k),
            old_rows_start: checkpoint / old_k,
        })
    }

    /// Whether a rebuild may start (or go on) beside the growth: none is
    /// unfinished, or it is paused, moves nothing, has nothing copied past
    /// its checkpoint (else one is asked for) and no window to restore
    /// from a backup. Only parity levels grow with redundancy.
    pub(super) fn growth_quiet_for_rebuild(&mut self) -> bool {
        if !self.growth_unfinished_now() {
            return true;
        }
        let record = self.reshape_record().expect("growth record");
        if record.state != ReshapeState::Paused
            || record.backup.is_some()
            || !matches!(self.geometry.level, Level::Raid5 | Level::Raid6)
        {
            return false;
        }
        let reshape = self.reshape.as_mut().expect("growth");
        if reshape.mover_busy() || reshape.backup_damaged {
            return false;
        }
        if reshape.copied_end > reshape.checkpoint {
            // The cut must be where a crash would resume: record what was
            // copied first (`pump_reshape` starts it; its end wakes us).
            reshape.checkpoint_wanted = true;
            return false;
        }
        true
    }

    /// Which stripe rebuilds row `row`: a stripe of the layout owning it,
    /// or None for the rows between (nothing to rebuild there).
    pub(super) fn rebuild_row_target(&self, row: u64) -> Option<OpTarget> {
        let rebuild = self.rebuild.as_ref().expect("rebuild");
        let Some(regions) = rebuild.growth else {
            return Some(OpTarget::current(row));
        };
        assert_eq!(
            self.growth_regions_now(),
            Some(regions),
            "the growth moved during a rebuild"
        );
        if row < regions.new_rows_end {
            Some(OpTarget::current(row))
        } else if row >= regions.old_rows_start {
            Some(OpTarget {
                epoch: Epoch::Old,
                stripe: row,
            })
        } else {
            None
        }
    }

    /// A rebuild starts beside a paused growth: say so in its reason.
    pub(super) fn note_growth_waits_for_rebuild(&mut self, targets: &[usize]) {
        if !self.growth_unfinished_now() {
            return;
        }
        let names: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        let record = self.reshape_record_mut();
        if !record.held {
            record.pause_reason = Some(format!(
                "member {} is being rebuilt; the growth goes on by itself when that is done",
                names.join(", ")
            ));
        }
    }

    /// The rebuild is done: a growth it held goes on by itself (unless the
    /// operator paused it, or a member is still missing).
    pub(super) fn resume_growth_after_rebuild(&mut self) {
        if !self.growth_unfinished_now() || self.is_degraded() {
            return;
        }
        let record = self.reshape_record_mut();
        if record.state != ReshapeState::Paused {
            return;
        }
        if record.held {
            record.pause_reason = Some("paused by the operator".into());
            self.request_superblock_write();
            return;
        }
        record.state = ReshapeState::Running;
        record.pause_reason = None;
        // `run_ready` lets the growth go on.
        self.request_superblock_write();
    }
}

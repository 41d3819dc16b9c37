//! Planning the next window: its extent, and whether it can be moved in
//! place (the reordering-window rule), needs a checkpoint first, or needs a
//! backup copy (the critical section).

use super::super::Array;
use crate::geometry::Level;
use crate::growth::config::ReshapeStrategy;
use crate::growth::fastscale::ChunkLocation;
use crate::growth::reorder_window::{RedistributionWrite, SafetyModel, Scaling};
use crate::layout::ChunkPlace;

pub(super) enum PlanOutcome {
    Window { start: u64, end: u64, backup: bool },
    CheckpointFirst,
    Stuck(String),
}

impl Array {
    pub(super) fn old_place(&self, chunk: u64) -> ChunkPlace {
        let old = &self.reshape.as_ref().expect("growth").old_layout;
        let (stripe, index) = old.locate(chunk);
        old.stripe_map(stripe).data[index]
    }

    /// The logical chunk the new layout keeps at a RAID-0 place (None on
    /// parity levels, where places hold stripes).
    pub(super) fn new_occupant(&self, member: usize, member_chunk: u64) -> Option<u64> {
        if self.geometry.level != Level::Raid0 {
            return None;
        }
        Some(match &self.superblock.placement {
            None => member_chunk * self.geometry.member_count as u64 + member as u64,
            Some(p) => p.strategy.chunk_at(
                &p.history,
                p.history.addition_count(),
                ChunkLocation::new(member as u32, member_chunk),
            ),
        })
    }

    pub(super) fn new_place(&self, chunk: u64) -> ChunkPlace {
        let (stripe, index) = self.layout.locate(chunk);
        self.layout.stripe_map(stripe).data[index]
    }

    /// Whether writing `place` now could destroy what a resumed growth (one
    /// restarting at chunk `from`) or a user of an unmoved chunk needs: the
    /// old place of a chunk at or past `from`, or any shard of an old stripe
    /// that still has such a chunk (its redundancy must stay intact).
    pub(super) fn protected(&self, place: ChunkPlace, from: u64) -> bool {
        let record = self.reshape_record().expect("growth record");
        let old = record.old_geometry;
        if place.member >= old.member_count {
            return false;
        }
        match old.level {
            Level::Raid0 => {
                let chunk = match &record.old_placement {
                    None => place.member_chunk * old.member_count as u64 + place.member as u64,
                    Some(p) => p.strategy.chunk_at(
                        &p.history,
                        p.history.addition_count(),
                        ChunkLocation::new(place.member as u32, place.member_chunk),
                    ),
                };
                chunk >= from
            }
            _ => {
                let k = old.data_per_stripe() as u64;
                let stripe = place.member_chunk;
                let map = self
                    .reshape
                    .as_ref()
                    .expect("growth")
                    .old_layout
                    .stripe_map(stripe);
                debug_assert!(map.shards().all(|p| p.member_chunk == stripe));
                // An old stripe stays whole while any of its chunks is
                // unmoved: its parity (and so its moved chunks' old copies)
                // must still rebuild that chunk if a member fails.
                map.shards().any(|p| p == place) && (stripe + 1) * k > from
            }
        }
    }

    /// Every place the window `[start, end)` writes (data that changes place,
    /// new-space zeroes, and new parity).
    pub(super) fn window_writes(&self, start: u64, end: u64) -> Vec<(u64, ChunkPlace)> {
        let record = self.reshape_record().expect("growth record");
        let old_capacity = record.old_capacity_chunks;
        let mut writes = Vec::new();
        for chunk in start..end {
            let new = self.new_place(chunk);
            if chunk >= old_capacity || self.old_place(chunk) != new {
                writes.push((chunk, new));
            }
        }
        writes
    }

    pub(super) fn window_parity_places(
        &self,
        start: u64,
        end: u64,
    ) -> Vec<(u64, usize, ChunkPlace)> {
        if self.geometry.parity_per_stripe() == 0 {
            return Vec::new();
        }
        let k = self.geometry.data_per_stripe() as u64;
        assert!(
            start.is_multiple_of(k) && end.is_multiple_of(k),
            "windows are whole new stripes"
        );
        let mut places = Vec::new();
        for stripe in start / k..end / k {
            for (i, place) in self
                .layout
                .stripe_map(stripe)
                .parity
                .into_iter()
                .enumerate()
            {
                places.push((stripe, i, place));
            }
        }
        places
    }

    /// Every place the window writes, data and parity.
    fn window_write_places(&self, start: u64, end: u64) -> Vec<ChunkPlace> {
        self.window_writes(start, end)
            .into_iter()
            .map(|(_, p)| p)
            .chain(
                self.window_parity_places(start, end)
                    .into_iter()
                    .map(|(_, _, p)| p),
            )
            .collect()
    }

    fn window_safe(&self, start: u64, end: u64, from: u64) -> bool {
        let safe = self
            .window_write_places(start, end)
            .into_iter()
            .all(|place| !self.protected(place, from));
        if safe {
            self.assert_within_reordering_window(start, end, from);
        }
        safe
    }

    /// On RAID-5, a window this rule accepts must lie within ALV's
    /// reordering window as `growth::reorder_window` computes it (tested
    /// there against brute force): two independent statements of the rule
    /// that keeps a crash or a member failure from losing data must agree.
    /// The engine's rule is the stricter (it protects an old stripe's every
    /// shard while any of its chunks is unmoved), so a disagreement is a bug.
    fn assert_within_reordering_window(&self, start: u64, end: u64, from: u64) {
        let record = self.reshape_record().expect("growth record");
        let old = record.old_geometry;
        let added = self.geometry.member_count - old.member_count;
        let Ok(scaling) = Scaling::from_geometry(&old, added) else {
            return; // not a RAID-5 growth
        };
        let k = self.geometry.data_per_stripe() as u64;
        let writes = (start..end)
            .map(RedistributionWrite::Data)
            .chain((start / k..end / k).map(RedistributionWrite::NewParity));
        for write in writes {
            let hazard = scaling.write_hazard(from, write, SafetyModel::Redundant);
            assert!(
                hazard.is_none(),
                "window {start}..{end} from checkpoint {from} passed the engine's safety \
                 rule but not the reordering window: {hazard:?}"
            );
        }
    }

    /// Where a backup of `[start, end)` would go, if it fits: the tail of
    /// the first new member, which the growth fills last.
    pub(super) fn backup_area(&self, start: u64, end: u64) -> Option<(usize, u64)> {
        let record = self.reshape_record().expect("growth record");
        let member = record.old_geometry.member_count;
        let rows = end - start;
        let member_chunks = self.geometry.member_chunks();
        let first_row = member_chunks.checked_sub(rows)?;
        let clear = self
            .window_write_places(start, end)
            .into_iter()
            .filter(|p| p.member == member)
            .all(|p| p.member_chunk < first_row);
        clear.then(|| {
            (
                member,
                self.geometry.data_offset_bytes + first_row * self.geometry.chunk_bytes,
            )
        })
    }

    /// The next window from `start` (`copied_end`, or the end of the window
    /// being written when reading ahead), or what must happen first.
    pub(super) fn plan_next_window(&self, start: u64) -> PlanOutcome {
        if self.crs_growth() {
            return self.crs_plan_next_window(start);
        }
        let reshape = self.reshape.as_ref().expect("growth");
        let record = self.reshape_record().expect("growth record");
        let config = &record.config;
        let chunk_bytes = self.geometry.chunk_bytes;
        let row = reshape.new_row_chunks;
        let size = match config.strategy {
            ReshapeStrategy::MdReshape => (config.md_window_bytes / chunk_bytes / row).max(1) * row,
            _ => (config.aggregation_bytes / chunk_bytes).max(1) * row,
        };
        let end = (start + size).min(record.total_chunks);
        let lazy = config.strategy.lazy_checkpoints();
        let sliding_max = match config.strategy {
            ReshapeStrategy::MdReshape => config.md_checkpoint_bytes * row / chunk_bytes,
            _ => config.sliding_window_bytes_max / chunk_bytes,
        }
        .max(size);
        // The limit: lazy strategies never let the copied-not-checkpointed
        // data exceed it; MD checks its gap before each step and records
        // the position once the gap has passed 3 MB.
        let over_limit = match config.strategy {
            ReshapeStrategy::MdReshape => start - reshape.checkpoint > sliding_max,
            _ => end - reshape.checkpoint > sliding_max,
        };
        if start > reshape.checkpoint && over_limit {
            return PlanOutcome::CheckpointFirst;
        }
        if self.window_safe(start, end, reshape.checkpoint) {
            return PlanOutcome::Window {
                start,
                end,
                backup: false,
            };
        }
        if lazy && start > reshape.checkpoint {
            // The sliding window has reached the reordering window's end.
            return PlanOutcome::CheckpointFirst;
        }
        // Not even one window fits the reordering window: copy it aside.
        let mut end = end;
        loop {
            if self.window_safe(start, end, end) && self.backup_area(start, end).is_some() {
                return PlanOutcome::Window {
                    start,
                    end,
                    backup: true,
                };
            }
            if end - start <= row {
                return PlanOutcome::Stuck(format!(
                    "chunks {start}..{end} cannot be moved safely, even through a backup \
                     (the members are too small for this growth)"
                ));
            }
            end = start + ((end - start) / 2).div_ceil(row).max(1) * row;
            end = end.min(record.total_chunks);
        }
    }
}

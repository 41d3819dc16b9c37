//! Online growth: one explicit, resumable state object (`Reshape`) per
//! growth, shared by every strategy.
//!
//! Data moves in logical-chunk order. Three boundaries split the old
//! capacity: chunks below `checkpoint` are durably in the new layout;
//! chunks in `[checkpoint, copied_end)` are copied but not yet checkpointed
//! (their old copies are intact, so reads use them, and a user write there
//! first forces a checkpoint); chunks from `copied_end` on are still in the
//! old layout. A window being moved blocks user I/O to its chunks only.
//!
//! Safety rests on one rule, checked for every window against the old
//! layout: no redistribution write may land on the old place of a chunk at
//! or past the checkpoint, nor on old parity that still protects one. After
//! a crash the growth restarts at the checkpoint and copies again from old
//! places that are therefore intact. Where even one window cannot obey the
//! rule (the first stripes), the window's data is first copied aside to a
//! backup area and recorded (MD's critical section).

mod control;
mod crs_window;
mod io_slots;
mod mover;
mod overlap;
mod pacing;
mod routing;
mod window;

use super::{Array, Phase};
use crate::geometry::{Geometry, Level};
use crate::growth::config::{NewMember, ReshapeConfig, ReshapeStrategy};
use crate::growth::fastscale::{GrowthStrategy, ScalingHistory};
use crate::growth::record::{Placement, ReshapeCounters, ReshapeRecord, ReshapeState};
use crate::growth::scale_crs::CrsScaledShape;
use crate::io::{ArrayEvent, TimeNs};
use crate::layout::{layout_of, layout_with, Layout};
use crate::metadata::superblock::{MemberRecord, MemberState};
use crate::stripe_code::StripeCode;
use mover::Window;
use pacing::Pacing;
use std::collections::VecDeque;
use std::sync::Arc;

pub(super) use mover::ReshapeIo;

/// The runtime state of a growth; its durable part is the superblock's
/// `ReshapeRecord`.
pub(super) struct Reshape {
    pub old_layout: Box<dyn Layout>,
    pub old_code: Option<Arc<StripeCode>>,
    /// Durable: chunks below are in the new layout.
    pub checkpoint: u64,
    /// Copied, not yet checkpointed, up to here.
    pub copied_end: u64,
    pub window: Option<Window>,
    /// The next window, read while `window` writes.
    pub ahead: Option<Window>,
    pub checkpoint_stage: Option<CheckpointStage>,
    /// A user write waits for `copied_end` to be checkpointed.
    pub checkpoint_wanted: bool,
    /// User requests waiting for a window or a checkpoint.
    pub blocked: VecDeque<crate::io::UserRequest>,
    pub pacing: Pacing,
    /// The EPU paper's device I/O budget per time slot (`io_rate_max_blocks_s`).
    pub io_slots: io_slots::IoSlots,
    /// Bytes of data written by redistribution since this run started
    /// (what the rate limits count).
    pub paced_bytes: u64,
    /// Data chunks per new-layout row: windows are multiples of it.
    pub new_row_chunks: u64,
    /// The resync found at open, run once a pending backup is restored.
    pub deferred_resync: Option<Vec<u64>>,
    /// The pending backup failed its checksum: it is not tried again.
    pub backup_damaged: bool,
    pub started_at: TimeNs,
    /// A CRS array's second or later growth: its old layout is not row
    /// major, so a logical chunk's place in the growth's order (old row
    /// times this old k, plus its data index) is looked up (None: the
    /// logical chunk is its own place).
    pub scattered_old_k: Option<u64>,
    /// EPU's I/O overlap: blocks user reads brought in (None: off).
    pub overlap: Option<overlap::OverlapBuffer>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CheckpointStage {
    Flushing,
    Recording { generation: u64 },
}

impl Reshape {
    /// Whether the data mover has a window (or the one read ahead) or a
    /// checkpoint in flight.
    pub(in crate::array) fn mover_busy(&self) -> bool {
        self.window.is_some() || self.ahead.is_some() || self.checkpoint_stage.is_some()
    }

    /// `crs_before`: a CRS array's growths before this one, oldest first.
    fn build(
        record: &ReshapeRecord,
        new_geometry: &Geometry,
        crs_before: &[CrsScaledShape],
        now: TimeNs,
    ) -> Reshape {
        let (old_layout, old_code) = if record.config.strategy.grows_crs() {
            let code = StripeCode::for_array(&record.old_geometry, crs_before)
                .expect("a validated growth record has its old code");
            (
                layout_of(&record.old_geometry, None, crs_before),
                code.map(Arc::new),
            )
        } else {
            (
                layout_with(&record.old_geometry, record.old_placement.as_ref()),
                old_code_for(&record.old_geometry),
            )
        };
        let new_row_chunks = match new_geometry.level {
            Level::Raid0 => new_geometry.member_count as u64,
            // Scale-CRS keeps rows: a row is in the new layout once its old
            // chunks are (the checkpoint counts old chunks).
            _ if record.config.strategy.grows_crs() => record.old_geometry.data_per_stripe() as u64,
            _ => new_geometry.data_per_stripe() as u64,
        };
        Reshape {
            old_layout,
            old_code,
            checkpoint: record.checkpoint_chunk,
            copied_end: record.checkpoint_chunk,
            window: None,
            ahead: None,
            checkpoint_stage: None,
            checkpoint_wanted: false,
            blocked: VecDeque::new(),
            pacing: Pacing::default(),
            io_slots: io_slots::IoSlots::default(),
            paced_bytes: 0,
            new_row_chunks,
            deferred_resync: None,
            backup_damaged: false,
            started_at: now,
            scattered_old_k: (record.config.strategy.grows_crs() && !crs_before.is_empty())
                .then_some(record.old_geometry.data_per_stripe() as u64),
            overlap: match new_geometry.level {
                Level::Crs { w, .. }
                    if record.config.strategy == ReshapeStrategy::Epu
                        && record.config.overlap_buffer_bytes > 0 =>
                {
                    Some(overlap::OverlapBuffer::new(
                        new_geometry.chunk_bytes as usize / w,
                        record.config.overlap_buffer_bytes,
                    ))
                }
                _ => None,
            },
        }
        .with_valve_started(now)
    }

    /// Where the growth's order puts `logical_chunk` (windows, `copied_end`
    /// and the checkpoint count in it).
    pub(in crate::array) fn position(&self, logical_chunk: u64) -> u64 {
        match self.scattered_old_k {
            None => logical_chunk,
            Some(old_k) => {
                let (row, index) = self.old_layout.locate(logical_chunk);
                row * old_k + index as u64
            }
        }
    }

    /// Whether any of logical chunks `[first, end)` is at a place in
    /// `[start, stop)` of the growth's order.
    pub(in crate::array) fn touches(&self, first: u64, end: u64, start: u64, stop: u64) -> bool {
        if start >= stop {
            return false;
        }
        match self.scattered_old_k {
            None => first < stop && start < end,
            Some(_) => (first..end).any(|c| (start..stop).contains(&self.position(c))),
        }
    }

    fn with_valve_started(mut self, now: TimeNs) -> Reshape {
        self.pacing.start_valve(now);
        self
    }
}

fn old_code_for(geometry: &Geometry) -> Option<Arc<StripeCode>> {
    match geometry.level {
        // The mirror's copy "code" does not change with a growth.
        Level::Raid10 => None,
        _ => StripeCode::for_geometry(geometry)
            .expect("a validated geometry has a code")
            .map(Arc::new),
    }
}

impl Array {
    /// The growth record, if one is running or paused.
    pub(super) fn reshape_active(&self) -> bool {
        self.reshape.is_some()
    }

    pub(super) fn reshape_record(&self) -> Option<&ReshapeRecord> {
        self.superblock.reshape.as_ref()
    }

    pub(in crate::array) fn reshape_record_mut(&mut self) -> &mut ReshapeRecord {
        self.superblock.reshape.as_mut().expect("growth record")
    }

    pub(super) fn reshape_config(&self) -> &ReshapeConfig {
        &self.reshape_record().expect("growth record").config
    }

    /// The code for stripes of `k` data chunks (old stripes differ mid-growth).
    pub(super) fn code_for(&self, k: usize) -> Option<Arc<StripeCode>> {
        if let Some(reshape) = &self.reshape {
            let old = self.reshape_record().expect("record").old_geometry;
            if old.data_per_stripe() == k && self.geometry.data_per_stripe() != k {
                return reshape.old_code.clone();
            }
        }
        self.code.clone()
    }

    /// Resumes a growth recorded in the superblock (called at open).
    pub(super) fn resume_reshape(&mut self) {
        let Some(record) = &self.superblock.reshape else {
            return;
        };
        if record.state == ReshapeState::Done {
            return;
        }
        let crs_before = self.superblock.crs_grown_before.clone();
        self.reshape = Some(Reshape::build(
            record,
            &self.geometry,
            &crs_before,
            self.now,
        ));
        // A growth paused by a failure retries once every member is back;
        // if the cause remains it pauses again, saying why. One the
        // operator paused stays paused, and one a rebuild holds goes on
        // when the rebuild is done.
        let rebuild_unfinished = self
            .superblock
            .rebuild
            .as_ref()
            .is_some_and(|r| r.state.unfinished() && r.replace.is_none());
        if !self.is_degraded() && !record.held && !rebuild_unfinished {
            let record = self.reshape_record_mut();
            record.state = ReshapeState::Running;
            record.pause_reason = None;
        }
    }

    /// Starts growing onto `members` (admin command).
    pub(super) fn start_grow(
        &mut self,
        members: Vec<NewMember>,
        config: ReshapeConfig,
    ) -> Result<(), String> {
        config.validate()?;
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        if self.journal.is_some() {
            // Replaying a stripe's recorded member writes after the growth
            // moved data there would bring old bytes back.
            return Err("a growth is not supported on an array with a journal".into());
        }
        if self.cache.is_some() {
            return Err(
                "a growth needs the cache policy none (restart without the cache first)".into(),
            );
        }
        if self.reshape.is_some() {
            return Err("a growth is already in progress".into());
        }
        if self.scrub_running() {
            return Err("a check or resync is running; grow when it is done".into());
        }
        if self.is_degraded() {
            return Err("the array is degraded; rebuild it before growing".into());
        }
        if self.rebuild_active() {
            return Err("a rebuild is running; grow the array when it is done".into());
        }
        if members.is_empty() {
            return Err("name at least one member to add".into());
        }
        let old = self.geometry;
        let strategy = config.strategy;
        let grows = if strategy.grows_crs() {
            "CRS arrays"
        } else if strategy.raid0_placement().is_some() {
            "RAID-0"
        } else {
            "RAID-5"
        };
        match (old.level, strategy.raid0_placement()) {
            (Level::Raid0, Some(_)) => {}
            (Level::Raid0, None) => {
                return Err(format!(
                    "{} grows {grows}; for RAID-0 use round-robin, semi-rr or fastscale",
                    strategy.name()
                ))
            }
            (Level::Raid5, None) if !strategy.grows_crs() => {}
            (Level::Raid5, _) => {
                return Err(format!(
                    "{} grows {grows}; for RAID-5 use alv or md-reshape",
                    strategy.name()
                ))
            }
            // A grown CRS array grows again over its grown layout.
            (Level::Crs { .. }, _) if strategy.grows_crs() => {}
            (Level::Crs { .. }, _) => {
                return Err(format!(
                    "{} grows {grows}; for CRS use scale-crs or epu",
                    strategy.name()
                ))
            }
            (level, _) => {
                return Err(format!(
                    "growing {} is not supported yet (RAID-0 and RAID-5 are)",
                    level.name()
                ))
            }
        }
        let needed_bytes = old.data_offset_bytes + old.member_data_bytes;
        for member in &members {
            if member.size_bytes < needed_bytes {
                return Err(format!(
                    "{} is {} bytes; every member of this array needs at least {needed_bytes}",
                    member.path_hint, member.size_bytes
                ));
            }
            if !crate::metadata::superblock::is_valid_uuid(&member.uuid) {
                return Err(format!(
                    "{}: member uuid {:?} is not valid",
                    member.path_hint, member.uuid
                ));
            }
            if self
                .superblock
                .members
                .iter()
                .any(|m| m.uuid == member.uuid)
            {
                return Err(format!("{} is already a member", member.path_hint));
            }
        }
        let new_count = old.member_count + members.len();
        let new_geometry = Geometry {
            member_count: new_count,
            ..old
        };
        if new_count > crate::geometry::MEMBER_COUNT_MAX {
            return Err(format!(
                "{new_count} members is more than the {} an array can have",
                crate::geometry::MEMBER_COUNT_MAX
            ));
        }
        let crs_scaled = strategy.grows_crs().then(|| CrsScaledShape {
            old_data_members: old.data_per_stripe(),
            parity_members: old.parity_per_stripe(),
            added_members: members.len(),
            matrix: config.crs_matrix,
        });
        // The CRS growths before this one (the last growth, if any, is done).
        let crs_before = self.superblock.crs_growths();
        let new_code = match crs_scaled {
            Some(shape) => {
                // A Cauchy matrix needs k + t + m distinct points of GF(2^w).
                let growths: Vec<CrsScaledShape> =
                    crs_before.iter().copied().chain([shape]).collect();
                Some(
                    StripeCode::for_array(&new_geometry, &growths)
                        .map_err(|e| format!("cannot grow to {new_count} members: {e}"))?
                        .map(Arc::new),
                )
            }
            None => None,
        };
        // RAID-0 placement after the growth.
        let old_placement = self.superblock.placement.clone();
        let new_placement = match strategy.raid0_placement() {
            // Back to round-robin from a FastScale or Semi-RR placement would
            // be an arbitrary permutation: a window's writes would land on
            // chunks far past it, which neither the window rule nor a backup
            // of the window covers.
            Some(GrowthStrategy::RoundRobin) if old_placement.is_some() => {
                let p = old_placement.as_ref().expect("placement");
                return Err(format!(
                    "this array was grown with {}; grow it again with {}",
                    p.strategy.name(),
                    p.strategy.name()
                ));
            }
            None | Some(GrowthStrategy::RoundRobin) => None,
            Some(wanted) => {
                let mut history = match &old_placement {
                    Some(p) if p.strategy == wanted => p.history.clone(),
                    Some(p) => {
                        return Err(format!(
                            "this array was grown with {}; grow it again with {}",
                            p.strategy.name(),
                            p.strategy.name()
                        ))
                    }
                    None => ScalingHistory::new(old.member_count as u32, old.member_chunks())
                        .map_err(|e| e.to_string())?,
                };
                history
                    .add(members.len() as u32)
                    .map_err(|e| e.to_string())?;
                Some(Placement {
                    strategy: wanted,
                    history,
                })
            }
        };
        let old_capacity_chunks = old.capacity_bytes() / old.chunk_bytes;
        let total_chunks = match old.level {
            Level::Raid0 => old_capacity_chunks,
            // Scale-CRS walks the old data; the added space is zeroed
            // unit by unit as it goes.
            _ if crs_scaled.is_some() => old_capacity_chunks,
            _ => new_geometry.capacity_bytes() / new_geometry.chunk_bytes,
        };
        let record = ReshapeRecord {
            config,
            old_geometry: old,
            old_placement,
            checkpoint_chunk: 0,
            total_chunks,
            old_capacity_chunks,
            backup: None,
            state: ReshapeState::Running,
            pause_reason: None,
            held: false,
            counters: ReshapeCounters::default(),
        };
        // The new shape is recorded before any data moves; until the
        // growth is done the capacity stays the old one.
        for member in members {
            self.superblock.members.push(MemberRecord {
                uuid: member.uuid,
                state: MemberState::Active,
                path_hint: member.path_hint,
                failure: None,
                absent_unwritten_since_events: None,
                re_add_from_events: None,
            });
            self.present.push(true);
            // The driver serves the new members as its next devices.
            self.slot_device.push(self.device_count);
            self.device_count += 1;
        }
        self.geometry = new_geometry;
        self.superblock.geometry = new_geometry;
        self.superblock.placement = new_placement;
        if crs_scaled.is_some() {
            self.superblock.crs_grown_before = crs_before.clone();
        }
        self.superblock.crs_scaled = crs_scaled;
        self.layout = layout_of(
            &new_geometry,
            self.superblock.placement.as_ref(),
            &self.superblock.crs_growths(),
        );
        self.code = match new_code {
            Some(code) => code,
            None => old_code_for(&new_geometry).or_else(|| self.code.clone()),
        };
        self.superblock.reshape = Some(record);
        let reshape = Reshape::build(
            self.superblock.reshape.as_ref().expect("record"),
            &new_geometry,
            &crs_before,
            self.now,
        );
        self.reshape = Some(reshape);
        // New members get the bitmap and the superblock; no window starts
        // until that superblock is durable (see `pump_reshape`).
        let generation = self.request_joining_write((old.member_count..new_count).collect());
        self.reshape.as_mut().expect("growth").checkpoint_stage =
            Some(CheckpointStage::Recording { generation });
        Ok(())
    }

    /// Pauses the growth, saying why; user I/O goes on.
    pub(super) fn pause_reshape(&mut self, reason: String) {
        let record = self.reshape_record_mut();
        if record.state == ReshapeState::Paused {
            return;
        }
        record.state = ReshapeState::Paused;
        record.pause_reason = Some(reason.clone());
        self.outbox_event
            .push_back(ArrayEvent::ReshapePaused { reason });
        self.request_superblock_write();
        // A spare may take a failed slot over now.
        self.ready.push(super::Ready::Rebuild);
    }

    /// The last window is checkpointed: the array has its new shape.
    fn finish_reshape(&mut self) {
        let reshape = self.reshape.take().expect("growth");
        assert!(reshape.blocked.is_empty() && reshape.window.is_none() && reshape.ahead.is_none());
        let record = self.reshape_record_mut();
        record.state = ReshapeState::Done;
        record.backup = None;
        self.request_superblock_write();
        self.outbox_event.push_back(ArrayEvent::ReshapeFinished {
            member_count: self.geometry.member_count,
            capacity_bytes: self.capacity_bytes(),
        });
    }

    /// The capacity users see: the old one until a growth is done.
    pub(super) fn visible_capacity_bytes(&self) -> u64 {
        match (&self.reshape, self.reshape_record()) {
            (Some(_), Some(record)) => record.old_capacity_chunks * self.geometry.chunk_bytes,
            _ => self.geometry.capacity_bytes(),
        }
    }

    /// The growth part of the status JSON.
    pub(super) fn reshape_status_json(&self) -> Option<serde_json::Value> {
        let record = self.reshape_record()?;
        let chunk = self.geometry.chunk_bytes;
        let (copied_end, rate, blocked) = match &self.reshape {
            Some(r) => (
                r.copied_end,
                r.pacing.rate_bytes_s(self.now, r.paced_bytes),
                r.blocked.len(),
            ),
            None => (record.total_chunks, 0.0, 0),
        };
        let progress = if record.total_chunks == 0 {
            1.0
        } else {
            copied_end as f64 / record.total_chunks as f64
        };
        let c = record.counters;
        let mut fields = record.recorded_json(self.geometry.member_count, chunk);
        let live = serde_json::json!({
            "progress": progress,
            "processed_bytes": copied_end * chunk,
            "rate_bytes_s": rate,
            "blocked_requests": blocked,
            "valve_periods": c.valve_periods,
            "valve_closed_periods": c.valve_closed_periods,
            "throttle": self.reshape.as_ref().map(|r| serde_json::json!({
                "user_io_age_ms": r.pacing.last_user_io.map(|t| self.now.0.saturating_sub(t.0) / 1_000_000),
                "wait_ms": r.pacing.not_before.0.saturating_sub(self.now.0) / 1_000_000,
                "paced_bytes": r.paced_bytes,
            })),
            "elapsed_s": self.reshape.as_ref().map(|r| (self.now.0.saturating_sub(r.started_at.0)) as f64 / 1e9),
            "window": self.reshape.as_ref().and_then(|r| r.window.as_ref()).map(|w| serde_json::json!({
                "start_bytes": w.start * chunk,
                "end_bytes": w.end * chunk,
                "stage": format!("{:?}", w.stage),
                "backup": w.backup,
            })),
            "window_ahead": self.reshape.as_ref().and_then(|r| r.ahead.as_ref()).map(|w| serde_json::json!({
                "start_bytes": w.start * chunk,
                "end_bytes": w.end * chunk,
                "stage": format!("{:?}", w.stage),
            })),
            "waiting_for": self.reshape_waiting_for(),
            "checkpoint_wanted": self.reshape.as_ref().map(|r| r.checkpoint_wanted),
            "checkpointing": self.reshape.as_ref().and_then(|r| r.checkpoint_stage).map(|c| format!("{c:?}")),
        });
        if let serde_json::Value::Object(live) = live {
            fields.extend(live);
        }
        Some(serde_json::Value::Object(fields))
    }

    /// What the growth waits for now, in words (for `detail`).
    fn reshape_waiting_for(&self) -> Option<String> {
        let reshape = self.reshape.as_ref()?;
        let record = self.reshape_record()?;
        let why = if reshape.checkpoint_stage.is_some() {
            "a checkpoint".to_string()
        } else if let Some(w) = &reshape.window {
            format!("window {}..{} ({:?})", w.start, w.end, w.stage)
        } else if reshape.ahead.is_some() {
            "the window read ahead".to_string()
        } else if reshape.checkpoint_wanted {
            "a checkpoint to start".to_string()
        } else if self.phase != Phase::Running {
            "the array to run".to_string()
        } else if record.state != ReshapeState::Running {
            "nothing (paused)".to_string()
        } else if self.scrub_running() {
            "a resync or check".to_string()
        } else if let Some(t) = reshape
            .pacing
            .gate(self.now, reshape.paced_bytes, &record.config)
        {
            format!(
                "rate control until {} ms from now",
                t.0.saturating_sub(self.now.0) / 1_000_000
            )
        } else {
            match self.plan_next_window(reshape.copied_end) {
                window::PlanOutcome::Window { start, end, backup } => {
                    format!("nothing: next window {start}..{end} (backup {backup}) is ready")
                }
                window::PlanOutcome::CheckpointFirst => "a checkpoint first".to_string(),
                window::PlanOutcome::Stuck(reason) => reason,
            }
        };
        Some(why)
    }

    pub(super) fn reshape_backup_pending(&self) -> bool {
        self.reshape.is_some() && self.reshape_record().is_some_and(|r| r.backup.is_some())
    }

    pub(super) fn defer_resync(&mut self, regions: Vec<u64>) {
        self.reshape.as_mut().expect("growth").deferred_resync = Some(regions);
    }

    /// When the growth next needs a tick: a paced wait or a valve period.
    pub(super) fn reshape_timeout(&self) -> Option<TimeNs> {
        let reshape = self.reshape.as_ref()?;
        if !self.reshape_runnable() {
            return None;
        }
        let config = self.reshape_config();
        let idle = !reshape.mover_busy();
        let paced =
            (idle && reshape.pacing.not_before > self.now).then_some(reshape.pacing.not_before);
        // A run period that is over while its window is in flight ends
        // when the window does (an I/O completion, not a tick): a boundary
        // already past would be due at once, again and again.
        let valve = (config.strategy == ReshapeStrategy::Alv)
            .then(|| reshape.pacing.next_valve_boundary(config))
            .flatten()
            .filter(|&t| t > self.now);
        [paced, valve].into_iter().flatten().min()
    }

    /// Whether user I/O must be paced against the growth (valve bookkeeping).
    pub(super) fn reshape_strategy(&self) -> Option<ReshapeStrategy> {
        self.reshape
            .as_ref()
            .map(|_| self.reshape_config().strategy)
    }
}

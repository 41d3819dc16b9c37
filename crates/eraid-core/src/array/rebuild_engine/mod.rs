//! Rebuild: one explicit, resumable state object per rebuild, a sibling of
//! the growth engine. Each stripe goes through the normal stripe pipeline
//! (`OpKind::Rebuild`, under the stripe lock), reads the surviving shards,
//! reconstructs the targets' shards and writes them to the replacements. A
//! window of stripes is in flight at once. Which stripe comes next is the
//! strategy's (`order`): address order for PR (Linux MD's pipelined
//! rebuild, `pacing`) and DOR (RAIDframe's disk-oriented reconstruction,
//! `dor`), PRO's hot zones by popularity (`zone_scheduler`,
//! `access_monitor`) on top of either.
//!
//! `map` (PRO's RBT, `rebuilt_map`) says which stripes are rebuilt: users
//! read a target's chunks there from the replacement (redirection of
//! reads) and reconstruct them elsewhere; their writes go to the
//! replacement everywhere, and a write that rewrites a target's whole chunk
//! marks its stripe rebuilt. The map (the prefix below which every stripe
//! is rebuilt, and a compact bitmap of the units past it) is recorded in the
//! superblocks only after a flush made those stripes durable on the
//! replacements, every `checkpoint_bytes` and when the array closes, so a
//! crash resumes from the record, never from zero and never past what is
//! on the replacement.
//!
//! A re-add (`readd`) is a rebuild whose map starts with every stripe
//! outside the write-intent bitmap's marked regions rebuilt already, so
//! every strategy's order copies only the marked ones; `copied_bytes`
//! counts what it actually copied.

mod access_monitor;
mod dor;
mod growth_regions;
mod members;
mod order;
mod pacing;
mod readd;
mod rebuilt_map;
mod redirect;
mod replace;
pub(super) use replace::WriteDevices;
mod status;
mod zone_scheduler;

use super::locks::LockMode;
use super::op::{OpKind, Parent};
use super::{Array, FlushPurpose, Phase, Ready};
use crate::io::{ArrayEvent, TimeNs, UserError};
use crate::metadata::superblock::MemberState;
use crate::rebuild::config::RebuildConfig;
use crate::rebuild::record::{
    RebuildCounters, RebuildKind, RebuildRecord, RebuildState, RebuiltUnits,
};
use dor::DiskProcesses;
use growth_regions::GrowthRegions;
use order::RebuildOrder;
use pacing::RebuildPacing;
use rebuilt_map::RebuiltMap;
use std::collections::BTreeMap;

/// Where a checkpoint (or the final record) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CheckpointStage {
    /// The members are being flushed.
    Flushing,
    /// The superblock with the new position is being written.
    Recording { generation: u64 },
}

/// What a checkpoint records once its flush is done: the map as it was
/// when the flush was issued.
struct Snapshot {
    prefix: u64,
    units: Option<RebuiltUnits>,
    done_stripes: u64,
    copied_bytes: u64,
}

/// The runtime state of a rebuild; its durable part is the superblock's
/// `RebuildRecord`.
pub(super) struct Rebuild {
    /// Unique to this run (`Array::next_rebuild_pass`; a new one when the
    /// pass starts again from stripe 0 because a replacement joined):
    /// stripes and flushes of an earlier pass or run are ignored.
    pub pass: u64,
    /// The member slots being rebuilt (as in the record).
    pub targets: Vec<usize>,
    /// Which stripes are rebuilt (PRO's RBT).
    pub map: RebuiltMap,
    order: RebuildOrder,
    /// Stripe ops of this pass in flight, with the members each reads.
    inflight: BTreeMap<u64, Vec<usize>>,
    /// DOR's per-disk reconstruction processes (counted for every strategy,
    /// a limit for DOR's only).
    disks: DiskProcesses,
    /// Stripes rebuilt as of the last record.
    recorded_done: u64,
    /// Bytes of each target reconstructed and written by this rebuild's
    /// stripe ops (what a re-add reports as rebuilt).
    pub copied_bytes: u64,
    /// A re-add: how many bitmap regions it copies (None: a full rebuild).
    pub marked_regions: Option<u64>,
    snapshot: Option<Snapshot>,
    pub checkpoint: Option<CheckpointStage>,
    pub pacing: RebuildPacing,
    /// Where this run started (for the status' elapsed time).
    pub started_at: TimeNs,
    /// A replace copying a serving member (then `targets` is empty).
    pub replace: Option<replace::ReplaceRun>,
    /// The replace's last stripe is copied: `replace` names the old
    /// member's device, retired once the record naming the new is durable.
    pub replace_done: bool,
    /// Beside a paused growth: where its rows change layout (the rows'
    /// stripes are rebuilt in the layout owning them, `growth_regions`).
    pub growth: Option<GrowthRegions>,
}

impl Rebuild {
    /// `pass` comes from `Array::next_rebuild_pass`: unique, so the
    /// stripes of a rebuild or replace that stopped are never taken for
    /// those of the next one.
    #[allow(clippy::too_many_arguments)]
    fn new(
        pass: u64,
        targets: Vec<usize>,
        map: RebuiltMap,
        config: &RebuildConfig,
        members: usize,
        member_data_bytes: u64,
        total_stripes: u64,
        now: TimeNs,
    ) -> Rebuild {
        Rebuild {
            pass,
            targets,
            recorded_done: map.done_stripes(),
            copied_bytes: 0,
            marked_regions: None,
            map,
            order: RebuildOrder::new(config, total_stripes, member_data_bytes),
            inflight: BTreeMap::new(),
            disks: DiskProcesses::new(members, config.dor_reads_ahead),
            snapshot: None,
            checkpoint: None,
            pacing: RebuildPacing::default(),
            started_at: now,
            replace: None,
            replace_done: false,
            growth: None,
        }
    }

    /// Every stripe below is rebuilt.
    pub fn position(&self) -> u64 {
        self.map.prefix()
    }

    pub fn done_stripes(&self) -> u64 {
        self.map.done_stripes()
    }
}

impl Array {
    fn next_rebuild_pass(&mut self) -> u64 {
        self.rebuild_passes += 1;
        self.rebuild_passes
    }

    pub(super) fn rebuild_active(&self) -> bool {
        self.rebuild.is_some()
    }

    /// A rebuild runs that restores redundancy (not a replace, which
    /// copies a member that still serves).
    pub(super) fn rebuild_restoring(&self) -> bool {
        self.rebuild.as_ref().is_some_and(|r| !r.targets.is_empty())
    }

    pub(super) fn rebuild_record(&self) -> Option<&RebuildRecord> {
        self.superblock.rebuild.as_ref()
    }

    fn rebuild_record_mut(&mut self) -> &mut RebuildRecord {
        self.superblock.rebuild.as_mut().expect("rebuild record")
    }

    /// The member is a replacement being rebuilt.
    pub(super) fn is_rebuild_target(&self, member: usize) -> bool {
        self.rebuild
            .as_ref()
            .is_some_and(|r| r.targets.contains(&member))
    }

    /// Whether `member`'s shard of current-layout `stripe` holds its data:
    /// present, and not a replacement's shard the rebuild has not rebuilt.
    pub(super) fn shard_readable(&self, member: usize, stripe: u64) -> bool {
        self.present[member]
            && self
                .rebuild
                .as_ref()
                .is_none_or(|r| !r.targets.contains(&member) || r.map.is_rebuilt(stripe))
    }

    /// Bytes of each target rebuilt so far, for the rate and the status:
    /// what a re-add copied (the stripes it skips cost nothing), every
    /// rebuilt stripe for a full rebuild.
    fn rebuild_progress_bytes(&self) -> u64 {
        let rebuild = self.rebuild.as_ref().expect("rebuild");
        match rebuild.marked_regions {
            Some(_) => rebuild.copied_bytes,
            None => self.rebuilt_bytes_at(rebuild.done_stripes()),
        }
    }

    /// Bytes of each replacement in `stripes` stripes.
    fn rebuilt_bytes_at(&self, stripes: u64) -> u64 {
        let total = self.geometry.stripe_count().max(1);
        (stripes as u128 * self.geometry.member_data_bytes as u128 / total as u128) as u64
    }

    /// A new runtime rebuild of `targets` with `map` rebuilt already, with
    /// a pass number of its own.
    fn new_rebuild(
        &mut self,
        targets: Vec<usize>,
        map: RebuiltMap,
        config: &RebuildConfig,
    ) -> Rebuild {
        let pass = self.next_rebuild_pass();
        let mut rebuild = Rebuild::new(
            pass,
            targets,
            map,
            config,
            self.geometry.member_count,
            self.geometry.member_data_bytes,
            self.geometry.stripe_count(),
            self.now,
        );
        rebuild.growth = self.growth_regions_now();
        rebuild
    }

    /// Resumes a rebuild recorded in the superblock (called at open).
    /// `bitmap_whole`: every present member's bitmap was read, so a
    /// re-add may trust it; otherwise it goes on as a full rebuild.
    pub(super) fn resume_rebuild(&mut self, bitmap_whole: bool) {
        let present = self.present.clone();
        let stripes = self.geometry.stripe_count();
        let growth_cut = self.growth_regions_now().map(|r| r.checkpoint_chunk);
        let growth_backup_pending = self.reshape_backup_pending();
        let Some(record) = &mut self.superblock.rebuild else {
            return;
        };
        if !record.state.unfinished() {
            return;
        }
        if record.replace.is_some() {
            self.resume_replace();
            return;
        }
        record.targets.retain(|&t| present[t]);
        if record.targets.is_empty() || record.total_stripes != stripes {
            record.state = RebuildState::Stopped;
            record.reason =
                Some("its replacement was missing or stale when the array started".into());
            return;
        }
        // Refused at decode (`check_lifecycle_fields`): a window's rewrite
        // from its backup would move the rows' cut under the rebuild.
        assert!(
            !growth_backup_pending,
            "an unfinished rebuild beside a growth window awaiting its backup"
        );
        if !record.held {
            record.state = RebuildState::Running;
        }
        if record.growth_checkpoint_chunk != growth_cut {
            // Rebuilt against another cut of the rows (or none): the map
            // says nothing about this one; every row is rebuilt again.
            record.growth_checkpoint_chunk = growth_cut;
            record.checkpoint_stripe = 0;
            record.rebuilt_units = None;
            record.counters.copied_bytes = 0;
            record.counters.restarts += 1;
        }
        // Checked at decode; a map that no longer decodes only costs redoing.
        let bits = record
            .rebuilt_units
            .as_ref()
            .and_then(|m| m.decode(stripes).ok());
        let map = RebuiltMap::from_record(stripes, record.checkpoint_stripe, bits.as_deref());
        if record.kind == RebuildKind::ReAdd && !bitmap_whole {
            // What the record holds is current on the targets either way;
            // every other stripe is copied.
            record.kind = RebuildKind::Full;
        }
        let re_add = record.kind == RebuildKind::ReAdd;
        let copied_bytes = record.counters.copied_bytes;
        let (targets, config) = (record.targets.clone(), record.config.clone());
        let mut rebuild = self.new_rebuild(targets, map, &config);
        rebuild.copied_bytes = copied_bytes;
        if re_add {
            // The marks are kept until the re-add is done, and writes made
            // since it started are on the targets: the regions marked now
            // cover what it still has to copy.
            self.skip_unmarked_regions(&mut rebuild);
        }
        self.rebuild = Some(rebuild);
    }

    /// A user request for `len_bytes` at `offset_bytes` arrived: PRO's
    /// access monitor counts it once in each hot zone it touches.
    pub(super) fn rebuild_note_user_access(&mut self, offset_bytes: u64, len_bytes: u64) {
        let Some(rebuild) = &self.rebuild else {
            return;
        };
        if rebuild.order.zones_ref().is_none() || len_bytes == 0 || self.reshape.is_some() {
            return;
        }
        let chunk = self.geometry.chunk_bytes;
        let first = self.route_chunk(offset_bytes / chunk).0.stripe;
        let last = self
            .route_chunk((offset_bytes + len_bytes - 1) / chunk)
            .0
            .stripe;
        let now = self.now;
        let zones = self
            .rebuild
            .as_mut()
            .and_then(|r| r.order.zones())
            .expect("checked above");
        let (low, high) = (first.min(last), first.max(last));
        for zone in zones.zone_of(low)..=zones.zone_of(high) {
            zones.user_access(zone, now);
        }
    }

    /// The rebuild's next step (`Ready::Rebuild`): a spare takes a failed
    /// slot over, then stripes start up to the window and the rate, and a
    /// checkpoint or the end is recorded when due.
    pub(super) fn pump_rebuild(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        self.take_over_failed_slots();
        let Some(record) = self.superblock.rebuild.clone() else {
            return;
        };
        if self.rebuild.is_none() {
            return;
        }
        // The window goes on during a checkpoint; stripes without a target
        // shard finish here without I/O.
        if record.state == RebuildState::Running {
            self.start_rebuild_stripes(&record.config);
        }
        let rebuild = self.rebuild.as_ref().expect("rebuild");
        if rebuild.checkpoint.is_some() {
            return;
        }
        let interval = self
            .geometry
            .stripe_count()
            .saturating_mul(record.config.checkpoint_bytes)
            / self.geometry.member_data_bytes.max(1);
        let done_stripes = rebuild.done_stripes();
        let done = rebuild.map.complete() && rebuild.inflight.is_empty();
        let due = done_stripes >= rebuild.recorded_done.saturating_add(interval.max(1));
        // Paused: what was rebuilt is recorded once the window is in.
        let paused_with_news = record.state == RebuildState::Paused
            && rebuild.inflight.is_empty()
            && done_stripes > rebuild.recorded_done;
        if done || due || paused_with_news {
            self.start_rebuild_checkpoint();
        }
    }

    /// Starts stripes up to the window, in the strategy's order, skipping
    /// those without a target shard, while the rate (PR) or the disks'
    /// buffers (DOR) allow.
    fn start_rebuild_stripes(&mut self, config: &RebuildConfig) {
        let total = self.geometry.stripe_count();
        let disk_oriented = config.strategy.disk_oriented();
        loop {
            let now = self.now;
            let last_user = self.last_user_request;
            let rebuilt = self.rebuild_progress_bytes();
            let rebuild = self.rebuild.as_mut().expect("rebuild");
            if rebuild.inflight.len() as u64 >= config.window_stripes {
                break;
            }
            // DOR takes whatever bandwidth users leave: its I/O is below
            // theirs instead of rate-limited.
            if !disk_oriented {
                if let Some(wake) = rebuild.pacing.gate(now, rebuilt, config, last_user) {
                    rebuild.pacing.not_before = wake;
                    break;
                }
            }
            let Rebuild {
                order,
                map,
                inflight,
                ..
            } = rebuild;
            let Some(stripe) = order.next(now, map, total, &|s| inflight.contains_key(&s)) else {
                break;
            };
            let pass = rebuild.pass;
            // Beside a paused growth, the row's stripe in the layout that
            // owns it (none: a row the growth rewrites whole later).
            let target = self.rebuild_row_target(stripe);
            let stripe_map = target.map(|t| self.stripe_map_of(t));
            let has_work = stripe_map.as_ref().is_some_and(|map| {
                map.shards()
                    .any(|p| self.is_rebuild_target(p.member) || self.is_replace_source(p.member))
            });
            if !has_work {
                self.rebuild_stripe_finished(stripe, 0);
                continue;
            }
            let (target, stripe_map) = (target.expect("has work"), stripe_map.expect("has work"));
            let sources: Vec<usize> = stripe_map
                .shards()
                .map(|p| p.member)
                .filter(|&m| self.shard_readable(m, stripe))
                .collect();
            let rebuild = self.rebuild.as_mut().expect("rebuild");
            if disk_oriented && !rebuild.disks.has_room(&sources) {
                break;
            }
            rebuild.disks.started(&sources);
            rebuild.inflight.insert(stripe, sources);
            self.create_op(
                Parent::Rebuild { pass },
                target,
                OpKind::Rebuild,
                LockMode::Exclusive,
                Default::default(),
            );
        }
    }

    /// `stripe` is rebuilt; `copied_bytes` of each target were written for
    /// it by the rebuild (none when users rewrote it or it has no target
    /// shard).
    fn rebuild_stripe_finished(&mut self, stripe: u64, copied_bytes: u64) {
        let now = self.now;
        let rebuild = self.rebuild.as_mut().expect("rebuild");
        rebuild.map.mark(stripe);
        rebuild.copied_bytes += copied_bytes;
        let rebuilt = self.rebuild_progress_bytes();
        self.rebuild
            .as_mut()
            .expect("rebuild")
            .pacing
            .note(now, rebuilt);
    }

    /// A user write of pass `pass` rewrote every target's whole chunk of
    /// `stripe`: it is rebuilt (once the write is durable, a checkpoint may
    /// record it like any other).
    pub(super) fn rebuild_stripe_written_by_user(&mut self, pass: u64, stripe: u64) {
        if self.rebuild.as_ref().is_some_and(|r| r.pass == pass) {
            self.rebuild_stripe_finished(stripe, 0);
            self.ready.push(Ready::Rebuild);
        }
    }

    /// The pass of the running rebuild, if `stripe` has a target shard it
    /// has not rebuilt (a user write there may rebuild it).
    pub(super) fn rebuild_pass_needing(&self, stripe: u64) -> Option<u64> {
        let rebuild = self.rebuild.as_ref()?;
        (!rebuild.map.is_rebuilt(stripe)).then_some(rebuild.pass)
    }

    /// A rebuild stripe op finished (`error`: it could not be rebuilt).
    pub(super) fn rebuild_op_done(&mut self, pass: u64, stripe: u64, error: Option<UserError>) {
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        if rebuild.pass != pass {
            return;
        }
        let sources = rebuild
            .inflight
            .remove(&stripe)
            .expect("a rebuild stripe in flight");
        rebuild.disks.finished(&sources);
        if let Some(error) = error {
            self.stop_rebuild(format!("stripe {stripe} could not be rebuilt: {error}"));
            return;
        }
        self.rebuild_stripe_finished(stripe, self.geometry.chunk_bytes);
        self.ready.push(Ready::Rebuild);
    }

    /// Flushes the members so the stripes rebuilt now are durable, then
    /// records them (`rebuild_checkpoint_flushed`).
    fn start_rebuild_checkpoint(&mut self) {
        let rebuild = self.rebuild.as_mut().expect("rebuild");
        if rebuild.checkpoint.is_some() {
            return;
        }
        rebuild.checkpoint = Some(CheckpointStage::Flushing);
        rebuild.snapshot = Some(Snapshot {
            prefix: rebuild.map.prefix(),
            units: rebuild.map.recorded(),
            done_stripes: rebuild.map.done_stripes(),
            copied_bytes: rebuild.copied_bytes,
        });
        let (pass, position) = (rebuild.pass, rebuild.map.prefix());
        self.flush_members(FlushPurpose::RebuildCheckpoint { pass, position });
    }

    /// The flush before a checkpoint finished: record the map, or, at the
    /// end, the replacements as active members.
    pub(super) fn rebuild_checkpoint_flushed(
        &mut self,
        pass: u64,
        _position: u64,
        member_failed: bool,
    ) {
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        if rebuild.pass != pass {
            return;
        }
        rebuild.checkpoint = None;
        let snapshot = rebuild.snapshot.take().expect("a checkpoint's snapshot");
        self.ready.push(Ready::Rebuild);
        // A member failed under the flush: what it covered is not known
        // to be durable; a later checkpoint records it.
        if member_failed {
            return;
        }
        let total = self.geometry.stripe_count();
        let complete = snapshot.done_stripes == total;
        if snapshot.done_stripes <= rebuild.recorded_done && !complete {
            return;
        }
        rebuild.recorded_done = snapshot.done_stripes;
        let targets = rebuild.targets.clone();
        let record = self.rebuild_record_mut();
        record.checkpoint_stripe = record.checkpoint_stripe.max(snapshot.prefix);
        record.rebuilt_units = snapshot.units;
        record.counters.copied_bytes = record.counters.copied_bytes.max(snapshot.copied_bytes);
        record.counters.checkpoints += 1;
        if complete {
            record.state = RebuildState::Done;
            record.held = false;
            record.rebuilt_units = None;
            for &target in &targets {
                let member = &mut self.superblock.members[target];
                member.state = MemberState::Active;
                member.failure = None;
                member.re_add_from_events = None;
            }
            self.replace_copied();
        }
        self.request_superblock_write();
        let generation = self.metadata.superblock_requested;
        self.rebuild.as_mut().expect("rebuild").checkpoint =
            Some(CheckpointStage::Recording { generation });
    }

    /// A superblock write is durable: a checkpoint (or the end) recorded.
    pub(super) fn rebuild_superblock_durable(&mut self) {
        let durable = self.metadata.superblock_durable;
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        let Some(CheckpointStage::Recording { generation }) = rebuild.checkpoint else {
            return;
        };
        if generation > durable {
            return;
        }
        rebuild.checkpoint = None;
        self.ready.push(Ready::Rebuild);
        if self
            .rebuild_record()
            .is_some_and(|r| r.state == RebuildState::Done)
        {
            self.finish_rebuild();
        }
    }

    /// The replacements are recorded active: the rebuild is over.
    fn finish_rebuild(&mut self) {
        let rebuild = self.rebuild.take().expect("rebuild");
        if let Some(run) = rebuild.replace {
            self.retire_replaced(run);
            return;
        }
        // A rebuilt stripe's parity agrees with its data (suspect parity
        // was rewritten on the way), so regions a resync had to skip for
        // want of these members are consistent now. Not so for mirrors: the
        // rebuild copied only the replaced member's chunks, and copies on
        // two surviving members that a crash left different still differ,
        // so those regions are resynced now (still pinned until done).
        if !self.is_degraded() {
            let regions = std::mem::take(&mut self.unresynced_regions);
            let mirrored = self.geometry.level == crate::geometry::Level::Raid10;
            if mirrored && !regions.is_empty() && !self.scrub_running() {
                self.start_resync(regions);
            } else if mirrored && !regions.is_empty() {
                // A check runs: the resync waits for it (`pump_scrub`).
                self.unresynced_regions = regions;
            } else {
                for region in regions {
                    self.intent.pinned.remove(&region);
                }
            }
        }
        self.resume_growth_after_rebuild();
        self.outbox_event.push_back(ArrayEvent::RebuildFinished {
            members: rebuild.targets,
        });
    }

    /// The rebuild cannot go on: its targets keep only part of their data,
    /// so they are failed (a spare may start a new one).
    pub(super) fn stop_rebuild(&mut self, reason: String) {
        let Some(rebuild) = self.rebuild.take() else {
            return;
        };
        for &target in &rebuild.targets {
            self.present[target] = false;
            let member = &mut self.superblock.members[target];
            member.state = MemberState::Faulty;
            member.failure = Some(crate::metadata::superblock::bounded_failure_reason(
                &format!("rebuild stopped: {reason}"),
            ));
        }
        let record = self.rebuild_record_mut();
        record.state = RebuildState::Stopped;
        record.reason = Some(reason.clone());
        record.rebuilt_units = None;
        self.request_superblock_write();
        self.outbox_event
            .push_back(ArrayEvent::RebuildStopped { reason });
    }

    /// `member` failed: a target leaves the rebuild (which stops when none
    /// is left).
    pub(super) fn rebuild_member_failed(&mut self, member: usize, reason: &str) {
        if self.is_replace_source(member) {
            self.replace_source_failed(member);
            return;
        }
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        if !rebuild.targets.contains(&member) {
            return;
        }
        rebuild.targets.retain(|&t| t != member);
        let left = rebuild.targets.clone();
        self.rebuild_record_mut().targets = left.clone();
        if left.is_empty() {
            self.stop_rebuild(format!(
                "its replacement, member {member}, failed: {reason}"
            ));
        }
    }

    /// The array closes: every finished rebuild stripe has just been
    /// flushed, so the map may be recorded by the closing superblock.
    pub(super) fn rebuild_note_durable_at_close(&mut self) {
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        let (prefix, units, done, copied_bytes) = (
            rebuild.map.prefix(),
            rebuild.map.recorded(),
            rebuild.map.done_stripes(),
            rebuild.copied_bytes,
        );
        if let Some(record) = &mut self.superblock.rebuild {
            if record.state.unfinished() && done > rebuild.recorded_done {
                rebuild.recorded_done = done;
                record.checkpoint_stripe = record.checkpoint_stripe.max(prefix);
                record.rebuilt_units = units;
                record.counters.copied_bytes = copied_bytes;
                record.counters.checkpoints += 1;
            }
        }
    }

    /// When the rebuild next needs a tick: its rate wait, or now if it
    /// could start a stripe and nothing else (a completion, a checkpoint)
    /// is sure to wake it (without this, a rebuild with nothing in flight
    /// once its rate wait was over relied on unrelated timers, such as the
    /// bitmap's clean cycle, which a re-add holds off). With nothing in
    /// flight, every order yields an unrebuilt stripe, so the tick starts
    /// one or sets a new rate wait.
    pub(super) fn rebuild_timeout(&self) -> Option<TimeNs> {
        let rebuild = self.rebuild.as_ref()?;
        let record = self.rebuild_record()?;
        if record.state != RebuildState::Running || rebuild.checkpoint.is_some() {
            return None;
        }
        if rebuild.pacing.not_before > self.now {
            return Some(rebuild.pacing.not_before);
        }
        let can_start = rebuild.inflight.is_empty()
            && record.config.window_stripes > 0
            && !rebuild.map.complete();
        can_start.then_some(self.now)
    }

    /// The settings changed (`tune_rebuild`): a running rebuild takes the
    /// new order (the map and what is in flight stay).
    pub(super) fn rebuild_config_changed(&mut self, config: &RebuildConfig) {
        let total = self.geometry.stripe_count();
        let member_data_bytes = self.geometry.member_data_bytes;
        if let Some(rebuild) = &mut self.rebuild {
            rebuild.order = RebuildOrder::new(config, total, member_data_bytes);
            rebuild.pacing.not_before = TimeNs(0);
        }
    }

    /// Starts rebuilding `targets` (just taken over by spares): a new
    /// record, or, if a rebuild has not gone far, the running one starts
    /// again from stripe 0 with them too (one pass for all).
    fn begin_rebuild(&mut self, targets: Vec<usize>) {
        let total = self.geometry.stripe_count();
        let growth_cut = self.growth_regions_now().map(|r| r.checkpoint_chunk);
        let joinable = self
            .rebuild
            .as_ref()
            .is_some_and(|r| r.done_stripes().saturating_mul(JOIN_FRACTION_MAX) < total);
        if joinable {
            let rebuild = self.rebuild.as_ref().expect("rebuild");
            let mut all = rebuild.targets.clone();
            all.extend(&targets);
            let config = self.rebuild_record().expect("record").config.clone();
            self.rebuild = Some(self.new_rebuild(all.clone(), RebuiltMap::new(total), &config));
            let record = self.rebuild_record_mut();
            record.targets = all;
            record.checkpoint_stripe = 0;
            record.rebuilt_units = None;
            record.counters.copied_bytes = 0;
            record.counters.restarts += 1;
            // One pass for all: a re-add joined by a replacement copies
            // every stripe.
            record.kind = RebuildKind::Full;
            record.growth_checkpoint_chunk = growth_cut;
        } else {
            assert!(
                self.rebuild.is_none(),
                "a second rebuild next to a running one"
            );
            let previous = self.superblock.rebuild.take();
            let config = previous.map_or_else(|| self.options.rebuild.clone(), |r| r.config);
            self.superblock.rebuild = Some(RebuildRecord {
                growth_checkpoint_chunk: growth_cut,
                config: config.clone(),
                kind: RebuildKind::Full,
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
            self.rebuild = Some(self.new_rebuild(targets.clone(), RebuiltMap::new(total), &config));
        }
        self.note_growth_waits_for_rebuild(&targets);
        self.request_superblock_write();
        self.outbox_event
            .push_back(ArrayEvent::RebuildStarted { members: targets });
        self.ready.push(Ready::Rebuild);
    }
}

/// A replacement joins a running rebuild (which starts again from stripe 0
/// for all of them) only while it is below 1/JOIN_FRACTION_MAX of the way;
/// later, it waits for that rebuild to finish and gets a pass of its own.
const JOIN_FRACTION_MAX: u64 = 4;

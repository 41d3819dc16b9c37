//! Rebuild: one explicit, resumable state object per rebuild, a sibling of
//! the growth engine. The PR strategy (Linux MD's pipelined rebuild) walks
//! stripes in address order; each goes through the normal stripe pipeline
//! (`OpKind::Rebuild`, under the stripe lock, equal to users), reads the
//! surviving shards, reconstructs the targets' shards and writes them to
//! the replacements. A window of stripes is in flight at once.
//!
//! `position`: every stripe below it is rebuilt. Users read a target's
//! chunks below it from the replacement and reconstruct them at or above
//! it; their writes go to the replacement everywhere (its chunks above the
//! position are rewritten by the rebuild later anyway). The position is
//! recorded in the superblocks (`RebuildRecord::checkpoint_stripe`) only
//! after a flush made the rebuilt stripes durable on the replacements, every
//! `checkpoint_bytes` and when the array closes, so a crash resumes from
//! the record, never from zero and never past what is on the replacement.

mod members;
mod pacing;
mod status;

use super::locks::LockMode;
use super::op::{OpKind, OpTarget, Parent};
use super::{Array, FlushPurpose, Phase, Ready};
use crate::io::{ArrayEvent, TimeNs, UserError};
use crate::metadata::superblock::MemberState;
use crate::rebuild::config::RebuildConfig;
use crate::rebuild::record::{RebuildCounters, RebuildRecord, RebuildState};
use pacing::RebuildPacing;
use std::collections::BTreeSet;

/// Where a checkpoint (or the final record) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CheckpointStage {
    /// The members are being flushed.
    Flushing,
    /// The superblock with the new position is being written.
    Recording { generation: u64 },
}

/// The runtime state of a rebuild; its durable part is the superblock's
/// `RebuildRecord`.
pub(super) struct Rebuild {
    /// Bumped when the pass starts again from stripe 0 (a replacement
    /// joined): stripes and flushes of an earlier pass are ignored.
    pub pass: u64,
    /// The member slots being rebuilt (as in the record).
    pub targets: Vec<usize>,
    /// Every stripe below is rebuilt.
    pub position: u64,
    /// The next stripe to start.
    next: u64,
    /// Stripes at or past `position` already rebuilt (the window finishes
    /// out of order).
    finished_ahead: BTreeSet<u64>,
    /// Stripe ops of this pass in flight.
    inflight: usize,
    pub checkpoint: Option<CheckpointStage>,
    pub pacing: RebuildPacing,
    /// Where this run started (for the status' elapsed time).
    pub started_at: TimeNs,
}

impl Rebuild {
    fn new(targets: Vec<usize>, position: u64, now: TimeNs) -> Rebuild {
        Rebuild {
            pass: 0,
            targets,
            position,
            next: position,
            finished_ahead: BTreeSet::new(),
            inflight: 0,
            checkpoint: None,
            pacing: RebuildPacing::default(),
            started_at: now,
        }
    }

    /// Starts the pass again from stripe 0 (with more targets).
    fn restart(&mut self, targets: Vec<usize>, now: TimeNs) {
        let pass = self.pass + 1;
        *self = Rebuild::new(targets, 0, now);
        self.pass = pass;
    }

    fn stripe_finished(&mut self, stripe: u64) {
        self.finished_ahead.insert(stripe);
        while self.finished_ahead.remove(&self.position) {
            self.position += 1;
        }
    }
}

impl Array {
    pub(super) fn rebuild_active(&self) -> bool {
        self.rebuild.is_some()
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
    /// present, and not a replacement's shard the rebuild has not reached.
    pub(super) fn shard_readable(&self, member: usize, stripe: u64) -> bool {
        self.present[member]
            && self
                .rebuild
                .as_ref()
                .is_none_or(|r| stripe < r.position || !r.targets.contains(&member))
    }

    /// Bytes of each replacement below `position`.
    fn rebuilt_bytes_at(&self, position: u64) -> u64 {
        let total = self.geometry.stripe_count().max(1);
        (position as u128 * self.geometry.member_data_bytes as u128 / total as u128) as u64
    }

    /// Resumes a rebuild recorded in the superblock (called at open).
    pub(super) fn resume_rebuild(&mut self) {
        let present = self.present.clone();
        let stripes = self.geometry.stripe_count();
        let Some(record) = &mut self.superblock.rebuild else {
            return;
        };
        if !record.state.unfinished() {
            return;
        }
        record.targets.retain(|&t| present[t]);
        if record.targets.is_empty() || record.total_stripes != stripes {
            record.state = RebuildState::Stopped;
            record.reason =
                Some("its replacement was missing or stale when the array started".into());
            return;
        }
        if !record.held {
            record.state = RebuildState::Running;
        }
        self.rebuild = Some(Rebuild::new(
            record.targets.clone(),
            record.checkpoint_stripe,
            self.now,
        ));
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
        let done = rebuild.position == record.total_stripes && rebuild.inflight == 0;
        let due = rebuild.position >= record.checkpoint_stripe.saturating_add(interval.max(1));
        // Paused: what was rebuilt is recorded once the window is in.
        let paused_with_news = record.state == RebuildState::Paused
            && rebuild.inflight == 0
            && rebuild.position > record.checkpoint_stripe;
        if done || due || paused_with_news {
            self.start_rebuild_checkpoint();
        }
    }

    /// Starts stripes up to the window, skipping those without a target
    /// shard, while the rate allows.
    fn start_rebuild_stripes(&mut self, config: &RebuildConfig) {
        let total = self.geometry.stripe_count();
        loop {
            let now = self.now;
            let last_user = self.last_user_request;
            let rebuilt = self.rebuilt_bytes_at(self.rebuild.as_ref().expect("rebuild").position);
            let rebuild = self.rebuild.as_mut().expect("rebuild");
            if rebuild.inflight as u64 >= config.window_stripes || rebuild.next >= total {
                break;
            }
            if let Some(wake) = rebuild.pacing.gate(now, rebuilt, config, last_user) {
                rebuild.pacing.not_before = wake;
                break;
            }
            let stripe = rebuild.next;
            rebuild.next += 1;
            let pass = rebuild.pass;
            let map = self.layout.stripe_map(stripe);
            if !map.shards().any(|p| self.is_rebuild_target(p.member)) {
                self.rebuild_stripe_finished(stripe);
                continue;
            }
            self.rebuild.as_mut().expect("rebuild").inflight += 1;
            self.create_op(
                Parent::Rebuild { pass },
                OpTarget::current(stripe),
                OpKind::Rebuild,
                LockMode::Exclusive,
                Vec::new(),
            );
        }
    }

    fn rebuild_stripe_finished(&mut self, stripe: u64) {
        let now = self.now;
        let rebuild = self.rebuild.as_mut().expect("rebuild");
        rebuild.stripe_finished(stripe);
        let position = rebuild.position;
        let rebuilt = self.rebuilt_bytes_at(position);
        self.rebuild
            .as_mut()
            .expect("rebuild")
            .pacing
            .note(now, rebuilt);
    }

    /// A rebuild stripe op finished (`error`: it could not be rebuilt).
    pub(super) fn rebuild_op_done(&mut self, pass: u64, stripe: u64, error: Option<UserError>) {
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        if rebuild.pass != pass {
            return;
        }
        rebuild.inflight -= 1;
        if let Some(error) = error {
            self.stop_rebuild(format!("stripe {stripe} could not be rebuilt: {error}"));
            return;
        }
        self.rebuild_stripe_finished(stripe);
        self.ready.push(Ready::Rebuild);
    }

    /// Flushes the members so the stripes below the position are durable,
    /// then records the position (`rebuild_checkpoint_flushed`).
    fn start_rebuild_checkpoint(&mut self) {
        let rebuild = self.rebuild.as_mut().expect("rebuild");
        if rebuild.checkpoint.is_some() {
            return;
        }
        rebuild.checkpoint = Some(CheckpointStage::Flushing);
        let (pass, position) = (rebuild.pass, rebuild.position);
        self.flush_members(FlushPurpose::RebuildCheckpoint { pass, position });
    }

    /// The flush before a checkpoint finished: record the position, or,
    /// at the end, the replacements as active members.
    pub(super) fn rebuild_checkpoint_flushed(
        &mut self,
        pass: u64,
        position: u64,
        member_failed: bool,
    ) {
        let Some(rebuild) = &mut self.rebuild else {
            return;
        };
        if rebuild.pass != pass {
            return;
        }
        rebuild.checkpoint = None;
        self.ready.push(Ready::Rebuild);
        // A member failed under the flush: what it covered is not known
        // to be durable; a later checkpoint records it.
        if member_failed {
            return;
        }
        let targets = rebuild.targets.clone();
        let record = self.rebuild_record_mut();
        if position <= record.checkpoint_stripe && position < record.total_stripes {
            return;
        }
        record.checkpoint_stripe = record.checkpoint_stripe.max(position);
        record.counters.checkpoints += 1;
        if position == record.total_stripes {
            record.state = RebuildState::Done;
            record.held = false;
            for &target in &targets {
                let member = &mut self.superblock.members[target];
                member.state = MemberState::Active;
                member.failure = None;
            }
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
        // A rebuilt stripe's parity agrees with its data (suspect parity
        // was rewritten on the way), so regions a resync had to skip for
        // want of these members are consistent now.
        if !self.is_degraded() {
            for region in std::mem::take(&mut self.unresynced_regions) {
                self.intent.pinned.remove(&region);
            }
        }
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
        self.request_superblock_write();
        self.outbox_event
            .push_back(ArrayEvent::RebuildStopped { reason });
    }

    /// `member` failed: a target leaves the rebuild (which stops when none
    /// is left).
    pub(super) fn rebuild_member_failed(&mut self, member: usize, reason: &str) {
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
    /// flushed, so the position may be recorded by the closing superblock.
    pub(super) fn rebuild_note_durable_at_close(&mut self) {
        let Some(rebuild) = &self.rebuild else {
            return;
        };
        let position = rebuild.position;
        if let Some(record) = &mut self.superblock.rebuild {
            if record.state.unfinished() && position > record.checkpoint_stripe {
                record.checkpoint_stripe = position;
                record.counters.checkpoints += 1;
            }
        }
    }

    /// When the rebuild next needs a tick (its rate wait).
    pub(super) fn rebuild_timeout(&self) -> Option<TimeNs> {
        let rebuild = self.rebuild.as_ref()?;
        let running = self
            .rebuild_record()
            .is_some_and(|r| r.state == RebuildState::Running);
        (running && rebuild.pacing.not_before > self.now).then_some(rebuild.pacing.not_before)
    }

    /// Starts rebuilding `targets` (just taken over by spares): a new
    /// record, or, if a rebuild has not gone far, the running one starts
    /// again from stripe 0 with them too (one pass for all).
    fn begin_rebuild(&mut self, targets: Vec<usize>) {
        let total = self.geometry.stripe_count();
        let now = self.now;
        let joinable = self
            .rebuild
            .as_ref()
            .is_some_and(|r| r.position.saturating_mul(JOIN_FRACTION_MAX) < total);
        if joinable {
            let rebuild = self.rebuild.as_mut().expect("rebuild");
            let mut all = rebuild.targets.clone();
            all.extend(&targets);
            rebuild.restart(all.clone(), now);
            let record = self.rebuild_record_mut();
            record.targets = all;
            record.checkpoint_stripe = 0;
            record.counters.restarts += 1;
        } else {
            assert!(
                self.rebuild.is_none(),
                "a second rebuild next to a running one"
            );
            let previous = self.superblock.rebuild.take();
            let config = previous.map_or_else(|| self.options.rebuild.clone(), |r| r.config);
            self.superblock.rebuild = Some(RebuildRecord {
                config,
                targets: targets.clone(),
                checkpoint_stripe: 0,
                total_stripes: total,
                state: RebuildState::Running,
                held: false,
                reason: None,
                counters: RebuildCounters::default(),
            });
            self.rebuild = Some(Rebuild::new(targets.clone(), 0, now));
        }
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

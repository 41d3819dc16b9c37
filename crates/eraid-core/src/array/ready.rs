//! Work that becomes ready inside a handler: queued here and drained by one
//! loop at the end of every `Machine` handler, never called from inside the
//! step that made it ready. A step that finishes without device I/O (a
//! degraded stripe skipped by a resync, a write refused on a failed array,
//! a growth window with nothing to move) would otherwise start the next
//! step in its own frame, and the stack would grow with the array's size
//! or with the length of a lock's queue.
//!
//! User requests and every background activity (check and resync, growth,
//! metadata, and the rebuild and destage engines to come) use this one
//! mechanism.

use super::Array;
use crate::io::UserError;
use std::collections::VecDeque;

#[derive(Debug)]
pub(super) enum Ready {
    /// The op holds its stripe lock (at once, or handed over on release).
    OpLocked(u64),
    /// The op's reads are all in (or none were needed): compute.
    OpCompute(u64),
    /// The op is done (no writes were needed, or it cannot be served).
    OpFinish(u64, Option<UserError>),
    /// The check or resync may start its next stripes.
    Scrub,
    /// The destage engine may start destages, answer flushes, admit
    /// writes waiting for room.
    Destage,
    /// The rebuild may take its next step: start (a spare takes a failed
    /// slot over), reconstruct its next stripes, checkpoint or finish.
    Rebuild,
    /// Every member flush of a set finished (or there was none to issue).
    FlushDone(u64),
    /// The active metadata job's stage needed no device I/O.
    MetadataStageDone,
    /// A growth window (or the one read ahead) finished a stage without
    /// device I/O.
    WindowStageDone { ahead: bool },
}

#[derive(Default)]
pub(super) struct ReadyQueue {
    queue: VecDeque<Ready>,
    /// A `Ready::Scrub` is queued already (one is enough).
    scrub_queued: bool,
    /// Likewise for `Ready::Rebuild`.
    rebuild_queued: bool,
    /// Likewise for `Ready::Destage`.
    destage_queued: bool,
    /// Most items drained by one handler, for tests and status.
    pub drained_max: usize,
}

impl ReadyQueue {
    pub fn push(&mut self, work: Ready) {
        let queued = match work {
            Ready::Scrub => &mut self.scrub_queued,
            Ready::Rebuild => &mut self.rebuild_queued,
            Ready::Destage => &mut self.destage_queued,
            _ => {
                self.queue.push_back(work);
                return;
            }
        };
        if !*queued {
            *queued = true;
            self.queue.push_back(work);
        }
    }

    fn pop(&mut self) -> Option<Ready> {
        let work = self.queue.pop_front()?;
        match work {
            Ready::Scrub => self.scrub_queued = false,
            Ready::Rebuild => self.rebuild_queued = false,
            Ready::Destage => self.destage_queued = false,
            _ => {}
        }
        Some(work)
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

impl Array {
    /// Drains the ready queue, then lets the growth and a close go on;
    /// repeats until nothing is left to do. Called last by every handler.
    pub(super) fn run_ready(&mut self) {
        let mut drained = 0;
        loop {
            while let Some(work) = self.ready.pop() {
                drained += 1;
                self.run_ready_item(work);
            }
            self.pump_reshape();
            self.pump_journal();
            self.advance_close();
            self.release_held_after_replay();
            if self.ready.is_empty() {
                break;
            }
        }
        self.ready.drained_max = self.ready.drained_max.max(drained);
    }

    fn run_ready_item(&mut self, work: Ready) {
        match work {
            Ready::OpLocked(op) => self.op_locked(op),
            Ready::OpCompute(op) => self.op_compute(op),
            Ready::OpFinish(op, error) => self.op_finish(op, error),
            Ready::Scrub => self.pump_scrub(),
            Ready::Rebuild => self.pump_rebuild(),
            Ready::Destage => self.pump_destage(),
            Ready::FlushDone(id) => self.finish_flush(id),
            Ready::MetadataStageDone => self.metadata_stage_done(),
            Ready::WindowStageDone { ahead: true } => self.ahead_reads_done(),
            Ready::WindowStageDone { ahead: false } => self.window_stage_done(),
        }
    }
}

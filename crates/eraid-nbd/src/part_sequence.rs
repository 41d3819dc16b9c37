//! Runs the parts of one client request that was split into several export
//! commands (trims and zero writes longer than the largest request) one
//! after another, then answers once: with the first error, or after an
//! optional flush (FUA on a trim). One part at a time keeps what a single
//! request of gigabytes holds in the array bounded by one part.
//!
//! An export may answer a part inside `submit` (an in-memory export, or a
//! refusal while shutting down): the next part is then started by the loop
//! in `drive`, not from inside that answer, so the stack never grows with
//! the number of parts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::export::{Done, Export, ExportCommand, ExportError, ExportResult};
use crate::reply::{done_for, PendingReply};

pub struct PartSequence {
    export: Arc<dyn Export>,
    state: Mutex<State>,
}

struct State {
    parts: VecDeque<ExportCommand>,
    pending: Option<PendingReply>,
    flush_after: bool,
    error: Option<ExportError>,
    /// `drive` is between submitting a part and seeing whether it answered.
    driving: bool,
    /// The part submitted by `drive` answered inside `submit`.
    answered_while_driving: bool,
}

impl PartSequence {
    /// Starts running `parts` (at least one) in order.
    pub fn start(
        export: Arc<dyn Export>,
        parts: Vec<ExportCommand>,
        pending: PendingReply,
        flush_after: bool,
    ) {
        assert!(!parts.is_empty(), "a sequence needs a part");
        let sequence = Arc::new(PartSequence {
            export,
            state: Mutex::new(State {
                parts: parts.into(),
                pending: Some(pending),
                flush_after,
                error: None,
                driving: false,
                answered_while_driving: false,
            }),
        });
        sequence.drive();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn drive(self: &Arc<Self>) {
        loop {
            let mut state = self.lock();
            let next = if state.error.is_some() {
                None
            } else {
                state.parts.pop_front()
            };
            let Some(part) = next else {
                let pending = state.pending.take().expect("answered once");
                let error = state.error.take();
                let flush_after = state.flush_after;
                drop(state);
                // Never call into the export while holding our own lock.
                match (error, flush_after) {
                    (Some(error), _) => pending.complete(Err(error)),
                    (None, true) => self.export.submit(ExportCommand::Flush, done_for(pending)),
                    (None, false) => pending.complete(Ok(None)),
                }
                return;
            };
            state.driving = true;
            state.answered_while_driving = false;
            drop(state);
            self.export.submit(part, self.done_for_part());
            let mut state = self.lock();
            state.driving = false;
            if !state.answered_while_driving {
                // The answer comes later, on another thread, and drives on.
                return;
            }
        }
    }

    fn done_for_part(self: &Arc<Self>) -> Done {
        let sequence = Arc::clone(self);
        Box::new(move |result| sequence.part_done(result))
    }

    fn part_done(self: &Arc<Self>, result: ExportResult) {
        let mut state = self.lock();
        if let Err(error) = result {
            state.error.get_or_insert(error);
        }
        if state.driving {
            state.answered_while_driving = true;
            return;
        }
        drop(state);
        self.drive();
    }
}

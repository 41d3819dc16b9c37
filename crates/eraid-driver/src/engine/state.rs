//! The engine's state: the sans-IO machine and what the driver keeps
//! beside it. It lives under one lock ([`super::drive::EngineLock`]); the
//! engine thread and every submitting thread take turns running it.
//!
//! Nothing here blocks on a member or calls back into a caller: device I/O
//! on memory-backed members, journal batches and reply callbacks are queued
//! as [`Work`] for the thread that drives to carry out after it lets go of
//! the lock, so data moves on several threads at once while the machine's
//! bookkeeping stays on one at a time.

use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use eraid_core::io::{
    ArrayEvent, DeviceIo, DeviceOp, IoCause, IoCompletion, IoId, JournalBatch, Machine, RequestId,
    TimeNs, UserError, UserOp, UserReply, UserRequest,
};

use crate::handle::{CloseOutcome, Command, GrowError, MemberChangeError, Shared};
use crate::io_pool::{IoPool, MemoryIo};
use crate::member_io::MemberIo;
use crate::reply::{ReplySink, UserResult};
use crate::stats::IoCounters;

#[derive(Clone, Copy, Debug)]
enum IoKind {
    Read,
    Write,
    Flush,
}

/// What the engine remembers of an issued device I/O, for accounting.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    member: usize,
    cause: IoCause,
    kind: IoKind,
    len_bytes: u64,
}

/// Whether the engine thread is waiting, and until when: a thread that
/// changed the machine while it waits wakes it if the machine now wants
/// attention sooner (an earlier timer, a close to finish).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EngineSleep {
    /// Running, or about to look at the machine again.
    Awake,
    /// Waiting on its channels until this time (None: until an input).
    Until(Option<TimeNs>),
}

/// What a driving thread carries out with the lock let go of.
#[derive(Default)]
pub(crate) struct Work {
    pub(crate) memory_io: Vec<MemoryIo>,
    pub(crate) journal: Option<(Arc<dyn MemberIo>, JournalBatch)>,
    pub(crate) replies: Vec<(ReplySink, UserResult)>,
}

impl Work {
    pub(crate) fn is_empty(&self) -> bool {
        self.memory_io.is_empty() && self.journal.is_none() && self.replies.is_empty()
    }
}

pub(crate) struct EngineState {
    pub(crate) machine: Box<dyn Machine + Send>,
    /// `Some` until the engine finishes; dropping it joins the workers.
    pub(crate) pool: Option<IoPool>,
    pub(crate) io_pool_only: bool,
    pub(crate) start: Instant,
    next_request_id: u64,
    /// Callers waiting for a reply, by the id given to the machine.
    pub(crate) pending: FxHashMap<RequestId, ReplySink>,
    in_flight: FxHashMap<IoId, InFlight>,
    /// A journal batch is being written by some thread.
    pub(crate) journal_out: bool,
    /// `begin_close` has been called.
    pub(crate) closing: bool,
    /// The machine emitted `ArrayEvent::Closed`.
    pub(crate) closed_event: bool,
    pub(crate) close_waiters: Vec<Sender<CloseOutcome>>,
    event_sink: Option<Sender<ArrayEvent>>,
    journal: Option<Arc<dyn MemberIo>>,
    pub(crate) shared: Arc<Shared>,
    /// The caller chose the worker count; a growth does not add workers.
    pub(crate) io_threads_fixed: bool,
    pub(crate) member_timeout: Option<Duration>,
    pub(crate) engine_sleep: EngineSleep,
    /// Queued for the driving thread (see [`Work`]).
    work: Work,
}

/// What [`EngineState::new`] takes.
pub(crate) struct StateParts {
    pub(crate) machine: Box<dyn Machine + Send>,
    pub(crate) pool: IoPool,
    pub(crate) io_pool_only: bool,
    pub(crate) event_sink: Option<Sender<ArrayEvent>>,
    pub(crate) journal: Option<Arc<dyn MemberIo>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) io_threads_fixed: bool,
    pub(crate) member_timeout: Option<Duration>,
}

impl EngineState {
    pub(crate) fn new(parts: StateParts) -> EngineState {
        EngineState {
            machine: parts.machine,
            pool: Some(parts.pool),
            io_pool_only: parts.io_pool_only,
            start: Instant::now(),
            next_request_id: 1,
            pending: FxHashMap::default(),
            in_flight: FxHashMap::default(),
            journal_out: false,
            closing: false,
            closed_event: false,
            close_waiters: Vec::new(),
            event_sink: parts.event_sink,
            journal: parts.journal,
            shared: parts.shared,
            io_threads_fixed: parts.io_threads_fixed,
            member_timeout: parts.member_timeout,
            engine_sleep: EngineSleep::Awake,
            work: Work::default(),
        }
    }

    pub(crate) fn now(&self) -> TimeNs {
        TimeNs(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nothing the machine started can still produce an input and nobody
    /// waits for it: a closing engine with this has nothing left to do.
    pub(crate) fn is_idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty() && !self.journal_out
    }

    pub(crate) fn has_io_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Handles one caller's command (on the engine thread).
    pub(crate) fn command(&mut self, command: Command) {
        match command {
            Command::Admin { command, done } => {
                let now = self.now();
                let answer = self.machine.handle_admin(now, command);
                // The asker may have given up; nothing to do then.
                let _ = done.send(answer);
            }
            Command::Grow {
                members,
                config,
                done,
            } => {
                let answer = self.grow(members, config);
                let _ = done.send(answer);
            }
            Command::AddMember {
                member,
                spare,
                replaces,
                done,
            } => {
                let answer = self.add_member(member, spare, replaces);
                let _ = done.send(answer);
            }
            Command::RemoveMember { slot, done } => {
                let answer = self.remove_member(slot);
                let _ = done.send(answer);
            }
            Command::Close { done } => {
                self.close_waiters.push(done);
                self.begin_close();
            }
        }
    }

    /// Keeps the pool serving around workers stuck on a hung device.
    pub(crate) fn watch_stuck_workers(&mut self) {
        if let (Some(timeout), Some(pool)) = (self.member_timeout, self.pool.as_mut()) {
            pool.replace_stuck_workers(timeout / 2, timeout);
        }
    }

    pub(crate) fn tick(&mut self, now: TimeNs) {
        self.machine.handle_tick(now);
        self.shared.stats().ticks += 1;
    }

    /// Hands one user request to the machine (its answer is queued as
    /// work, never called from here).
    pub(crate) fn submit(&mut self, op: UserOp, sink: ReplySink) {
        if self.closing {
            self.shared.stats().requests_failed += 1;
            self.work.replies.push((sink, Err(UserError::ShuttingDown)));
            return;
        }
        let id = RequestId(self.next_request_id);
        self.next_request_id += 1;
        self.pending.insert(id, sink);
        self.shared.stats().requests_submitted += 1;
        let now = self.now();
        self.machine.handle_request(now, UserRequest { id, op });
    }

    pub(crate) fn begin_close(&mut self) {
        if self.closing {
            return;
        }
        self.closing = true;
        self.shared.stopping.store(true, Ordering::Release);
        tracing::info!("closing the array");
        let now = self.now();
        self.machine.handle_close(now);
    }

    pub(crate) fn complete(&mut self, id: IoId, completion: IoCompletion) {
        let Some(io) = self.in_flight.remove(&id) else {
            tracing::error!(
                io = id.0,
                "completion of an I/O that is not in flight; dropped"
            );
            return;
        };
        self.account(&io, &completion);
        if let IoCompletion::Failed(message) | IoCompletion::ReadError(message) = &completion {
            tracing::warn!(member = io.member, cause = ?io.cause, "{message}");
        }
        let now = self.now();
        self.machine.handle_completion(now, id, completion);
    }

    /// The journal batch taken by [`EngineState::take_work`] is written
    /// (or failed).
    pub(crate) fn journal_done(&mut self, batch: u64, result: Result<(), String>) {
        self.journal_out = false;
        let now = self.now();
        self.machine.handle_journal_done(now, batch, result);
    }

    fn account(&self, io: &InFlight, completion: &IoCompletion) {
        let mut delta = IoCounters::default();
        match (completion, io.kind) {
            (IoCompletion::Failed(_) | IoCompletion::ReadError(_), _) => delta.failures = 1,
            (_, IoKind::Read) => {
                delta.reads = 1;
                delta.read_bytes = io.len_bytes;
            }
            (_, IoKind::Write) => {
                delta.writes = 1;
                delta.written_bytes = io.len_bytes;
            }
            (_, IoKind::Flush) => delta.flushes = 1,
        }
        let mut stats = self.shared.stats();
        stats.by_cause.entry(io.cause).or_default().add(&delta);
        if let Some(member) = stats.by_member.get_mut(io.member) {
            member.io.add(&delta);
        }
        stats.io_in_flight = self.in_flight.len() as u64;
    }

    /// Drains the machine's outputs: I/O to workers or into the work,
    /// the next journal batch, replies and events; returns the work for
    /// the driving thread.
    pub(crate) fn take_work(&mut self) -> Work {
        // Replies and events can enable nothing new in the machine, but I/O
        // dispatch is first so devices start working as early as possible.
        while let Some(io) = self.machine.poll_io() {
            self.dispatch(io);
        }
        if !self.journal_out {
            if let Some(journal) = &self.journal {
                // One batch is out at a time; records of requests arriving
                // while it is written join the next one (one sync for all).
                if let Some(batch) = self.machine.poll_journal() {
                    self.journal_out = true;
                    self.work.journal = Some((Arc::clone(journal), batch));
                }
            }
        }
        while let Some(reply) = self.machine.poll_reply() {
            self.deliver(reply);
        }
        while let Some(event) = self.machine.poll_event() {
            self.publish(event);
        }
        std::mem::take(&mut self.work)
    }

    fn dispatch(&mut self, io: DeviceIo) {
        let (kind, len_bytes) = match &io.op {
            DeviceOp::Read { len_bytes, .. } => (IoKind::Read, *len_bytes as u64),
            DeviceOp::Write { data, .. } => (IoKind::Write, data.len() as u64),
            DeviceOp::WriteZeroes { len_bytes, .. } => (IoKind::Write, *len_bytes),
            DeviceOp::Flush => (IoKind::Flush, 0),
        };
        let record = InFlight {
            member: io.member,
            cause: io.cause,
            kind,
            len_bytes,
        };
        let previous = self.in_flight.insert(io.id, record);
        assert!(
            previous.is_none(),
            "the machine reused IoId {} while it was in flight",
            io.id.0
        );
        {
            let mut stats = self.shared.stats();
            stats.io_in_flight = self.in_flight.len() as u64;
            stats.io_in_flight_max = stats.io_in_flight_max.max(stats.io_in_flight);
        }
        let Some(pool) = &self.pool else {
            return;
        };
        if self.io_pool_only {
            pool.submit(io);
            return;
        }
        if let Some(memory_io) = pool.submit_or_hand_back(io) {
            self.work.memory_io.push(memory_io);
        }
    }

    fn deliver(&mut self, reply: UserReply) {
        let Some(sink) = self.pending.remove(&reply.id) else {
            tracing::error!(request = reply.id.0, "reply to an unknown request; dropped");
            return;
        };
        {
            let mut stats = self.shared.stats();
            if reply.result.is_ok() {
                stats.requests_succeeded += 1;
            } else {
                stats.requests_failed += 1;
            }
        }
        self.work.replies.push((sink, reply.result));
    }

    fn publish(&mut self, event: ArrayEvent) {
        match &event {
            ArrayEvent::MemberFailed { member, reason } => {
                tracing::error!(member, "member failed: {reason}");
            }
            ArrayEvent::ResyncStarted { regions } => tracing::info!(regions, "resync started"),
            ArrayEvent::ResyncFinished { regions } => tracing::info!(regions, "resync finished"),
            ArrayEvent::ReshapeFinished {
                member_count,
                capacity_bytes,
            } => tracing::info!(member_count, capacity_bytes, "growth finished"),
            ArrayEvent::ReshapePaused { reason } => tracing::warn!("growth paused: {reason}"),
            ArrayEvent::RebuildStarted { members } => {
                tracing::info!(?members, "rebuild started")
            }
            ArrayEvent::RebuildFinished { members } => {
                tracing::info!(?members, "rebuild finished")
            }
            ArrayEvent::RebuildStopped { reason } => tracing::error!("rebuild stopped: {reason}"),
            ArrayEvent::SpareFailed { path_hint, reason } => {
                tracing::error!("spare {path_hint} failed: {reason}")
            }
            ArrayEvent::JournalFailed { reason } => tracing::error!(
                "the journal failed: {reason}; the cache destages everything and writes                  go through to the members from now on (the write hole is open again)"
            ),
            ArrayEvent::Closed => {
                tracing::info!("array closed cleanly");
                self.closed_event = true;
            }
        }
        if let Some(sink) = &self.event_sink {
            if sink.try_send(event).is_err() {
                tracing::warn!("event sink full or gone; event dropped");
            }
        }
    }

    /// Stops the pool and collects everyone still waiting: the callers of
    /// requests (answered `ShuttingDown` when the returned sinks drop,
    /// which the caller does after letting go of the lock) and the closers.
    pub(crate) fn finish(&mut self, outcome: CloseOutcome) -> Finished {
        self.closing = true;
        self.shared.stopping.store(true, Ordering::Release);
        // Joins the workers after they finish queued I/O (only possible if
        // the machine emitted Closed with I/O still in flight); workers
        // stuck on a hung device are not waited for.
        self.watch_stuck_workers();
        drop(self.pool.take());
        // Handles keep this state alive: let go of what others wait on
        // (the end of the event stream) or must be able to open again.
        self.event_sink = None;
        self.journal = None;
        let mut unanswered: Vec<ReplySink> = self.pending.drain().map(|(_, sink)| sink).collect();
        unanswered.extend(self.work.replies.drain(..).map(|(sink, _)| sink));
        {
            let mut stats = self.shared.stats();
            stats.requests_failed += unanswered.len() as u64;
            stats.io_in_flight = 0;
            stats.running = false;
        }
        self.shared.set_outcome(outcome);
        Finished {
            unanswered,
            close_waiters: std::mem::take(&mut self.close_waiters),
            outcome,
        }
    }
}

/// What is left to answer once the engine stopped, outside the lock.
pub(crate) struct Finished {
    unanswered: Vec<ReplySink>,
    close_waiters: Vec<Sender<CloseOutcome>>,
    outcome: CloseOutcome,
}

impl Finished {
    /// Answers the commands still queued for the engine thread.
    pub(crate) fn answer_commands(&mut self, commands: impl Iterator<Item = Command>) {
        for command in commands {
            match command {
                Command::Close { done } => self.close_waiters.push(done),
                // Dropping `done` answers `ShuttingDown`.
                Command::Admin { .. } => {}
                Command::Grow { done, .. } => {
                    let _ = done.send(Err(GrowError::ShuttingDown));
                }
                Command::AddMember { done, .. } => {
                    let _ = done.send(Err(MemberChangeError::ShuttingDown));
                }
                Command::RemoveMember { done, .. } => {
                    let _ = done.send(Err(MemberChangeError::ShuttingDown));
                }
            }
        }
    }

    pub(crate) fn answer(self) {
        // Dropping a sink answers `ShuttingDown`.
        drop(self.unanswered);
        for waiter in self.close_waiters {
            let _ = waiter.send(self.outcome);
        }
    }
}

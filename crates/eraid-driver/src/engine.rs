//! The engine thread: runs a sans-IO [`Machine`] against real members in
//! real time.
//!
//! One thread owns the machine. It feeds it user requests, device
//! completions from the [`IoPool`] and ticks (with the time since the engine
//! started), and after every input drains the machine's outputs: device I/Os
//! go to the pool, replies to their callers, events to the log and the
//! optional event sink.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select, Sender};
use eraid_core::growth::config::ReshapeConfig;
use eraid_core::io::{
    AdminCommand, ArrayEvent, DeviceIo, DeviceOp, IoCause, IoCompletion, IoId, Machine, RequestId,
    TimeNs, UserError, UserOp, UserReply, UserRequest,
};

use crate::handle::{
    CloseOutcome, Command, EngineHandle, GrowError, GrowMember, MemberChangeError, RemovedMember,
    Shared,
};
use crate::io_pool::{default_io_threads, FinishedIo, IoPool};
use crate::member_io::DetachedMember;
use crate::member_io::MemberIo;
use crate::reply::ReplySink;
use crate::stats::{EngineStats, IoCounters, MemberStats};

/// How to run an engine.
#[derive(Clone, Default)]
pub struct EngineConfig {
    /// I/O worker threads; `None` means [`default_io_threads`].
    pub io_threads: Option<usize>,
    /// Receives a copy of every [`ArrayEvent`]. Use an unbounded channel: the
    /// engine never blocks on it and drops events a full channel refuses.
    pub event_sink: Option<Sender<ArrayEvent>>,
    /// The member timeout the machine enforces (it fails the member): the
    /// I/O pool starts a new worker for one stuck in a device call for
    /// half of it, and after all of it treats the device as hung (its
    /// queued I/Os fail at once), so a hung member never holds the others
    /// up. None: workers are never replaced.
    pub member_timeout: Option<Duration>,
    /// The journal the machine's batches go to (`Machine::poll_journal`).
    pub journal: Option<Arc<dyn MemberIo>>,
    /// Send every device I/O to the pool's workers, memory-backed members'
    /// too. By default the engine thread performs I/O on memory-backed
    /// members itself ([`MemberIo::memory_backed`]): a copy in memory costs
    /// less than the two thread wake-ups a worker's hand-off does.
    pub io_pool_only: bool,
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("io_threads", &self.io_threads)
            .field("event_sink", &self.event_sink.is_some())
            .field("member_timeout", &self.member_timeout)
            .field("io_pool_only", &self.io_pool_only)
            .field(
                "journal",
                &self.journal.as_ref().map(|j| j.label().to_string()),
            )
            .finish()
    }
}

/// A running engine: the owner of its thread. Dropping it closes the array
/// (as [`Engine::close`]) and joins the thread.
pub struct Engine {
    handle: EngineHandle,
    thread: Option<JoinHandle<()>>,
}

impl Engine {
    /// Starts an engine over member files or exports (slot `i` is `members[i]`).
    pub fn start<M: MemberIo + 'static>(
        machine: Box<dyn Machine + Send>,
        members: Vec<M>,
        config: EngineConfig,
    ) -> io::Result<Engine> {
        let devices = members
            .into_iter()
            .map(|m| Arc::new(m) as Arc<dyn MemberIo>)
            .collect();
        Engine::start_with_devices(machine, devices, config)
    }

    /// Starts an engine over any devices (fault-injecting ones included).
    pub fn start_with_devices(
        machine: Box<dyn Machine + Send>,
        devices: Vec<Arc<dyn MemberIo>>,
        config: EngineConfig,
    ) -> io::Result<Engine> {
        let labels = devices.iter().map(|d| d.label().to_string()).collect();
        let shared = Arc::new(Shared::new(EngineStats::new(labels)));
        let threads = config
            .io_threads
            .unwrap_or_else(|| default_io_threads(devices.len()));
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let pool = IoPool::start(Arc::from(devices), threads, done_tx)?;
        let (command_tx, command_rx) = crossbeam_channel::unbounded();
        let runner = Runner {
            machine,
            pool: Some(pool),
            commands: command_rx,
            commands_open: true,
            completions: done_rx,
            performed: VecDeque::new(),
            io_pool_only: config.io_pool_only,
            start: Instant::now(),
            next_request_id: 1,
            pending: HashMap::new(),
            in_flight: HashMap::new(),
            closing: false,
            closed_event: false,
            close_waiters: Vec::new(),
            event_sink: config.event_sink,
            journal: config.journal,
            shared: Arc::clone(&shared),
            io_threads_fixed: config.io_threads.is_some(),
            member_timeout: config.member_timeout,
        };
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("eraid-engine".into())
            .spawn(move || {
                let _guard = StopGuard(thread_shared);
                runner.run();
            })?;
        Ok(Engine {
            handle: EngineHandle {
                commands: command_tx,
                shared,
            },
            thread: Some(thread),
        })
    }

    pub fn handle(&self) -> EngineHandle {
        self.handle.clone()
    }

    /// Closes the array (see [`EngineHandle::close`]) and joins the thread.
    pub fn close(mut self) -> CloseOutcome {
        self.close_and_join()
    }

    fn close_and_join(&mut self) -> CloseOutcome {
        let outcome = self.handle.close();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the engine thread panicked");
                return CloseOutcome::Stopped;
            }
        }
        outcome
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.close_and_join();
        }
    }
}

/// Marks the engine stopped however its thread ends, unwinding included,
/// so handles fail fast instead of queueing requests nobody will answer.
struct StopGuard(Arc<Shared>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.stopping.store(true, Ordering::Release);
        self.0.set_outcome(CloseOutcome::Stopped);
        self.0.stats().running = false;
    }
}

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

enum Input {
    Command(Command),
    CommandsClosed,
    Finished(FinishedIo),
    DeadlineReached,
}

struct Runner {
    machine: Box<dyn Machine + Send>,
    /// `Some` until the thread finishes; dropping it joins the workers.
    pool: Option<IoPool>,
    commands: Receiver<Command>,
    /// False once every handle is gone (a disconnected channel would
    /// otherwise be "ready" forever).
    commands_open: bool,
    completions: Receiver<FinishedIo>,
    /// Completions of I/Os the engine performed itself (memory-backed
    /// members), handled by the main loop before it waits: queued rather
    /// than handed to the machine from inside `dispatch`, so the stack
    /// never grows with the number of I/Os a step issues.
    performed: VecDeque<FinishedIo>,
    io_pool_only: bool,
    start: Instant,
    next_request_id: u64,
    /// Callers waiting for a reply, by the id given to the machine.
    pending: HashMap<RequestId, ReplySink>,
    in_flight: HashMap<IoId, InFlight>,
    /// `handle_close` has been called.
    closing: bool,
    /// The machine emitted `ArrayEvent::Closed`.
    closed_event: bool,
    close_waiters: Vec<Sender<CloseOutcome>>,
    event_sink: Option<Sender<ArrayEvent>>,
    journal: Option<Arc<dyn MemberIo>>,
    shared: Arc<Shared>,
    /// The caller chose the worker count; a growth does not add workers.
    io_threads_fixed: bool,
    member_timeout: Option<Duration>,
}

impl Runner {
    fn run(mut self) {
        let outcome = self.main_loop();
        self.finish(outcome);
    }

    fn main_loop(&mut self) -> CloseOutcome {
        loop {
            self.drain_outputs();
            if self.closed_event {
                return CloseOutcome::Closed;
            }
            // The stop rule for a machine that never emits `Closed`: after
            // `handle_close`, once nothing it started can still produce an
            // input (no device I/O in flight) and nobody waits for it (no
            // request unanswered), it has nothing left to do. Pending timers
            // alone do not keep a closing engine alive.
            if self.closing && self.in_flight.is_empty() && self.pending.is_empty() {
                tracing::warn!("the machine went idle after close without emitting Closed");
                return CloseOutcome::Idle;
            }
            if let Some((id, completion)) = self.performed.pop_front() {
                self.complete(id, completion);
                continue;
            }
            self.watch_stuck_workers();
            let now = self.now();
            let timeout = match self.machine.poll_timeout() {
                Some(deadline) if deadline <= now => {
                    self.tick(now);
                    continue;
                }
                Some(deadline) => Some(Duration::from_nanos(deadline.0 - now.0)),
                None => None,
            };
            // While I/O is in flight, look at the workers now and then.
            let timeout = match (self.member_timeout, self.in_flight.is_empty()) {
                (Some(member_timeout), false) => {
                    let look = (member_timeout / 4).max(Duration::from_millis(10));
                    Some(timeout.map_or(look, |t| t.min(look)))
                }
                _ => timeout,
            };
            match self.wait(timeout) {
                Input::Command(command) => self.command(command),
                Input::CommandsClosed => {
                    self.commands_open = false;
                    self.begin_close();
                }
                Input::Finished((id, completion)) => self.complete(id, completion),
                // The loop re-checks the deadline and ticks.
                Input::DeadlineReached => {}
            }
        }
    }

    /// Handles one caller's command.
    fn command(&mut self, command: Command) {
        match command {
            Command::Submit { op, sink } => self.submit(op, sink),
            Command::SubmitBatch(batch) => {
                for (op, sink) in batch {
                    self.submit(op, sink);
                }
            }
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

    fn now(&self) -> TimeNs {
        TimeNs(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn wait(&self, timeout: Option<Duration>) -> Input {
        let mut select = Select::new();
        let completions_index = select.recv(&self.completions);
        if self.commands_open {
            select.recv(&self.commands);
        }
        let operation = match timeout {
            Some(timeout) => match select.select_timeout(timeout) {
                Ok(operation) => operation,
                Err(_) => return Input::DeadlineReached,
            },
            None => select.select(),
        };
        if operation.index() == completions_index {
            match operation.recv(&self.completions) {
                Ok(finished) => Input::Finished(finished),
                // The pool holds a sender until `finish`, so this cannot
                // happen; waking up again is harmless.
                Err(_) => Input::DeadlineReached,
            }
        } else {
            match operation.recv(&self.commands) {
                Ok(command) => Input::Command(command),
                Err(_) => Input::CommandsClosed,
            }
        }
    }

    /// Keeps the pool serving around workers stuck on a hung device.
    fn watch_stuck_workers(&mut self) {
        if let (Some(timeout), Some(pool)) = (self.member_timeout, self.pool.as_mut()) {
            pool.replace_stuck_workers(timeout / 2, timeout);
        }
    }

    fn tick(&mut self, now: TimeNs) {
        self.machine.handle_tick(now);
        self.shared.stats().ticks += 1;
    }

    fn submit(&mut self, op: UserOp, sink: ReplySink) {
        if self.closing {
            self.shared.stats().requests_failed += 1;
            sink.send(Err(UserError::ShuttingDown));
            return;
        }
        let id = RequestId(self.next_request_id);
        self.next_request_id += 1;
        self.pending.insert(id, sink);
        self.shared.stats().requests_submitted += 1;
        let now = self.now();
        self.machine.handle_request(now, UserRequest { id, op });
    }

    /// Serves `members` as new slots, then asks the machine to grow onto
    /// them; drops them again if it refuses.
    fn grow(
        &mut self,
        members: Vec<GrowMember>,
        config: ReshapeConfig,
    ) -> Result<serde_json::Value, GrowError> {
        if self.closing {
            return Err(GrowError::ShuttingDown);
        }
        let now = self.now();
        let Some(pool) = self.pool.as_ref() else {
            return Err(GrowError::ShuttingDown);
        };
        let first = pool.member_count();
        if let Err(reason) = self.devices_line_up(now, first) {
            return Err(GrowError::Refused(reason));
        }
        let (devices, new_members): (Vec<_>, Vec<_>) =
            members.into_iter().map(|m| (m.device, m.member)).unzip();
        let labels: Vec<String> = devices.iter().map(|d| d.label().to_string()).collect();
        self.pool
            .as_ref()
            .expect("checked above")
            .add_members(devices);
        self.shared
            .stats()
            .by_member
            .extend(labels.into_iter().map(|label| MemberStats {
                label,
                io: IoCounters::default(),
            }));
        let answer = self.machine.handle_admin(
            now,
            AdminCommand::StartGrow {
                members: new_members,
                config,
            },
        );
        let pool = self.pool.as_mut().expect("checked above");
        if let Some(error) = answer.get("error") {
            // The machine changed nothing, so no I/O addresses the new slots.
            pool.truncate_members(first);
            self.shared.stats().by_member.truncate(first);
            let reason = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(GrowError::Refused(reason));
        }
        if !self.io_threads_fixed {
            let wanted = default_io_threads(pool.member_count());
            if let Err(error) = pool.ensure_threads(wanted) {
                tracing::warn!("cannot start more I/O workers for the new members: {error}");
            }
        }
        tracing::info!(
            added = pool.member_count() - first,
            members = pool.member_count(),
            "growth started"
        );
        Ok(answer)
    }

    /// The machine numbers new devices from its own count
    /// (`device_count` in its status): the pool must line up with it.
    fn devices_line_up(&mut self, now: TimeNs, served: usize) -> Result<(), String> {
        let status = self.machine.handle_admin(now, AdminCommand::Status);
        let count = status
            .get("device_count")
            .or_else(|| status.get("member_count"))
            .and_then(|c| c.as_u64());
        match count {
            Some(count) if count != served as u64 => Err(format!(
                "the engine serves {served} devices but the array counts {count}"
            )),
            _ => Ok(()),
        }
    }

    /// Serves `member` as the next device, then asks the machine to add it
    /// (a replacement, or a spare); drops it again if it refuses.
    fn add_member(
        &mut self,
        member: GrowMember,
        spare: bool,
        replaces: Option<usize>,
    ) -> Result<serde_json::Value, MemberChangeError> {
        if self.closing {
            return Err(MemberChangeError::ShuttingDown);
        }
        let now = self.now();
        let Some(pool) = self.pool.as_ref() else {
            return Err(MemberChangeError::ShuttingDown);
        };
        let first = pool.member_count();
        self.devices_line_up(now, first)
            .map_err(MemberChangeError::Refused)?;
        let label = member.device.label().to_string();
        let pool = self.pool.as_ref().expect("checked above");
        pool.add_members(vec![member.device]);
        self.shared.stats().by_member.push(MemberStats {
            label: label.clone(),
            io: IoCounters::default(),
        });
        let command = match replaces {
            Some(slot) => AdminCommand::ReplaceMember {
                slot,
                member: member.member,
            },
            None => AdminCommand::AddMember {
                member: member.member,
                spare,
            },
        };
        let answer = self.machine.handle_admin(now, command);
        let pool = self.pool.as_mut().expect("checked above");
        if let Some(error) = answer.get("error") {
            // The machine changed nothing, so no I/O addresses the device.
            pool.truncate_members(first);
            self.shared.stats().by_member.truncate(first);
            let reason = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(MemberChangeError::Refused(reason));
        }
        if !self.io_threads_fixed {
            let wanted = default_io_threads(pool.member_count());
            if let Err(error) = pool.ensure_threads(wanted) {
                tracing::warn!("cannot start more I/O workers for the new member: {error}");
            }
        }
        tracing::info!(spare, "member {label} added");
        Ok(answer)
    }

    /// Asks the machine to remove member `slot`; the device it used (as
    /// the status said before) is then replaced by a stand-in.
    fn remove_member(&mut self, slot: usize) -> Result<RemovedMember, MemberChangeError> {
        if self.closing || self.pool.is_none() {
            return Err(MemberChangeError::ShuttingDown);
        }
        let now = self.now();
        let before = self.machine.handle_admin(now, AdminCommand::Status);
        let device = before["members"]
            .as_array()
            .and_then(|members| members.iter().find(|m| m["index"] == slot))
            .and_then(|m| m["device"].as_u64())
            .map(|d| d as usize);
        let status = self
            .machine
            .handle_admin(now, AdminCommand::RemoveMember { slot });
        if let Some(error) = status.get("error") {
            let reason = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(MemberChangeError::Refused(reason));
        }
        // The machine no longer addresses the device unless a member or
        // spare in use still maps to it (a failed slot keeps its device
        // number, but nothing is issued to it).
        let in_use = |m: &serde_json::Value| {
            matches!(m["state"].as_str(), Some("active" | "rebuilding" | "spare"))
        };
        let still_used = status["members"].as_array().is_some_and(|members| {
            members
                .iter()
                .any(|m| in_use(m) && m["device"].as_u64() == device.map(|d| d as u64))
        });
        let released_device = device.filter(|_| !still_used);
        if let (Some(device), Some(pool)) = (released_device, &self.pool) {
            pool.replace_member(
                device,
                Arc::new(DetachedMember {
                    label: format!("removed device {device}"),
                }),
            );
        }
        Ok(RemovedMember {
            status,
            released_device,
        })
    }

    fn begin_close(&mut self) {
        if self.closing {
            return;
        }
        self.closing = true;
        self.shared.stopping.store(true, Ordering::Release);
        tracing::info!("closing the array");
        let now = self.now();
        self.machine.handle_close(now);
    }

    fn complete(&mut self, id: IoId, completion: IoCompletion) {
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

    fn drain_outputs(&mut self) {
        // Replies and events can enable nothing new in the machine, but I/O
        // dispatch is first so devices start working as early as possible.
        loop {
            while let Some(io) = self.machine.poll_io() {
                self.dispatch(io);
            }
            if !self.journal_step() {
                break;
            }
        }
        while let Some(reply) = self.machine.poll_reply() {
            self.deliver(reply);
        }
        while let Some(event) = self.machine.poll_event() {
            self.publish(event);
        }
    }

    /// Writes the machine's next journal batch and syncs it, here on the
    /// engine thread (journal writes are sequential; one batch is out at a
    /// time). Requests already waiting are taken in first, so their
    /// records join the batch: one sync covers them all. False when there
    /// was no batch.
    fn journal_step(&mut self) -> bool {
        let Some(journal) = self.journal.clone() else {
            return false;
        };
        for _ in 0..256 {
            if !self.commands_open || self.closing {
                break;
            }
            match self.commands.try_recv() {
                Ok(command) => self.command(command),
                Err(_) => break,
            }
        }
        let Some(batch) = self.machine.poll_journal() else {
            return false;
        };
        let result = crate::journal_file::write_batch(journal.as_ref(), &batch);
        if let Err(reason) = &result {
            tracing::error!("{reason}");
        }
        let now = self.now();
        self.machine.handle_journal_done(now, batch.id, result);
        true
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
        let id = io.id;
        if let Some(completion) = pool.perform_or_submit(io) {
            self.performed.push_back((id, completion));
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
        sink.send(reply.result);
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

    /// Stops the pool, answers everyone still waiting, then wakes the
    /// closers: when `close` returns no member file is in use any more.
    fn finish(mut self, outcome: CloseOutcome) {
        self.shared.stopping.store(true, Ordering::Release);
        // Joins the workers after they finish queued I/O (only possible if
        // the machine emitted Closed with I/O still in flight); workers
        // stuck on a hung device are not waited for.
        self.watch_stuck_workers();
        drop(self.pool.take());
        let unanswered = self.pending.len() as u64;
        // Dropping a sink answers `ShuttingDown`.
        self.pending.clear();
        for command in self.commands.try_iter() {
            match command {
                Command::Submit { sink, .. } => sink.send(Err(UserError::ShuttingDown)),
                Command::SubmitBatch(batch) => {
                    for (_, sink) in batch {
                        sink.send(Err(UserError::ShuttingDown));
                    }
                }
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
        {
            let mut stats = self.shared.stats();
            stats.requests_failed += unanswered;
            stats.io_in_flight = 0;
            stats.running = false;
        }
        self.shared.set_outcome(outcome);
        for waiter in self.close_waiters.drain(..) {
            let _ = waiter.send(outcome);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The real core must be runnable by this engine (`Box<dyn Machine +
    /// Send>`); this fails to compile if it stops being `Send`.
    #[test]
    fn the_core_array_can_run_on_the_engine_thread() {
        fn is_send_machine<T: eraid_core::io::Machine + Send>() {}
        is_send_machine::<eraid_core::Array>();
    }
}

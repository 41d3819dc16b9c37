//! The engine: runs a sans-IO [`Machine`] against real members in real
//! time.
//!
//! The machine and the driver's records beside it live under one lock
//! (`state`). A thread that submits user requests runs the machine itself
//! (`drive`): it hands the requests in, then carries out what comes out
//! (I/O on memory-backed members, journal batches, reply callbacks) with
//! the lock let go of, so connections move data in parallel. The engine
//! thread owns the rest: timers (ticks with the time since the engine
//! started), completions from the [`IoPool`]'s workers (members on disks,
//! block devices and NBD exports), operator commands and the close.

mod drive;
mod large_writers;
mod lock_time;
mod members;
mod state;

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Select, Sender};
use eraid_core::io::{ArrayEvent, Machine, TimeNs};

use drive::start_drive_threads;
pub(crate) use drive::{refuse, EngineLock};
use state::{EngineSleep, EngineState, StateParts};

use crate::handle::{CloseOutcome, Command, EngineHandle, Shared};
use crate::io_pool::{default_io_threads, FinishedIo, IoPool};
use crate::member_io::MemberIo;
use crate::stats::EngineStats;

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
    /// too. By default the thread running a request performs I/O on
    /// memory-backed members itself ([`MemberIo::memory_backed`]): a copy
    /// in memory costs less than the two thread wake-ups a worker's
    /// hand-off does.
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

/// Drive threads (see `drive`): one per core, so large writes from that
/// many connections are copied at once.
fn drive_thread_count() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// A running engine: the owner of its thread. Dropping it closes the array
/// (as [`Engine::close`]) and joins the thread.
pub struct Engine {
    handle: EngineHandle,
    thread: Option<JoinHandle<()>>,
    drive_threads: Vec<JoinHandle<()>>,
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
        let (wake_tx, wake_rx) = crossbeam_channel::bounded(1);
        let state = EngineState::new(StateParts {
            machine,
            pool,
            io_pool_only: config.io_pool_only,
            event_sink: config.event_sink,
            journal: config.journal,
            shared: Arc::clone(&shared),
            io_threads_fixed: config.io_threads.is_some(),
            member_timeout: config.member_timeout,
        });
        let lock = Arc::new(EngineLock::new(state, wake_tx));
        let drive_threads = start_drive_threads(&lock, drive_thread_count())?;
        let runner = Runner {
            lock: Arc::clone(&lock),
            commands: command_rx,
            commands_open: true,
            completions: done_rx,
            wake: wake_rx,
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
                engine: lock,
            },
            thread: Some(thread),
            drive_threads,
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
        // The engine thread closed their queue as it finished.
        for thread in self.drive_threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a drive thread panicked");
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

enum Input {
    Command(Command),
    CommandsClosed,
    Finished(FinishedIo),
    /// A deadline passed, or another thread asked the engine to look.
    Look,
}

/// The engine thread: timers, the pool's completions and operator
/// commands. User requests are run by the threads that submit them
/// ([`drive`]).
struct Runner {
    lock: Arc<EngineLock>,
    commands: Receiver<Command>,
    /// False once every handle is gone (a disconnected channel would
    /// otherwise be "ready" forever).
    commands_open: bool,
    completions: Receiver<FinishedIo>,
    wake: Receiver<()>,
}

impl Runner {
    fn run(mut self) {
        let outcome = self.main_loop();
        let mut finished = self.lock.lock_for_finish().finish(outcome);
        finished.answer_commands(self.commands.try_iter());
        // Later commands fail to send: nobody receives them any more.
        drop(self.commands);
        finished.answer();
        self.lock.stop_handing_off();
    }

    fn main_loop(&mut self) -> CloseOutcome {
        loop {
            let Some(mut state) = self.lock.drive(true) else {
                return CloseOutcome::Stopped;
            };
            if state.closed_event {
                return CloseOutcome::Closed;
            }
            // The stop rule for a machine that never emits `Closed`: after
            // `handle_close`, once nothing it started can still produce an
            // input (no device I/O in flight) and nobody waits for it (no
            // request unanswered), it has nothing left to do. Pending timers
            // alone do not keep a closing engine alive.
            if state.closing && state.is_idle() {
                tracing::warn!("the machine went idle after close without emitting Closed");
                return CloseOutcome::Idle;
            }
            if state.shared.stopping.load(Ordering::Acquire) && !state.closing {
                // A thread driving the machine saw it panic.
                return CloseOutcome::Stopped;
            }
            state.watch_stuck_workers();
            let now = state.now();
            let timeout = match state.machine.poll_timeout() {
                Some(deadline) if deadline <= now => {
                    state.tick(now);
                    continue;
                }
                Some(deadline) => Some(Duration::from_nanos(deadline.0 - now.0)),
                None => None,
            };
            // While I/O is in flight, look at the workers now and then.
            let timeout = match (state.member_timeout, state.has_io_in_flight()) {
                (Some(member_timeout), true) => {
                    let look = (member_timeout / 4).max(Duration::from_millis(10));
                    Some(timeout.map_or(look, |t| t.min(look)))
                }
                _ => timeout,
            };
            let planned = timeout.map(|t| {
                TimeNs(
                    now.0
                        .saturating_add(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)),
                )
            });
            state.engine_sleep = EngineSleep::Until(planned);
            drop(state);
            let input = self.wait(timeout);
            let Some(mut state) = self.lock.lock() else {
                return CloseOutcome::Stopped;
            };
            state.engine_sleep = EngineSleep::Awake;
            match input {
                Input::Command(command) => state.command(command),
                Input::CommandsClosed => {
                    self.commands_open = false;
                    state.begin_close();
                }
                Input::Finished((id, completion)) => state.complete(id, completion),
                // The loop re-checks the deadline and ticks.
                Input::Look => {}
            }
        }
    }

    fn wait(&self, timeout: Option<Duration>) -> Input {
        let mut select = Select::new();
        let completions_index = select.recv(&self.completions);
        let wake_index = select.recv(&self.wake);
        if self.commands_open {
            select.recv(&self.commands);
        }
        let operation = match timeout {
            Some(timeout) => match select.select_timeout(timeout) {
                Ok(operation) => operation,
                Err(_) => return Input::Look,
            },
            None => select.select(),
        };
        if operation.index() == completions_index {
            match operation.recv(&self.completions) {
                Ok(finished) => Input::Finished(finished),
                // The pool holds a sender until `finish`, so this cannot
                // happen; waking up again is harmless.
                Err(_) => Input::Look,
            }
        } else if operation.index() == wake_index {
            // The lock holds the sender for as long as this thread runs.
            let _ = operation.recv(&self.wake);
            Input::Look
        } else {
            match operation.recv(&self.commands) {
                Ok(command) => Input::Command(command),
                Err(_) => Input::CommandsClosed,
            }
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

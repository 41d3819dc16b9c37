//! The caller-facing side of a running engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_channel::Sender;
use eraid_core::growth::config::{NewMember, ReshapeConfig};
use eraid_core::io::{AdminCommand, UserError, UserOp};

use crate::engine::{refuse, EngineLock};
use crate::member_io::MemberIo;
use crate::reply::{ReplyFn, ReplySink, UserResult};
use crate::stats::EngineStats;

/// How an engine stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseOutcome {
    /// The machine emitted `ArrayEvent::Closed`: every member is marked
    /// clean on disk.
    Closed,
    /// After `handle_close` the machine went idle (no device I/O in flight,
    /// no user request unanswered) without emitting `Closed`.
    Idle,
    /// The engine thread stopped without an orderly close (the machine
    /// panicked).
    Stopped,
}

/// What the engine thread receives from handles (user requests do not go
/// through it: the submitting thread runs them, see `engine::drive`).
pub(crate) enum Command {
    Admin {
        command: AdminCommand,
        done: Sender<serde_json::Value>,
    },
    Close {
        done: Sender<CloseOutcome>,
    },
    Grow {
        members: Vec<GrowMember>,
        config: ReshapeConfig,
        done: Sender<Result<serde_json::Value, GrowError>>,
    },
    AddMember {
        member: GrowMember,
        spare: bool,
        /// A replace's new member: the slot it copies.
        replaces: Option<usize>,
        done: Sender<Result<serde_json::Value, MemberChangeError>>,
    },
    RemoveMember {
        slot: usize,
        done: Sender<Result<RemovedMember, MemberChangeError>>,
    },
}

/// Why adding or removing a member did not happen. Nothing changed on the
/// members either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberChangeError {
    /// The array refused (its reason).
    Refused(String),
    /// The engine is closing or has stopped.
    ShuttingDown,
}

impl std::fmt::Display for MemberChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberChangeError::Refused(reason) => f.write_str(reason),
            MemberChangeError::ShuttingDown => f.write_str("the array is shutting down"),
        }
    }
}

impl std::error::Error for MemberChangeError {}

/// What `EngineHandle::remove_member` did: the status after it, and the
/// device the engine no longer serves (its index, as `device` in the
/// status), if the removed member had one.
#[derive(Clone, Debug)]
pub struct RemovedMember {
    pub status: serde_json::Value,
    pub released_device: Option<usize>,
}

/// A device joining the array (in a growth, as a replacement or as a hot
/// spare), and how the superblock will describe it (`member.size_bytes`
/// must be the device's usable size).
pub struct GrowMember {
    pub device: Arc<dyn MemberIo>,
    pub member: NewMember,
}

/// Why a growth did not start. Nothing changed on the members either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrowError {
    /// The array refused (its reason: wrong strategy for the level, member
    /// too small, a growth or check already running, ...).
    Refused(String),
    /// The engine is closing or has stopped.
    ShuttingDown,
}

impl std::fmt::Display for GrowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrowError::Refused(reason) => f.write_str(reason),
            GrowError::ShuttingDown => f.write_str("the array is shutting down"),
        }
    }
}

impl std::error::Error for GrowError {}

/// State shared by the engine thread and every handle.
pub(crate) struct Shared {
    pub(crate) stats: Mutex<EngineStats>,
    /// Set when a close begins or the engine stops: submits then fail fast.
    pub(crate) stopping: AtomicBool,
    /// Set once the engine thread has finished.
    pub(crate) outcome: Mutex<Option<CloseOutcome>>,
}

impl Shared {
    pub(crate) fn new(stats: EngineStats) -> Shared {
        Shared {
            stats: Mutex::new(stats),
            stopping: AtomicBool::new(false),
            outcome: Mutex::new(None),
        }
    }

    /// Statistics stay meaningful even if a thread panicked holding the lock.
    pub(crate) fn stats(&self) -> MutexGuard<'_, EngineStats> {
        self.stats
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn outcome(&self) -> Option<CloseOutcome> {
        *self
            .outcome
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn set_outcome(&self, outcome: CloseOutcome) {
        let mut slot = self
            .outcome
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slot.get_or_insert(outcome);
    }
}

/// A write this large makes [`EngineHandle::submit_batch`] hand its batch
/// to a drive thread.
pub const HANDED_OFF_WRITE_BYTES_MIN: usize = 64 * 1024;

/// A cheap, cloneable way to submit requests to a running engine from any
/// thread.
///
/// The blocking methods (`read`, `write`, `flush`, `call`, `admin`,
/// `close`, ...) must not be called from a reply callback: the callback's
/// thread may be the one that has to run the request.
#[derive(Clone)]
pub struct EngineHandle {
    pub(crate) commands: Sender<Command>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) engine: Arc<EngineLock>,
}

impl EngineHandle {
    /// Submits one request and runs it on this thread as far as it goes
    /// without waiting for a device worker; `done` is called exactly once
    /// with its result (`ShuttingDown` once the engine is closing or
    /// stopped), on this thread or, if the request waits for a worker's
    /// I/O, on the engine thread.
    pub fn submit(&self, op: UserOp, done: ReplyFn) {
        self.submit_batch(vec![(op, done)]);
    }

    /// Submits several requests at once, in order, as [`EngineHandle::submit`]
    /// each would: the machine takes them all before any runs.
    ///
    /// A batch with a write of [`HANDED_OFF_WRITE_BYTES_MIN`] or more goes
    /// to one of the engine's drive threads instead while fewer
    /// connections than cores stream such writes, and this returns at
    /// once: the submitter (an NBD connection's reader) then reads the next
    /// requests off its socket while that thread copies the data into the
    /// members. With more, it runs here (the readers keep the cores busy
    /// by themselves). Small writes come in batches of many requests,
    /// where the hand-off's wake-ups cost more than running them here.
    pub fn submit_batch(&self, requests: Vec<(UserOp, ReplyFn)>) {
        let large_write = requests.iter().any(|(op, _)| {
            matches!(op, UserOp::Write { data, .. } if data.len() >= HANDED_OFF_WRITE_BYTES_MIN)
        });
        let batch = requests
            .into_iter()
            .map(|(op, done)| (op, ReplySink::new(done)));
        if self.shared.stopping.load(Ordering::Acquire) {
            refuse(batch);
            return;
        }
        self.engine.submit_in_order(batch.collect(), large_write);
    }

    /// Submits `op` and waits for its result.
    pub fn call(&self, op: UserOp) -> UserResult {
        let (reply_tx, reply_rx) = crossbeam_channel::bounded(1);
        self.submit(
            op,
            Box::new(move |result| {
                let _ = reply_tx.send(result);
            }),
        );
        // The sink answers even when dropped, so an error here means the
        // callback itself was lost: treat it as shutdown, never hang.
        reply_rx.recv().unwrap_or(Err(UserError::ShuttingDown))
    }

    pub fn read(&self, offset_bytes: u64, len_bytes: usize) -> Result<Vec<u8>, UserError> {
        match self.call(UserOp::Read {
            offset_bytes,
            len_bytes,
        })? {
            Some(data) => Ok(data.to_vec()),
            None => Err(UserError::Unavailable(
                "the array answered a read without data".into(),
            )),
        }
    }

    pub fn write(
        &self,
        offset_bytes: u64,
        data: impl Into<eraid_core::io::Bytes>,
    ) -> Result<(), UserError> {
        self.call(UserOp::Write {
            offset_bytes,
            data: data.into(),
            fua: false,
        })
        .map(|_| ())
    }

    pub fn flush(&self) -> Result<(), UserError> {
        self.call(UserOp::Flush).map(|_| ())
    }

    /// Relays an operator command to the machine and returns its JSON
    /// answer. Works until the engine thread has stopped (during a close
    /// too, so status stays observable); then `ShuttingDown`. A status
    /// answer (any but a refusal) also carries `engine_lock`: how much of
    /// the time the core's lock was held (`acquisitions`,
    /// `sampled_acquisitions`, `held_s`, `waited_s`, `uptime_s`,
    /// `held_fraction`; see `engine::lock_time`).
    pub fn admin(&self, command: AdminCommand) -> Result<serde_json::Value, UserError> {
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        self.commands
            .send(Command::Admin {
                command,
                done: done_tx,
            })
            .map_err(|_| UserError::ShuttingDown)?;
        // Dropped unanswered only when the engine stops first.
        let mut answer = done_rx.recv().map_err(|_| UserError::ShuttingDown)?;
        if let Some(fields) = answer.as_object_mut() {
            if !fields.contains_key("error") {
                fields.insert("engine_lock".to_string(), self.engine.lock_report());
            }
        }
        Ok(answer)
    }

    /// Grows the array onto `members` while it runs: the engine appends
    /// them to its devices as slots `member_count..member_count + n`, then
    /// hands `AdminCommand::StartGrow` to the machine. If the machine
    /// refuses, the devices are dropped again and nothing changed. On
    /// success returns the status JSON (with its `reshape` object); the data
    /// then moves in the background while requests are served, and
    /// `admin(AdminCommand::Status)` follows it.
    pub fn grow(
        &self,
        members: Vec<GrowMember>,
        config: ReshapeConfig,
    ) -> Result<serde_json::Value, GrowError> {
        if self.shared.stopping.load(Ordering::Acquire) {
            return Err(GrowError::ShuttingDown);
        }
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        self.commands
            .send(Command::Grow {
                members,
                config,
                done: done_tx,
            })
            .map_err(|_| GrowError::ShuttingDown)?;
        done_rx.recv().unwrap_or(Err(GrowError::ShuttingDown))
    }

    /// Adds a replacement (`spare` false: it takes a failed member's slot
    /// and is rebuilt at once) or a hot spare while the array runs: the
    /// engine serves `member.device` as its next device, then hands
    /// `AdminCommand::AddMember` to the machine; if refused, the device is
    /// dropped again and nothing changed. Returns the status after it
    /// (with its `rebuild` object).
    pub fn add_member(
        &self,
        member: GrowMember,
        spare: bool,
    ) -> Result<serde_json::Value, MemberChangeError> {
        self.add_device(member, spare, None)
    }

    /// Replaces member `slot` by `member` (Linux MD's `--replace`): the
    /// engine serves `member.device` as its next device, then hands
    /// `AdminCommand::ReplaceMember` to the machine, which copies the slot
    /// onto it while the slot keeps serving; if refused, the device is
    /// dropped again and nothing changed. Returns the status after it.
    pub fn replace_member(
        &self,
        slot: usize,
        member: GrowMember,
    ) -> Result<serde_json::Value, MemberChangeError> {
        self.add_device(member, false, Some(slot))
    }

    fn add_device(
        &self,
        member: GrowMember,
        spare: bool,
        replaces: Option<usize>,
    ) -> Result<serde_json::Value, MemberChangeError> {
        if self.shared.stopping.load(Ordering::Acquire) {
            return Err(MemberChangeError::ShuttingDown);
        }
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        self.commands
            .send(Command::AddMember {
                member,
                spare,
                replaces,
                done: done_tx,
            })
            .map_err(|_| MemberChangeError::ShuttingDown)?;
        done_rx
            .recv()
            .unwrap_or(Err(MemberChangeError::ShuttingDown))
    }

    /// Forgets a failed member (`slot` below the member count) or drops a
    /// spare (`member_count + j`); the device it used, if any, is replaced
    /// by a stand-in, so its file may be closed.
    pub fn remove_member(&self, slot: usize) -> Result<RemovedMember, MemberChangeError> {
        if self.shared.stopping.load(Ordering::Acquire) {
            return Err(MemberChangeError::ShuttingDown);
        }
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        self.commands
            .send(Command::RemoveMember {
                slot,
                done: done_tx,
            })
            .map_err(|_| MemberChangeError::ShuttingDown)?;
        done_rx
            .recv()
            .unwrap_or(Err(MemberChangeError::ShuttingDown))
    }

    /// Begins an orderly close (`Machine::handle_close`) and waits until the
    /// engine thread has finished: after `ArrayEvent::Closed`, or — for a
    /// machine that never emits it — once no device I/O is in flight and no
    /// user request is unanswered. Requests submitted meanwhile or later get
    /// `ShuttingDown`. Idempotent: later calls return the same outcome.
    pub fn close(&self) -> CloseOutcome {
        if let Some(outcome) = self.shared.outcome() {
            return outcome;
        }
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        if self.commands.send(Command::Close { done: done_tx }).is_ok() {
            if let Ok(outcome) = done_rx.recv() {
                return outcome;
            }
        }
        self.shared.outcome().unwrap_or(CloseOutcome::Stopped)
    }

    /// False once the engine has begun closing or has stopped.
    pub fn is_accepting(&self) -> bool {
        !self.shared.stopping.load(Ordering::Acquire)
    }

    /// A snapshot of the engine's accounting.
    pub fn stats(&self) -> EngineStats {
        self.shared.stats().clone()
    }
}

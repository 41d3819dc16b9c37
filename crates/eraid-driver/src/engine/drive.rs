//! Running the engine on whichever thread has work for it.
//!
//! A caller that submits requests runs the machine itself (under the
//! engine lock) instead of handing them to the engine thread: no thread
//! wake-up per request batch. Whatever the machine then asks for that
//! takes time or calls out (an I/O on a memory-backed member, a journal
//! batch, a reply callback) is carried out with the lock let go of, so
//! several connections move their data at once and only the machine's
//! bookkeeping is one thread at a time. I/O on other members goes to the
//! pool's workers as before, and the engine thread keeps the timers and
//! the pool's completions.
//!
//! A batch with a large write is handed to one of a few drive threads
//! instead, which run it the same way: the submitter (a connection's
//! reader) then reads its next requests while the data is copied, and
//! several connections' large writes are copied at once.
//!
//! Work that a callback creates (a reply callback that submits the next
//! part of a request) is only queued when its thread is already driving:
//! that thread's loop picks it up, so the stack never grows with it.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use eraid_core::io::{IoCompletion, IoId, UserError, UserOp};

use super::large_writers::LargeWriters;
use super::lock_time::{TimedGuard, TimedMutex};
use super::state::{EngineSleep, EngineState, Work};
use crate::reply::ReplySink;

thread_local! {
    /// This thread is inside [`EngineLock::drive`].
    static DRIVING: Cell<bool> = const { Cell::new(false) };
    /// The drive thread this submitting thread hands its batches to,
    /// counted from [`NEXT_SUBMITTER`] on its first hand-off.
    static SUBMITTER_NUMBER: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Submitting threads are numbered in the order they first hand off, so
/// connections spread evenly over the drive threads (a hash of thread ids,
/// as before, puts three or four of four connections on one of two threads
/// in 10 of the 16 equally likely cases).
static NEXT_SUBMITTER: AtomicUsize = AtomicUsize::new(0);

fn submitter_number() -> usize {
    SUBMITTER_NUMBER.with(|number| match number.get() {
        Some(n) => n,
        None => {
            let n = NEXT_SUBMITTER.fetch_add(1, Ordering::Relaxed);
            number.set(Some(n));
            n
        }
    })
}

/// Requests a submitter hands to the drive threads.
pub(crate) type HandedOff = Vec<(UserOp, ReplySink)>;

/// Slots counting each submitter's batches queued at its drive thread (by
/// submitter number; submitters that share a slot only hand off more).
const SUBMITTER_SLOTS: usize = 64;

/// The engine's state, the way to wake its thread, and the queue of the
/// drive threads.
pub(crate) struct EngineLock {
    /// Timed: `engine_lock` in the status says how much of the time it
    /// is held.
    state: TimedMutex<EngineState>,
    /// Capacity one: a wake-up already queued is enough.
    wake: Sender<()>,
    /// One queue per drive thread, of batches and their submitter's
    /// number; empty once the engine has finished (the drive threads then
    /// stop).
    hand_off: Mutex<Vec<Sender<(usize, HandedOff)>>>,
    /// Per submitter slot, batches handed off and not yet in the machine:
    /// while there are any, the submitter's next batches follow them, so a
    /// connection's requests reach the machine in the order they came
    /// (write gathering recognises a stream by its writes' order).
    handed_off_pending: [AtomicUsize; SUBMITTER_SLOTS],
    large_writers: LargeWriters,
}

impl EngineLock {
    pub(crate) fn new(state: EngineState, wake: Sender<()>) -> EngineLock {
        EngineLock {
            state: TimedMutex::new(state),
            wake,
            hand_off: Mutex::new(Vec::new()),
            handed_off_pending: std::array::from_fn(|_| AtomicUsize::new(0)),
            large_writers: LargeWriters::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()),
            ),
        }
    }

    /// Runs a submitter's batch: on a drive thread if one of its batches
    /// is still queued there (order kept) or if it has a large write and
    /// few connections stream large writes (see `large_writers`), else
    /// here, as [`EngineLock::submit`].
    pub(crate) fn submit_in_order(&self, requests: HandedOff, large_write: bool) {
        let submitter = submitter_number();
        let pending = &self.handed_off_pending[submitter % SUBMITTER_SLOTS];
        let behind_hand_off = pending.load(Ordering::Acquire) > 0;
        let hand_off = large_write && self.large_writers.note_and_choose_hand_off(submitter);
        if behind_hand_off || hand_off {
            pending.fetch_add(1, Ordering::AcqRel);
            self.hand_off(submitter, requests);
        } else {
            self.submit(requests);
        }
    }

    /// Queues requests for a drive thread, which runs them as
    /// [`EngineLock::submit`] would while the caller goes on. A submitting
    /// thread always gets the same drive thread: one connection's batches
    /// run one after another on a warm thread, different connections'
    /// at once on different ones (round robin).
    fn hand_off(&self, submitter: usize, requests: HandedOff) {
        let sender = {
            let queues = self.hand_off.lock().unwrap_or_else(|e| e.into_inner());
            let index = submitter % queues.len().max(1);
            queues.get(index).cloned()
        };
        let refused = match sender {
            Some(sender) => match sender.send((submitter, requests)) {
                Ok(()) => None,
                Err(crossbeam_channel::SendError((_, requests))) => Some(requests),
            },
            None => Some(requests),
        };
        if let Some(requests) = refused {
            self.handed_off_pending[submitter % SUBMITTER_SLOTS].fetch_sub(1, Ordering::AcqRel);
            refuse(requests);
        }
    }

    /// A drive thread runs a handed-off batch; once its requests are in
    /// the machine, the submitter's next batch may run anywhere.
    fn run_handed_off(&self, submitter: usize, requests: HandedOff) {
        self.submit_then(requests, || {
            self.handed_off_pending[submitter % SUBMITTER_SLOTS].fetch_sub(1, Ordering::AcqRel);
        });
    }

    /// The engine has finished: the drive threads run what is queued
    /// (answered `ShuttingDown`) and stop.
    pub(crate) fn stop_handing_off(&self) {
        self.hand_off
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The state, or None once a panic while running the machine left it
    /// inconsistent (the engine then stops).
    pub(crate) fn lock(&self) -> Option<TimedGuard<'_, EngineState>> {
        self.state.lock().ok()
    }

    /// The `engine_lock` object of the status: how much of the time since
    /// the engine started the lock was held and waited for.
    pub(crate) fn lock_report(&self) -> serde_json::Value {
        let time = self.state.lock_ignoring_poison().lock_time();
        time.to_json(self.state.uptime_s())
    }

    /// The state even after a panic: for answering everyone at the end.
    pub(crate) fn lock_for_finish(&self) -> TimedGuard<'_, EngineState> {
        self.state.lock_ignoring_poison()
    }

    pub(crate) fn wake_engine(&self) {
        let _ = self.wake.try_send(());
    }

    /// Submits requests and runs the machine on this thread until it has
    /// nothing left to do without waiting.
    pub(crate) fn submit(&self, requests: impl IntoIterator<Item = (UserOp, ReplySink)>) {
        self.submit_then(requests, || {});
    }

    /// [`EngineLock::submit`], calling `taken` once the requests are in the
    /// machine (or refused), before it runs them.
    fn submit_then(
        &self,
        requests: impl IntoIterator<Item = (UserOp, ReplySink)>,
        taken: impl FnOnce(),
    ) {
        let Some(mut state) = self.lock() else {
            taken();
            refuse(requests);
            return;
        };
        for (op, sink) in requests {
            state.submit(op, sink);
        }
        drop(state);
        taken();
        if DRIVING.get() {
            // A reply callback submitted: the loop below it runs this.
            return;
        }
        drop(self.drive(false));
    }

    /// Carries out the machine's work until there is none, letting go of
    /// the lock while data moves and callbacks run, and returns the state
    /// (None if the machine panicked: the engine is then told to stop).
    /// Off the engine thread it also wakes the engine if the machine now
    /// wants it sooner than it planned to look.
    pub(crate) fn drive(&self, on_engine_thread: bool) -> Option<TimedGuard<'_, EngineState>> {
        let was_driving = DRIVING.replace(true);
        let result = panic::catch_unwind(AssertUnwindSafe(|| self.drive_loop(on_engine_thread)));
        DRIVING.set(was_driving);
        match result {
            Ok(state) => state,
            Err(_) => {
                tracing::error!("the array's state machine panicked; the engine stops");
                self.stop_after_panic();
                None
            }
        }
    }

    fn drive_loop(&self, on_engine_thread: bool) -> Option<TimedGuard<'_, EngineState>> {
        let mut state = self.lock()?;
        loop {
            let work = state.take_work();
            if work.is_empty() {
                if !on_engine_thread {
                    wake_if_wanted(&mut state, &self.wake);
                }
                return Some(state);
            }
            drop(state);
            let done = carry_out(work);
            state = self.lock()?;
            for (id, completion) in done.completions {
                state.complete(id, completion);
            }
            if let Some((batch, result)) = done.journal {
                state.journal_done(batch, result);
            }
        }
    }

    fn stop_after_panic(&self) {
        let state = self.lock_for_finish();
        state.shared.stopping.store(true, Ordering::Release);
        drop(state);
        self.wake_engine();
    }
}

/// What carrying out a [`Work`] produced, for the machine.
struct Done {
    completions: Vec<(IoId, IoCompletion)>,
    journal: Option<(u64, Result<(), String>)>,
}

/// Replies first (the client is waiting on them), then the data.
fn carry_out(work: Work) -> Done {
    for (sink, result) in work.replies {
        sink.send(result);
    }
    let completions = work
        .memory_io
        .into_iter()
        .map(|io| (io.id(), io.perform()))
        .collect();
    let journal = work.journal.map(|(journal, batch)| {
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            crate::journal_file::write_batch(journal.as_ref(), &batch)
        }))
        .unwrap_or_else(|_| Err("the journal write panicked".to_string()));
        if let Err(reason) = &result {
            tracing::error!("{reason}");
        }
        (batch.id, result)
    });
    Done {
        completions,
        journal,
    }
}

/// Wakes a waiting engine thread when the machine now wants attention
/// before the engine planned to look: an earlier timer, I/O in flight to
/// watch for hung members, or a close to finish.
fn wake_if_wanted(state: &mut EngineState, wake: &Sender<()>) {
    let EngineSleep::Until(planned) = state.engine_sleep else {
        return;
    };
    let wanted = state.machine.poll_timeout();
    let sooner = match (wanted, planned) {
        (Some(_), None) => true,
        (Some(wanted), Some(planned)) => wanted < planned,
        (None, _) => false,
    };
    let watch = state.member_timeout.is_some() && state.has_io_in_flight() && planned.is_none();
    if sooner || watch || state.closing || state.closed_event {
        state.engine_sleep = EngineSleep::Awake;
        let _ = wake.try_send(());
    }
}

/// Starts `count` drive threads, each with its own queue: each runs
/// handed-off requests on itself until its queue closes.
pub(crate) fn start_drive_threads(
    lock: &Arc<EngineLock>,
    count: usize,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::with_capacity(count);
    for index in 0..count {
        let (sender, queue) = crossbeam_channel::unbounded::<(usize, HandedOff)>();
        let thread_lock = Arc::clone(lock);
        threads.push(
            std::thread::Builder::new()
                .name(format!("eraid-drive-{index}"))
                .spawn(move || {
                    for (submitter, requests) in queue {
                        thread_lock.run_handed_off(submitter, requests);
                    }
                })?,
        );
        lock.hand_off
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sender);
    }
    Ok(threads)
}

/// Answers requests that never reached the machine.
pub(crate) fn refuse(requests: impl IntoIterator<Item = (UserOp, ReplySink)>) {
    for (_, sink) in requests {
        sink.send(Err(UserError::ShuttingDown));
    }
}

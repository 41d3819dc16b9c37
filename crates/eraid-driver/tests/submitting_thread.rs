//! Requests run on the thread that submits them: what that must not break.
//! A reply callback that submits again is queued, not run inside the
//! callback (the stack stays flat however long the chain); a submitter
//! that leaves the machine wanting a tick wakes the engine thread; several
//! submitters at once each get their own data back; a batch with a large
//! write goes to a drive thread.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::recording_member::RecordingMember;
use common::{pattern, MirrorMachine};
use eraid_core::io::{
    AdminCommand, ArrayEvent, DeviceIo, IoCompletion, IoId, Machine, TimeNs, UserOp, UserReply,
    UserRequest,
};
use eraid_driver::handle::HANDED_OFF_WRITE_BYTES_MIN;
use eraid_driver::{CloseOutcome, Engine, EngineConfig, EngineHandle, MemberIo, ReplyFn};

const WAIT: Duration = Duration::from_secs(30);

fn start_mirror(members: &[Arc<RecordingMember>]) -> Engine {
    let devices = members
        .iter()
        .map(|m| Arc::clone(m) as Arc<dyn MemberIo>)
        .collect();
    let (machine, _probe) = MirrorMachine::new(members.len());
    Engine::start_with_devices(Box::new(machine), devices, EngineConfig::default()).unwrap()
}

fn close_within_wait(engine: Engine) -> CloseOutcome {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || tx.send(engine.close()).unwrap());
    rx.recv_timeout(WAIT).expect("close did not finish")
}

/// Submits the next write of the chain from the previous one's callback.
fn chain(handle: EngineHandle, left: usize, done: crossbeam_channel::Sender<usize>) {
    let next = handle.clone();
    let callback: ReplyFn = Box::new(move |result| {
        assert_eq!(result, Ok(None));
        if left == 1 {
            done.send(0).unwrap();
        } else {
            chain(next, left - 1, done);
        }
    });
    let op = UserOp::Write {
        offset_bytes: (left % 64 * 512) as u64,
        data: vec![left as u8; 512].into(),
        fua: false,
    };
    handle.submit(op, callback);
}

#[test]
fn a_callback_that_submits_is_queued_not_run_inside_it() {
    let member = RecordingMember::new(0, true, 1 << 20);
    let engine = start_mirror(std::slice::from_ref(&member));
    let handle = engine.handle();
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    // Were each submit run inside the previous callback, 20,000 nested
    // submits (several frames each) would overflow this 256 KiB stack.
    let submitter = std::thread::Builder::new()
        .name("submitter".into())
        .stack_size(256 * 1024)
        .spawn(move || chain(handle, 20_000, done_tx))
        .unwrap();
    submitter
        .join()
        .expect("the submitting thread overflowed or panicked");
    done_rx
        .recv_timeout(WAIT)
        .expect("the chain did not finish");
    // It ran on the submitting thread: no engine thread hand-off. The
    // engine thread, woken by a timer while work waits for the submitter
    // (a loaded machine descheduling it), may take that work: a few I/Os,
    // never a share of them.
    let ios = member.ios_by_thread();
    let by_submitter = ios.get("submitter").copied().unwrap_or(0);
    let by_engine = ios.get("eraid-engine").copied().unwrap_or(0);
    assert_eq!(
        by_submitter + by_engine,
        ios.values().sum::<u64>(),
        "{ios:?}"
    );
    assert!(by_engine * 100 <= by_submitter, "{ios:?}");
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

#[test]
fn threads_submitting_at_once_each_read_back_their_own_data() {
    let members = [
        RecordingMember::new(0, true, 8 << 20),
        RecordingMember::new(1, true, 8 << 20),
    ];
    let engine = start_mirror(&members);
    let threads = 4;
    let requests_per_thread = 200;
    let request_bytes = 8192;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let handle = engine.handle();
            std::thread::Builder::new()
                .name(format!("submitter-{t}"))
                .spawn(move || {
                    for i in 0..requests_per_thread {
                        let seed = (t * requests_per_thread + i) as u64;
                        let offset_bytes = seed * request_bytes as u64;
                        let data = pattern(request_bytes, seed);
                        handle.write(offset_bytes, data.clone()).unwrap();
                        assert!(handle.read(offset_bytes, request_bytes).unwrap() == data);
                    }
                })
                .unwrap()
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let handle = engine.handle();
    for seed in 0..(threads * requests_per_thread) as u64 {
        let got = handle
            .read(seed * request_bytes as u64, request_bytes)
            .unwrap();
        assert!(
            got == pattern(request_bytes, seed),
            "request {seed} differs"
        );
    }
    // Each submitter copied data itself.
    for member in &members {
        let seen = member.threads();
        assert!(
            (0..threads).all(|t| seen.contains(&format!("submitter-{t}"))),
            "{seen:?}"
        );
    }
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

#[test]
fn a_batch_with_a_large_write_runs_on_a_drive_thread() {
    let member = RecordingMember::new(0, true, 4 << 20);
    let engine = start_mirror(std::slice::from_ref(&member));
    let handle = engine.handle();
    let (tx, rx) = crossbeam_channel::unbounded();
    let reply = move |tx: crossbeam_channel::Sender<_>| -> ReplyFn {
        Box::new(move |result| tx.send(result).unwrap())
    };
    let large = UserOp::Write {
        offset_bytes: 0,
        data: pattern(HANDED_OFF_WRITE_BYTES_MIN, 1).into(),
        fua: false,
    };
    let small = UserOp::Write {
        offset_bytes: HANDED_OFF_WRITE_BYTES_MIN as u64,
        data: pattern(4096, 2).into(),
        fua: false,
    };
    std::thread::Builder::new()
        .name("submitter".into())
        .spawn(move || {
            handle.submit_batch(vec![(large, reply(tx.clone())), (small, reply(tx))]);
        })
        .unwrap()
        .join()
        .unwrap();
    for _ in 0..2 {
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Ok(None));
    }
    let threads = member.threads();
    assert!(
        threads.len() == 1 && threads.iter().all(|t| t.starts_with("eraid-drive-")),
        "{threads:?}"
    );
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

/// Answers every request at once and asks for a tick `delay_ns` later;
/// counts the ticks.
struct TimerOnRequest {
    delay_ns: u64,
    now: TimeNs,
    next_tick: Option<TimeNs>,
    replies: Vec<UserReply>,
    ticks: Arc<AtomicUsize>,
    closed: bool,
}

impl Machine for TimerOnRequest {
    fn handle_request(&mut self, now: TimeNs, request: UserRequest) {
        self.now = now;
        self.next_tick = Some(TimeNs(now.0 + self.delay_ns));
        self.replies.push(UserReply {
            id: request.id,
            result: Ok(None),
        });
    }
    fn handle_completion(&mut self, _now: TimeNs, _io: IoId, _completion: IoCompletion) {}
    fn handle_tick(&mut self, now: TimeNs) {
        self.now = now;
        self.next_tick = None;
        self.ticks.fetch_add(1, Ordering::SeqCst);
    }
    fn handle_close(&mut self, _now: TimeNs) {
        self.closed = true;
    }
    fn handle_admin(&mut self, _now: TimeNs, _command: AdminCommand) -> serde_json::Value {
        serde_json::json!({})
    }
    fn poll_io(&mut self) -> Option<DeviceIo> {
        None
    }
    fn poll_reply(&mut self) -> Option<UserReply> {
        self.replies.pop()
    }
    fn poll_event(&mut self) -> Option<ArrayEvent> {
        if self.closed {
            self.closed = false;
            return Some(ArrayEvent::Closed);
        }
        None
    }
    fn poll_timeout(&self) -> Option<TimeNs> {
        self.next_tick
    }
}

#[test]
fn a_submitter_that_sets_a_timer_wakes_the_engine_for_it() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let machine = TimerOnRequest {
        delay_ns: 20_000_000,
        now: TimeNs(0),
        next_tick: None,
        replies: Vec::new(),
        ticks: Arc::clone(&ticks),
        closed: false,
    };
    let engine =
        Engine::start_with_devices(Box::new(machine), Vec::new(), EngineConfig::default()).unwrap();
    let handle = engine.handle();
    // Let the engine thread go to sleep with nothing to wait for.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(ticks.load(Ordering::SeqCst), 0);
    assert_eq!(handle.flush(), Ok(()));
    // Nothing else will ever wake the engine: only the submitter's nudge.
    let started = Instant::now();
    while ticks.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < WAIT,
            "the engine never ticked for the timer a submitter set"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

//! The engine over real member files, driven by the test-only mirror
//! machine in `common`.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{pattern, submit, write_then_read_back, CloseStyle, MirrorMachine, PIECE_BYTES};
use eraid_core::io::{AdminCommand, ArrayEvent, IoCause, UserError, UserOp};
use eraid_driver::{CloseOutcome, Engine, EngineConfig, MemberFile, MemberIo, MemberOptions};

const MEMBER_BYTES: u64 = 8 << 20;
const WAIT: Duration = Duration::from_secs(30);

fn member_paths(dir: &Path, count: usize) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let path = dir.join(format!("m{i}"));
            File::create(&path).unwrap().set_len(MEMBER_BYTES).unwrap();
            path
        })
        .collect()
}

/// Opens the members and keeps a second reference to each, so tests can
/// read their OS-level counters while the engine owns them.
fn open_members(paths: &[PathBuf]) -> (Vec<Arc<MemberFile>>, Vec<Arc<dyn MemberIo>>) {
    let files: Vec<Arc<MemberFile>> = paths
        .iter()
        .map(|p| Arc::new(MemberFile::open(p).unwrap()))
        .collect();
    let devices = files
        .iter()
        .map(|f| Arc::clone(f) as Arc<dyn MemberIo>)
        .collect();
    (files, devices)
}

fn start(
    count: usize,
    machine: MirrorMachine,
    dir: &Path,
) -> (Engine, Vec<Arc<MemberFile>>, Vec<PathBuf>) {
    let paths = member_paths(dir, count);
    let (files, devices) = open_members(&paths);
    let engine =
        Engine::start_with_devices(Box::new(machine), devices, EngineConfig::default()).unwrap();
    (engine, files, paths)
}

/// Closes on another thread so a close that hangs fails the test instead
/// of hanging the suite.
fn close_within_wait(engine: Engine) -> CloseOutcome {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || tx.send(engine.close()).unwrap());
    rx.recv_timeout(WAIT).expect("close did not finish")
}

#[test]
fn data_written_through_the_handle_is_read_back_and_mirrored() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(2);
    let (engine, _files, paths) = start(2, machine, dir.path());
    let handle = engine.handle();

    let data = pattern(5 * PIECE_BYTES + 1536, 1);
    let offset_bytes = 3 * 512;
    handle.write(offset_bytes, data.clone()).unwrap();
    // Reads alternate between the members piece by piece, so both copies
    // are exercised.
    assert!(
        handle.read(offset_bytes, data.len()).unwrap() == data,
        "read back differs"
    );
    assert_eq!(handle.read(0, 512).unwrap(), vec![0; 512]);

    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
    for path in &paths {
        let on_disk = std::fs::read(path).unwrap();
        assert!(
            on_disk[offset_bytes as usize..][..data.len()] == data[..],
            "{}",
            path.display()
        );
    }
}

#[test]
fn many_concurrent_requests_all_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(3);
    let (engine, _files, _paths) = start(3, machine, dir.path());
    let handle = engine.handle();
    let requests = 200;
    let request_bytes = 2 * PIECE_BYTES;

    write_then_read_back(&handle, requests, request_bytes, false);

    let stats = handle.stats();
    assert_eq!(stats.requests_submitted, 2 * requests as u64);
    assert_eq!(stats.requests_succeeded, 2 * requests as u64);
    // Each write is 2 pieces on 3 members, issued together: the engine must
    // have had them all in flight at once rather than one after another.
    assert!(
        stats.io_in_flight_max >= 6,
        "at most {} I/Os were ever in flight",
        stats.io_in_flight_max
    );
    let user = stats.cause(IoCause::User);
    assert_eq!(user.writes, (requests * 2 * 3) as u64);
    assert_eq!(user.written_bytes, (requests * request_bytes * 3) as u64);
    assert_eq!(user.reads, (requests * 2) as u64);
    assert_eq!(user.read_bytes, (requests * request_bytes) as u64);
    assert_eq!(stats.total().writes, user.writes);
    for member in &stats.by_member {
        assert_eq!(member.io.writes, (requests * 2) as u64, "{}", member.label);
    }
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

#[test]
fn requests_from_several_threads_all_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(2);
    let (engine, _files, _paths) = start(2, machine, dir.path());
    let threads = 4;
    let rounds = 40;
    // Each thread's requests stay inside its own region (at most
    // 7 * 8192 + 512 + 42 * 512 bytes from its start).
    let region_bytes = 128 * 1024;

    std::thread::scope(|scope| {
        for t in 0..threads {
            let handle = engine.handle();
            scope.spawn(move || {
                for round in 0..rounds {
                    let offset_bytes = (t * region_bytes) as u64 + (round % 8) as u64 * 8192 + 512;
                    let data = pattern(3 * 512 + round * 512, (t * 1000 + round) as u64);
                    handle.write(offset_bytes, data.clone()).unwrap();
                    let got = handle.read(offset_bytes, data.len()).unwrap();
                    assert!(got == data, "thread {t} round {round}: read back differs");
                    if round % 10 == 0 {
                        handle.flush().unwrap();
                    }
                }
            });
        }
    });
    let stats = engine.handle().stats();
    let per_thread = rounds * 2 + rounds / 10;
    assert_eq!(stats.requests_succeeded, (threads * per_thread) as u64);
    assert_eq!(stats.requests_failed, 0);
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

#[test]
fn flush_reply_comes_after_fdatasync_of_every_member() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(3);
    let (engine, files, _paths) = start(3, machine, dir.path());
    let handle = engine.handle();
    handle.write(4096, pattern(8192, 3)).unwrap();
    assert!(files.iter().all(|f| f.counters().syncs == 0));

    // Look at the members' fdatasync counters from inside the reply
    // callback: the moment the caller learns the flush is done.
    let (tx, rx) = crossbeam_channel::bounded(1);
    let watched = files.clone();
    handle.submit(
        UserOp::Flush,
        Box::new(move |result| {
            let syncs: Vec<u64> = watched.iter().map(|f| f.counters().syncs).collect();
            tx.send((result, syncs)).unwrap();
        }),
    );
    let (result, syncs_at_reply) = rx.recv_timeout(WAIT).unwrap();
    assert_eq!(result, Ok(None));
    assert_eq!(syncs_at_reply, vec![1, 1, 1]);
    let stats = handle.stats();
    for member in &stats.by_member {
        assert_eq!(member.io.flushes, 1, "{}", member.label);
    }
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
    // Close flushed every member once more.
    assert!(files.iter().all(|f| f.counters().syncs == 2));
}

#[test]
fn failing_member_io_reports_path_offset_and_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let paths = member_paths(dir.path(), 2);
    let good = MemberFile::open(&paths[0]).unwrap();
    let read_only = MemberFile::open_with(
        &paths[1],
        MemberOptions {
            writable: false,
            ..Default::default()
        },
    )
    .unwrap();
    let (events_tx, events_rx) = crossbeam_channel::unbounded();
    let config = EngineConfig {
        io_threads: Some(2),
        event_sink: Some(events_tx),
        member_timeout: None,
        journal: None,
        io_pool_only: false,
    };
    let (machine, probe) = MirrorMachine::new(2);
    let engine = Engine::start(Box::new(machine), vec![good, read_only], config).unwrap();
    let handle = engine.handle();

    let err = handle.write(2 * 4096 + 512, pattern(512, 4)).unwrap_err();
    let UserError::Unavailable(message) = err else {
        panic!("expected Unavailable, got {err:?}");
    };
    let path = paths[1].display().to_string();
    for needle in [
        path.as_str(),
        "member 1",
        "write of 512 bytes at offset 8704",
        "os error 9",
    ] {
        assert!(
            message.contains(needle),
            "{needle:?} missing from {message:?}"
        );
    }
    // The machine itself received `IoCompletion::Failed` with that message.
    assert_eq!(*probe.failures.lock().unwrap(), vec![message.clone()]);
    match events_rx.recv_timeout(WAIT).unwrap() {
        ArrayEvent::MemberFailed { member, reason } => {
            assert_eq!(member, 1);
            assert_eq!(reason, message);
        }
        other => panic!("expected MemberFailed, got {other:?}"),
    }
    let stats = handle.stats();
    assert_eq!(stats.by_member[1].io.failures, 1);
    assert_eq!(stats.by_member[0].io.failures, 0);
    assert_eq!(stats.by_member[0].io.writes, 1);
    // Reads of the healthy data still work.
    assert_eq!(handle.read(0, 1024).unwrap(), vec![0; 1024]);
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
    assert_eq!(events_rx.try_iter().last(), Some(ArrayEvent::Closed));
}

#[test]
fn close_finishes_in_flight_requests_then_stops_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(2);
    let (engine, files, _paths) = start(2, machine, dir.path());
    let handle = engine.handle();
    let pending: Vec<_> = (0..32)
        .map(|i| {
            submit(
                &handle,
                UserOp::Write {
                    offset_bytes: i * 8192,
                    data: pattern(8192, i).into(),
                    fua: false,
                },
            )
        })
        .collect();

    // Close from a clone of the handle: it returns once the engine thread
    // is done, and every request submitted before it has been served.
    let closer = handle.clone();
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || tx.send(closer.close()).unwrap());
    assert_eq!(
        rx.recv_timeout(WAIT).expect("close did not finish"),
        CloseOutcome::Closed
    );
    for reply in pending {
        assert_eq!(reply.try_recv().unwrap(), Ok(None));
    }
    assert!(!handle.is_accepting());
    assert!(!handle.stats().running);
    assert_eq!(handle.write(0, vec![1; 512]), Err(UserError::ShuttingDown));
    assert_eq!(handle.read(0, 512), Err(UserError::ShuttingDown));
    assert_eq!(
        handle.admin(AdminCommand::Status),
        Err(UserError::ShuttingDown)
    );
    assert_eq!(handle.close(), CloseOutcome::Closed);
    // The close flushes ran; joining the (already finished) thread is quick.
    assert!(files.iter().all(|f| f.counters().syncs == 1));
    assert_eq!(close_within_wait(engine), CloseOutcome::Closed);
}

#[test]
fn a_machine_that_never_emits_closed_stops_when_idle_despite_timers() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, probe) = MirrorMachine::new(2);
    let machine = machine
        .close_style(CloseStyle::Silent)
        .tick_every_ns(1_000_000);
    let (engine, files, _paths) = start(2, machine, dir.path());
    let handle = engine.handle();
    handle.write(0, pattern(4096, 8)).unwrap();
    // Ticks are driven by the machine's deadline in real time.
    let deadline = std::time::Instant::now() + WAIT;
    while probe.ticks.load(std::sync::atomic::Ordering::Relaxed) < 3 {
        assert!(std::time::Instant::now() < deadline, "no ticks arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(handle.stats().ticks >= 3);
    assert_eq!(close_within_wait(engine), CloseOutcome::Idle);
    // Idle means the close flushes it issued had completed.
    assert!(files.iter().all(|f| f.counters().syncs == 1));
    assert_eq!(handle.flush(), Err(UserError::ShuttingDown));
}

#[test]
fn admin_commands_reach_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(2);
    let (engine, _files, _paths) = start(2, machine, dir.path());
    let status = engine.handle().admin(AdminCommand::Status).unwrap();
    assert_eq!(status["members"], 2);
    assert_eq!(status["closing"], false);
    let answer = engine
        .handle()
        .admin(AdminCommand::StartCheck { repair: false })
        .unwrap();
    assert!(answer["error"].is_string());
    assert!(
        answer.get("engine_lock").is_none(),
        "a refusal is not a status"
    );
}

#[test]
fn the_status_says_how_much_of_the_time_the_engine_lock_was_held() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(2);
    let (engine, _files, _paths) = start(2, machine, dir.path());
    let handle = engine.handle();
    let before = handle.admin(AdminCommand::Status).unwrap()["engine_lock"].clone();
    write_then_read_back(&handle, 400, 2 * PIECE_BYTES, false);
    let after = handle.admin(AdminCommand::Status).unwrap()["engine_lock"].clone();

    let acquired =
        after["acquisitions"].as_u64().unwrap() - before["acquisitions"].as_u64().unwrap();
    // Every request takes the lock at least to be handed in.
    assert!(acquired >= 800, "{acquired} acquisitions for 800 requests");
    let sampled = after["sampled_acquisitions"].as_u64().unwrap();
    assert!(sampled > 0 && sampled < after["acquisitions"].as_u64().unwrap());
    let held_s = after["held_s"].as_f64().unwrap();
    let uptime_s = after["uptime_s"].as_f64().unwrap();
    assert!(held_s > before["held_s"].as_f64().unwrap(), "{after}");
    assert!(uptime_s > before["uptime_s"].as_f64().unwrap());
    let fraction = after["held_fraction"].as_f64().unwrap();
    assert!(fraction > 0.0 && fraction <= 1.0, "{after}");
    assert!(after["waited_s"].as_f64().unwrap() >= 0.0);
}

#[test]
fn dropping_the_engine_closes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (machine, _probe) = MirrorMachine::new(1);
    let (engine, files, _paths) = start(1, machine, dir.path());
    let handle = engine.handle();
    handle.write(512, pattern(512, 2)).unwrap();
    drop(engine);
    assert!(!handle.stats().running);
    assert_eq!(handle.close(), CloseOutcome::Closed);
    assert_eq!(files[0].counters().syncs, 1);
    let (tx, rx) = crossbeam_channel::bounded(1);
    handle.submit(UserOp::Flush, Box::new(move |r| tx.send(r).unwrap()));
    assert_eq!(rx.try_recv().unwrap(), Err(UserError::ShuttingDown));
}

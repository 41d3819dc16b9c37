//! Who performs device I/O: for memory-backed members the thread that runs
//! the machine (the one submitting requests, or the engine thread for the
//! close) unless `io_pool_only`; the pool's workers for every other.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::recording_member::RecordingMember;
use common::{pattern, write_then_read_back, MirrorMachine, PIECE_BYTES};
use eraid_driver::{CloseOutcome, Engine, EngineConfig, MemberIo};

const MEMBER_BYTES: usize = 4 << 20;
const WAIT: Duration = Duration::from_secs(30);

/// Runs 64 concurrent writes then 64 reads (each two pieces over a mirror
/// of `members`), checks every byte, and returns the threads that did I/O
/// on each member.
fn run_mirror(members: &[Arc<RecordingMember>], io_pool_only: bool) -> Vec<BTreeSet<String>> {
    let devices = members
        .iter()
        .map(|m| Arc::clone(m) as Arc<dyn MemberIo>)
        .collect();
    let (machine, _probe) = MirrorMachine::new(members.len());
    let config = EngineConfig {
        io_threads: Some(4),
        io_pool_only,
        ..EngineConfig::default()
    };
    let engine = Engine::start_with_devices(Box::new(machine), devices, config).unwrap();
    let handle = engine.handle();
    let requests = 64;
    let request_bytes = 2 * PIECE_BYTES;
    std::thread::Builder::new()
        .name(SUBMITTER.into())
        .spawn(move || write_then_read_back(&handle, requests, request_bytes, true))
        .unwrap()
        .join()
        .unwrap();
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || tx.send(engine.close()).unwrap());
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), CloseOutcome::Closed);
    for member in members {
        let bytes = member.bytes.lock().unwrap();
        for i in 0..requests {
            assert!(
                bytes[i * request_bytes..][..request_bytes] == pattern(request_bytes, i as u64),
                "{}: request {i}'s bytes differ",
                member.label()
            );
        }
    }
    members.iter().map(|m| m.threads()).collect()
}

const SUBMITTER: &str = "submitter";

/// The submitting thread did the requests' I/O itself; only the engine
/// thread (the close's flushes) may have joined it.
fn submitter_and_engine_only(threads: &BTreeSet<String>) -> bool {
    threads.contains(SUBMITTER)
        && threads
            .iter()
            .all(|t| t == SUBMITTER || t == "eraid-engine")
}

fn all_pool_workers(threads: &BTreeSet<String>) -> bool {
    !threads.is_empty() && threads.iter().all(|t| t.starts_with("eraid-io-"))
}

#[test]
fn memory_backed_members_are_served_by_the_submitting_thread() {
    let members = [
        RecordingMember::new(0, true, MEMBER_BYTES),
        RecordingMember::new(1, true, MEMBER_BYTES),
    ];
    for threads in run_mirror(&members, false) {
        assert!(submitter_and_engine_only(&threads), "{threads:?}");
    }
}

#[test]
fn io_pool_only_sends_memory_backed_members_to_the_workers() {
    let members = [
        RecordingMember::new(0, true, MEMBER_BYTES),
        RecordingMember::new(1, true, MEMBER_BYTES),
    ];
    for threads in run_mirror(&members, true) {
        assert!(all_pool_workers(&threads), "{threads:?}");
    }
}

#[test]
fn other_members_stay_with_the_workers_beside_memory_backed_ones() {
    let members = [
        RecordingMember::new(0, true, MEMBER_BYTES),
        RecordingMember::new(1, false, MEMBER_BYTES),
    ];
    let threads = run_mirror(&members, false);
    assert!(submitter_and_engine_only(&threads[0]), "{:?}", threads[0]);
    assert!(all_pool_workers(&threads[1]), "{:?}", threads[1]);
}

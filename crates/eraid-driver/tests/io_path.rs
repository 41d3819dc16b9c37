//! Who performs device I/O: for memory-backed members the thread that runs
//! the machine (the one submitting requests, or the engine thread for the
//! close) unless `io_pool_only`; the pool's workers for every other.

mod common;

use std::collections::BTreeSet;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{pattern, write_then_read_back, MirrorMachine, PIECE_BYTES};
use eraid_driver::{CloseOutcome, Engine, EngineConfig, MemberIo};

const MEMBER_BYTES: usize = 4 << 20;
const WAIT: Duration = Duration::from_secs(30);

/// A member in a `Vec` that says whether it is memory-backed and records
/// the name of every thread that reads or writes it.
struct RecordingMember {
    label: String,
    memory_backed: bool,
    bytes: Mutex<Vec<u8>>,
    threads: Mutex<BTreeSet<String>>,
}

impl RecordingMember {
    fn new(index: usize, memory_backed: bool) -> Arc<RecordingMember> {
        Arc::new(RecordingMember {
            label: format!("m{index}"),
            memory_backed,
            bytes: Mutex::new(vec![0; MEMBER_BYTES]),
            threads: Mutex::default(),
        })
    }

    fn note_thread(&self) {
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        self.threads.lock().unwrap().insert(name);
    }

    fn threads(&self) -> BTreeSet<String> {
        self.threads.lock().unwrap().clone()
    }
}

impl MemberIo for RecordingMember {
    fn label(&self) -> &str {
        &self.label
    }
    fn memory_backed(&self) -> bool {
        self.memory_backed
    }
    fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        self.note_thread();
        let bytes = self.bytes.lock().unwrap();
        Ok(bytes[offset_bytes as usize..][..len_bytes].to_vec())
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.note_thread();
        self.bytes.lock().unwrap()[offset_bytes as usize..][..data.len()].copy_from_slice(data);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        self.note_thread();
        Ok(())
    }
}

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
                member.label
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
    let members = [RecordingMember::new(0, true), RecordingMember::new(1, true)];
    for threads in run_mirror(&members, false) {
        assert!(submitter_and_engine_only(&threads), "{threads:?}");
    }
}

#[test]
fn io_pool_only_sends_memory_backed_members_to_the_workers() {
    let members = [RecordingMember::new(0, true), RecordingMember::new(1, true)];
    for threads in run_mirror(&members, true) {
        assert!(all_pool_workers(&threads), "{threads:?}");
    }
}

#[test]
fn other_members_stay_with_the_workers_beside_memory_backed_ones() {
    let members = [
        RecordingMember::new(0, true),
        RecordingMember::new(1, false),
    ];
    let threads = run_mirror(&members, false);
    assert!(submitter_and_engine_only(&threads[0]), "{:?}", threads[0]);
    assert!(all_pool_workers(&threads[1]), "{:?}", threads[1]);
}

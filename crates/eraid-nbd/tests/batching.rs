//! Requests a client pipelines reach the export together (`submit_batch`),
//! in order, without holding back the in-flight bound.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{random_bytes, serve, Raw};
use eraid_nbd::protocol as p;
use eraid_nbd::{Done, Export, ExportCommand, MemExport, ServerConfig};

const SIZE_BYTES: usize = 1024 * 1024;
const WRITE_BYTES: usize = 4096;

/// Passes commands to a memory export, recording how many came in each
/// `submit_batch` call (a lone `submit` counts as a batch of one). With
/// `park` set it holds every command back until the test releases them.
struct Recording {
    memory: Arc<MemExport>,
    batches: Mutex<Vec<usize>>,
    park: AtomicBool,
    parked: Mutex<Vec<(ExportCommand, Done)>>,
    changed: Condvar,
}

impl Recording {
    fn new(park: bool) -> Arc<Recording> {
        Arc::new(Recording {
            memory: Arc::new(MemExport::new("recording", SIZE_BYTES)),
            batches: Mutex::default(),
            park: AtomicBool::new(park),
            parked: Mutex::default(),
            changed: Condvar::new(),
        })
    }

    fn take(&self, command: ExportCommand, done: Done) {
        if self.park.load(Ordering::SeqCst) {
            self.parked.lock().unwrap().push((command, done));
            self.changed.notify_all();
        } else {
            self.memory.submit(command, done);
        }
    }

    /// Waits until `count` commands are parked (fails after 10 s).
    fn wait_parked(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut parked = self.parked.lock().unwrap();
        while parked.len() < count {
            let timeout = deadline.saturating_duration_since(Instant::now());
            assert!(
                !timeout.is_zero(),
                "only {} of {count} commands reached the export",
                parked.len()
            );
            parked = self.changed.wait_timeout(parked, timeout).unwrap().0;
        }
    }

    /// Passes every parked command on, and every later one at once.
    fn release(&self) {
        self.park.store(false, Ordering::SeqCst);
        let parked = std::mem::take(&mut *self.parked.lock().unwrap());
        for (command, done) in parked {
            self.memory.submit(command, done);
        }
    }
}

impl Export for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn description(&self) -> String {
        "test export".into()
    }
    fn size_bytes(&self) -> u64 {
        SIZE_BYTES as u64
    }
    fn preferred_block_bytes(&self) -> u32 {
        4096
    }
    fn submit(&self, command: ExportCommand, done: Done) {
        self.batches.lock().unwrap().push(1);
        self.take(command, done);
    }
    fn submit_batch(&self, commands: Vec<(ExportCommand, Done)>) {
        self.batches.lock().unwrap().push(commands.len());
        for (command, done) in commands {
            self.take(command, done);
        }
    }
}

/// `count` write requests (handles 1..=count, 4 KiB each, at 4 KiB steps)
/// and their payloads, as one buffer.
fn pipelined_writes(count: u64) -> Vec<u8> {
    sized_writes(1..=count, WRITE_BYTES)
}

/// Write requests with these handles, `write_bytes` each at steps of that
/// size (handle 1 at offset 0), and their payloads, as one buffer.
fn sized_writes(handles: std::ops::RangeInclusive<u64>, write_bytes: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for handle in handles {
        let header = p::RequestHeader {
            flags: 0,
            command: p::CMD_WRITE,
            handle,
            offset_bytes: (handle - 1) * write_bytes as u64,
            len_bytes: write_bytes as u32,
        };
        bytes.extend_from_slice(&header.encode());
        bytes.extend_from_slice(&random_bytes(write_bytes, handle));
    }
    bytes
}

/// Serves `export` and opens one connection to it, past the handshake.
fn connect(export: &Arc<Recording>, config: ServerConfig) -> (common::Served, Raw) {
    let served = serve(Arc::clone(export) as Arc<dyn Export>, config);
    let mut raw = Raw::start(&served.socket_path);
    raw.go(b"");
    (served, raw)
}

#[test]
fn pipelined_requests_reach_the_export_in_batches_and_all_are_answered() {
    let export = Recording::new(false);
    let (mut served, mut raw) = connect(&export, ServerConfig::default());
    let count = 32;
    raw.send(&pipelined_writes(count));
    let mut answered: Vec<u64> = (0..count)
        .map(|_| raw.reply())
        .map(|(error, handle)| {
            assert_eq!(error, 0, "write {handle} failed");
            handle
        })
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, (1..=count).collect::<Vec<_>>());
    for handle in 1..=count {
        let data = raw.read_ok(
            1000 + handle,
            (handle - 1) * WRITE_BYTES as u64,
            WRITE_BYTES as u32,
        );
        assert!(
            data == random_bytes(WRITE_BYTES, handle),
            "write {handle} reads back different"
        );
    }
    let batches = export.batches.lock().unwrap().clone();
    assert_eq!(batches.iter().sum::<usize>(), 2 * count as usize);
    assert!(
        batches.iter().any(|&len| len > 1),
        "32 writes sent in one buffer each went on alone: {batches:?}"
    );
    served.stop();
}

#[test]
fn large_writes_already_in_the_socket_go_to_the_export_together() {
    // A large write's payload is read past the read-ahead, so nothing is
    // buffered after it; the next request is still in the socket. The
    // first write narrows the read-ahead (as a stream of large writes
    // does); then two sent in one call must reach the export as one batch.
    const LARGE: usize = 64 * 1024;
    let export = Recording::new(false);
    let (mut served, mut raw) = connect(&export, ServerConfig::default());
    raw.send(&sized_writes(1..=1, LARGE));
    assert_eq!(raw.reply(), (0, 1));
    let before = export.batches.lock().unwrap().len();
    raw.send(&sized_writes(2..=3, LARGE));
    let mut answered = [raw.reply(), raw.reply()];
    answered.sort_unstable();
    assert_eq!(answered, [(0, 2), (0, 3)]);
    let batches = export.batches.lock().unwrap()[before..].to_vec();
    assert_eq!(
        batches,
        vec![2],
        "two large writes sent together went to the export apart"
    );
    for handle in 1..=3 {
        let data = raw.read_ok(100 + handle, (handle - 1) * LARGE as u64, LARGE as u32);
        assert!(
            data == random_bytes(LARGE, handle),
            "write {handle} reads back different"
        );
    }
    served.stop();
}

#[test]
fn a_full_in_flight_bound_does_not_hold_back_requests_read_before_it() {
    // Room for 2 requests: the third waits for room, so the two before it
    // must already be with the export (which holds them until released),
    // not waiting in the reader's batch for the third.
    let export = Recording::new(true);
    let config = ServerConfig {
        max_in_flight_requests: 2,
        ..ServerConfig::default()
    };
    let (mut served, mut raw) = connect(&export, config);
    let count = 5;
    raw.send(&pipelined_writes(count));
    export.wait_parked(2);
    export.release();
    let mut answered = Vec::new();
    while answered.len() < count as usize {
        let (error, handle) = raw.reply();
        assert_eq!(error, 0, "write {handle} failed");
        answered.push(handle);
    }
    answered.sort_unstable();
    assert_eq!(answered, (1..=count).collect::<Vec<_>>());
    served.stop();
}

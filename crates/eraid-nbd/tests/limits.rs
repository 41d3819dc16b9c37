//! Resource limits that bad clients cannot exhaust: silent connections do
//! not lock out a real client and are closed at the handshake deadline; a
//! client that stops reading is dropped at the send deadline and does not
//! hold up a shutdown past its bound.

mod common;

use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{have_tool, random_bytes, run, serve};
use eraid_nbd::client::{Client, ClientError};
use eraid_nbd::protocol as p;
use eraid_nbd::{Export, MemExport, ServerConfig};

const SIZE_BYTES: usize = 4 * 1024 * 1024;
const MIB: u32 = 1024 * 1024;

/// Reads what the server sent until it closes (true) or `wait` passes
/// (false); returns (closed, bytes read).
fn read_until_closed(stream: &mut UnixStream, wait: Duration) -> (bool, u64) {
    let until = Instant::now() + wait;
    let mut buf = vec![0u8; 1 << 20];
    let mut total_bytes = 0u64;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (false, total_bytes);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (true, total_bytes),
            Ok(n) => total_bytes += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (false, total_bytes)
            }
            Err(_) => return (true, total_bytes),
        }
    }
}

#[test]
fn silent_connections_neither_lock_out_a_real_client_nor_stay_open() {
    let export = Arc::new(MemExport::with_contents(
        "disk0",
        random_bytes(SIZE_BYTES, 11),
    ));
    let handshake_timeout = Duration::from_millis(1500);
    let config = ServerConfig {
        handshake_timeout,
        ..ServerConfig::default()
    };
    let served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    // A client already at work keeps working throughout.
    let mut worker = Client::connect_unix(&served.socket_path, "").unwrap();
    let opened_at = Instant::now();
    let mut silent: Vec<UnixStream> = (0..200)
        .map(|_| UnixStream::connect(&served.socket_path).expect("connect"))
        .collect();
    assert_eq!(worker.read(0, 4096).unwrap(), export.contents()[..4096]);

    // A new client completes its handshake and reads within 5 s.
    let started = Instant::now();
    let mut newcomer = Client::connect_unix(&served.socket_path, "").unwrap();
    assert_eq!(
        newcomer.read(8192, 4096).unwrap(),
        export.contents()[8192..12288]
    );
    if have_tool("nbdinfo") {
        let json = run(Command::new("nbdinfo").arg("--json").arg(&served.uri));
        assert!(json.contains(&format!("{SIZE_BYTES}")), "{json}");
        if have_tool("nbdcopy") {
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("copy.img");
            run(Command::new("nbdcopy").arg(&served.uri).arg(&copy));
            assert!(std::fs::read(&copy).unwrap() == export.contents());
        }
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "new clients took {took:?}");

    // The newest silent connection still holds a handshake slot before
    // the deadline: it is the deadline that closes it.
    if opened_at.elapsed() < handshake_timeout / 2 {
        let newest = silent.last_mut().unwrap();
        let (closed, _) = read_until_closed(newest, Duration::from_millis(100));
        assert!(!closed, "closed before its handshake deadline");
    }
    // Every silent connection is closed soon after the deadline.
    let wait = (handshake_timeout + Duration::from_secs(2)).saturating_sub(opened_at.elapsed());
    for (index, stream) in silent.iter_mut().enumerate() {
        let left = wait.saturating_sub(opened_at.elapsed().saturating_sub(handshake_timeout));
        let (closed, bytes) = read_until_closed(stream, left.max(Duration::from_millis(200)));
        assert!(closed, "silent connection {index} still open");
        assert!(bytes <= 18, "only a greeting was sent to {index}");
    }
    assert!(opened_at.elapsed() < handshake_timeout + Duration::from_secs(3));
    assert_eq!(
        worker.read(4096, 4096).unwrap(),
        export.contents()[4096..8192]
    );
}

/// Opens a connection in transmission and sends 64 reads of 1 MiB that it
/// never reads the replies of.
fn stalled_reader(socket: &std::path::Path) -> Client {
    let mut client = Client::connect_unix(socket, "").unwrap();
    for _ in 0..64 {
        client.send_request(p::CMD_READ, 0, 0, MIB, &[]).unwrap();
    }
    client
}

#[test]
fn a_client_that_stops_reading_is_dropped_at_the_send_deadline() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let config = ServerConfig {
        send_timeout: Duration::from_millis(800),
        ..ServerConfig::default()
    };
    let served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let client = stalled_reader(&served.socket_path);
    std::thread::sleep(Duration::from_millis(2500));
    // Only what the socket buffers held was sent before the server gave
    // up: the replies end in a closed connection, not after all 64.
    let mut client = client;
    client.set_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut replies = 0;
    let error = loop {
        match client.receive_reply() {
            Ok(reply) => {
                assert_eq!(reply.error, 0);
                replies += 1;
            }
            Err(error) => break error,
        }
    };
    assert!(
        replies < 64,
        "all 64 replies were sent: the client was not dropped"
    );
    let closed = matches!(&error, ClientError::Io(e) if matches!(e.kind(),
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe));
    assert!(
        closed,
        "the server still holds the stalled connection: {error}"
    );
    // The server is fine for others.
    let mut other = Client::connect_unix(&served.socket_path, "").unwrap();
    other.read(0, 4096).unwrap();
}

#[test]
fn shutdown_is_bounded_with_a_client_that_never_reads() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let shutdown_timeout = Duration::from_secs(2);
    let config = ServerConfig {
        shutdown_timeout,
        ..ServerConfig::default()
    };
    let mut served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let _client = stalled_reader(&served.socket_path);
    // Let the server take the requests and fill the socket.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    // Stopped on another thread, so a stop that hangs fails the test
    // instead of hanging it.
    let (done_sender, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        served.stop();
        let _ = done_sender.send(());
    });
    let stopped = done
        .recv_timeout(shutdown_timeout + Duration::from_secs(3))
        .is_ok();
    let took = started.elapsed();
    assert!(
        stopped && took <= shutdown_timeout + Duration::from_secs(1),
        "stop took {took:?} (finished: {stopped}) with a client that never reads"
    );
}

#[test]
fn a_slow_reader_does_not_restart_the_send_deadline() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let config = ServerConfig {
        send_timeout: Duration::from_millis(1000),
        ..ServerConfig::default()
    };
    let served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let mut raw = common::Raw::start(&served.socket_path);
    raw.go(b"");
    for handle in 0..64 {
        raw.request(p::CMD_READ, 0, handle, 0, MIB);
    }
    // 64 KiB every 100 ms: steady progress, but a 1 MiB reply then takes
    // 1.6 s, longer than the send deadline, which progress must not extend.
    let started = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total_bytes = 0u64;
    let closed = loop {
        if started.elapsed() > Duration::from_secs(15) {
            break false;
        }
        match raw.stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => total_bytes += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break true,
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        closed && total_bytes < 64 * u64::from(MIB),
        "a slow reader kept its connection (closed: {closed}, {total_bytes} bytes in {:?})",
        started.elapsed()
    );
}

#[test]
fn go_beyond_the_connection_cap_is_refused_until_a_slot_frees() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let config = ServerConfig {
        max_connections: 1,
        ..ServerConfig::default()
    };
    let served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let first = Client::connect_unix(&served.socket_path, "").unwrap();
    let mut second = common::Raw::start(&served.socket_path);
    second.option(p::OPT_GO, &common::Raw::go_data(b"", &[]));
    let (option, reply_type, message) = second.option_reply();
    assert_eq!((option, reply_type), (p::OPT_GO, p::REP_ERR_POLICY));
    assert!(String::from_utf8_lossy(&message).contains("too many connections"));
    // EXPORT_NAME has no error reply: that client is disconnected.
    let mut third = common::Raw::start(&served.socket_path);
    third.option(p::OPT_EXPORT_NAME, b"");
    assert!(third.is_closed(), "EXPORT_NAME past the cap must close");
    // Once the first leaves, the second may try again in the same handshake.
    first.disconnect().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        second.option(p::OPT_GO, &common::Raw::go_data(b"", &[]));
        let mut entered = false;
        loop {
            let (_, reply_type, _) = second.option_reply();
            match reply_type {
                p::REP_INFO => continue,
                p::REP_ACK => entered = true,
                other => assert_eq!(other, p::REP_ERR_POLICY),
            }
            break;
        }
        if entered {
            break;
        }
        assert!(Instant::now() < until, "the slot was never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    second.read_ok(1, 0, 4096);
}

/// Bytes the server has queued, once it stops sending, on a connection
/// whose client sent 16 reads of 1 MiB and has read no reply yet.
fn bytes_queued_for_a_late_reader(config: ServerConfig) -> usize {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let mut client = Client::connect_unix(&served.socket_path, "").unwrap();
    for _ in 0..16 {
        client.send_request(p::CMD_READ, 0, 0, MIB, &[]).unwrap();
    }
    // Until the queue stops growing (the server blocked on a full socket).
    let mut queued = 0;
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now_queued = client.unread_bytes();
        if (now_queued == queued && queued > 0) || Instant::now() > until {
            return now_queued;
        }
        queued = now_queued;
    }
}

fn kernel_setting(path: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_unix_socket_queues_several_large_replies_for_a_client_reading_late() {
    let widened = bytes_queued_for_a_late_reader(ServerConfig::default());
    let kernel_default = bytes_queued_for_a_late_reader(ServerConfig {
        unix_send_buffer_bytes: 0,
        ..ServerConfig::default()
    });
    let wmem_max = kernel_setting("/proc/sys/net/core/wmem_max");
    let wmem_default = kernel_setting("/proc/sys/net/core/wmem_default");
    eprintln!(
        "queued: {widened} bytes widened, {kernel_default} at the kernel's default \
         (wmem_default {wmem_default}, wmem_max {wmem_max})"
    );
    // At the kernel's default a Unix socket holds about one 1 MiB reply's
    // worth at most; widened, several (up to wmem_max, which the kernel
    // lets a process ask for without privilege).
    assert!(
        kernel_default <= 2 * wmem_default + MIB as usize,
        "the kernel's default queued {kernel_default} bytes"
    );
    // What the test asks of the default: room for at least a 4 MiB queue,
    // as far as the kernel allows one.
    let expected = wmem_max.min(4 * MIB as usize);
    assert!(
        expected > 2 * wmem_default + MIB as usize,
        "this kernel caps socket buffers near its default (wmem_max {wmem_max}): \
         nothing to widen, so nothing to test"
    );
    assert!(
        widened >= expected,
        "widened to {expected} bytes, the socket queued only {widened}"
    );
}

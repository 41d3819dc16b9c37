//! A member client whose connection the server drops (issue 20): it
//! reconnects within the window and sends again what was in flight, but
//! only when no acknowledged write can have been lost with the old
//! connection; otherwise, or past the window, or when the export came back
//! different, it is given up for good with a reason naming the export.
//!
//! The drops are made by a proxy between the client and this crate's
//! server over an in-memory export: it can cut every connection, hold the
//! server's replies back (a request carried out but never answered), and
//! stop taking connections (the server is down).

mod common;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use eraid_nbd::{MemExport, NbdUri, SharedClient};

/// A proxy on a Unix socket in front of an NBD server's socket.
struct CutProxy {
    front: PathBuf,
    backend: Arc<Mutex<PathBuf>>,
    /// Both ends of every connection, to cut them.
    live: Arc<Mutex<Vec<(UnixStream, UnixStream)>>>,
    /// Replies from the server are read and thrown away.
    hold_replies: Arc<AtomicBool>,
    held_bytes: Arc<AtomicU64>,
    /// When false, a new connection is closed at once (the server is down).
    accepting: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

impl CutProxy {
    fn start(backend: &Path) -> CutProxy {
        let dir = tempfile::tempdir().unwrap();
        let front = dir.path().join("front.sock");
        let listener = UnixListener::bind(&front).unwrap();
        let proxy = CutProxy {
            front,
            backend: Arc::new(Mutex::new(backend.to_path_buf())),
            live: Arc::default(),
            hold_replies: Arc::default(),
            held_bytes: Arc::default(),
            accepting: Arc::new(AtomicBool::new(true)),
            _dir: dir,
        };
        let backend = Arc::clone(&proxy.backend);
        let live = Arc::clone(&proxy.live);
        let hold = Arc::clone(&proxy.hold_replies);
        let held = Arc::clone(&proxy.held_bytes);
        let accepting = Arc::clone(&proxy.accepting);
        // Runs until the test process ends.
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !accepting.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let path = backend.lock().unwrap().clone();
                let Ok(server) = UnixStream::connect(&path) else {
                    continue;
                };
                live.lock()
                    .unwrap()
                    .push((client.try_clone().unwrap(), server.try_clone().unwrap()));
                let (to_server, from_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || pump(from_client, to_server, None));
                let (hold, held) = (Arc::clone(&hold), Arc::clone(&held));
                std::thread::spawn(move || pump(server, client, Some((hold, held))));
            }
        });
        proxy
    }

    fn uri(&self, query: &str) -> NbdUri {
        NbdUri::parse(&format!(
            "nbd+unix:///?socket={}&request-timeout-s=30{query}",
            self.front.display()
        ))
        .unwrap()
    }

    /// Cuts every connection, both ways.
    fn cut(&self) {
        for (client, server) in self.live.lock().unwrap().drain(..) {
            let _ = client.shutdown(std::net::Shutdown::Both);
            let _ = server.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Copies `from` to `to` until either ends; with `hold` set, what comes
/// from `from` is counted and dropped instead.
fn pump(mut from: UnixStream, mut to: UnixStream, hold: Option<(Arc<AtomicBool>, Arc<AtomicU64>)>) {
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some((hold, held)) = &hold {
            if hold.load(Ordering::SeqCst) {
                held.fetch_add(n as u64, Ordering::SeqCst);
                continue;
            }
        }
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
    let _ = from.shutdown(std::net::Shutdown::Both);
}

/// Waits (bounded) until `condition` holds.
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

const SIZE_BYTES: usize = 1 << 20;

fn served_export() -> (Arc<MemExport>, Served) {
    let export = Arc::new(MemExport::with_contents("", random_bytes(SIZE_BYTES, 7)));
    let served = serve_mem(&export);
    (export, served)
}

#[test]
fn a_read_in_flight_when_the_server_drops_the_connection_is_sent_again_after_reconnecting() {
    let (export, served) = served_export();
    let proxy = CutProxy::start(&served.socket_path);
    let client = Arc::new(SharedClient::connect(&proxy.uri("&reconnect-s=30")).unwrap());
    assert_eq!(client.reconnect_window(), Duration::from_secs(30));
    // The server carries out the read, but its reply never arrives.
    proxy.hold_replies.store(true, Ordering::SeqCst);
    let reader = {
        let client = Arc::clone(&client);
        std::thread::spawn(move || client.read(4096, 8192))
    };
    wait_until("the server answered the read", || {
        proxy.held_bytes.load(Ordering::SeqCst) > 0
    });
    proxy.hold_replies.store(false, Ordering::SeqCst);
    proxy.cut();
    let data = reader.join().unwrap().expect("the read is sent again");
    assert_eq!(data, export.contents()[4096..4096 + 8192]);
    assert_eq!(client.reconnects(), 1);
    assert!(client.failure().is_none());
}

#[test]
fn a_write_in_flight_never_acknowledged_is_sent_again_and_lands() {
    let (export, served) = served_export();
    let proxy = CutProxy::start(&served.socket_path);
    let client = Arc::new(SharedClient::connect(&proxy.uri("&reconnect-s=30")).unwrap());
    proxy.hold_replies.store(true, Ordering::SeqCst);
    let writer = {
        let client = Arc::clone(&client);
        std::thread::spawn(move || client.write(65536, &[0xab; 16384], false))
    };
    wait_until("the server answered the write", || {
        proxy.held_bytes.load(Ordering::SeqCst) > 0
    });
    proxy.hold_replies.store(false, Ordering::SeqCst);
    proxy.cut();
    writer.join().unwrap().expect("the write is sent again");
    assert_eq!(client.reconnects(), 1);
    assert_eq!(export.contents()[65536..65536 + 16384], [0xab; 16384]);
    assert_eq!(client.read(65536, 16384).unwrap(), vec![0xab; 16384]);
}

#[test]
fn after_a_completed_flush_a_drop_is_reconnected_and_the_data_is_there() {
    let (export, served) = served_export();
    let proxy = CutProxy::start(&served.socket_path);
    let client = SharedClient::connect(&proxy.uri("&reconnect-s=30")).unwrap();
    client.write(0, &[5; 4096], false).unwrap();
    client.write_zeroes(8192, 4096).unwrap();
    client.flush().unwrap();
    proxy.cut();
    assert_eq!(client.read(0, 4096).unwrap(), vec![5; 4096]);
    assert_eq!(client.read(8192, 4096).unwrap(), vec![0; 4096]);
    assert_eq!(client.reconnects(), 1);
    // And again: a FUA write is durable when acknowledged, no flush needed.
    client.write(4096, &[6; 4096], true).unwrap();
    proxy.cut();
    assert_eq!(client.read(4096, 4096).unwrap(), vec![6; 4096]);
    assert_eq!(client.reconnects(), 2);
    assert_eq!(export.contents()[..4096], [5; 4096]);
}

#[test]
fn a_drop_after_an_acknowledged_unflushed_write_gives_the_client_up_for_good() {
    let (_export, served) = served_export();
    let proxy = CutProxy::start(&served.socket_path);
    let client = SharedClient::connect(&proxy.uri("&reconnect-s=30")).unwrap();
    client.write(0, &[9; 4096], false).unwrap();
    client.flush().unwrap();
    // Acknowledged, not flushed: a crashed server may have lost it.
    client.write(8192, &[3; 4096], false).unwrap();
    proxy.cut();
    let started = Instant::now();
    let error = client.read(0, 4096).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "gave up at once"
    );
    let message = error.to_string();
    // (The drop is seen as the server's close or as a failed send.)
    assert!(
        message.contains("dropped with 1 acknowledged writes unflushed, not reconnected"),
        "{message}"
    );
    assert!(
        message.contains("nbd+unix:///"),
        "names the export: {message}"
    );
    assert_eq!(client.reconnects(), 0);
    // The server is reachable, but the client stays given up: it never
    // serves data that may be missing a write.
    assert!(client.failure().is_some());
    assert!(client.read(0, 4096).is_err());
    assert!(client.flush().is_err());
    assert_eq!(client.reconnects(), 0);
}

#[test]
fn a_server_down_longer_than_the_window_gives_the_client_up_within_it() {
    let (_export, served) = served_export();
    let proxy = CutProxy::start(&served.socket_path);
    let client = SharedClient::connect(&proxy.uri("&reconnect-s=1")).unwrap();
    proxy.accepting.store(false, Ordering::SeqCst);
    proxy.cut();
    let started = Instant::now();
    let error = client.read(0, 4096).unwrap_err();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    let message = error.to_string();
    assert!(
        message.contains("dropped, not reconnected within 1 s (reconnect-s)"),
        "{message}"
    );
    // Back up now, but too late: given up stays given up.
    proxy.accepting.store(true, Ordering::SeqCst);
    assert!(client.read(0, 4096).is_err());
    assert_eq!(client.reconnects(), 0);
}

#[test]
fn a_server_back_within_the_window_is_reconnected_and_callers_waited_for_it() {
    let (export, served) = served_export();
    let proxy = Arc::new(CutProxy::start(&served.socket_path));
    let client = Arc::new(SharedClient::connect(&proxy.uri("&reconnect-s=30")).unwrap());
    proxy.accepting.store(false, Ordering::SeqCst);
    proxy.cut();
    // Several callers meet the drop; one reconnects for all.
    let readers: Vec<_> = (0..4u64)
        .map(|i| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || client.read(i * 4096, 4096))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    proxy.accepting.store(true, Ordering::SeqCst);
    for (i, reader) in readers.into_iter().enumerate() {
        let data = reader
            .join()
            .unwrap()
            .expect("read after the server came back");
        assert_eq!(data, export.contents()[i * 4096..(i + 1) * 4096]);
    }
    assert_eq!(client.reconnects(), 1);
}

#[test]
fn an_export_that_comes_back_a_different_size_is_not_taken_for_the_same() {
    let (_export, served) = served_export();
    let other = Arc::new(MemExport::new("", SIZE_BYTES / 2));
    let other_served = serve_mem(&other);
    let proxy = CutProxy::start(&served.socket_path);
    let client = SharedClient::connect(&proxy.uri("&reconnect-s=30")).unwrap();
    *proxy.backend.lock().unwrap() = other_served.socket_path.clone();
    proxy.cut();
    let message = client.read(0, 4096).unwrap_err().to_string();
    assert!(message.contains("not the same export"), "{message}");
    assert!(
        message.contains("its size is 524288 bytes, was 1048576"),
        "{message}"
    );
}

#[test]
fn a_window_of_zero_never_reconnects() {
    let (_export, served) = served_export();
    let proxy = CutProxy::start(&served.socket_path);
    let client = SharedClient::connect(&proxy.uri("&reconnect-s=0")).unwrap();
    proxy.cut();
    let message = client.read(0, 4096).unwrap_err().to_string();
    assert!(message.contains("not reconnected within 0 s"), "{message}");
    assert_eq!(client.reconnects(), 0);
}

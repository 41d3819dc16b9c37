//! Many requests in flight, out-of-order replies, the in-flight bound,
//! graceful stop, misbehaving exports, several clients, TCP.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{random_bytes, serve, serve_mem};
use eraid_nbd::client::{Client, ClientError};
use eraid_nbd::protocol as p;
use eraid_nbd::{
    Done, Export, ExportCommand, ExportError, Listener, MemExport, Server, ServerConfig,
};

const SIZE_BYTES: usize = 1024 * 1024;

/// An export whose behaviour a test supplies: `hook` gets every command
/// and may answer it (Some) or pass it on to the memory (None).
struct HookExport {
    memory: Arc<MemExport>,
    hook: Box<Hook>,
}

/// Sees a command; takes `done` to answer it, or leaves it for the memory.
type Hook = dyn Fn(&ExportCommand, &mut Option<Done>) + Send + Sync;

impl Export for HookExport {
    fn name(&self) -> &str {
        "hooked"
    }
    fn description(&self) -> String {
        "test export".into()
    }
    fn size_bytes(&self) -> u64 {
        self.memory.size_bytes()
    }
    fn preferred_block_bytes(&self) -> u32 {
        4096
    }
    fn submit(&self, command: ExportCommand, done: Done) {
        let mut done = Some(done);
        (self.hook)(&command, &mut done);
        if let Some(done) = done {
            self.memory.submit(command, done);
        }
    }
}

/// Commands held back by a test until it releases them.
#[derive(Default)]
struct Parked {
    commands: Mutex<Vec<(ExportCommand, Done)>>,
    changed: Condvar,
}

impl Parked {
    fn park(&self, command: ExportCommand, done: Done) {
        self.commands.lock().unwrap().push((command, done));
        self.changed.notify_all();
    }

    fn wait_for(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut commands = self.commands.lock().unwrap();
        while commands.len() < count {
            let timeout = deadline.saturating_duration_since(Instant::now());
            assert!(
                !timeout.is_zero(),
                "only {} of {count} commands arrived",
                commands.len()
            );
            commands = self.changed.wait_timeout(commands, timeout).unwrap().0;
        }
    }

    fn take(&self) -> Vec<(ExportCommand, Done)> {
        std::mem::take(&mut *self.commands.lock().unwrap())
    }

    fn len(&self) -> usize {
        self.commands.lock().unwrap().len()
    }
}

fn parking_export(memory: &Arc<MemExport>, parked: &Arc<Parked>) -> Arc<dyn Export> {
    let parked = Arc::clone(parked);
    Arc::new(HookExport {
        memory: Arc::clone(memory),
        hook: Box::new(move |command, done| {
            if let Some(done) = done.take() {
                parked.park(command.clone(), done);
            }
        }),
    })
}

fn client(served: &common::Served) -> Client {
    let client = Client::connect_unix(&served.socket_path, "").expect("connect");
    client.set_timeout(Some(Duration::from_secs(20))).unwrap();
    client
}

#[test]
fn replies_go_out_in_completion_order() {
    let memory = Arc::new(MemExport::with_contents("m", random_bytes(SIZE_BYTES, 3)));
    let parked = Arc::new(Parked::default());
    let served = serve(parking_export(&memory, &parked), ServerConfig::default());
    let mut client = client(&served);

    let handles: Vec<u64> = (0..16u64)
        .map(|i| {
            client
                .send_request(p::CMD_READ, 0, i * 4096, 4096, &[])
                .unwrap()
        })
        .collect();
    parked.wait_for(16);
    // Complete newest first: a server that replied in request order would
    // hold every reply behind the oldest.
    for (command, done) in parked.take().into_iter().rev() {
        done(memory.execute(command));
    }
    let expected = memory.contents();
    for (index, &handle) in handles.iter().rev().enumerate() {
        let reply = client.receive_reply().unwrap();
        assert_eq!(
            reply.handle, handle,
            "reply {index} out of completion order"
        );
        let offset = (handle - handles[0]) as usize * 4096;
        assert!(reply.data.unwrap() == expected[offset..offset + 4096]);
    }
}

#[test]
fn reading_stops_at_the_in_flight_bound() {
    let memory = Arc::new(MemExport::new("m", SIZE_BYTES));
    let parked = Arc::new(Parked::default());
    let config = ServerConfig {
        max_in_flight_requests: 8,
        ..ServerConfig::default()
    };
    let served = serve(parking_export(&memory, &parked), config);
    let mut client = client(&served);

    for i in 0..20u64 {
        client
            .send_request(p::CMD_WRITE, 0, i * 512, 512, &[i as u8; 512])
            .unwrap();
    }
    parked.wait_for(8);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        parked.len(),
        8,
        "the server must not take a 9th request while 8 are in flight"
    );

    // Release in batches; answer exactly what was released, so the test
    // never waits for a reply the server does not owe yet.
    let (mut released, mut received) = (0, 0);
    while received < 20 {
        parked.wait_for(1);
        let batch = parked.take();
        assert!(
            batch.len() <= 8,
            "{} requests in flight, bound is 8",
            batch.len()
        );
        released += batch.len();
        for (command, done) in batch {
            done(memory.execute(command));
        }
        while received < released {
            assert_eq!(client.receive_reply().unwrap().error, 0);
            received += 1;
        }
    }
    let contents = memory.contents();
    for i in 0..20usize {
        assert!(contents[i * 512..(i + 1) * 512]
            .iter()
            .all(|&b| b == i as u8));
    }
}

#[test]
fn stop_waits_for_in_flight_requests_and_answers_them() {
    let memory = Arc::new(MemExport::new("m", SIZE_BYTES));
    let slow: Arc<dyn Export> = {
        let memory_for_hook = Arc::clone(&memory);
        Arc::new(HookExport {
            memory: Arc::clone(&memory),
            hook: Box::new(move |command, done| {
                let (command, done, memory) = (
                    command.clone(),
                    done.take().unwrap(),
                    Arc::clone(&memory_for_hook),
                );
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(300));
                    done(memory.execute(command));
                });
            }),
        })
    };
    let mut served = serve(slow, ServerConfig::default());
    let mut client = client(&served);
    let mut idle = Client::connect_unix(&served.socket_path, "").unwrap();
    idle.set_timeout(Some(Duration::from_secs(10))).unwrap();

    for i in 0..10u64 {
        client
            .send_request(p::CMD_WRITE, 0, i * 4096, 4096, &[0x5A; 4096])
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(100)); // let the server take them
    served.stop();
    // Stop returned: every write must have been executed by then.
    assert!(
        memory.contents()[..40960].iter().all(|&b| b == 0x5A),
        "stop returned early"
    );
    for _ in 0..10 {
        assert_eq!(
            client.receive_reply().unwrap().error,
            0,
            "in-flight request lost at stop"
        );
    }
    assert!(
        client.receive_reply().is_err(),
        "connection must be closed after stop"
    );
    assert!(
        idle.read(0, 512).is_err(),
        "idle connection must be closed after stop"
    );
}

#[test]
fn stop_is_prompt_with_idle_clients() {
    let memory = Arc::new(MemExport::new("m", SIZE_BYTES));
    let mut served = serve_mem(&memory);
    let _idle_in_transmission = client(&served);
    let _idle_in_handshake = std::os::unix::net::UnixStream::connect(&served.socket_path).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    served.stop();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "stop took {:?}",
        started.elapsed()
    );
}

#[test]
fn export_errors_map_to_nbd_errors_and_lost_callbacks_to_eio() {
    let memory = Arc::new(MemExport::new("m", SIZE_BYTES));
    let export: Arc<dyn Export> = Arc::new(HookExport {
        memory,
        hook: Box::new(|command, done| {
            let ExportCommand::Read {
                offset_bytes,
                len_bytes,
            } = *command
            else {
                return;
            };
            let answer = match offset_bytes {
                0 => Err(ExportError::Io("disk on fire".into())),
                512 => Err(ExportError::NoSpace),
                1024 => Err(ExportError::Invalid("no".into())),
                1536 => Err(ExportError::ShuttingDown),
                2048 => {
                    drop(done.take()); // a lost callback
                    return;
                }
                2560 => Ok(Some(vec![0u8; len_bytes as usize + 1].into())), // wrong length
                3072 => Ok(None),                                           // no data for a read
                _ => return,
            };
            if let Some(done) = done.take() {
                done(answer);
            }
        }),
    });
    let served = serve(export, ServerConfig::default());
    let mut client = client(&served);
    let cases = [
        (0, p::EIO),
        (512, p::ENOSPC),
        (1024, p::EINVAL),
        (1536, p::ESHUTDOWN),
        (2048, p::EIO),
        (2560, p::EIO),
        (3072, p::EIO),
    ];
    for (offset, error) in cases {
        match client.read(offset, 512) {
            Err(ClientError::Request(got)) => assert_eq!(got, error, "read at {offset}"),
            other => panic!("read at {offset}: expected error {error}, got {other:?}"),
        }
        assert_eq!(
            client.read(8192, 512).unwrap().len(),
            512,
            "connection broken after {offset}"
        );
    }
}

#[test]
fn long_trims_and_zero_writes_are_split_and_fua_is_honoured() {
    let memory = Arc::new(MemExport::with_contents("m", vec![0xFF; SIZE_BYTES]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let export: Arc<dyn Export> = {
        let seen = Arc::clone(&seen);
        Arc::new(HookExport {
            memory: Arc::clone(&memory),
            hook: Box::new(move |command, _| {
                let mut recorded = command.clone();
                if let ExportCommand::Write { data, .. } = &mut recorded {
                    data.clear();
                }
                seen.lock().unwrap().push(recorded);
            }),
        })
    };
    let config = ServerConfig {
        max_request_bytes: 64 * 1024,
        ..ServerConfig::default()
    };
    let served = serve(export, config);
    let mut client = client(&served);

    client.write(0, &[1; 4096], true).unwrap();
    client
        .send_request(p::CMD_TRIM, p::CMD_FLAG_FUA, 0, 256 * 1024, &[])
        .unwrap();
    assert_eq!(client.receive_reply().unwrap().error, 0);
    client.write_zeroes(256 * 1024, 200 * 1024, true).unwrap();
    client.flush().unwrap();

    let commands = seen.lock().unwrap().clone();
    let mut expected = vec![ExportCommand::Write {
        offset_bytes: 0,
        data: Vec::new().into(),
        fua: true,
    }];
    for i in 0..4u64 {
        expected.push(ExportCommand::Trim {
            offset_bytes: i * 65536,
            len_bytes: 65536,
        });
    }
    expected.push(ExportCommand::Flush); // FUA on the trim
    for (offset, len) in [
        (262_144, 65536),
        (327_680, 65536),
        (393_216, 65536),
        (458_752, 8192),
    ] {
        expected.push(ExportCommand::WriteZeroes {
            offset_bytes: offset,
            len_bytes: len,
            fua: true,
        });
    }
    expected.push(ExportCommand::Flush);
    assert_eq!(commands, expected);
    let contents = memory.contents();
    assert!(contents[..466_944].iter().all(|&b| b == 0));
    assert!(contents[466_944..].iter().all(|&b| b == 0xFF));
}

/// A long zero write holds one part in the export at a time: the next
/// part is submitted only once the one before answered (so a request of
/// gigabytes never has all its parts in the array at once), and a failed
/// part ends the request with its error.
#[test]
fn the_parts_of_a_long_zero_write_run_one_at_a_time() {
    let memory = Arc::new(MemExport::with_contents("m", vec![0xFF; SIZE_BYTES]));
    let parked = Arc::new(Parked::default());
    let config = ServerConfig {
        max_request_bytes: 64 * 1024,
        ..ServerConfig::default()
    };
    let served = serve(parking_export(&memory, &parked), config);
    let mut client = client(&served);
    client
        .send_request(p::CMD_WRITE_ZEROES, 0, 0, 256 * 1024, &[])
        .unwrap();
    for part in 0..4u64 {
        parked.wait_for(1);
        // Give a wrongly parallel server time to submit more.
        std::thread::sleep(Duration::from_millis(50));
        let mut taken = parked.take();
        assert_eq!(
            taken.len(),
            1,
            "part {part}: {} parts in the export at once",
            taken.len()
        );
        let (command, done) = taken.pop().unwrap();
        assert_eq!(
            command,
            ExportCommand::WriteZeroes {
                offset_bytes: part * 65536,
                len_bytes: 65536,
                fua: false,
            }
        );
        memory.submit(command, done);
    }
    assert_eq!(client.receive_reply().unwrap().error, 0);
    assert_eq!(memory.contents()[..256 * 1024], vec![0u8; 256 * 1024][..]);
    // A part that fails ends the request: no later part is submitted.
    client
        .send_request(p::CMD_WRITE_ZEROES, 0, 0, 256 * 1024, &[])
        .unwrap();
    parked.wait_for(1);
    let (_, done) = parked.take().pop().unwrap();
    done(Err(ExportError::Io("injected".into())));
    let reply = client.receive_reply().unwrap();
    assert_eq!(reply.error, p::EIO);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(parked.len(), 0, "parts submitted after a failed one");
}

#[test]
fn several_tcp_clients_at_once() {
    let memory = Arc::new(MemExport::new("m", SIZE_BYTES));
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let server = Server::bind(
        Listener::Tcp(address),
        Arc::clone(&memory) as Arc<dyn Export>,
        ServerConfig::default(),
    )
    .unwrap();
    let port = server.tcp_address().unwrap().port();
    assert_ne!(port, 0);
    assert_eq!(server.uri(), format!("nbd://127.0.0.1:{port}/"));
    let uri = server.uri();
    let server = server.start().unwrap();

    let region_bytes = SIZE_BYTES / 4;
    let workers: Vec<_> = (0..4u64)
        .map(|worker| {
            let uri = uri.clone();
            std::thread::spawn(move || {
                let mut client = Client::connect_uri(&uri).unwrap();
                client.set_timeout(Some(Duration::from_secs(20))).unwrap();
                let base = worker * region_bytes as u64;
                let data = random_bytes(region_bytes, worker + 10);
                // Pipelined writes, then pipelined reads.
                for (i, piece) in data.chunks(16384).enumerate() {
                    client
                        .send_request(p::CMD_WRITE, 0, base + i as u64 * 16384, 16384, piece)
                        .unwrap();
                }
                for _ in 0..region_bytes / 16384 {
                    assert_eq!(client.receive_reply().unwrap().error, 0);
                }
                client.flush().unwrap();
                assert!(client.read(base, region_bytes as u32).unwrap() == data);
                client.disconnect().unwrap();
                data
            })
        })
        .collect();
    let expected: Vec<u8> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(memory.contents() == expected);
    server.stop().unwrap();
}

#[test]
fn client_reads_what_it_wrote_over_a_unix_uri() {
    let memory = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&memory);
    let mut client = Client::connect_uri(&served.uri).unwrap();
    assert_eq!(client.size_bytes(), SIZE_BYTES as u64);
    assert_eq!(client.block_size().unwrap().min_bytes, 512);
    assert_eq!(client.description(), Some("in-memory export disk0"));
    let data = random_bytes(65536, 4);
    client.write(4096, &data, false).unwrap();
    client.flush().unwrap();
    assert!(client.read(4096, 65536).unwrap() == data);
    assert_eq!(memory.flush_count(), 1);
    client.trim(4096, 4096).unwrap();
    assert!(client.read(4096, 4096).unwrap().iter().all(|&b| b == 0));
    assert!(matches!(
        Client::connect_unix(&served.socket_path, "wrong"),
        Err(ClientError::OptionRejected {
            reply_type: p::REP_ERR_UNKNOWN,
            ..
        })
    ));
    client.disconnect().unwrap();
}

#[test]
fn bind_refuses_a_live_socket_and_replaces_a_stale_one() {
    let memory = Arc::new(MemExport::new("m", SIZE_BYTES));
    let served = serve_mem(&memory);
    let again = Server::bind(
        Listener::Unix(served.socket_path.clone()),
        Arc::clone(&memory) as Arc<dyn Export>,
        ServerConfig::default(),
    );
    assert!(again.is_err(), "a live server's socket must not be stolen");

    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap()); // leaves the file behind
    let server = Server::bind(
        Listener::Unix(stale.clone()),
        memory as Arc<dyn Export>,
        ServerConfig::default(),
    )
    .unwrap();
    drop(server);
    assert!(
        !stale.exists(),
        "dropping the server removes its socket file"
    );
}

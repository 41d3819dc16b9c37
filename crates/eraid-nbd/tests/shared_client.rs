//! The client array members use (`SharedClient`): against this crate's
//! server over an in-memory export (data, many threads at once, zeroing,
//! ranges), and against scripted servers that misbehave on purpose: reply
//! out of order, never reply, hang up, refuse the export, never greet.
//! Every wait must end within the URI's bounds, with an error that names
//! the export.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use eraid_nbd::protocol as p;
use eraid_nbd::{ConnectError, MemExport, NbdUri, SharedClient};

fn uri(text: &str) -> NbdUri {
    NbdUri::parse(text).expect("a valid URI")
}

fn unix_uri(socket: &std::path::Path, export: &str, query: &str) -> NbdUri {
    uri(&format!(
        "nbd+unix:///{export}?socket={}{query}",
        socket.display()
    ))
}

#[test]
fn reads_and_writes_from_many_threads_at_once_match_the_export() {
    let size_bytes = 8 << 20;
    let export = Arc::new(MemExport::new("", size_bytes));
    let served = serve_mem(&export);
    let client = Arc::new(SharedClient::connect(&unix_uri(&served.socket_path, "", "")).unwrap());
    assert_eq!(client.size_bytes(), size_bytes as u64);
    assert!(!client.read_only());
    // Each thread owns a 1 MiB band, so the expected contents are known.
    let threads: Vec<JoinHandle<()>> = (0..8u64)
        .map(|band| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || {
                let base = band << 20;
                let data = random_bytes(1 << 20, band + 1);
                for piece in 0..16u64 {
                    let at = (piece * 65536) as usize;
                    client
                        .write(base + at as u64, &data[at..at + 65536], piece % 4 == 0)
                        .unwrap();
                }
                client.flush().unwrap();
                assert_eq!(client.read(base, 1 << 20).unwrap(), data, "band {band}");
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a client thread panicked");
    }
    // What the server holds is what was written.
    for band in 0..8u64 {
        let expected = random_bytes(1 << 20, band + 1);
        let held = export.contents();
        assert_eq!(
            &held[(band << 20) as usize..((band + 1) << 20) as usize],
            &expected[..]
        );
    }
    // Zeroing through NBD_CMD_WRITE_ZEROES.
    assert!(client.can_write_zeroes());
    client.write_zeroes(4096, 3 * 4096).unwrap();
    assert_eq!(client.read(4096, 3 * 4096).unwrap(), vec![0; 3 * 4096]);
    // A range past the end is refused without asking, naming the export.
    let error = client.read(size_bytes as u64 - 4096, 8192).unwrap_err();
    assert!(error.to_string().contains("past the export's"), "{error}");
    assert!(error.to_string().contains("nbd+unix:///"), "{error}");
    // ... and the connection still works.
    assert!(client.failure().is_none());
    client.read(0, 4096).unwrap();
}

/// What a scripted server does once the handshake is over.
#[derive(Clone, Copy)]
enum Script {
    /// Answers requests in batches of this many, each batch in reverse
    /// order: a client that waited for each reply before sending the next
    /// request would never fill a batch.
    ReverseBatches(usize),
    /// Reads requests and never answers.
    Silent,
    /// Closes the connection at the first request.
    HangUp,
}

/// A one-connection NBD server on a Unix socket that follows a script,
/// recording the (offset, length) of every request it gets.
struct ScriptedServer {
    socket: PathBuf,
    requests: Arc<Mutex<Vec<(u64, u32)>>>,
    _dir: tempfile::TempDir,
}

const SCRIPTED_SIZE_BYTES: u64 = 1 << 20;
/// The largest payload the scripted server advertises (NBD_INFO_BLOCK_SIZE).
const SCRIPTED_MAX_BYTES: u32 = 64 * 1024;

impl ScriptedServer {
    /// `export` is the only name it serves (others get NBD_REP_ERR_UNKNOWN);
    /// `greet: false` makes it accept and say nothing at all.
    fn start(export: &'static str, greet: bool, script: Script) -> ScriptedServer {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("scripted.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        std::thread::spawn(move || {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            if !greet {
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
            if handshake(&mut stream, export).is_some() {
                transmission(&mut stream, script, &log);
            }
        });
        ScriptedServer {
            socket,
            requests,
            _dir: dir,
        }
    }

    fn uri(&self, export: &str, query: &str) -> NbdUri {
        unix_uri(&self.socket, export, query)
    }
}

fn option_reply(stream: &mut UnixStream, reply_type: u32, data: &[u8]) {
    let mut message = p::OPTION_REPLY_MAGIC.to_be_bytes().to_vec();
    message.extend_from_slice(&p::OPT_GO.to_be_bytes());
    message.extend_from_slice(&reply_type.to_be_bytes());
    message.extend_from_slice(&(data.len() as u32).to_be_bytes());
    message.extend_from_slice(data);
    stream.write_all(&message).unwrap();
}

/// Greets, takes NBD_OPT_GO; Some(()) when the export was accepted.
fn handshake(stream: &mut UnixStream, export: &str) -> Option<()> {
    let mut greeting = p::NBDMAGIC.to_be_bytes().to_vec();
    greeting.extend_from_slice(&p::IHAVEOPT.to_be_bytes());
    greeting.extend_from_slice(&(p::FLAG_FIXED_NEWSTYLE | p::FLAG_NO_ZEROES).to_be_bytes());
    stream.write_all(&greeting).ok()?;
    let mut client_flags = [0u8; 4];
    stream.read_exact(&mut client_flags).ok()?;
    let mut header = [0u8; 16];
    stream.read_exact(&mut header).ok()?;
    assert_eq!(
        u32::from_be_bytes(header[8..12].try_into().unwrap()),
        p::OPT_GO
    );
    let len = u32::from_be_bytes(header[12..16].try_into().unwrap()) as usize;
    let mut data = vec![0u8; len];
    stream.read_exact(&mut data).ok()?;
    let name_len = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
    if &data[4..4 + name_len] != export.as_bytes() {
        option_reply(stream, p::REP_ERR_UNKNOWN, b"no such export");
        return None;
    }
    let mut info = p::INFO_EXPORT.to_be_bytes().to_vec();
    info.extend_from_slice(&SCRIPTED_SIZE_BYTES.to_be_bytes());
    let flags = p::FLAG_HAS_FLAGS | p::FLAG_SEND_FLUSH;
    info.extend_from_slice(&flags.to_be_bytes());
    option_reply(stream, p::REP_INFO, &info);
    let mut block = p::INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    for value in [512u32, 4096, SCRIPTED_MAX_BYTES] {
        block.extend_from_slice(&value.to_be_bytes());
    }
    option_reply(stream, p::REP_INFO, &block);
    option_reply(stream, p::REP_ACK, &[]);
    Some(())
}

/// Serves reads with bytes that say where they are (each byte is its
/// offset's low byte plus one), writes by dropping their data.
fn transmission(stream: &mut UnixStream, script: Script, log: &Mutex<Vec<(u64, u32)>>) {
    let mut batch: Vec<p::RequestHeader> = Vec::new();
    loop {
        let mut header = [0u8; p::REQUEST_HEADER_BYTES];
        if stream.read_exact(&mut header).is_err() {
            return;
        }
        let request = p::RequestHeader::decode(&header).expect("request magic");
        if request.command == p::CMD_DISC {
            return;
        }
        if request.command == p::CMD_WRITE {
            let mut payload = vec![0u8; request.len_bytes as usize];
            stream.read_exact(&mut payload).unwrap();
        }
        log.lock()
            .unwrap()
            .push((request.offset_bytes, request.len_bytes));
        match script {
            Script::HangUp => return,
            Script::Silent => continue,
            Script::ReverseBatches(size) => {
                batch.push(request);
                if batch.len() < size {
                    continue;
                }
                for request in batch.drain(..).rev() {
                    let mut reply = p::encode_simple_reply(0, request.handle).to_vec();
                    if request.command == p::CMD_READ {
                        reply.extend(
                            (0..request.len_bytes as u64)
                                .map(|i| ((request.offset_bytes + i) as u8).wrapping_add(1)),
                        );
                    }
                    if stream.write_all(&reply).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

fn telling_bytes(offset_bytes: u64, len_bytes: usize) -> Vec<u8> {
    (0..len_bytes as u64)
        .map(|i| ((offset_bytes + i) as u8).wrapping_add(1))
        .collect()
}

#[test]
fn a_large_read_goes_out_as_pipelined_pieces_and_out_of_order_replies_land_in_place() {
    // 4 pieces of the advertised 64 KiB maximum, answered last first.
    let server = ScriptedServer::start("e", true, Script::ReverseBatches(4));
    let client = SharedClient::connect(&server.uri("e", "&request-timeout-s=5")).unwrap();
    assert_eq!(client.payload_bytes_max(), SCRIPTED_MAX_BYTES);
    let offset_bytes = 4096;
    let data = client.read(offset_bytes, 4 * 65536).unwrap();
    assert_eq!(data, telling_bytes(offset_bytes, 4 * 65536));
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|&(_, len)| len <= SCRIPTED_MAX_BYTES));
}

#[test]
fn requests_from_several_threads_are_in_flight_together() {
    let server = ScriptedServer::start("", true, Script::ReverseBatches(3));
    let client = Arc::new(SharedClient::connect(&server.uri("", "&request-timeout-s=5")).unwrap());
    let threads: Vec<_> = (0..3u64)
        .map(|i| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || {
                let at = i * 8192;
                assert_eq!(client.read(at, 4096).unwrap(), telling_bytes(at, 4096));
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a reader panicked");
    }
}

#[test]
fn an_unanswered_request_fails_within_the_request_timeout_and_so_does_the_connection() {
    let server = ScriptedServer::start("", true, Script::Silent);
    let client = SharedClient::connect(&server.uri("", "&request-timeout-s=1")).unwrap();
    let started = Instant::now();
    let error = client.read(0, 4096).unwrap_err();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
    let message = error.to_string();
    assert!(
        message.contains("no reply to the read of 4096 bytes at 0 within 1 s"),
        "{message}"
    );
    assert!(message.contains("nbd+unix:///"), "{message}");
    // The connection is given up: the next request fails at once.
    let started = Instant::now();
    let again = client.write(0, &[1; 4096], false).unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(again.to_string().contains("no reply"), "{again}");
    assert!(client.failure().is_some());
}

#[test]
fn a_server_that_hangs_up_fails_the_request_in_flight_and_every_later_one() {
    let server = ScriptedServer::start("", true, Script::HangUp);
    // No reconnect (tests/reconnect.rs covers that): the drop is final.
    let client =
        SharedClient::connect(&server.uri("", "&request-timeout-s=20&reconnect-s=0")).unwrap();
    let started = Instant::now();
    let error = client.flush().unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        error.to_string().contains("closed the connection"),
        "{error}"
    );
    let again = client.read(0, 512).unwrap_err();
    assert!(
        again.to_string().contains("closed the connection"),
        "{again}"
    );
}

#[test]
fn a_refused_export_name_is_named_in_the_error() {
    let server = ScriptedServer::start("disk0", true, Script::Silent);
    let error = SharedClient::connect(&server.uri("disk9", "")).unwrap_err();
    assert!(
        matches!(error, ConnectError::NoSuchExport { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("no export named \"disk9\""), "{message}");
    assert!(
        message.contains(&server.socket.display().to_string()),
        "{message}"
    );
}

#[test]
fn a_server_that_never_greets_is_given_up_within_the_connect_timeout() {
    let server = ScriptedServer::start("", false, Script::Silent);
    let started = Instant::now();
    let error = SharedClient::connect(&server.uri("", "&connect-timeout-s=1")).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(error, ConnectError::Handshake { .. }), "{error:?}");
    assert!(error.to_string().contains("within 1 s"), "{error}");
}

#[test]
fn an_unreachable_server_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nobody.sock");
    let error = SharedClient::connect(&unix_uri(&missing, "", "")).unwrap_err();
    assert!(
        matches!(error, ConnectError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("nobody.sock"), "{error}");
    // A TCP port nobody listens on: held bound, not listening, for the
    // whole test. (Bound then closed, another test running at the same
    // time could take it and answer.)
    let closed = ClosedPort::bind();
    let port = closed.port;
    let error = SharedClient::connect(&uri(&format!("nbd://127.0.0.1:{port}/x"))).unwrap_err();
    assert!(
        matches!(error, ConnectError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
}

/// A loopback TCP port bound and never listened on: connecting to it is
/// refused, and no other socket can take it while this is alive.
struct ClosedPort {
    fd: libc::c_int,
    port: u16,
}

impl ClosedPort {
    fn bind() -> ClosedPort {
        // SAFETY: plain socket calls on a descriptor this struct owns; the
        // address structures are fully initialised and sized as passed.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let bound = libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), len);
            assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
            let mut got: libc::sockaddr_in = std::mem::zeroed();
            let mut got_len = len;
            let named = libc::getsockname(
                fd,
                (&mut got as *mut libc::sockaddr_in).cast(),
                &mut got_len,
            );
            assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
            ClosedPort {
                fd,
                port: u16::from_be(got.sin_port),
            }
        }
    }
}

impl Drop for ClosedPort {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this struct's and closed once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

fn tls_served(pki: &std::path::Path, export: &Arc<MemExport>) -> Served {
    let config = eraid_nbd::ServerConfig {
        tls: Some(eraid_nbd::TlsPolicy {
            credentials: eraid_nbd::TlsCredentials::X509(
                eraid_nbd::load_cert_dir(pki).expect("load the test certificates"),
            ),
            required: true,
        }),
        ..eraid_nbd::ServerConfig::default()
    };
    serve(Arc::clone(export) as Arc<dyn eraid_nbd::Export>, config)
}

#[test]
fn nbds_verifies_the_server_with_the_given_ca_and_works_inside_tls() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("", 4 << 20));
    let served = tls_served(pki.path(), &export);
    let socket = served.socket_path.display().to_string();
    let tls_uri = uri(&format!(
        "nbds+unix:///?socket={socket}&tls-certificates={}",
        pki.path().display()
    ));
    let client = Arc::new(SharedClient::connect(&tls_uri).expect("TLS connect"));
    // Two threads at once: the reader and the writers share one session.
    let threads: Vec<_> = (0..2u64)
        .map(|i| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || {
                let data = random_bytes(1 << 20, i + 7);
                client.write(i << 20, &data, true).unwrap();
                assert_eq!(client.read(i << 20, 1 << 20).unwrap(), data);
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a TLS client thread panicked");
    }
    assert_eq!(&export.contents()[..1 << 20], &random_bytes(1 << 20, 7)[..]);

    // Plaintext to a server that requires TLS: told to use nbds.
    let error = SharedClient::connect(&unix_uri(&served.socket_path, "", "")).unwrap_err();
    assert!(error.to_string().contains("requires TLS"), "{error}");
    // nbds without a CA to verify with.
    let error = SharedClient::connect(&uri(&format!("nbds+unix:///?socket={socket}"))).unwrap_err();
    assert!(
        error.to_string().contains("tls-certificates=DIR"),
        "{error}"
    );
    // A CA that did not sign the server's certificate.
    let other = tempfile::tempdir().unwrap();
    make_pki(other.path());
    let error = SharedClient::connect(&uri(&format!(
        "nbds+unix:///?socket={socket}&tls-certificates={}",
        other.path().display()
    )))
    .unwrap_err();
    assert!(error.to_string().contains("TLS handshake"), "{error}");
}

#[test]
fn nbds_to_a_server_without_tls_is_refused_not_downgraded() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("", 1 << 20));
    let served = serve_mem(&export);
    let error = SharedClient::connect(&uri(&format!(
        "nbds+unix:///?socket={}&tls-certificates={}",
        served.socket_path.display(),
        pki.path().display()
    )))
    .unwrap_err();
    assert!(error.to_string().contains("offers no TLS"), "{error}");
}

/// Signs a client certificate with `pki`'s CA into `dir` (libnbd's names:
/// `client-cert.pem`, `client-key.pem`), beside a copy of the CA.
fn make_client_identity(pki: &std::path::Path, dir: &std::path::Path) {
    std::fs::copy(pki.join("ca-cert.pem"), dir.join("ca-cert.pem")).unwrap();
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    let openssl = |args: &[&str]| {
        run(std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir));
    };
    openssl(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "client-key.pem",
        "-out",
        "client.csr",
        "-subj",
        "/CN=member client",
    ]);
    let ca_cert = pki.join("ca-cert.pem").display().to_string();
    let ca_key = pki.join("ca-key.pem").display().to_string();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        &ca_cert,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        "client-cert.pem",
        "-days",
        "2",
        "-extfile",
        "client.ext",
    ]);
}

#[test]
fn nbds_presents_the_client_certificate_of_its_directory_to_a_server_that_verifies_clients() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("", 1 << 20));
    let config = eraid_nbd::ServerConfig {
        tls: Some(eraid_nbd::TlsPolicy {
            credentials: eraid_nbd::TlsCredentials::X509(
                eraid_nbd::load_cert_dir_with(pki.path(), true).expect("load the certificates"),
            ),
            required: true,
        }),
        ..eraid_nbd::ServerConfig::default()
    };
    let served = serve(Arc::clone(&export) as Arc<dyn eraid_nbd::Export>, config);
    let socket = served.socket_path.display().to_string();
    let with_dir = |dir: &std::path::Path| {
        uri(&format!(
            "nbds+unix:///?socket={socket}&tls-certificates={}&reconnect-s=0",
            dir.display()
        ))
    };
    let identity = tempfile::tempdir().unwrap();
    make_client_identity(pki.path(), identity.path());
    let client = SharedClient::connect(&with_dir(identity.path())).expect("a verified client");
    client.write(0, &[4; 4096], false).unwrap();
    assert_eq!(client.read(0, 4096).unwrap(), vec![4; 4096]);
    drop(client);
    // Only the CA: no certificate to present, so the server refuses (in
    // TLS 1.3 the client hears of it at its first request at the latest).
    let bare = tempfile::tempdir().unwrap();
    std::fs::copy(
        pki.path().join("ca-cert.pem"),
        bare.path().join("ca-cert.pem"),
    )
    .unwrap();
    let refused = SharedClient::connect(&with_dir(bare.path()))
        .map_err(|e| e.to_string())
        .and_then(|client| client.read(0, 4096).map_err(|e| e.to_string()));
    assert!(refused.is_err(), "a client without a certificate got in");
    // A key without its certificate is an error naming the missing file.
    let half = tempfile::tempdir().unwrap();
    make_client_identity(pki.path(), half.path());
    std::fs::remove_file(half.path().join("client-cert.pem")).unwrap();
    let error = SharedClient::connect(&with_dir(half.path()))
        .unwrap_err()
        .to_string();
    assert!(error.contains("client-cert.pem: missing"), "{error}");
}

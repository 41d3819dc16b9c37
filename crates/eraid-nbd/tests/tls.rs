//! NBD_OPT_STARTTLS against the spec, byte by byte: with TLS required,
//! options before STARTTLS get NBD_REP_ERR_TLS_REQD (EXPORT_NAME a close),
//! STARTTLS with data or twice gets NBD_REP_ERR_INVALID, and after the ACK
//! the handshake and transmission go on inside TLS (a rustls client
//! trusting the test's CA). Also: certificate directory errors name the
//! file, and a server without TLS answers STARTTLS with NBD_REP_ERR_UNSUP.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use common::*;
use eraid_nbd::protocol as p;
use eraid_nbd::{load_cert_dir, Export, MemExport, ServerConfig, TlsPolicy};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

fn tls_config(pki: &Path, required: bool) -> ServerConfig {
    ServerConfig {
        tls: Some(TlsPolicy {
            credentials: eraid_nbd::TlsCredentials::X509(
                load_cert_dir(pki).expect("load the test certificates"),
            ),
            required,
        }),
        ..ServerConfig::default()
    }
}

fn option<S: Write>(stream: &mut S, option: u32, data: &[u8]) {
    let mut message = p::IHAVEOPT.to_be_bytes().to_vec();
    message.extend_from_slice(&option.to_be_bytes());
    message.extend_from_slice(&(data.len() as u32).to_be_bytes());
    message.extend_from_slice(data);
    stream.write_all(&message).expect("send option");
    stream.flush().unwrap();
}

/// (option, reply type, data)
fn option_reply<S: Read>(stream: &mut S) -> (u32, u32, Vec<u8>) {
    let mut header = [0u8; 20];
    stream.read_exact(&mut header).expect("option reply");
    assert_eq!(&header[0..8], &p::OPTION_REPLY_MAGIC.to_be_bytes());
    let len = u32::from_be_bytes(header[16..20].try_into().unwrap()) as usize;
    let mut data = vec![0u8; len];
    stream.read_exact(&mut data).expect("option reply data");
    (
        u32::from_be_bytes(header[8..12].try_into().unwrap()),
        u32::from_be_bytes(header[12..16].try_into().unwrap()),
        data,
    )
}

/// Sends GO for the default export; returns every reply type up to the
/// final one.
fn go<S: Read + Write>(stream: &mut S) -> Vec<u32> {
    option(stream, p::OPT_GO, &Raw::go_data(b"", &[]));
    let mut types = Vec::new();
    loop {
        let (opt, reply_type, _) = option_reply(stream);
        assert_eq!(opt, p::OPT_GO);
        types.push(reply_type);
        if reply_type != p::REP_INFO {
            return types;
        }
    }
}

fn rustls_client(pki: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(pki.join("ca-cert.pem")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

#[test]
fn tls_required_refuses_options_before_starttls_then_serves_inside_tls() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let data = random_bytes(64 * 1024, 7);
    let mut contents = data.clone();
    contents.resize(1 << 20, 0);
    let export = Arc::new(MemExport::with_contents("disk", contents));
    let mut served = serve(
        Arc::clone(&export) as Arc<dyn Export>,
        tls_config(pki.path(), true),
    );

    // Before STARTTLS: GO, INFO, LIST, STRUCTURED_REPLY all get TLS_REQD
    // and the connection stays open for STARTTLS.
    let mut raw = Raw::start(&served.socket_path);
    assert_eq!(go(&mut raw.stream), vec![p::REP_ERR_TLS_REQD]);
    for opt in [p::OPT_INFO, p::OPT_LIST, p::OPT_STRUCTURED_REPLY] {
        let data = if opt == p::OPT_INFO {
            Raw::go_data(b"", &[])
        } else {
            Vec::new()
        };
        option(&mut raw.stream, opt, &data);
        assert_eq!(
            option_reply(&mut raw.stream).1,
            p::REP_ERR_TLS_REQD,
            "option {opt}"
        );
    }
    // STARTTLS carries no data.
    option(&mut raw.stream, p::OPT_STARTTLS, b"x");
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ERR_INVALID);
    option(&mut raw.stream, p::OPT_STARTTLS, &[]);
    assert_eq!(
        option_reply(&mut raw.stream),
        (p::OPT_STARTTLS, p::REP_ACK, Vec::new())
    );

    // Inside TLS: STARTTLS again is invalid, GO succeeds, a read returns
    // the export's bytes.
    let connection = rustls::ClientConnection::new(
        rustls_client(pki.path()),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(connection, raw.stream);
    option(&mut tls, p::OPT_STARTTLS, &[]);
    assert_eq!(option_reply(&mut tls).1, p::REP_ERR_INVALID);
    assert_eq!(go(&mut tls).last(), Some(&p::REP_ACK));
    let header = p::RequestHeader {
        flags: 0,
        command: p::CMD_READ,
        handle: 9,
        offset_bytes: 0,
        len_bytes: data.len() as u32,
    };
    tls.write_all(&header.encode()).unwrap();
    let mut reply = [0u8; p::SIMPLE_REPLY_HEADER_BYTES];
    tls.read_exact(&mut reply).unwrap();
    assert_eq!(&reply[4..8], &0u32.to_be_bytes(), "read error");
    assert_eq!(&reply[8..16], &9u64.to_be_bytes());
    let mut read_back = vec![0u8; data.len()];
    tls.read_exact(&mut read_back).unwrap();
    assert!(read_back == data, "data read inside TLS differs");

    // EXPORT_NAME before STARTTLS has no error reply: the server closes.
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_EXPORT_NAME, b"");
    assert!(raw.is_closed(), "EXPORT_NAME without TLS must be closed");
    // A plaintext client that gives up with ABORT gets its ACK.
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_ABORT, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ACK);
    served.stop();
}

#[test]
fn tls_allowed_serves_plaintext_and_tls() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("disk", 1 << 20));
    let mut served = serve(
        Arc::clone(&export) as Arc<dyn Export>,
        tls_config(pki.path(), false),
    );
    let mut raw = Raw::start(&served.socket_path);
    assert_eq!(go(&mut raw.stream).last(), Some(&p::REP_ACK));

    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_STARTTLS, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ACK);
    let connection = rustls::ClientConnection::new(
        rustls_client(pki.path()),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(connection, raw.stream);
    assert_eq!(go(&mut tls).last(), Some(&p::REP_ACK));
    served.stop();
}

#[test]
fn a_failed_tls_handshake_closes_only_that_connection() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("disk", 1 << 20));
    let mut served = serve(
        Arc::clone(&export) as Arc<dyn Export>,
        tls_config(pki.path(), true),
    );
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_STARTTLS, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ACK);
    // Plaintext where a ClientHello belongs.
    option(&mut raw.stream, p::OPT_GO, &Raw::go_data(b"", &[]));
    let mut rest = Vec::new();
    let _ = raw.stream.read_to_end(&mut rest);
    assert!(
        rest.len() < 20 || rest[0..8] != p::OPTION_REPLY_MAGIC.to_be_bytes(),
        "no plaintext option reply may follow a STARTTLS ACK"
    );
    // The server still takes new clients.
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_ABORT, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ACK);
    served.stop();
}

#[test]
fn starttls_without_tls_configured_is_unsupported() {
    let export = Arc::new(MemExport::new("disk", 1 << 20));
    let mut served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_STARTTLS, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ERR_UNSUP);
    assert_eq!(go(&mut raw.stream).last(), Some(&p::REP_ACK));
    served.stop();
}

#[test]
fn certificate_directory_errors_name_the_file() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let broken = tempfile::tempdir().unwrap();
    let place = |from: &str, to: &str| {
        std::fs::copy(pki.path().join(from), broken.path().join(to)).unwrap();
    };
    let error = |dir: &Path| load_cert_dir(dir).expect_err("must fail").to_string();

    place("server-cert.pem", "server-cert.pem");
    let message = error(broken.path());
    assert!(message.contains("server-key.pem"), "{message}");
    place("other-key.pem", "server-key.pem");
    let message = error(broken.path());
    assert!(
        message.contains("server-cert.pem") && message.contains("server-key.pem"),
        "a key that is not the certificate's must name both: {message}"
    );
    std::fs::write(broken.path().join("server-cert.pem"), "junk").unwrap();
    let message = error(broken.path());
    assert!(message.contains("server-cert.pem"), "{message}");
    assert!(load_cert_dir(pki.path()).is_ok());
}

/// The stop bound holds inside TLS too: a TLS client that sends 64 reads
/// of 1 MiB and never reads a reply does not hold the server past
/// `shutdown_timeout` (TLS records queued for it must not block the stop).
#[test]
fn shutdown_is_bounded_with_a_tls_client_that_never_reads() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("disk", 64 << 20));
    let shutdown_timeout = std::time::Duration::from_secs(2);
    let config = ServerConfig {
        shutdown_timeout,
        ..tls_config(pki.path(), true)
    };
    let mut served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_STARTTLS, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ACK);
    let connection = rustls::ClientConnection::new(
        rustls_client(pki.path()),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(connection, raw.stream);
    assert_eq!(go(&mut tls).last(), Some(&p::REP_ACK));
    for handle in 0..64u64 {
        let header = p::RequestHeader {
            flags: 0,
            command: p::CMD_READ,
            handle,
            offset_bytes: handle << 20,
            len_bytes: 1 << 20,
        };
        tls.write_all(&header.encode()).unwrap();
    }
    tls.flush().unwrap();
    // Let the server take the requests and fill the socket.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (done_sender, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        served.stop();
        let _ = done_sender.send(());
    });
    let stopped = done
        .recv_timeout(shutdown_timeout + std::time::Duration::from_secs(3))
        .is_ok();
    let took = started.elapsed();
    assert!(
        stopped && took <= shutdown_timeout + std::time::Duration::from_secs(1),
        "stop took {took:?} (finished: {stopped}) with a TLS client that never reads"
    );
    drop(tls);
}

/// A TLS client that stops reading is dropped at the send deadline, as a
/// plaintext one is: TLS records the server could not send yet are retried
/// under the same deadline, never forever.
#[test]
fn a_tls_client_that_stops_reading_is_dropped_at_the_send_deadline() {
    if !have_tool("openssl") {
        panic!("openssl is needed to make the test certificates (scripts/setup.sh installs it)");
    }
    let pki = tempfile::tempdir().unwrap();
    make_pki(pki.path());
    let export = Arc::new(MemExport::new("disk", 64 << 20));
    let config = ServerConfig {
        send_timeout: std::time::Duration::from_millis(800),
        ..tls_config(pki.path(), true)
    };
    let served = serve(Arc::clone(&export) as Arc<dyn Export>, config);
    let mut raw = Raw::start(&served.socket_path);
    option(&mut raw.stream, p::OPT_STARTTLS, &[]);
    assert_eq!(option_reply(&mut raw.stream).1, p::REP_ACK);
    let connection = rustls::ClientConnection::new(
        rustls_client(pki.path()),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(connection, raw.stream);
    assert_eq!(go(&mut tls).last(), Some(&p::REP_ACK));
    for handle in 0..64u64 {
        let header = p::RequestHeader {
            flags: 0,
            command: p::CMD_READ,
            handle,
            offset_bytes: handle << 20,
            len_bytes: 1 << 20,
        };
        tls.write_all(&header.encode()).unwrap();
    }
    tls.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // Dropped while the client still reads nothing: the server has shut the
    // socket, so a further request cannot even be sent.
    let header = p::RequestHeader {
        flags: 0,
        command: p::CMD_READ,
        handle: 64,
        offset_bytes: 0,
        len_bytes: 4096,
    };
    let sent = tls.write_all(&header.encode()).and_then(|()| tls.flush());
    assert!(
        sent.is_err(),
        "the server still holds a TLS connection that stopped reading 2.5 s ago"
    );
    // Now read: only what the socket buffers held comes, then the close.
    tls.sock
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total_bytes = 0u64;
    let closed = loop {
        match tls.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => total_bytes += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break false
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                ) =>
            {
                break true
            }
            Err(e) => panic!("reading the TLS replies failed: {e}"),
        }
    };
    assert!(
        closed && total_bytes < 64 << 20,
        "the stalled TLS client was not dropped (closed: {closed}, {total_bytes} bytes read)"
    );
}

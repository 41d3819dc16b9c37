//! TLS for NBD_OPT_STARTTLS, through rustls: loading a certificate
//! directory in qemu's layout, the server-side TLS handshake within the
//! handshake deadline, and a stream whose reader and writer threads share
//! one TLS session without holding its lock across socket waits. A
//! pre-shared-key session (`crate::tls_psk`, OpenSSL) is shared the same way.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{Connection, ServerConnection};

use crate::stream::{is_timeout, Stream, Watch};
use crate::tls_psk::{PskServer, PskSession};

/// The server's certificate chain, in qemu's `--tls-creds` directory layout.
pub const SERVER_CERT_FILE: &str = "server-cert.pem";
/// The private key of `server-cert.pem`.
pub const SERVER_KEY_FILE: &str = "server-key.pem";

/// How the server proves itself and whom it lets in.
#[derive(Debug, Clone)]
pub enum TlsCredentials {
    /// X.509 (`--tls-cert DIR`), through rustls.
    X509(Arc<rustls::ServerConfig>),
    /// Pre-shared keys (`--tls-psk FILE`), through OpenSSL.
    Psk(Arc<PskServer>),
}

/// Whether clients must, may or cannot use TLS.
#[derive(Debug, Clone)]
pub struct TlsPolicy {
    pub credentials: TlsCredentials,
    /// Options other than STARTTLS and ABORT get NBD_REP_ERR_TLS_REQD
    /// until TLS is up (the spec's FORCEDTLS); otherwise plaintext clients
    /// are served too.
    pub required: bool,
}

/// Why a certificate directory cannot be used; always names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("{cert} and {key}: {reason}")]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
}

/// The CA that signs the clients' certificates, with `--tls-verify-peer`.
pub const CA_CERT_FILE: &str = "ca-cert.pem";

/// A PEM certificate chain (leaf first) and its private key, read from
/// two files (the server's and a client's alike); an error names the file
/// that was wrong and why. Both files are read before either is parsed, so
/// a missing or unreadable one says so plainly.
pub(crate) fn read_cert_and_key(
    cert_path: &Path,
    key_path: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), (PathBuf, String)> {
    let cert_pem =
        std::fs::read(cert_path).map_err(|e| (cert_path.to_path_buf(), e.to_string()))?;
    let key_pem = std::fs::read(key_path).map_err(|e| (key_path.to_path_buf(), e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            (
                cert_path.to_path_buf(),
                format!("not a PEM certificate file: {e}"),
            )
        })?;
    if chain.is_empty() {
        return Err((cert_path.to_path_buf(), "holds no CERTIFICATE block".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        (
            key_path.to_path_buf(),
            format!("no usable private key: {e}"),
        )
    })?;
    Ok((chain, key))
}

/// Loads `server-cert.pem` (the chain, leaf first) and `server-key.pem`
/// from `dir` and checks that the key belongs to the certificate.
pub fn load_cert_dir(dir: &Path) -> Result<Arc<rustls::ServerConfig>, TlsSetupError> {
    load_cert_dir_with(dir, false)
}

/// `load_cert_dir`, and when `verify_peer`, every client must present a
/// certificate that `ca-cert.pem` of `dir` signed (qemu-nbd's
/// `verify-peer=on`); the handshake of a client without one fails.
pub fn load_cert_dir_with(
    dir: &Path,
    verify_peer: bool,
) -> Result<Arc<rustls::ServerConfig>, TlsSetupError> {
    let cert_path = dir.join(SERVER_CERT_FILE);
    let key_path = dir.join(SERVER_KEY_FILE);
    let file_error = |path: &Path, reason: String| TlsSetupError::File {
        path: path.to_path_buf(),
        reason,
    };
    let (chain, key) = read_cert_and_key(&cert_path, &key_path)
        .map_err(|(path, reason)| file_error(&path, reason))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| file_error(&cert_path, e.to_string()))?;
    let builder = if verify_peer {
        let ca_path = dir.join(CA_CERT_FILE);
        let ca_pem = std::fs::read(&ca_path).map_err(|e| file_error(&ca_path, e.to_string()))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&ca_pem) {
            let cert =
                cert.map_err(|e| file_error(&ca_path, format!("not a PEM certificate file: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| file_error(&ca_path, format!("not a usable CA certificate: {e}")))?;
        }
        if roots.is_empty() {
            return Err(file_error(&ca_path, "holds no CERTIFICATE block".into()));
        }
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| file_error(&ca_path, e.to_string()))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    builder
        .with_single_cert(chain, key)
        .map(Arc::new)
        .map_err(|e| TlsSetupError::Pair {
            cert: cert_path,
            key: key_path,
            reason: format!("cannot be used together: {e}"),
        })
}

/// Runs the server side of a TLS handshake on `plain` (whose socket has a
/// short timeout) with `credentials`, giving up at `deadline` or when
/// `watch` says so.
pub fn accept(
    plain: &Stream,
    credentials: &TlsCredentials,
    watch: &Watch,
    deadline: Instant,
) -> io::Result<TlsStream> {
    match credentials {
        TlsCredentials::X509(config) => accept_x509(plain, config, watch, deadline),
        TlsCredentials::Psk(server) => {
            let session = crate::tls_psk::accept(plain, server, watch, deadline)?;
            TlsStream::over(Session::Psk(session), plain)
        }
    }
}

fn accept_x509(
    plain: &Stream,
    config: &Arc<rustls::ServerConfig>,
    watch: &Watch,
    deadline: Instant,
) -> io::Result<TlsStream> {
    let mut conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
    let mut socket = plain.try_clone()?;
    let mut stop_seen_at = None;
    while conn.is_handshaking() || conn.wants_write() {
        if let Some(error) = watch.give_up(Some(deadline), &mut stop_seen_at) {
            return Err(error);
        }
        if conn.wants_write() {
            match conn.write_tls(&mut socket) {
                Err(e) if is_timeout(&e) => {}
                other => {
                    other?;
                }
            }
        } else {
            match conn.read_tls(&mut socket) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "client closed during the TLS handshake",
                    ))
                }
                Ok(_) => {
                    if let Err(e) = conn.process_new_packets() {
                        // Tell the client why (an alert) before giving up.
                        let _ = conn.write_tls(&mut socket);
                        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }
    TlsStream::over(Session::Rustls(Box::new(Connection::Server(conn))), plain)
}

/// A session of either library, with the few operations the stream needs.
#[derive(Debug)]
pub(crate) enum Session {
    /// A server's session, or a client's (`crate::tls_client`).
    Rustls(Box<Connection>),
    Psk(PskSession),
}

impl Session {
    /// Plaintext ready, WouldBlock when more ciphertext is needed.
    fn read_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Session::Rustls(conn) => {
                conn.process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                conn.reader().read(buf)
            }
            Session::Psk(session) => session.read_plain(buf),
        }
    }

    fn read_tls(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Session::Rustls(conn) => conn.read_tls(&mut &data[..]),
            Session::Psk(session) => Ok(session.read_tls(data)),
        }
    }

    fn wants_write(&self) -> bool {
        match self {
            Session::Rustls(conn) => conn.wants_write(),
            Session::Psk(session) => session.wants_write(),
        }
    }

    fn write_tls(&mut self, out: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Session::Rustls(conn) => conn.write_tls(out),
            Session::Psk(session) => session.write_tls(out),
        }
    }

    fn write_plain(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Session::Rustls(conn) => conn.writer().write(buf),
            Session::Psk(session) => session.write_plain(buf),
        }
    }
}

/// The TLS session both halves of a connection use.
#[derive(Debug)]
struct Shared {
    /// Held only while the library works on buffers, never across a
    /// socket wait.
    conn: Mutex<Session>,
}

/// One half of a TLS connection (clones share the session). Reads and
/// writes fail with a timeout like the plain socket under them, so the
/// callers' deadline and stop checks work unchanged.
#[derive(Debug)]
pub struct TlsStream {
    shared: Arc<Shared>,
    socket: Box<Stream>,
    /// Ciphertext read from the socket but not yet given to rustls: it is
    /// fed only when no plaintext is waiting, which bounds rustls' buffer.
    received_bytes: Vec<u8>,
    /// Records taken from rustls but not yet on the socket. Only the
    /// writing half (one thread) ever sends, so records keep their order.
    unsent_bytes: Vec<u8>,
}

impl TlsStream {
    /// A stream over `plain` for a session whose handshake is done.
    pub(crate) fn over(conn: Session, plain: &Stream) -> io::Result<TlsStream> {
        Ok(TlsStream {
            shared: Arc::new(Shared {
                conn: Mutex::new(conn),
            }),
            socket: Box::new(plain.try_clone()?),
            received_bytes: Vec::new(),
            unsent_bytes: Vec::new(),
        })
    }

    pub fn try_clone(&self) -> io::Result<TlsStream> {
        Ok(TlsStream {
            shared: self.shared.clone(),
            socket: Box::new(self.socket.try_clone()?),
            received_bytes: Vec::new(),
            unsent_bytes: Vec::new(),
        })
    }

    pub fn socket(&self) -> &Stream {
        &self.socket
    }

    fn lock(shared: &Shared) -> io::Result<MutexGuard<'_, Session>> {
        shared
            .conn
            .lock()
            .map_err(|_| io::Error::other("TLS session lock poisoned"))
    }

    /// Sends every record rustls has ready. A socket timeout comes back
    /// as an error with the rest kept, to be sent first by the next call,
    /// so the caller's deadline and stop checks run between attempts.
    pub fn send_pending(&mut self) -> io::Result<()> {
        loop {
            while !self.unsent_bytes.is_empty() {
                match self.socket.write(&self.unsent_bytes) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.unsent_bytes.drain(..n);
                    }
                    Err(e) => return Err(e),
                }
            }
            let mut conn = Self::lock(&self.shared)?;
            if !conn.wants_write() {
                return Ok(());
            }
            conn.write_tls(&mut self.unsent_bytes)?;
        }
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            {
                let mut conn = Self::lock(&self.shared)?;
                match conn.read_plain(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if !self.received_bytes.is_empty() {
                    let taken_bytes = conn.read_tls(&self.received_bytes)?;
                    self.received_bytes.drain(..taken_bytes);
                    continue;
                }
            }
            let mut raw = [0u8; 16 * 1024];
            let n = self.socket.read(&mut raw)?;
            if n == 0 {
                return Ok(0);
            }
            self.received_bytes.extend_from_slice(&raw[..n]);
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Records left from an earlier call go first; rustls then takes
        // at most what its send buffer allows.
        self.send_pending()?;
        let taken_bytes = Self::lock(&self.shared)?.write_plain(buf)?;
        Ok(taken_bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_pending()
    }
}

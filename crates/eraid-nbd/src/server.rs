//! The listening socket and the accept loop: one thread per connection.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::ServerConfig;
use crate::connection::{new_cancel_flag, serve_connection};
use crate::export::Export;
use crate::slots::Slots;
use crate::stream::{Stream, Watch};
use eraid_buffers::BufferPool;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    Unix(PathBuf),
    /// Port 0 picks a free port; `Server::uri` reports the real one.
    Tcp(SocketAddr),
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("invalid server config: {0}")]
    Config(String),
    // `error`, not `source`: a source would be printed a second time by
    // every error chain (anyhow's "{:#}") after this message.
    #[error("cannot listen on {what}: {error}")]
    Bind { what: String, error: io::Error },
    #[error("accept loop failed: {0}")]
    Accept(io::Error),
}

enum Bound {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// How often the accept loop looks at the stop flag when no client comes.
const ACCEPT_POLL_INTERVAL: Duration = Duration::from_millis(20);
/// Idle write buffers the server keeps for reuse (more are freed).
const WRITE_BUFFERS_CACHED_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// An NBD server for one export.
pub struct Server {
    bound: Bound,
    unix_path: Option<PathBuf>,
    uri: String,
    export: Arc<dyn Export>,
    config: Arc<ServerConfig>,
    /// Set when `run_until` sees its stop flag; every connection polls it.
    stopping: Arc<AtomicBool>,
    slots: Arc<Slots>,
    /// Write payloads are read into these, shared by every connection.
    write_buffers: BufferPool,
}

impl Server {
    /// Binds the listening socket. A stale Unix socket file (nobody
    /// answering on it) is replaced; a live one is an error.
    pub fn bind(
        listener: Listener,
        export: Arc<dyn Export>,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        config.validate().map_err(ServerError::Config)?;
        // A client told `nbds` insists on TLS; with TLS only allowed, the
        // plain scheme works for both kinds of client.
        let scheme = match &config.tls {
            Some(policy) if policy.required => "nbds",
            _ => "nbd",
        };
        let (bound, unix_path, uri) = match listener {
            Listener::Unix(path) => {
                remove_stale_socket(&path)?;
                let listener = UnixListener::bind(&path).map_err(|error| ServerError::Bind {
                    what: path.display().to_string(),
                    error,
                })?;
                let uri = format!("{scheme}+unix:///?socket={}", percent_encode_path(&path));
                (Bound::Unix(listener), Some(path), uri)
            }
            Listener::Tcp(address) => {
                let bind_error = |error| ServerError::Bind {
                    what: address.to_string(),
                    error,
                };
                let listener = TcpListener::bind(address).map_err(bind_error)?;
                let local = listener.local_addr().map_err(bind_error)?;
                (Bound::Tcp(listener), None, format!("{scheme}://{local}/"))
            }
        };
        let nonblocking = match &bound {
            Bound::Unix(l) => l.set_nonblocking(true),
            Bound::Tcp(l) => l.set_nonblocking(true),
        };
        nonblocking.map_err(|error| ServerError::Bind {
            what: uri.clone(),
            error,
        })?;
        Ok(Server {
            bound,
            unix_path,
            uri,
            export,
            slots: Arc::new(Slots::new(config.max_connections, config.handshake_reserve)),
            write_buffers: BufferPool::new(
                config
                    .max_in_flight_bytes
                    .min(WRITE_BUFFERS_CACHED_BYTES_MAX),
            ),
            config: Arc::new(config),
            stopping: Arc::new(AtomicBool::new(false)),
        })
    }

    /// `nbd+unix:///?socket=PATH` or `nbd://HOST:PORT/` (`nbds` when TLS is
    /// required), for qemu, nbdinfo, nbdcopy.
    pub fn uri(&self) -> String {
        self.uri.clone()
    }

    /// The bound TCP address (with the real port), if listening on TCP.
    pub fn tcp_address(&self) -> Option<SocketAddr> {
        match &self.bound {
            Bound::Tcp(l) => l.local_addr().ok(),
            Bound::Unix(_) => None,
        }
    }

    /// Accepts and serves clients until `stop` is set; then stops reading
    /// new requests, lets every connection answer what it took and close,
    /// and returns. Requests a client sent but the server had not yet read
    /// when `stop` was set get no reply (the connection closes). Bounded
    /// whatever clients do: a client that stops reading its replies is
    /// dropped after half of `shutdown_timeout`, and whatever connection is
    /// still open at `shutdown_timeout` is cut (its requests already in the
    /// export still complete there; only their replies are lost).
    pub fn run_until(&self, stop: &AtomicBool) -> Result<(), ServerError> {
        self.stopping.store(false, Ordering::SeqCst);
        let mut connections: Vec<JoinHandle<()>> = Vec::new();
        let mut next_connection_id: u64 = 0;
        let mut result = Ok(());
        while !stop.load(Ordering::SeqCst) {
            connections.retain(|c| !c.is_finished());
            match self.accept() {
                Ok(Some(stream)) => {
                    next_connection_id += 1;
                    match self.spawn_connection(stream, next_connection_id) {
                        Ok(handle) => connections.push(handle),
                        Err(e) => tracing::warn!("nbd: cannot start connection thread: {e}"),
                    }
                }
                Ok(None) => std::thread::sleep(ACCEPT_POLL_INTERVAL),
                Err(e) if is_transient_accept_error(&e) => {
                    tracing::warn!("nbd: accept: {e}");
                    std::thread::sleep(ACCEPT_POLL_INTERVAL);
                }
                Err(e) => {
                    result = Err(ServerError::Accept(e));
                    break;
                }
            }
        }
        self.stopping.store(true, Ordering::SeqCst);
        let cut_at = Instant::now() + self.config.shutdown_timeout;
        while connections.iter().any(|c| !c.is_finished()) && Instant::now() < cut_at {
            std::thread::sleep(ACCEPT_POLL_INTERVAL);
        }
        if connections.iter().any(|c| !c.is_finished()) {
            tracing::warn!("nbd: shutdown timeout reached, cutting the connections still open");
            self.slots.cut_all();
        }
        for connection in connections {
            if connection.join().is_err() {
                tracing::error!("nbd: a connection thread panicked");
            }
        }
        result
    }

    /// Runs the server on its own thread; the handle stops it.
    pub fn start(self) -> io::Result<RunningServer> {
        let uri = self.uri.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("nbd-accept".into())
                .spawn(move || self.run_until(&stop))?
        };
        Ok(RunningServer {
            uri,
            stop,
            thread: Some(thread),
        })
    }

    fn accept(&self) -> io::Result<Option<Stream>> {
        let accepted = match &self.bound {
            Bound::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Bound::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        };
        match accepted {
            Ok(stream) => {
                // Accepted sockets must block; connections use timeouts instead.
                match &stream {
                    Stream::Unix(s) => s.set_nonblocking(false)?,
                    Stream::Tcp(s) => s.set_nonblocking(false)?,
                    // TLS starts later, inside the handshake.
                    Stream::Tls(_) => {}
                }
                if self.config.unix_send_buffer_bytes > 0 {
                    // Only speed is at stake: a socket left at the kernel's
                    // size still works.
                    if let Err(e) = stream.widen_send_buffer(self.config.unix_send_buffer_bytes) {
                        tracing::debug!("nbd: cannot widen the send buffer: {e}");
                    }
                }
                Ok(Some(stream))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn spawn_connection(&self, stream: Stream, id: u64) -> io::Result<JoinHandle<()>> {
        let export = Arc::clone(&self.export);
        let config = Arc::clone(&self.config);
        let slots = Arc::clone(&self.slots);
        let write_buffers = self.write_buffers.clone();
        let watch = Watch {
            stopping: Arc::clone(&self.stopping),
            cancelled: new_cancel_flag(),
            stop_grace: self.config.stop_grace(),
        };
        let registered = stream.try_clone()?;
        if let Some(cut) = self
            .slots
            .admit_handshake(id, Arc::clone(&watch.cancelled), registered)
        {
            tracing::debug!("nbd: handshake reserve full, dropped the oldest handshake ({cut})");
        }
        let spawned = std::thread::Builder::new()
            .name(format!("nbd-conn-{id}"))
            .spawn(move || {
                serve_connection(stream, id, export, &config, watch, &slots, &write_buffers)
            });
        if spawned.is_err() {
            self.slots.leave(id);
        }
        spawned
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(path) = &self.unix_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A server running on its own thread (see `Server::start`). Dropping it
/// stops the server and waits for it.
pub struct RunningServer {
    uri: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
}

impl RunningServer {
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Stops accepting, lets every connection answer what it took, and waits.
    pub fn stop(mut self) -> Result<(), ServerError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), ServerError> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|_| {
                Err(ServerError::Accept(io::Error::other(
                    "accept thread panicked",
                )))
            }),
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

fn remove_stale_socket(path: &Path) -> Result<(), ServerError> {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let in_use = |why: &str| ServerError::Bind {
        what: path.display().to_string(),
        error: io::Error::new(io::ErrorKind::AddrInUse, why.to_string()),
    };
    if !metadata.file_type().is_socket() {
        return Err(in_use("path exists and is not a socket"));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(in_use("another server is listening on it"));
    }
    std::fs::remove_file(path).map_err(|error| ServerError::Bind {
        what: path.display().to_string(),
        error,
    })
}

/// Errors after which accepting can go on (the client left early, or file
/// descriptors ran out for a moment).
fn is_transient_accept_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::TimedOut
    ) || matches!(error.raw_os_error(), Some(code) if code == 24 /* EMFILE */ || code == 23 /* ENFILE */ || code == 12 /* ENOMEM */ || code == 105 /* ENOBUFS */)
}

/// Encodes a socket path for the query of an NBD URI.
fn percent_encode_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_paths_are_percent_encoded() {
        assert_eq!(
            percent_encode_path(Path::new("/tmp/a b&c.sock")),
            "/tmp/a%20b%26c.sock"
        );
    }
}

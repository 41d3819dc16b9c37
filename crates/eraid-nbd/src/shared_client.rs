//! An NBD client many threads use at once, every wait bounded, that
//! reconnects when the server drops the connection and it is safe to: for
//! an array member that is another host's export.
//!
//! The I/O itself is [`ClientConnection`]'s (pipelined, each request bounded
//! by the request timeout). When a connection is closed by the server or
//! its socket fails, the request is retried on a new connection for at most
//! the reconnect window (`reconnect-s`), and every caller waits on the same
//! reconnect. Two rules keep this from ever hiding lost data:
//! - A server may lose writes it acknowledged but had not flushed when it
//!   went away (it may have crashed). So a connection is replaced only when
//!   no write was acknowledged on it since its last completed flush;
//!   otherwise the client is given up at once, and the array fails the
//!   member (and rebuilds it) as it would a local disk whose I/O failed.
//!   Requests that were in flight, not acknowledged, are sent again on the
//!   new connection: reads, and writes (their data was never promised).
//! - Only a connection whose server end is gone is replaced. A request left
//!   unanswered (the request timeout) may still be carried out by a live
//!   server later, after newer writes on a new connection would have landed,
//!   so a timeout gives the client up, as does a protocol violation.
//!
//! Once given up, a client stays given up: every request fails with the
//! reason, naming the export.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::client::ExportInfo;
use crate::client_connection::{ClientConnection, ConnectError, DeathKind};
use crate::uri::NbdUri;

/// How long a dropped connection is retried when neither the URI
/// (`reconnect-s`) nor the process (`set_default_reconnect_window`) says.
pub const DEFAULT_RECONNECT_WINDOW: Duration = Duration::from_secs(10);

/// The process's default reconnect window, in milliseconds.
static DEFAULT_RECONNECT_WINDOW_MS: AtomicU64 =
    AtomicU64::new(DEFAULT_RECONNECT_WINDOW.as_millis() as u64);

/// First pause between reconnect attempts; doubled up to the largest.
const RETRY_PAUSE_FIRST: Duration = Duration::from_millis(50);
const RETRY_PAUSE_MAX: Duration = Duration::from_secs(1);
/// Shortest connect timeout of one attempt near the end of the window.
const ATTEMPT_TIMEOUT_MIN: Duration = Duration::from_millis(200);

/// A connected export, shared by every thread that does I/O on it.
pub struct SharedClient {
    uri: NbdUri,
    label: String,
    /// The export as first connected; a reconnect must find the same.
    export: ExportInfo,
    reconnect_window: Duration,
    connection: RwLock<Arc<ClientConnection>>,
    /// Replacements made; each connection knows its number.
    generation: AtomicU64,
    /// Held while reconnecting, so one thread does it for all.
    reconnecting: Mutex<()>,
    /// Why the client was given up, for good.
    given_up: Mutex<Option<String>>,
    reconnects: AtomicU64,
}

impl std::fmt::Debug for SharedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedClient")
            .field("label", &self.label)
            .field("export", &self.export)
            .field("reconnect_window", &self.reconnect_window)
            .finish()
    }
}

impl SharedClient {
    /// Sets the reconnect window of clients connected from now on whose
    /// URI does not give `reconnect-s` (`eraid serve --member-reconnect-s`).
    pub fn set_default_reconnect_window(window: Duration) {
        DEFAULT_RECONNECT_WINDOW_MS.store(window.as_millis() as u64, Ordering::Relaxed);
    }

    fn default_reconnect_window() -> Duration {
        Duration::from_millis(DEFAULT_RECONNECT_WINDOW_MS.load(Ordering::Relaxed))
    }

    /// Connects to `uri` and negotiates its export, within the URI's
    /// connect timeout.
    pub fn connect(uri: &NbdUri) -> Result<SharedClient, ConnectError> {
        let connection = ClientConnection::connect(uri)?;
        Ok(SharedClient {
            uri: uri.clone(),
            label: uri.to_string(),
            export: connection.export().clone(),
            reconnect_window: uri
                .reconnect_window
                .unwrap_or_else(SharedClient::default_reconnect_window),
            connection: RwLock::new(Arc::new(connection)),
            generation: AtomicU64::new(0),
            reconnecting: Mutex::new(()),
            given_up: Mutex::new(None),
            reconnects: AtomicU64::new(0),
        })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn export(&self) -> &ExportInfo {
        &self.export
    }

    pub fn size_bytes(&self) -> u64 {
        self.export.size_bytes
    }

    pub fn read_only(&self) -> bool {
        self.export.transmission_flags & crate::protocol::FLAG_READ_ONLY != 0
    }

    /// The most one read or write may carry.
    pub fn payload_bytes_max(&self) -> u32 {
        self.current().1.payload_bytes_max()
    }

    /// How long a dropped connection is retried.
    pub fn reconnect_window(&self) -> Duration {
        self.reconnect_window
    }

    /// Connections replaced after a drop so far.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// Why the client is unusable, if it is: given up, or its connection
    /// is dead and not yet replaced.
    pub fn failure(&self) -> Option<String> {
        lock(&self.given_up)
            .clone()
            .or_else(|| self.current().1.failure())
    }

    /// Reads `len_bytes` at `offset_bytes`: pieces of at most the largest
    /// payload, all in flight at once.
    pub fn read(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        self.with_retry(|connection| connection.read(offset_bytes, len_bytes))
    }

    /// Writes `data` at `offset_bytes`; with `fua`, each piece is durable
    /// when acknowledged (NBD_CMD_FLAG_FUA, or a flush after when the
    /// server offers no FUA).
    pub fn write(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()> {
        self.with_retry(|connection| connection.write(offset_bytes, data, fua))
    }

    /// Makes every write acknowledged before this call durable. A server
    /// that offers no flush (no NBD_FLAG_SEND_FLUSH) writes through: its
    /// acknowledged writes are as durable as it can make them.
    pub fn flush(&self) -> io::Result<()> {
        self.with_retry(ClientConnection::flush)
    }

    /// True when the server zeroes ranges itself (NBD_CMD_WRITE_ZEROES).
    pub fn can_write_zeroes(&self) -> bool {
        self.current().1.can_write_zeroes()
    }

    /// Makes the range read as zeroes with NBD_CMD_WRITE_ZEROES (which the
    /// caller checked is offered), in bounded pieces, all in flight.
    pub fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        self.with_retry(|connection| connection.write_zeroes(offset_bytes, len_bytes))
    }

    fn current(&self) -> (u64, Arc<ClientConnection>) {
        let connection = self
            .connection
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (
            self.generation.load(Ordering::Acquire),
            Arc::clone(&connection),
        )
    }

    /// Runs `op` on the current connection; when the server dropped it,
    /// reconnects (if safe, within the window counted from the first drop
    /// this call saw) and runs `op` again from the start.
    fn with_retry<T>(&self, op: impl Fn(&ClientConnection) -> io::Result<T>) -> io::Result<T> {
        let mut window_end: Option<Instant> = None;
        loop {
            if let Some(reason) = lock(&self.given_up).clone() {
                return Err(io::Error::new(io::ErrorKind::BrokenPipe, reason));
            }
            let (generation, connection) = self.current();
            let error = match op(&connection) {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            let Some(death) = connection.death() else {
                return Err(error); // the server answered an error
            };
            if death.kind != DeathKind::Closed {
                self.give_up(death.reason.clone());
                return Err(error);
            }
            let end = *window_end.get_or_insert_with(|| Instant::now() + self.reconnect_window);
            self.replace(generation, &connection, &death.reason, end)?;
        }
    }

    /// Replaces the dropped connection `dead` (number `generation`), unless
    /// another caller already did, or gives the client up: when the server
    /// may have lost acknowledged writes, or no new connection to the same
    /// export is made by `window_end`.
    fn replace(
        &self,
        generation: u64,
        dead: &ClientConnection,
        drop_reason: &str,
        window_end: Instant,
    ) -> io::Result<()> {
        let _one_at_a_time = lock(&self.reconnecting);
        if let Some(reason) = lock(&self.given_up).clone() {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, reason));
        }
        if self.generation.load(Ordering::Acquire) != generation {
            return Ok(()); // replaced meanwhile
        }
        // Short enough for the superblock's failure text: the label once.
        let cause = drop_reason
            .strip_prefix(&format!("{}: ", self.label))
            .unwrap_or(drop_reason);
        let unflushed = dead.writes_acked_unflushed();
        if unflushed > 0 {
            // The server may have lost them (it may have crashed).
            return Err(self.give_up(format!(
                "{}: dropped with {unflushed} acknowledged writes unflushed, not reconnected \
                 ({cause})",
                self.label
            )));
        }
        let mut pause = RETRY_PAUSE_FIRST;
        let mut last_error = String::from("no attempt fit in the window");
        loop {
            let left = window_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.give_up(format!(
                    "{}: dropped, not reconnected within {} s (reconnect-s) ({cause}; last \
                     try: {last_error})",
                    self.label,
                    self.reconnect_window.as_secs()
                )));
            }
            let mut attempt = self.uri.clone();
            attempt.connect_timeout = attempt.connect_timeout.min(left.max(ATTEMPT_TIMEOUT_MIN));
            match ClientConnection::connect(&attempt) {
                Ok(connection) => {
                    if let Some(difference) = self.differs(connection.export()) {
                        return Err(self.give_up(format!(
                            "{}: dropped and reconnected, but {difference}: not the same \
                             export ({cause})",
                            self.label
                        )));
                    }
                    *self
                        .connection
                        .write()
                        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(connection);
                    self.generation.fetch_add(1, Ordering::AcqRel);
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(member = %self.label, %drop_reason, "NBD member reconnected");
                    return Ok(());
                }
                Err(error) => last_error = error.to_string(),
            }
            let left = window_end.saturating_duration_since(Instant::now());
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(RETRY_PAUSE_MAX);
        }
    }

    /// How a reconnected export differs from the first one, if it does.
    fn differs(&self, export: &ExportInfo) -> Option<String> {
        if export.size_bytes != self.export.size_bytes {
            return Some(format!(
                "its size is {} bytes, was {}",
                export.size_bytes, self.export.size_bytes
            ));
        }
        let read_only = crate::protocol::FLAG_READ_ONLY;
        if export.transmission_flags & read_only != self.export.transmission_flags & read_only {
            return Some("it is read-only now".into());
        }
        None
    }

    /// Gives the client up for good (the first reason stays); returns the
    /// error every request gets from now on.
    fn give_up(&self, reason: String) -> io::Error {
        let mut given_up = lock(&self.given_up);
        if given_up.is_none() {
            tracing::warn!(member = %self.label, %reason, "NBD member given up");
            *given_up = Some(reason);
        }
        io::Error::new(
            io::ErrorKind::BrokenPipe,
            given_up.clone().unwrap_or_default(),
        )
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

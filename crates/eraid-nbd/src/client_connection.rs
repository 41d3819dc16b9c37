//! One NBD connection many threads use at once, every wait bounded.
//!
//! Requests are pipelined: each caller sends its request under the writer
//! lock and waits for its own reply, while one reader thread takes the
//! replies in whatever order the server sends them and hands each to its
//! caller. Connecting and the handshake are bounded by the connect timeout,
//! each request by the request timeout. A connection that fails in any way
//! (closed by the server, a socket error, a reply that breaks the protocol,
//! a request unanswered in time) is dead for good: every request in flight
//! and every later one fails with the reason, and [`ClientConnection::death`]
//! says how it died. It also counts the writes the server acknowledged and
//! how many of them a completed flush covers, so that whoever reconnects
//! can tell whether the server may have lost acknowledged writes
//! ([`crate::SharedClient`] does that).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::client::{self, ClientError, ExportInfo};
use crate::protocol::{self as p, be_u32, be_u64, RequestHeader};
use crate::stream::Stream;
use crate::uri::{Endpoint, NbdUri};

/// Largest payload of one request when the server states no maximum (the
/// spec's default).
pub const PAYLOAD_BYTES_DEFAULT_MAX: u32 = 32 << 20;
/// Largest zeroing range asked in one NBD_CMD_WRITE_ZEROES (a u32 length,
/// kept well inside it and aligned).
const ZEROES_BYTES_PER_REQUEST_MAX: u64 = 1 << 30;

/// What went wrong connecting; always says to what.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot reach {uri}: {reason}")]
    Unreachable { uri: String, reason: String },
    #[error("{uri}: the server has no export named {export:?}{detail}")]
    NoSuchExport {
        uri: String,
        export: String,
        detail: String,
    },
    #[error("{uri}: the server refused the export {export:?}: {reason}")]
    Refused {
        uri: String,
        export: String,
        reason: String,
    },
    #[error("{uri}: handshake failed: {reason}")]
    Handshake { uri: String, reason: String },
}

/// A connected export, shared by every thread that does I/O on it.
pub struct ClientConnection {
    label: String,
    export: ExportInfo,
    request_timeout: Duration,
    writer: Mutex<Stream>,
    state: Arc<ConnectionState>,
    next_handle: AtomicU64,
    reader: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ClientConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConnection")
            .field("label", &self.label)
            .field("export", &self.export)
            .finish()
    }
}

/// The requests awaiting replies, and why the connection died if it did.
struct ConnectionState {
    inner: Mutex<Waiting>,
    /// A handle on the socket to shut it down, waking the reader.
    socket: Stream,
}

#[derive(Default)]
struct Waiting {
    by_handle: HashMap<u64, Waiter>,
    dead: Option<Death>,
    /// Writes (and zeroings) the server acknowledged without FUA.
    writes_acked: u64,
    /// How many of `writes_acked` a completed flush covers: those acked
    /// before the flush was sent.
    writes_flushed: u64,
}

/// How a connection ended, and why (a text naming the export).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Death {
    pub kind: DeathKind,
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeathKind {
    /// The server closed the connection or the socket failed (reset,
    /// broken pipe): the server's end is gone, so it carries out nothing
    /// more of this connection's requests.
    Closed,
    /// A request went unanswered within the request timeout: the server
    /// may still be alive and carry it out later.
    TimedOut,
    /// The server broke the protocol.
    Protocol,
    /// This side closed it (dropped).
    Dropped,
}

/// What a reply answers, for the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answering {
    /// A read's length: simple replies do not say how much data follows.
    Read {
        len_bytes: u32,
    },
    /// A write or zeroing; with FUA it is durable when acknowledged.
    Write {
        fua: bool,
    },
    /// A flush, sent when `writes_acked` was this.
    Flush {
        covers_writes_acked: u64,
    },
    Other,
}

struct Waiter {
    answering: Answering,
    reply: mpsc::SyncSender<Result<Option<Vec<u8>>, String>>,
}

/// A request sent, its reply not yet taken.
struct Sent {
    handle: u64,
    started: Instant,
    what: String,
    reply: mpsc::Receiver<Result<Option<Vec<u8>>, String>>,
}

impl ConnectionState {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks the connection dead (the first death stays), fails every
    /// request waiting, and shuts the socket so the reader stops. Logged
    /// unless this side closed it.
    fn die(&self, kind: DeathKind, reason: String) {
        let waiters = {
            let mut waiting = self.lock();
            if waiting.dead.is_none() {
                if kind != DeathKind::Dropped {
                    tracing::warn!(%reason, ?kind, "NBD member connection failed");
                }
                waiting.dead = Some(Death { kind, reason });
            }
            std::mem::take(&mut waiting.by_handle)
        };
        let reason = self.dead_reason().unwrap_or_default();
        for (_, waiter) in waiters {
            let _ = waiter.reply.try_send(Err(reason.clone()));
        }
        let _ = self.socket.shutdown(Shutdown::Both);
    }

    fn dead_reason(&self) -> Option<String> {
        self.lock().dead.as_ref().map(|death| death.reason.clone())
    }
}

impl ClientConnection {
    /// Connects to `uri` and negotiates its export, within the URI's
    /// connect timeout.
    pub fn connect(uri: &NbdUri) -> Result<ClientConnection, ConnectError> {
        let label = uri.to_string();
        let unreachable = |reason: String| ConnectError::Unreachable {
            uri: label.clone(),
            reason,
        };
        let timeout = uri.connect_timeout;
        let stream = match &uri.endpoint {
            Endpoint::Tcp { host, port } => {
                Stream::Tcp(connect_tcp(host, *port, timeout).map_err(unreachable)?)
            }
            Endpoint::Unix { socket } => Stream::Unix(
                UnixStream::connect(socket)
                    .map_err(|e| unreachable(format!("{}: {e}", socket.display())))?,
            ),
        };
        let deadline = Instant::now() + timeout;
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .map_err(|e| unreachable(e.to_string()))?;
        let mut stream = stream;
        let export = handshake(&mut stream, uri, deadline)
            .map_err(|error| describe_handshake_error(&label, &uri.export_name, timeout, error))?;
        // Replies are read without a socket timeout (a request's own
        // deadline ends a wait); a send that stalls fails the connection.
        stream
            .set_read_timeout(None)
            .and_then(|()| stream.set_write_timeout(Some(uri.request_timeout)))
            .and_then(|()| stream.set_nodelay())
            .map_err(|e| unreachable(e.to_string()))?;
        let socket = stream.try_clone().map_err(|e| unreachable(e.to_string()))?;
        let reader_stream = stream.try_clone().map_err(|e| unreachable(e.to_string()))?;
        let state = Arc::new(ConnectionState {
            inner: Mutex::new(Waiting::default()),
            socket,
        });
        let reader_state = Arc::clone(&state);
        let reader_label = label.clone();
        let reader = std::thread::Builder::new()
            .name("eraid-nbd-member".into())
            .spawn(move || read_replies(reader_stream, &reader_state, &reader_label))
            .map_err(|e| unreachable(format!("cannot start its reader thread: {e}")))?;
        Ok(ClientConnection {
            label,
            export,
            request_timeout: uri.request_timeout,
            writer: Mutex::new(stream),
            state,
            next_handle: AtomicU64::new(1),
            reader: Some(reader),
        })
    }

    pub fn export(&self) -> &ExportInfo {
        &self.export
    }

    fn has_flag(&self, flag: u16) -> bool {
        self.export.transmission_flags & flag != 0
    }

    /// The most one read or write may carry.
    pub fn payload_bytes_max(&self) -> u32 {
        match self.export.block_size {
            Some(size) if size.max_bytes > 0 => size.max_bytes.min(PAYLOAD_BYTES_DEFAULT_MAX),
            _ => PAYLOAD_BYTES_DEFAULT_MAX,
        }
    }

    /// Why the connection is dead, if it is.
    pub fn failure(&self) -> Option<String> {
        self.state.dead_reason()
    }

    /// How the connection died, if it did.
    pub fn death(&self) -> Option<Death> {
        self.state.lock().dead.clone()
    }

    /// Writes the server acknowledged that no completed flush covers: what
    /// it may have lost if it crashed. A server that offers no flush is
    /// never known to have made a write durable, so every acknowledged
    /// write counts.
    pub fn writes_acked_unflushed(&self) -> u64 {
        let waiting = self.state.lock();
        if self.has_flag(p::FLAG_SEND_FLUSH) {
            waiting.writes_acked - waiting.writes_flushed
        } else {
            waiting.writes_acked
        }
    }

    /// Reads `len_bytes` at `offset_bytes`: pieces of at most the largest
    /// payload, all in flight at once.
    pub fn read(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        self.check_range(offset_bytes, len_bytes as u64, "read")?;
        let mut sent = Vec::new();
        for (at, piece) in pieces(offset_bytes, len_bytes as u64, self.payload_bytes_max()) {
            sent.push(self.send(p::CMD_READ, 0, at, piece, &[])?);
        }
        let mut out = Vec::with_capacity(len_bytes);
        for request in sent {
            out.extend(self.wait(request)?.unwrap_or_default());
        }
        if out.len() != len_bytes {
            return Err(self.protocol_error(format!(
                "a read of {len_bytes} bytes brought {} bytes",
                out.len()
            )));
        }
        Ok(out)
    }

    /// Writes `data` at `offset_bytes`; with `fua`, each piece is durable
    /// when acknowledged (NBD_CMD_FLAG_FUA, or a flush after when the
    /// server offers no FUA).
    pub fn write(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()> {
        self.check_range(offset_bytes, data.len() as u64, "write")?;
        let fua_flag = if fua && self.has_flag(p::FLAG_SEND_FUA) {
            p::CMD_FLAG_FUA
        } else {
            0
        };
        let mut sent = Vec::new();
        let mut done_bytes = 0usize;
        for (at, piece) in pieces(offset_bytes, data.len() as u64, self.payload_bytes_max()) {
            let payload = &data[done_bytes..done_bytes + piece as usize];
            sent.push(self.send(p::CMD_WRITE, fua_flag, at, piece, payload)?);
            done_bytes += piece as usize;
        }
        for request in sent {
            self.wait(request)?;
        }
        if fua && fua_flag == 0 {
            self.flush()?;
        }
        Ok(())
    }

    /// Makes every write acknowledged before this call durable. A server
    /// that offers no flush (no NBD_FLAG_SEND_FLUSH) writes through: its
    /// acknowledged writes are as durable as it can make them.
    pub fn flush(&self) -> io::Result<()> {
        if !self.has_flag(p::FLAG_SEND_FLUSH) {
            return self.check_alive();
        }
        let sent = self.send(p::CMD_FLUSH, 0, 0, 0, &[])?;
        self.wait(sent).map(drop)
    }

    /// True when the server zeroes ranges itself (NBD_CMD_WRITE_ZEROES).
    pub fn can_write_zeroes(&self) -> bool {
        self.has_flag(p::FLAG_SEND_WRITE_ZEROES)
    }

    /// Makes the range read as zeroes with NBD_CMD_WRITE_ZEROES (which the
    /// caller checked is offered), in bounded pieces, all in flight.
    pub fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        self.check_range(offset_bytes, len_bytes, "zeroing")?;
        let mut sent = Vec::new();
        for (at, piece) in pieces(offset_bytes, len_bytes, ZEROES_BYTES_PER_REQUEST_MAX as u32) {
            sent.push(self.send(p::CMD_WRITE_ZEROES, 0, at, piece, &[])?);
        }
        for request in sent {
            self.wait(request)?;
        }
        Ok(())
    }

    fn check_alive(&self) -> io::Result<()> {
        match self.state.dead_reason() {
            Some(reason) => Err(dead_error(&reason)),
            None => Ok(()),
        }
    }

    /// Refuses a range past the export's end before asking the server:
    /// the member's size is fixed when it is opened.
    fn check_range(&self, offset_bytes: u64, len_bytes: u64, what: &str) -> io::Result<()> {
        let size_bytes = self.export.size_bytes;
        match offset_bytes.checked_add(len_bytes) {
            Some(end_bytes) if end_bytes <= size_bytes => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: {what} of {len_bytes} bytes at {offset_bytes} is past the export's \
                     {size_bytes} bytes",
                    self.label
                ),
            )),
        }
    }

    fn protocol_error(&self, reason: String) -> io::Error {
        let reason = format!("{}: {reason}", self.label);
        self.state.die(DeathKind::Protocol, reason.clone());
        io::Error::new(io::ErrorKind::InvalidData, reason)
    }

    /// Registers a request and sends it; its reply is taken by `wait`.
    fn send(
        &self,
        command: u16,
        flags: u16,
        offset_bytes: u64,
        len_bytes: u32,
        payload: &[u8],
    ) -> io::Result<Sent> {
        let started = Instant::now();
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        {
            let mut waiting = self.state.lock();
            if let Some(reason) = &waiting.dead {
                return Err(dead_error(&reason.reason));
            }
            let answering = match command {
                p::CMD_READ => Answering::Read { len_bytes },
                p::CMD_WRITE | p::CMD_WRITE_ZEROES => Answering::Write {
                    fua: flags & p::CMD_FLAG_FUA != 0,
                },
                p::CMD_FLUSH => Answering::Flush {
                    covers_writes_acked: waiting.writes_acked,
                },
                _ => Answering::Other,
            };
            waiting.by_handle.insert(
                handle,
                Waiter {
                    answering,
                    reply: reply_tx,
                },
            );
        }
        let what = format!(
            "{} of {len_bytes} bytes at {offset_bytes}",
            command_name(command)
        );
        let header = RequestHeader {
            flags,
            command,
            handle,
            offset_bytes,
            len_bytes,
        };
        let sent = {
            let mut writer = self
                .writer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // A connection that died while this waited for the lock takes
            // no more requests (the reader already failed this one).
            self.check_alive()
                .and_then(|()| writer.write_all(&header.encode()))
                .and_then(|()| writer.write_all(payload))
                .and_then(|()| writer.flush())
        };
        if let Err(error) = sent {
            let reason = self
                .state
                .dead_reason()
                .unwrap_or_else(|| format!("{}: sending the {what} failed: {error}", self.label));
            self.state.die(DeathKind::Closed, reason.clone());
            return Err(dead_error(&reason));
        }
        Ok(Sent {
            handle,
            started,
            what,
            reply: reply_rx,
        })
    }

    /// Waits for the reply to `sent`, at most the request timeout from
    /// when it was sent; an unanswered request kills the connection.
    fn wait(&self, sent: Sent) -> io::Result<Option<Vec<u8>>> {
        let left = self.request_timeout.saturating_sub(sent.started.elapsed());
        match sent.reply.recv_timeout(left) {
            Ok(Ok(data)) => Ok(data),
            Ok(Err(reason)) => Err(request_error(&reason)),
            Err(RecvTimeoutError::Timeout) => {
                let reason = format!(
                    "{}: no reply to the {} within {} s (request-timeout-s); the connection \
                     is given up",
                    self.label,
                    sent.what,
                    self.request_timeout.as_secs()
                );
                self.state.lock().by_handle.remove(&sent.handle);
                self.state.die(DeathKind::TimedOut, reason.clone());
                Err(io::Error::new(io::ErrorKind::TimedOut, reason))
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err(dead_error(&self.state.dead_reason().unwrap_or_else(|| {
                    format!("{}: the reader stopped", self.label)
                })))
            }
        }
    }
}

impl Drop for ClientConnection {
    /// Says goodbye (NBD_CMD_DISC) when the connection still works, then
    /// closes it and joins the reader.
    fn drop(&mut self) {
        let was_alive = self.state.dead_reason().is_none();
        // Marked closed first, so the server closing its end after the
        // goodbye is not taken for a failure.
        let mut writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.state.lock().dead.get_or_insert_with(|| Death {
            kind: DeathKind::Dropped,
            reason: format!("{}: closed", self.label),
        });
        if was_alive {
            let header = RequestHeader {
                flags: 0,
                command: p::CMD_DISC,
                handle: 0,
                offset_bytes: 0,
                len_bytes: 0,
            };
            let _ = writer.write_all(&header.encode());
            let _ = writer.flush();
        }
        drop(writer);
        self.state
            .die(DeathKind::Dropped, format!("{}: closed", self.label));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// A failed request's error: the reason a request failed or the
/// connection died, as text that names the member.
fn request_error(reason: &str) -> io::Error {
    io::Error::other(reason.to_string())
}

fn dead_error(reason: &str) -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, reason.to_string())
}

fn command_name(command: u16) -> &'static str {
    match command {
        p::CMD_READ => "read",
        p::CMD_WRITE => "write",
        p::CMD_FLUSH => "flush",
        p::CMD_WRITE_ZEROES => "write-zeroes",
        _ => "request",
    }
}

/// Splits a range into pieces of at most `max_bytes`, aligned to 4 KiB
/// when `max_bytes` is larger than that.
fn pieces(offset_bytes: u64, len_bytes: u64, max_bytes: u32) -> Vec<(u64, u32)> {
    let max_bytes = u64::from(max_bytes.max(1));
    let step_bytes = if max_bytes >= 4096 {
        max_bytes / 4096 * 4096
    } else {
        max_bytes
    };
    let mut out = Vec::new();
    let mut at = offset_bytes;
    let end = offset_bytes + len_bytes;
    while at < end {
        let piece = (end - at).min(step_bytes);
        out.push((at, piece as u32));
        at += piece;
    }
    out
}

/// Connects to the first address of `host` that answers within `timeout`.
/// The name lookup itself is the system resolver's, bounded by its own
/// timeouts (resolv.conf), not by `timeout`.
fn connect_tcp(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, String> {
    let addresses: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last_error = format!("{host} has no address");
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last_error = format!("{address}: {e}"),
        }
    }
    Err(last_error)
}

fn handshake(
    stream: &mut Stream,
    uri: &NbdUri,
    deadline: Instant,
) -> Result<ExportInfo, ClientError> {
    client::greet(stream)?;
    if uri.tls {
        crate::tls_client::start_tls(stream, uri, deadline)?;
    }
    client::go(stream, &uri.export_name)
}

fn describe_handshake_error(
    label: &str,
    export: &str,
    timeout: Duration,
    error: ClientError,
) -> ConnectError {
    let uri = label.to_string();
    let export = export.to_string();
    match error {
        ClientError::OptionRejected {
            reply_type,
            message,
            ..
        } => {
            let detail = if message.is_empty() {
                String::new()
            } else {
                format!(" ({message})")
            };
            match reply_type {
                p::REP_ERR_UNKNOWN => ConnectError::NoSuchExport {
                    uri,
                    export,
                    detail,
                },
                p::REP_ERR_TLS_REQD => ConnectError::Refused {
                    uri,
                    export,
                    reason: format!("the server requires TLS: use nbds://{detail}"),
                },
                p::REP_ERR_POLICY => ConnectError::Refused {
                    uri,
                    export,
                    reason: format!("refused by the server's policy{detail}"),
                },
                other => ConnectError::Refused {
                    uri,
                    export,
                    reason: format!("option reply {other:#x}{detail}"),
                },
            }
        }
        ClientError::Io(error)
            if matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            ConnectError::Handshake {
                uri,
                reason: format!(
                    "the server did not finish the handshake within {} s (connect-timeout-s)",
                    timeout.as_secs()
                ),
            }
        }
        ClientError::Io(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
            ConnectError::Handshake {
                uri,
                reason: "the server closed the connection (is it an NBD server that takes \
                         this export, with or without TLS as the URI says?)"
                    .into(),
            }
        }
        other => ConnectError::Handshake {
            uri,
            reason: other.to_string(),
        },
    }
}

/// The reader thread: hands each reply to its request until the
/// connection ends, then fails whatever is still waiting.
fn read_replies(mut stream: Stream, state: &ConnectionState, label: &str) {
    let (kind, reason) = loop {
        match read_one_reply(&mut stream, state, label) {
            Ok(()) => {}
            Err(death) => break death,
        }
    };
    state.die(kind, reason);
}

fn read_one_reply(
    stream: &mut Stream,
    state: &ConnectionState,
    label: &str,
) -> Result<(), (DeathKind, String)> {
    let mut header = [0u8; p::SIMPLE_REPLY_HEADER_BYTES];
    if let Err(error) = stream.read_exact(&mut header) {
        if let Some(death) = state.lock().dead.clone() {
            return Err((death.kind, death.reason));
        }
        return Err((
            DeathKind::Closed,
            match error.kind() {
                io::ErrorKind::UnexpectedEof => {
                    format!("{label}: the server closed the connection")
                }
                _ => format!("{label}: reading a reply failed: {error}"),
            },
        ));
    }
    let magic = be_u32(&header[0..4]);
    if magic != p::SIMPLE_REPLY_MAGIC {
        // Structured replies were not negotiated; anything else is garbage.
        return Err((
            DeathKind::Protocol,
            format!("{label}: a reply with bad magic {magic:#x}"),
        ));
    }
    let error = be_u32(&header[4..8]);
    let handle = be_u64(&header[8..16]);
    // Taken and counted under one lock: a connection that dies meanwhile
    // either failed this request (the caller never hears of success) or
    // sees its write counted when someone asks whether to reconnect.
    let waiter = {
        let mut waiting = state.lock();
        let Some(waiter) = waiting.by_handle.remove(&handle) else {
            return Err((
                DeathKind::Protocol,
                format!("{label}: a reply to handle {handle}, which no request in flight has"),
            ));
        };
        if error == 0 {
            match waiter.answering {
                Answering::Write { fua: false } => waiting.writes_acked += 1,
                Answering::Flush {
                    covers_writes_acked,
                } => {
                    waiting.writes_flushed = waiting.writes_flushed.max(covers_writes_acked);
                }
                _ => {}
            }
        }
        waiter
    };
    let result = match (error, waiter.answering) {
        (0, Answering::Read { len_bytes }) => {
            let mut data = vec![0u8; len_bytes as usize];
            if let Err(e) = stream.read_exact(&mut data) {
                let reason = format!("{label}: reading {len_bytes} bytes of read data failed: {e}");
                let _ = waiter.reply.try_send(Err(reason.clone()));
                return Err((DeathKind::Closed, reason));
            }
            Ok(Some(data))
        }
        (0, _) => Ok(None),
        (error, _) => Err(format!(
            "{label}: the server answered error {error} ({})",
            p::error_message(error)
        )),
    };
    let _ = waiter.reply.try_send(result);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_in_aligned_bounded_parts() {
        assert_eq!(pieces(0, 0, 4096), vec![]);
        assert_eq!(pieces(4096, 100, 1 << 20), vec![(4096, 100)]);
        assert_eq!(
            pieces(0, 10 << 20, (4 << 20) + 100),
            vec![(0, 4 << 20), (4 << 20, 4 << 20), (8 << 20, 2 << 20)]
        );
        assert_eq!(pieces(0, 1000, 512), vec![(0, 512), (512, 488)]);
    }
}

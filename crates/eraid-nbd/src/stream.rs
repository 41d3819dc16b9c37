//! One socket type for Unix, TCP and TLS connections, and a reader that
//! notices server shutdown between messages.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::tls::TlsStream;

/// A connected byte stream, Unix or TCP, or TLS over one of them.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(TlsStream),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Tls(s) => Stream::Tls(s.try_clone()?),
        })
    }

    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Tls(s) => s.socket().shutdown(how),
        }
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(timeout),
            Stream::Tcp(s) => s.set_read_timeout(timeout),
            Stream::Tls(s) => s.socket().set_read_timeout(timeout),
        }
    }

    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(timeout),
            Stream::Tcp(s) => s.set_write_timeout(timeout),
            Stream::Tls(s) => s.socket().set_write_timeout(timeout),
        }
    }

    /// Replies are small headers often followed by data; Nagle would hold
    /// the header back waiting for an ACK, so it is switched off on TCP.
    pub fn set_nodelay(&self) -> io::Result<()> {
        match self {
            Stream::Unix(_) => Ok(()),
            Stream::Tcp(s) => s.set_nodelay(true),
            Stream::Tls(s) => s.socket().set_nodelay(),
        }
    }

    /// Bytes the kernel holds for this socket that a read would return at
    /// once (FIONREAD). 0 for TLS, whose socket bytes are records, not
    /// requests, and 0 if the kernel will not say.
    pub fn readable_bytes(&self) -> usize {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Tls(_) => return 0,
        };
        let mut bytes: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int through the pointer, which
        // points at `bytes`; the fd is open for as long as `self` lives.
        let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut bytes) };
        if rc == 0 {
            usize::try_from(bytes).unwrap_or(0)
        } else {
            0
        }
    }

    /// Lets a Unix socket queue up to about `bytes` of replies the client
    /// has not read yet (SO_SNDBUF; the kernel caps it at
    /// `net.core.wmem_max`), and never lowers what it already allows.
    /// A Unix socket's default (about 208 KiB) holds one or two large read
    /// replies, so the reply writer blocked, and was woken again, for
    /// nearly every reply of a client streaming 128 KiB reads. TCP is left
    /// alone: setting SO_SNDBUF switches off its own sizing, which already
    /// grows to `net.ipv4.tcp_wmem`'s maximum.
    pub fn widen_send_buffer(&self, bytes: usize) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let Stream::Unix(s) = self else {
            return Ok(());
        };
        let fd = s.as_raw_fd();
        let wanted = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // Linux reports twice what was set: compare like with like.
        if usize::try_from(wanted).unwrap_or(usize::MAX) <= send_buffer_bytes(fd)? / 2 {
            return Ok(());
        }
        // SAFETY: setsockopt reads one c_int through the pointer, which
        // points at `wanted`; the fd is open for as long as `self` lives.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                std::ptr::addr_of!(wanted).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Sends what a TLS session still holds from earlier writes (nothing
    /// to do on a plain socket, whose writes are final).
    pub fn send_pending(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(_) | Stream::Tcp(_) => Ok(()),
            Stream::Tls(s) => s.send_pending(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// One `writev` on a socket (a read's pieces go out without joining).
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Tls(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// SO_SNDBUF of a socket, as the kernel reports it.
fn send_buffer_bytes(fd: std::os::fd::RawFd) -> io::Result<usize> {
    let mut bytes: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes through the pointer,
    // which points at `bytes` of that size; the fd is open for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            std::ptr::addr_of_mut!(bytes).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(bytes).unwrap_or(0))
}

/// How long one socket read or write call waits before the caller looks at
/// the stop flag, its cancel flag and its deadline.
pub const STOP_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// What makes a connection's reads and writes give up: the server stopping
/// (after a grace for a message already begun), this connection being
/// cancelled (displaced, or cut at the end of a shutdown), and a deadline.
#[derive(Debug, Clone)]
pub struct Watch {
    pub stopping: Arc<AtomicBool>,
    pub cancelled: Arc<AtomicBool>,
    pub stop_grace: Duration,
}

impl Watch {
    /// Why an operation that has waited since `stop_seen_at` (set here on
    /// the first stop seen) must give up now, if it must.
    pub(crate) fn give_up(
        &self,
        deadline: Option<Instant>,
        stop_seen_at: &mut Option<Instant>,
    ) -> Option<io::Error> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection cancelled by the server",
            ));
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Some(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        if self.stopping.load(Ordering::Relaxed) {
            let since = *stop_seen_at.get_or_insert_with(Instant::now);
            if since.elapsed() > self.stop_grace {
                return Some(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "client stalled while the server stops",
                ));
            }
        }
        None
    }
}

/// Reads whole protocol messages from a stream whose read timeout is short,
/// so that a server shutdown is noticed while the client is idle. A message
/// already begun is read to its end (a shutdown never cuts a request in
/// half) unless the client stalls past the stop grace, the deadline passes
/// or the connection is cancelled.
pub struct MessageReader<R: Read> {
    inner: R,
    watch: Watch,
    deadline: Option<Instant>,
    /// Bytes read from `inner` ahead of the messages taken so far:
    /// `ahead[ahead_start..ahead_end]`. Its length is how much one read
    /// may take (empty until `read_ahead`: only what a message needs).
    ahead: Vec<u8>,
    ahead_start: usize,
    ahead_end: usize,
    /// How much of `ahead` the next read may fill: all of it while
    /// messages are small, `NARROW_AHEAD_BYTES` after a large payload, so
    /// the next large payload is mostly read into its own buffer, not
    /// through this one.
    ahead_window: usize,
}

/// The outcome of waiting for the next message.
#[derive(Debug, PartialEq, Eq)]
pub enum NextMessage {
    /// The buffer is filled with a whole message header.
    Ready,
    /// The client closed the connection cleanly between messages.
    Eof,
    /// The server is stopping and the client was between messages.
    Stopping,
}

impl MessageReader<Stream> {
    /// Bytes a read would return now without waiting: read ahead, or
    /// still in the socket.
    pub fn ready_bytes(&self) -> usize {
        self.buffered_bytes() + self.inner.readable_bytes()
    }
}

impl<R: Read> MessageReader<R> {
    pub fn new(inner: R, watch: Watch) -> Self {
        MessageReader {
            inner,
            watch,
            deadline: None,
            ahead: Vec::new(),
            ahead_start: 0,
            ahead_end: 0,
            ahead_window: 0,
        }
    }

    /// The stream, to be upgraded in place (NBD_OPT_STARTTLS). Never
    /// called once reading ahead is on (the transmission phase), so no
    /// plaintext byte read ahead can be taken for one sent under TLS.
    pub fn get_mut(&mut self) -> &mut R {
        assert!(
            self.ahead.is_empty(),
            "the stream cannot be swapped while reading ahead"
        );
        &mut self.inner
    }

    /// From now on every read takes up to `bytes_max` from the stream, so
    /// requests a client pipelines arrive in one call and the caller can
    /// tell ([`MessageReader::buffered_bytes`]) which are already here.
    pub fn read_ahead(&mut self, bytes_max: usize) {
        assert!(
            self.buffered_bytes() == 0,
            "read-ahead is set before the first read"
        );
        self.ahead = vec![0; bytes_max];
        self.ahead_window = bytes_max;
    }

    /// Bytes already read from the stream and not yet taken.
    pub fn buffered_bytes(&self) -> usize {
        self.ahead_end - self.ahead_start
    }

    /// One read: from the bytes read ahead if there are any, else from the
    /// stream (into `buf` directly when it is large, a write's payload:
    /// through the read-ahead buffer it would cost a copy of every byte;
    /// small reads go through it, so pipelined headers come in one call).
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.buffered_bytes() == 0 {
            if buf.len() >= self.ahead.len().min(DIRECT_READ_BYTES_MIN) {
                return self.inner.read(buf);
            }
            self.ahead_start = 0;
            self.ahead_end = 0;
            self.ahead_end = self.inner.read(&mut self.ahead[..self.ahead_window])?;
        }
        let taken = buf.len().min(self.buffered_bytes());
        buf[..taken].copy_from_slice(&self.ahead[self.ahead_start..][..taken]);
        self.ahead_start += taken;
        Ok(taken)
    }

    /// Every read fails once `deadline` passes (None: no deadline).
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// Waits for the first bytes of a message, then reads all of `buf`.
    pub fn next_message(&mut self, buf: &mut [u8]) -> io::Result<NextMessage> {
        let mut filled_bytes = 0;
        while filled_bytes == 0 {
            if self.watch.stopping.load(Ordering::Relaxed) {
                return Ok(NextMessage::Stopping);
            }
            match self.read_some(buf) {
                Ok(0) => return Ok(NextMessage::Eof),
                Ok(n) => filled_bytes = n,
                Err(e) if is_timeout(&e) => {
                    if let Some(error) = self.watch.give_up(self.deadline, &mut None) {
                        return Err(error);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        self.fill(&mut buf[filled_bytes..])?;
        Ok(NextMessage::Ready)
    }

    /// Reads all of `buf` as the continuation of a message already begun.
    pub fn fill(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.ahead_window = if buf.len() >= DIRECT_READ_BYTES_MIN {
            self.ahead.len().min(NARROW_AHEAD_BYTES)
        } else {
            self.ahead.len()
        };
        let mut filled_bytes = 0;
        let mut stop_seen_at: Option<Instant> = None;
        while filled_bytes < buf.len() {
            // Checked before every read, so trickling bytes extend nothing.
            if let Some(error) = self.watch.give_up(self.deadline, &mut stop_seen_at) {
                return Err(error);
            }
            match self.read_some(&mut buf[filled_bytes..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed in the middle of a message",
                    ))
                }
                Ok(n) => filled_bytes += n,
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads and throws away `len_bytes` of a message, in small pieces so a
    /// rejected write payload costs no large allocation.
    pub fn discard(&mut self, mut len_bytes: u64) -> io::Result<()> {
        let mut scratch = [0u8; 64 * 1024];
        while len_bytes > 0 {
            let piece_bytes = len_bytes.min(scratch.len() as u64) as usize;
            self.fill(&mut scratch[..piece_bytes])?;
            len_bytes -= piece_bytes as u64;
        }
        Ok(())
    }
}

/// A read at least this long skips the read-ahead buffer (a memcpy of 16
/// KiB costs about what the extra system call for the next header does).
const DIRECT_READ_BYTES_MIN: usize = 16 * 1024;
/// The read-ahead after a large payload: room for many headers, little of
/// the next payload.
const NARROW_AHEAD_BYTES: usize = 4096;

/// Writes to a stream whose write timeout is short, giving up when the
/// armed deadline passes (it is re-armed per reply, not per byte, so a
/// client that takes one byte a second is still dropped), when the
/// connection is cancelled, or when the server has been stopping for
/// longer than the grace.
pub struct DeadlineWriter {
    inner: Stream,
    watch: Watch,
    deadline: Option<Instant>,
    /// When a write first saw the stop flag: the grace runs from there,
    /// across write calls, so progress does not extend it.
    stop_seen_at: Option<Instant>,
}

impl DeadlineWriter {
    pub fn new(inner: Stream, watch: Watch) -> Self {
        DeadlineWriter {
            inner,
            watch,
            deadline: None,
            stop_seen_at: None,
        }
    }

    /// What follows must be written within `timeout` from now.
    pub fn arm(&mut self, timeout: Duration) {
        self.deadline = Some(Instant::now() + timeout);
    }

    /// Writes must be done by `deadline` (None: only stop and cancel apply).
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    pub fn get_ref(&self) -> &Stream {
        &self.inner
    }

    /// The stream, to be upgraded in place (NBD_OPT_STARTTLS).
    pub fn get_mut(&mut self) -> &mut Stream {
        &mut self.inner
    }

    /// Retries sending what the stream still holds until it is out, under
    /// the same deadline, stop and cancel checks as `write`.
    fn send_pending(&mut self) -> io::Result<()> {
        loop {
            if let Some(error) = self.watch.give_up(self.deadline, &mut self.stop_seen_at) {
                return Err(error);
            }
            match self.inner.send_pending() {
                Err(e) if is_timeout(&e) => {}
                other => return other,
            }
        }
    }
}

impl DeadlineWriter {
    /// Runs one socket write call until it goes through, the deadline
    /// passes or the server stops.
    fn write_with(
        &mut self,
        mut call: impl FnMut(&mut Stream) -> io::Result<usize>,
    ) -> io::Result<usize> {
        // Checked before every call, not only after a timeout: a client
        // that takes a few bytes now and then must not extend anything.
        loop {
            if let Some(error) = self.watch.give_up(self.deadline, &mut self.stop_seen_at) {
                return Err(error);
            }
            match call(&mut self.inner) {
                Err(e) if is_timeout(&e) => {}
                Ok(n) => {
                    // A TLS write only queues records: they must be on the
                    // socket before the caller counts the bytes as sent.
                    self.send_pending()?;
                    return Ok(n);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for DeadlineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_with(|stream| stream.write(buf))
    }

    /// As `write`, with several buffers in one call.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.write_with(|stream| stream.write_vectored(bufs))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_pending()?;
        self.inner.flush()
    }
}

pub(crate) fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

//! One socket type for Unix and TCP connections, and a reader that notices
//! server shutdown between messages.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A connected byte stream, Unix or TCP.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tcp(s) => s.shutdown(how),
        }
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(timeout),
            Stream::Tcp(s) => s.set_read_timeout(timeout),
        }
    }

    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(timeout),
            Stream::Tcp(s) => s.set_write_timeout(timeout),
        }
    }

    /// Replies are small headers often followed by data; Nagle would hold
    /// the header back waiting for an ACK, so it is switched off on TCP.
    pub fn set_nodelay(&self) -> io::Result<()> {
        match self {
            Stream::Unix(_) => Ok(()),
            Stream::Tcp(s) => s.set_nodelay(true),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// How long a reader sleeps in one read call before it looks at the stop flag.
pub const STOP_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Reads whole protocol messages from a stream whose read timeout is short,
/// so that a server shutdown is noticed while the client is idle. A message
/// already begun is read to its end (a shutdown never cuts a request in
/// half) unless the client stalls past `stall_grace` after the stop.
pub struct MessageReader<'a, R: Read> {
    inner: R,
    stopping: &'a AtomicBool,
    stall_grace: Duration,
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

impl<'a, R: Read> MessageReader<'a, R> {
    pub fn new(inner: R, stopping: &'a AtomicBool, stall_grace: Duration) -> Self {
        MessageReader {
            inner,
            stopping,
            stall_grace,
        }
    }

    /// Waits for the first bytes of a message, then reads all of `buf`.
    pub fn next_message(&mut self, buf: &mut [u8]) -> io::Result<NextMessage> {
        let mut filled_bytes = 0;
        while filled_bytes == 0 {
            if self.stopping.load(Ordering::Relaxed) {
                return Ok(NextMessage::Stopping);
            }
            match self.inner.read(buf) {
                Ok(0) => return Ok(NextMessage::Eof),
                Ok(n) => filled_bytes = n,
                Err(e) if is_timeout(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        self.fill(&mut buf[filled_bytes..])?;
        Ok(NextMessage::Ready)
    }

    /// Reads all of `buf` as the continuation of a message already begun.
    pub fn fill(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let mut filled_bytes = 0;
        let mut stop_seen_at: Option<Instant> = None;
        while filled_bytes < buf.len() {
            match self.inner.read(&mut buf[filled_bytes..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed in the middle of a message",
                    ))
                }
                Ok(n) => filled_bytes += n,
                Err(e) if is_timeout(&e) => {
                    if self.stopping.load(Ordering::Relaxed) {
                        let since = *stop_seen_at.get_or_insert_with(Instant::now);
                        if since.elapsed() > self.stall_grace {
                            return Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                "client stalled mid-message during shutdown",
                            ));
                        }
                    }
                }
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

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

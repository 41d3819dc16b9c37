//! The reply side of a connection: the writer thread that owns the socket's
//! write half, and the completion handles that route export results to it.
//! Replies go out in completion order, not request order.

use std::io::{BufWriter, Write};
use std::net::Shutdown;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use crate::export::{Done, ExportResult};
use crate::handshake::ALLOCATION_CONTEXT_ID;
use crate::in_flight::InFlight;
use crate::protocol as p;
use crate::stream::DeadlineWriter;

/// What a successful reply carries.
#[derive(Debug)]
pub enum ReplyBody {
    /// No payload (also every error reply).
    Empty,
    /// The data of a read of `data.len()` bytes at `offset_bytes`.
    Read { offset_bytes: u64, data: Vec<u8> },
    /// `base:allocation` extents: (length, status flags), consecutive.
    BlockStatus { extents: Vec<(u32, u32)> },
}

/// What the writer thread is asked to do.
pub enum WriterMessage {
    Reply {
        handle: u64,
        error: u32,
        body: ReplyBody,
        in_flight_bytes: u64,
    },
    /// Sent by the reader once nothing is in flight: flush and stop.
    Close,
}

/// How the writer sends replies.
#[derive(Debug, Clone, Copy)]
pub struct WriterSettings {
    /// Structured replies were negotiated: reads and errors go out as chunks.
    pub structured_replies: bool,
    /// Each reply (and each flush of queued replies) must leave within this.
    pub send_timeout: Duration,
}

/// Writes replies until `Close`. On a socket error (including the send
/// deadline, a cancel, or a stalled client during shutdown) it shuts the
/// socket (so the reader wakes up) but keeps draining, so in-flight
/// accounting still reaches zero and the reader can finish.
pub fn run_writer(
    stream: DeadlineWriter,
    messages: Receiver<WriterMessage>,
    in_flight: Arc<InFlight>,
    settings: WriterSettings,
) {
    let mut out = BufWriter::with_capacity(256 * 1024, stream);
    let mut failed = false;
    loop {
        // Batch replies that are already queued; flush only when idle so
        // a burst of small replies costs one syscall.
        let message = match messages.try_recv() {
            Ok(message) => message,
            Err(TryRecvError::Empty) => {
                if !failed {
                    out.get_mut().arm(settings.send_timeout);
                    if let Err(e) = out.flush() {
                        failed = fail(&out, e);
                    }
                }
                match messages.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        match message {
            WriterMessage::Reply {
                handle,
                error,
                body,
                in_flight_bytes,
            } => {
                if !failed {
                    out.get_mut().arm(settings.send_timeout);
                    let result = if settings.structured_replies {
                        write_structured(&mut out, handle, error, &body)
                    } else {
                        write_simple(&mut out, handle, error, &body)
                    };
                    if let Err(e) = result {
                        failed = fail(&out, e);
                    }
                }
                in_flight.release(in_flight_bytes);
            }
            WriterMessage::Close => break,
        }
    }
    if !failed {
        let _ = out.flush();
    }
}

/// A simple reply: header, then the data of a successful read.
fn write_simple(
    out: &mut impl Write,
    handle: u64,
    error: u32,
    body: &ReplyBody,
) -> std::io::Result<()> {
    out.write_all(&p::encode_simple_reply(error, handle))?;
    match body {
        ReplyBody::Read { data, .. } if error == 0 => out.write_all(data),
        ReplyBody::BlockStatus { .. } => {
            // The reader never runs BLOCK_STATUS without structured replies.
            unreachable!("block status needs structured replies")
        }
        _ => Ok(()),
    }
}

/// A structured reply of one chunk (flagged DONE): the data of a read,
/// block status, or an error; other successes may stay simple replies.
fn write_structured(
    out: &mut impl Write,
    handle: u64,
    error: u32,
    body: &ReplyBody,
) -> std::io::Result<()> {
    if error != 0 {
        let message = p::error_message(error).as_bytes();
        let header = p::encode_structured_reply(
            p::REPLY_FLAG_DONE,
            p::REPLY_TYPE_ERROR,
            handle,
            (4 + 2 + message.len()) as u32,
        );
        out.write_all(&header)?;
        out.write_all(&error.to_be_bytes())?;
        out.write_all(&(message.len() as u16).to_be_bytes())?;
        return out.write_all(message);
    }
    match body {
        ReplyBody::Empty => out.write_all(&p::encode_simple_reply(0, handle)),
        // A content chunk must describe at least one byte: an empty read
        // is answered by the NONE chunk alone.
        ReplyBody::Read { data, .. } if data.is_empty() => out.write_all(
            &p::encode_structured_reply(p::REPLY_FLAG_DONE, p::REPLY_TYPE_NONE, handle, 0),
        ),
        ReplyBody::Read { offset_bytes, data } => {
            // The data is all in hand, so no error can follow: DONE here.
            let header = p::encode_structured_reply(
                p::REPLY_FLAG_DONE,
                p::REPLY_TYPE_OFFSET_DATA,
                handle,
                (8 + data.len()) as u32,
            );
            out.write_all(&header)?;
            out.write_all(&offset_bytes.to_be_bytes())?;
            out.write_all(data)
        }
        ReplyBody::BlockStatus { extents } => {
            let header = p::encode_structured_reply(
                p::REPLY_FLAG_DONE,
                p::REPLY_TYPE_BLOCK_STATUS,
                handle,
                (4 + 8 * extents.len()) as u32,
            );
            out.write_all(&header)?;
            out.write_all(&ALLOCATION_CONTEXT_ID.to_be_bytes())?;
            for (len_bytes, flags) in extents {
                out.write_all(&len_bytes.to_be_bytes())?;
                out.write_all(&flags.to_be_bytes())?;
            }
            Ok(())
        }
    }
}

fn fail(out: &BufWriter<DeadlineWriter>, error: std::io::Error) -> bool {
    tracing::debug!("nbd: reply write failed, dropping connection: {error}");
    let _ = out.get_ref().get_ref().shutdown(Shutdown::Both);
    true
}

/// A reply owed to the client. Dropping it unanswered sends EIO, so an
/// export that loses a callback cannot hang the connection.
pub struct PendingReply {
    inner: Option<PendingInner>,
}

struct PendingInner {
    sender: Sender<WriterMessage>,
    handle: u64,
    /// Some for reads: where, and how many bytes must come back.
    expect_read: Option<(u64, u32)>,
    in_flight_bytes: u64,
}

impl PendingReply {
    /// `expect_read` is Some for reads: (offset, length) of the data that
    /// must come back.
    pub fn new(
        sender: Sender<WriterMessage>,
        handle: u64,
        expect_read: Option<(u64, u32)>,
        in_flight_bytes: u64,
    ) -> Self {
        PendingReply {
            inner: Some(PendingInner {
                sender,
                handle,
                expect_read,
                in_flight_bytes,
            }),
        }
    }

    /// Answers with an NBD error value (0 = success without data).
    pub fn reply_error(mut self, error: u32) {
        if let Some(inner) = self.inner.take() {
            inner.send(error, ReplyBody::Empty);
        }
    }

    /// Answers a block status request with these extents.
    pub fn reply_block_status(mut self, extents: Vec<(u32, u32)>) {
        if let Some(inner) = self.inner.take() {
            inner.send(0, ReplyBody::BlockStatus { extents });
        }
    }

    /// Answers with the export's result.
    pub fn complete(mut self, result: ExportResult) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        match (result, inner.expect_read) {
            (Ok(Some(data)), Some((offset_bytes, len_bytes)))
                if data.len() == len_bytes as usize =>
            {
                inner.send(0, ReplyBody::Read { offset_bytes, data })
            }
            (Ok(data), Some((_, len_bytes))) => {
                // A wrong-length read cannot be sent: the client would
                // lose track of the stream. Report it as an I/O error.
                tracing::error!(
                    "nbd: export returned {:?} bytes for a {len_bytes}-byte read",
                    data.map(|d| d.len())
                );
                inner.send(p::EIO, ReplyBody::Empty)
            }
            (Ok(_), None) => inner.send(0, ReplyBody::Empty),
            (Err(error), _) => {
                tracing::debug!("nbd: request {:#x} failed: {error}", inner.handle);
                inner.send(error.nbd_error(), ReplyBody::Empty)
            }
        }
    }
}

impl PendingInner {
    fn send(self, error: u32, body: ReplyBody) {
        // The writer only goes away after every in-flight reply is sent,
        // so a failed send means the connection is already torn down.
        let _ = self.sender.send(WriterMessage::Reply {
            handle: self.handle,
            error,
            body,
            in_flight_bytes: self.in_flight_bytes,
        });
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            tracing::error!(
                "nbd: export dropped the callback of request {:#x}",
                inner.handle
            );
            inner.send(p::EIO, ReplyBody::Empty);
        }
    }
}

/// Makes the export's callback for a single command.
pub fn done_for(pending: PendingReply) -> Done {
    Box::new(move |result| pending.complete(result))
}

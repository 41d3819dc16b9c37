//! The reply side of a connection: the writer thread that owns the socket's
//! write half, and the completion handles that route export results to it.
//! Replies go out in completion order, not request order.

use std::io::{BufWriter, Write};
use std::net::Shutdown;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;

use crate::export::{Done, ExportResult};
use crate::in_flight::InFlight;
use crate::protocol as p;
use crate::stream::Stream;

/// What the writer thread is asked to do.
pub enum WriterMessage {
    Reply {
        handle: u64,
        error: u32,
        data: Option<Vec<u8>>,
        in_flight_bytes: u64,
    },
    /// Sent by the reader once nothing is in flight: flush and stop.
    Close,
}

/// Writes replies until `Close`. On a socket error it shuts the socket (so
/// the reader wakes up) but keeps draining, so in-flight accounting still
/// reaches zero and the reader can finish.
pub fn run_writer(stream: Stream, messages: Receiver<WriterMessage>, in_flight: Arc<InFlight>) {
    let mut out = BufWriter::with_capacity(256 * 1024, stream);
    let mut failed = false;
    loop {
        // Batch replies that are already queued; flush only when idle so
        // a burst of small replies costs one syscall.
        let message = match messages.try_recv() {
            Ok(message) => message,
            Err(TryRecvError::Empty) => {
                if !failed {
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
                data,
                in_flight_bytes,
            } => {
                if !failed {
                    let header = p::encode_simple_reply(error, handle);
                    let result = out.write_all(&header).and_then(|()| match &data {
                        Some(bytes) if error == 0 => out.write_all(bytes),
                        _ => Ok(()),
                    });
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

fn fail(out: &BufWriter<Stream>, error: std::io::Error) -> bool {
    tracing::debug!("nbd: reply write failed, dropping connection: {error}");
    let _ = out.get_ref().shutdown(Shutdown::Both);
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
    expect_read_bytes: Option<u32>,
    in_flight_bytes: u64,
}

impl PendingReply {
    /// `expect_read_bytes` is Some for reads: the data that must come back.
    pub fn new(
        sender: Sender<WriterMessage>,
        handle: u64,
        expect_read_bytes: Option<u32>,
        in_flight_bytes: u64,
    ) -> Self {
        PendingReply {
            inner: Some(PendingInner {
                sender,
                handle,
                expect_read_bytes,
                in_flight_bytes,
            }),
        }
    }

    /// Answers with an NBD error value (0 = success without data).
    pub fn reply_error(mut self, error: u32) {
        if let Some(inner) = self.inner.take() {
            inner.send(error, None);
        }
    }

    /// Answers with the export's result.
    pub fn complete(mut self, result: ExportResult) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        match (result, inner.expect_read_bytes) {
            (Ok(Some(data)), Some(len_bytes)) if data.len() == len_bytes as usize => {
                inner.send(0, Some(data))
            }
            (Ok(data), Some(len_bytes)) => {
                // A wrong-length read cannot be sent: the client would
                // lose track of the stream. Report it as an I/O error.
                tracing::error!(
                    "nbd: export returned {:?} bytes for a {len_bytes}-byte read",
                    data.map(|d| d.len())
                );
                inner.send(p::EIO, None)
            }
            (Ok(_), None) => inner.send(0, None),
            (Err(error), _) => {
                tracing::debug!("nbd: request {:#x} failed: {error}", inner.handle);
                inner.send(error.nbd_error(), None)
            }
        }
    }
}

impl PendingInner {
    fn send(self, error: u32, data: Option<Vec<u8>>) {
        // The writer only goes away after every in-flight reply is sent,
        // so a failed send means the connection is already torn down.
        let _ = self.sender.send(WriterMessage::Reply {
            handle: self.handle,
            error,
            data,
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
            inner.send(p::EIO, None);
        }
    }
}

/// Makes the export's callback for a single command.
pub fn done_for(pending: PendingReply) -> Done {
    Box::new(move |result| pending.complete(result))
}

//! The reply side of a connection: the socket's write half, shared by the
//! reader (for replies that come back while it submits) and the writer
//! thread (for the rest), and the completion handles that route export
//! results to it. Replies go out in completion order, not request order.

use std::io::{BufWriter, IoSlice, Write};
use std::net::Shutdown;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::export::{Done, ExportResult};
use crate::handshake::ALLOCATION_CONTEXT_ID;
use crate::in_flight::InFlight;
use crate::protocol as p;
use crate::stream::DeadlineWriter;
use eraid_buffers::ReadData;

/// What a successful reply carries.
#[derive(Debug)]
pub enum ReplyBody {
    /// No payload (also every error reply).
    Empty,
    /// The data of a read of `data.len()` bytes at `offset_bytes`, as the
    /// members' buffers returned it (pieces, sent without joining).
    Read { offset_bytes: u64, data: ReadData },
    /// `base:allocation` extents: (length, status flags), consecutive.
    BlockStatus { extents: Vec<(u32, u32)> },
}

/// One reply owed to the client.
pub struct Reply {
    handle: u64,
    error: u32,
    body: ReplyBody,
    in_flight_bytes: u64,
}

impl Reply {
    fn body_bytes(&self) -> usize {
        match &self.body {
            ReplyBody::Read { data, .. } => data.len(),
            _ => 0,
        }
    }
}

/// How the writer sends replies.
#[derive(Debug, Clone, Copy)]
pub struct WriterSettings {
    /// Structured replies were negotiated: reads and errors go out as chunks.
    pub structured_replies: bool,
    /// Each reply (and each flush of queued replies) must leave within this.
    pub send_timeout: Duration,
}

/// A reply body from this size on is left to the writer thread even when
/// the reader could send it: the reader then goes on reading requests while
/// the writer copies the data into the socket. Smaller replies cost less
/// to send than the writer's wake-up does.
const READER_SENDS_BODY_BYTES_MAX: usize = 16 * 1024;

/// The replies owed on one connection and the socket's write half.
///
/// Replies usually come back while the connection's reader is still
/// handing their requests to the export (an export that runs them on the
/// submitting thread): the reader then sends them itself when the export
/// returns, with no thread wake-up. Replies that come back later, on
/// other threads, wake the writer thread. Either way one lock keeps each
/// reply whole on the socket, and replies go out in completion order.
pub struct Replies {
    queue: Mutex<Queue>,
    queued: Condvar,
    output: Mutex<Output>,
    in_flight: Arc<InFlight>,
    settings: WriterSettings,
}

#[derive(Default)]
struct Queue {
    replies: Vec<Reply>,
    /// The reader is inside the export and sends what arrives meanwhile.
    reader_collects: bool,
    /// The reader is reading requests the socket already holds and will
    /// hand them to the export (and send what is queued) without waiting on
    /// the client: small replies that arrive meanwhile wait for it rather
    /// than wake the writer. See [`Replies::end_collecting`].
    reader_defers: bool,
    writer_waiting: bool,
    closed: bool,
    /// Times the writer thread was woken with replies to send.
    #[cfg(test)]
    writer_wakeups: u64,
}

struct Output {
    out: BufWriter<DeadlineWriter>,
    /// A write failed: the socket is shut, replies are only counted off.
    failed: bool,
}

impl Replies {
    pub fn new(
        stream: DeadlineWriter,
        in_flight: Arc<InFlight>,
        settings: WriterSettings,
    ) -> Replies {
        Replies {
            queue: Mutex::default(),
            queued: Condvar::new(),
            output: Mutex::new(Output {
                out: BufWriter::with_capacity(256 * 1024, stream),
                failed: false,
            }),
            in_flight,
            settings,
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, reply: Reply) {
        let mut queue = self.queue();
        let small = reply.body_bytes() < READER_SENDS_BODY_BYTES_MAX;
        queue.replies.push(reply);
        if queue.reader_collects || (queue.reader_defers && small) {
            return;
        }
        if queue.writer_waiting {
            self.queued.notify_one();
        }
    }

    /// The reader is about to hand requests to the export.
    pub fn begin_collecting(&self) {
        self.queue().reader_collects = true;
    }

    /// The export returned: sends the replies that came back meanwhile
    /// (small ones only; see [`READER_SENDS_BODY_BYTES_MAX`]), or wakes the
    /// writer for them. Blocks at most the send timeout per reply.
    ///
    /// `reader_continues`: the reader goes on to read requests the socket
    /// already holds and comes back here without waiting on anything that
    /// needs a reply (the client's next header is in hand; a payload only
    /// needs the client to go on sending). Small replies completed on other
    /// threads meanwhile then wait for it, so a connection streaming writes
    /// through a drive thread costs no writer wake-up per batch. False
    /// whenever the reader may wait: for a header not yet sent, for room in
    /// flight (which only replies free), or because it stops.
    pub fn end_collecting(&self, reader_continues: bool) {
        let mut queue = self.queue();
        queue.reader_collects = false;
        queue.reader_defers = reader_continues;
        if queue.replies.is_empty() {
            return;
        }
        let small = queue
            .replies
            .iter()
            .all(|r| r.body_bytes() < READER_SENDS_BODY_BYTES_MAX);
        if !small {
            if queue.writer_waiting {
                self.queued.notify_one();
            }
            return;
        }
        let replies = std::mem::take(&mut queue.replies);
        drop(queue);
        self.send(replies);
    }

    /// Times the writer thread took replies to send.
    #[cfg(test)]
    fn writer_wakeups(&self) -> u64 {
        self.queue().writer_wakeups
    }

    /// Sent by the reader once nothing is in flight: the writer flushes
    /// and stops.
    pub fn close(&self) {
        self.queue().closed = true;
        self.queued.notify_one();
    }

    /// The writer thread: sends replies until [`Replies::close`].
    pub fn run_writer(&self) {
        loop {
            let mut queue = self.queue();
            while queue.replies.is_empty() {
                if queue.closed {
                    return;
                }
                queue.writer_waiting = true;
                queue = self.queued.wait(queue).unwrap_or_else(|e| e.into_inner());
                queue.writer_waiting = false;
            }
            #[cfg(test)]
            {
                queue.writer_wakeups += 1;
            }
            let replies = std::mem::take(&mut queue.replies);
            drop(queue);
            self.send(replies);
        }
    }

    /// Writes the replies and flushes once. On a socket error (including
    /// the send deadline, a cancel, or a stalled client during shutdown)
    /// it shuts the socket (so the reader wakes up) but keeps counting
    /// replies off, so in-flight accounting still reaches zero and the
    /// reader can finish.
    fn send(&self, replies: Vec<Reply>) {
        let mut output = self.output.lock().unwrap_or_else(|e| e.into_inner());
        for reply in replies {
            if !output.failed {
                output.out.get_mut().arm(self.settings.send_timeout);
                let result = if self.settings.structured_replies {
                    write_structured(&mut output.out, reply.handle, reply.error, &reply.body)
                } else {
                    write_simple(&mut output.out, reply.handle, reply.error, &reply.body)
                };
                if let Err(e) = result {
                    output.failed = fail(&output.out, e);
                }
            }
            self.in_flight.release(reply.in_flight_bytes);
        }
        if !output.failed {
            output.out.get_mut().arm(self.settings.send_timeout);
            if let Err(e) = output.out.flush() {
                output.failed = fail(&output.out, e);
            }
        }
    }
}

/// A simple reply: header, then the data of a successful read.
fn write_simple<W: Write>(
    out: &mut BufWriter<W>,
    handle: u64,
    error: u32,
    body: &ReplyBody,
) -> std::io::Result<()> {
    out.write_all(&p::encode_simple_reply(error, handle))?;
    match body {
        ReplyBody::Read { data, .. } if error == 0 => write_data(out, data),
        ReplyBody::BlockStatus { .. } => {
            // The reader never runs BLOCK_STATUS without structured replies.
            unreachable!("block status needs structured replies")
        }
        _ => Ok(()),
    }
}

/// A structured reply of one chunk (flagged DONE): the data of a read,
/// block status, or an error; other successes may stay simple replies.
fn write_structured<W: Write>(
    out: &mut BufWriter<W>,
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
            write_data(out, data)
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

/// A read's data: a large one goes straight to the socket after what is
/// buffered, its pieces in one `writev` (one more system call instead of a
/// copy of every byte into the buffer), a small one into the buffer with
/// its neighbours.
fn write_data<W: Write>(out: &mut BufWriter<W>, data: &ReadData) -> std::io::Result<()> {
    if data.len() >= DIRECT_DATA_BYTES_MIN {
        out.flush()?;
        write_all_pieces(out.get_mut(), data.pieces())
    } else {
        data.pieces()
            .iter()
            .try_for_each(|piece| out.write_all(piece))
    }
}

/// Writes every byte of `pieces`, in order, with as few `writev` calls as
/// the socket allows.
fn write_all_pieces<W: Write>(out: &mut W, pieces: &[bytes::Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = pieces.iter().map(|p| IoSlice::new(p)).collect();
    let mut left = &mut slices[..];
    while !left.is_empty() {
        match out.write_vectored(left) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "the socket accepted no bytes",
                ))
            }
            Ok(sent_bytes) => IoSlice::advance_slices(&mut left, sent_bytes),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// See [`write_data`].
const DIRECT_DATA_BYTES_MIN: usize = 16 * 1024;

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
    replies: Arc<Replies>,
    handle: u64,
    /// Some for reads: where, and how many bytes must come back.
    expect_read: Option<(u64, u32)>,
    in_flight_bytes: u64,
}

impl PendingReply {
    /// `expect_read` is Some for reads: (offset, length) of the data that
    /// must come back.
    pub fn new(
        replies: Arc<Replies>,
        handle: u64,
        expect_read: Option<(u64, u32)>,
        in_flight_bytes: u64,
    ) -> Self {
        PendingReply {
            inner: Some(PendingInner {
                replies,
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
        self.replies.push(Reply {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{Stream, Watch};
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::AtomicBool;

    /// Replies on one end of a socket pair with its writer thread running;
    /// the client's end, and the in-flight count the replies release.
    fn replies_over_a_socket() -> (Arc<Replies>, UnixStream, Arc<InFlight>) {
        let (server, client) = UnixStream::pair().expect("socket pair");
        let watch = Watch {
            stopping: Arc::new(AtomicBool::new(false)),
            cancelled: Arc::new(AtomicBool::new(false)),
            stop_grace: Duration::from_secs(1),
        };
        let in_flight = Arc::new(InFlight::new(64, 1 << 20));
        let replies = Arc::new(Replies::new(
            DeadlineWriter::new(Stream::Unix(server), watch),
            Arc::clone(&in_flight),
            WriterSettings {
                structured_replies: false,
                send_timeout: Duration::from_secs(5),
            },
        ));
        let writer = Arc::clone(&replies);
        std::thread::spawn(move || writer.run_writer());
        // A writer not yet asleep would take a queued reply on its own.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !replies.queue().writer_waiting {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer never waited"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        (replies, client, in_flight)
    }

    /// Completes a write's reply on another thread, as a drive thread does.
    fn complete_elsewhere(replies: &Arc<Replies>, in_flight: &InFlight, handle: u64) {
        in_flight.acquire(0);
        let pending = PendingReply::new(Arc::clone(replies), handle, None, 0);
        std::thread::spawn(move || pending.complete(Ok(None)))
            .join()
            .expect("completing thread");
    }

    fn received_handle(client: &mut UnixStream) -> u64 {
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut reply = [0u8; p::SIMPLE_REPLY_HEADER_BYTES];
        client.read_exact(&mut reply).expect("a reply");
        u64::from_be_bytes(reply[8..16].try_into().expect("handle"))
    }

    fn nothing_received(client: &mut UnixStream) -> bool {
        client.set_nonblocking(true).expect("nonblocking");
        let mut byte = [0u8; 1];
        let empty =
            matches!(client.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        client.set_nonblocking(false).expect("blocking");
        empty
    }

    #[test]
    fn a_reply_completed_while_the_reader_reads_on_goes_out_with_the_reader_not_the_writer() {
        let (replies, mut client, in_flight) = replies_over_a_socket();
        replies.begin_collecting();
        replies.end_collecting(true);
        complete_elsewhere(&replies, &in_flight, 7);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            nothing_received(&mut client),
            "the reply waits for the reader's next pass"
        );
        assert_eq!(replies.writer_wakeups(), 0, "the writer was not woken");
        // The reader's next pass (here: before it would wait) sends it.
        replies.end_collecting(false);
        assert_eq!(received_handle(&mut client), 7);
        assert_eq!(replies.writer_wakeups(), 0, "sent by the reader itself");
    }

    #[test]
    fn a_reply_completed_while_the_reader_may_wait_wakes_the_writer() {
        let (replies, mut client, in_flight) = replies_over_a_socket();
        replies.begin_collecting();
        replies.end_collecting(false);
        complete_elsewhere(&replies, &in_flight, 9);
        assert_eq!(received_handle(&mut client), 9);
        assert_eq!(replies.writer_wakeups(), 1);
    }
}

#[cfg(test)]
mod piece_tests {
    use super::*;

    /// Takes at most `per_call_bytes` per call, counting the calls, and
    /// reports whether it was given several buffers at once.
    struct Trickle {
        taken: Vec<u8>,
        per_call_bytes: usize,
        calls: usize,
        vectored_calls: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
            self.calls += 1;
            if bufs.iter().filter(|b| !b.is_empty()).count() > 1 {
                self.vectored_calls += 1;
            }
            let mut taken_bytes = 0;
            for buf in bufs {
                let n = buf.len().min(self.per_call_bytes - taken_bytes);
                self.taken.extend_from_slice(&buf[..n]);
                taken_bytes += n;
                if taken_bytes == self.per_call_bytes {
                    break;
                }
            }
            Ok(taken_bytes)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn pieces(lens: &[usize]) -> ReadData {
        let mut data = ReadData::new();
        for (i, &len) in lens.iter().enumerate() {
            data.push(bytes::Bytes::from(vec![i as u8 + 1; len]));
        }
        data
    }

    /// A header, then `data`, through a reply buffer onto a `Trickle`.
    fn send_after_a_header(data: &ReadData, per_call_bytes: usize) -> Trickle {
        let mut out = BufWriter::new(Trickle {
            taken: Vec::new(),
            per_call_bytes,
            calls: 0,
            vectored_calls: 0,
        });
        out.write_all(b"header").unwrap();
        write_data(&mut out, data).unwrap();
        out.flush().unwrap();
        out.into_inner().map_err(|_| "flush").unwrap()
    }

    #[test]
    fn a_large_read_goes_out_piece_by_piece_in_order_through_partial_writes() {
        let data = pieces(&[20_000, 3, 40_000]);
        let sink = send_after_a_header(&data, 7_000);
        let mut expected = b"header".to_vec();
        expected.extend(data.to_vec());
        assert_eq!(sink.taken, expected);
        assert!(sink.vectored_calls > 0, "the pieces went out together");
        // The header flushed first (one call), then 60,003 bytes at 7,000
        // per call: nine calls, none wasted on a piece boundary.
        assert_eq!(sink.calls, 1 + 60_003usize.div_ceil(7_000));
    }

    #[test]
    fn a_small_read_joins_its_neighbours_in_the_buffer() {
        let sink = send_after_a_header(&pieces(&[100, 200]), 1 << 20);
        assert_eq!(sink.taken.len(), 306);
        assert_eq!(sink.calls, 1, "header and data in one write");
    }
}

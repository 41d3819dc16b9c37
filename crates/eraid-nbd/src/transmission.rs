//! The transmission phase of one connection: read requests, validate them,
//! hand them to the export, and send the replies that come back meanwhile
//! (the writer thread sends the others).

use std::sync::Arc;

use crate::config::ServerConfig;
use crate::export::{Done, Export, ExportCommand};
use crate::handshake::Session;
use crate::in_flight::InFlight;
use crate::part_sequence::PartSequence;
use crate::protocol::{self as p, RequestHeader};
use crate::reply::{done_for, PendingReply, Replies, WriterSettings};
use crate::stream::{DeadlineWriter, MessageReader, NextMessage, Stream};
use eraid_buffers::BufferPool;

/// A request that passed validation.
#[derive(Debug, PartialEq, Eq)]
enum Op {
    Read {
        offset_bytes: u64,
        len_bytes: u32,
    },
    Write {
        offset_bytes: u64,
        len_bytes: u32,
        fua: bool,
    },
    Flush,
    Trim {
        offset_bytes: u64,
        len_bytes: u32,
        fua: bool,
    },
    WriteZeroes {
        offset_bytes: u64,
        len_bytes: u32,
        fua: bool,
    },
    BlockStatus {
        len_bytes: u32,
    },
    Disconnect,
}

/// What to do with a request header.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Run(Op),
    /// Answer with this NBD error; the connection goes on.
    Reject(u32),
    /// The header cannot be answered safely: close the connection.
    Close(&'static str),
}

/// Serves requests until the client disconnects, the stream fails, a
/// protocol violation, or the server stops; returns only after every
/// accepted request has been answered.
pub fn serve(
    reader: &mut MessageReader<Stream>,
    writer_stream: DeadlineWriter,
    export: &Arc<dyn Export>,
    config: &ServerConfig,
    session: Session,
    write_buffers: &BufferPool,
) {
    let in_flight = Arc::new(InFlight::new(
        config.max_in_flight_requests,
        config.max_in_flight_bytes,
    ));
    let settings = WriterSettings {
        structured_replies: session.structured_replies,
        send_timeout: config.send_timeout,
    };
    let replies = Arc::new(Replies::new(
        writer_stream,
        Arc::clone(&in_flight),
        settings,
    ));
    let writer = {
        let replies = Arc::clone(&replies);
        std::thread::Builder::new()
            .name("nbd-reply".into())
            .spawn(move || replies.run_writer())
    };
    let writer = match writer {
        Ok(writer) => writer,
        Err(e) => {
            tracing::warn!("nbd: cannot start reply thread: {e}");
            return;
        }
    };

    read_requests(
        reader,
        &replies,
        &in_flight,
        export,
        config,
        session,
        write_buffers,
    );

    // Disconnect: every request already taken is still answered first.
    in_flight.wait_idle();
    replies.close();
    if writer.join().is_err() {
        tracing::error!("nbd: reply thread panicked");
    }
    tracing::debug!(
        "nbd: connection done, peak in flight {}",
        in_flight.peak_requests()
    );
}

fn read_requests(
    reader: &mut MessageReader<Stream>,
    replies: &Arc<Replies>,
    in_flight: &InFlight,
    export: &Arc<dyn Export>,
    config: &ServerConfig,
    session: Session,
    write_buffers: &BufferPool,
) {
    reader.read_ahead(READ_AHEAD_BYTES);
    let mut batch = Batch::new(
        Arc::clone(export),
        Arc::clone(replies),
        write_buffers.clone(),
    );
    loop {
        // Requests already read go to the export before the reader can
        // wait on the socket: a client is never kept waiting for a request
        // it sent because later ones have not arrived. (A batch of large
        // writes also reads on while the socket holds a next request.)
        let next_is_here = reader.buffered_bytes() >= p::REQUEST_HEADER_BYTES
            || (batch.holds_large_writes() && reader.ready_bytes() >= p::REQUEST_HEADER_BYTES);
        if batch.is_full() || !next_is_here {
            // The next header already in hand: reading it cannot wait on
            // the client, so replies may wait for the reader's next pass.
            // (`next_is_here` already says so without asking the socket.)
            batch.submit(next_is_here || reader.ready_bytes() >= p::REQUEST_HEADER_BYTES);
        }
        let mut header_bytes = [0u8; p::REQUEST_HEADER_BYTES];
        match reader.next_message(&mut header_bytes) {
            Ok(NextMessage::Ready) => {}
            Ok(NextMessage::Eof | NextMessage::Stopping) => return,
            Err(e) => {
                tracing::debug!("nbd: reading request: {e}");
                return;
            }
        }
        let Some(header) = RequestHeader::decode(&header_bytes) else {
            tracing::warn!("nbd: bad request magic, closing connection");
            return;
        };
        let verdict = judge(
            &header,
            export.size_bytes(),
            export.read_only(),
            config,
            session,
        );
        let payload_bytes = if header.command == p::CMD_WRITE {
            header.len_bytes
        } else {
            0
        };
        match verdict {
            Verdict::Run(Op::Disconnect) => return,
            Verdict::Close(why) => {
                tracing::warn!("nbd: {why}, closing connection");
                return;
            }
            Verdict::Reject(error) => {
                batch.submit(false);
                // The payload of a rejected write still has to leave the
                // stream before the next header can be read.
                if let Err(e) = reader.discard(u64::from(payload_bytes)) {
                    tracing::debug!("nbd: reading rejected payload: {e}");
                    return;
                }
                in_flight.acquire(0);
                PendingReply::new(Arc::clone(replies), header.handle, None, 0).reply_error(error);
            }
            Verdict::Run(op) => {
                if !start(op, &header, reader, replies, in_flight, &mut batch, config) {
                    return;
                }
            }
        }
    }
}

/// How much one socket read may take ahead of the request being parsed.
const READ_AHEAD_BYTES: usize = 256 * 1024;
/// Requests handed to the export at once, at most.
const BATCH_REQUESTS_MAX: usize = 64;

/// A write at least this large is large: its batch may wait for the next
/// requests the socket already holds (see [`Batch::holds_large_writes`]).
const LARGE_WRITE_BYTES_MIN: usize = 64 * 1024;
/// Large writes' payload a batch gathers before it goes to the export.
const LARGE_WRITES_BATCH_BYTES_MAX: u64 = 512 * 1024;

/// Requests read but not yet handed to the export: those a client sent
/// together go on in one `submit_batch` (one wake-up of the engine rather
/// than one per request). Whatever is left when the reader stops is
/// submitted then, so every request taken is answered.
struct Batch {
    export: Arc<dyn Export>,
    replies: Arc<Replies>,
    commands: Vec<(ExportCommand, Done)>,
    /// Bytes of large writes' payload in `commands`.
    large_write_bytes: u64,
    /// Write payloads are read into these: no allocation or zeroing per
    /// request, aligned for members opened with O_DIRECT.
    write_buffers: BufferPool,
}

impl Batch {
    fn new(export: Arc<dyn Export>, replies: Arc<Replies>, write_buffers: BufferPool) -> Batch {
        Batch {
            export,
            replies,
            write_buffers,
            commands: Vec::with_capacity(BATCH_REQUESTS_MAX),
            large_write_bytes: 0,
        }
    }

    fn push(&mut self, command: ExportCommand, done: Done) {
        if let ExportCommand::Write { data, .. } = &command {
            if data.len() >= LARGE_WRITE_BYTES_MIN {
                self.large_write_bytes += data.len() as u64;
            }
        }
        self.commands.push((command, done));
    }

    /// The batch has large writes and room for more: it waits for the
    /// next request when the socket already holds it. A large write's
    /// payload is read straight from the socket, past the read-ahead, so
    /// without this each one would go to the export alone, and each
    /// hand-off to a drive thread costs wake-ups (one connection's 128 KiB
    /// sequential writes: 1884-2633 MiB/s alone, 2343-2782 four at a time,
    /// `scripts/ab-fio.sh`, six alternations).
    fn holds_large_writes(&self) -> bool {
        self.large_write_bytes > 0 && self.large_write_bytes < LARGE_WRITES_BATCH_BYTES_MAX
    }

    fn is_full(&self) -> bool {
        self.commands.len() >= BATCH_REQUESTS_MAX
    }

    /// Hands the batch to the export and sends the replies queued by then.
    /// `reader_continues`: see [`Replies::end_collecting`]; false before
    /// anything that may wait on the client or on replies.
    fn submit(&mut self, reader_continues: bool) {
        if self.commands.is_empty() {
            if !reader_continues {
                // Replies deferred to the reader go out before it waits.
                self.replies.end_collecting(false);
            }
            return;
        }
        self.large_write_bytes = 0;
        let commands =
            std::mem::replace(&mut self.commands, Vec::with_capacity(BATCH_REQUESTS_MAX));
        // Replies that come back inside the export go out from here.
        self.replies.begin_collecting();
        self.export.submit_batch(commands);
        self.replies.end_collecting(reader_continues);
    }

    /// `in_flight.acquire`, submitting the batch first if the request must
    /// wait for room: its requests hold room and only finish once started,
    /// and the room comes back only as replies go out.
    fn acquire(&mut self, in_flight: &InFlight, bytes: u64) {
        if !in_flight.try_acquire(bytes) {
            self.submit(false);
            in_flight.acquire(bytes);
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.submit(false);
    }
}

/// The command flags a command may carry, given what was advertised:
/// FUA on every command (SEND_FUA is advertised, and the spec makes the
/// server accept it everywhere), NO_HOLE on zero writes, REQ_ONE on block
/// status. DF and FAST_ZERO are never advertised, so they are refused.
fn allowed_flags(command: u16) -> u16 {
    p::CMD_FLAG_FUA
        | match command {
            p::CMD_WRITE_ZEROES => p::CMD_FLAG_NO_HOLE,
            p::CMD_BLOCK_STATUS => p::CMD_FLAG_REQ_ONE,
            _ => 0,
        }
}

/// Checks a request against the export, the negotiated session and the
/// limits. Pure, so every rule is unit-tested without a socket.
fn judge(
    header: &RequestHeader,
    size_bytes: u64,
    read_only: bool,
    config: &ServerConfig,
    session: Session,
) -> Verdict {
    let offset_bytes = header.offset_bytes;
    let len_bytes = header.len_bytes;
    let fua = header.flags & p::CMD_FLAG_FUA != 0;
    let is_write = header.command == p::CMD_WRITE;
    if is_write
        && len_bytes > config.max_request_bytes
        && len_bytes > config.oversize_write_drain_bytes_max
    {
        return Verdict::Close("write payload too large to drain");
    }
    if header.command == p::CMD_DISC {
        return Verdict::Run(Op::Disconnect);
    }
    let op = match header.command {
        p::CMD_READ => Op::Read {
            offset_bytes,
            len_bytes,
        },
        p::CMD_WRITE => Op::Write {
            offset_bytes,
            len_bytes,
            fua,
        },
        p::CMD_FLUSH => Op::Flush,
        p::CMD_TRIM => Op::Trim {
            offset_bytes,
            len_bytes,
            fua,
        },
        p::CMD_WRITE_ZEROES => Op::WriteZeroes {
            offset_bytes,
            len_bytes,
            fua,
        },
        // Only after a selected context, which needs structured replies.
        p::CMD_BLOCK_STATUS if session.allocation_context && session.structured_replies => {
            Op::BlockStatus { len_bytes }
        }
        // CACHE and BLOCK_STATUS unadvertised, or a command that does not exist.
        _ => return Verdict::Reject(p::EINVAL),
    };
    if header.flags & !allowed_flags(header.command) != 0 {
        return Verdict::Reject(p::EINVAL);
    }
    if op == Op::Flush {
        // Offset and length of a flush are reserved and must be zero.
        if offset_bytes != 0 || len_bytes != 0 {
            return Verdict::Reject(p::EINVAL);
        }
        return Verdict::Run(Op::Flush);
    }
    let writes_data = matches!(
        op,
        Op::Write { .. } | Op::Trim { .. } | Op::WriteZeroes { .. }
    );
    if writes_data && read_only {
        return Verdict::Reject(p::EPERM);
    }
    // min_block_bytes is a power of two (checked by ServerConfig::validate).
    // A trim is only a hint: an unaligned one is rounded inward later
    // instead of refused (qemu sends 511-byte discards).
    let misalignment_mask = u64::from(config.min_block_bytes) - 1;
    if !matches!(op, Op::Trim { .. })
        && (offset_bytes | u64::from(len_bytes)) & misalignment_mask != 0
    {
        return Verdict::Reject(p::EINVAL);
    }
    // Trims and zero writes carry no payload, so they may be longer than
    // the maximum (qemu sends trims of up to 2 GiB); they are split later.
    if matches!(op, Op::Read { .. } | Op::Write { .. }) && len_bytes > config.max_request_bytes {
        return Verdict::Reject(p::EINVAL);
    }
    // Block status must describe at least one byte.
    if matches!(op, Op::BlockStatus { .. }) && len_bytes == 0 {
        return Verdict::Reject(p::EINVAL);
    }
    let in_range = offset_bytes
        .checked_add(u64::from(len_bytes))
        .is_some_and(|end_bytes| end_bytes <= size_bytes);
    if !in_range {
        // The spec asks for ENOSPC when a write runs past the end.
        let error = match op {
            Op::Write { .. } | Op::WriteZeroes { .. } => p::ENOSPC,
            _ => p::EINVAL,
        };
        return Verdict::Reject(error);
    }
    if let Op::Trim {
        offset_bytes,
        len_bytes,
        fua,
    } = op
    {
        let (offset_bytes, len_bytes) =
            round_inward(offset_bytes, len_bytes, config.min_block_bytes);
        return Verdict::Run(Op::Trim {
            offset_bytes,
            len_bytes,
            fua,
        });
    }
    Verdict::Run(op)
}

/// The largest block-aligned range inside [offset, offset + len): the
/// start rounds up, the end down; empty when no whole block is inside.
fn round_inward(offset_bytes: u64, len_bytes: u32, block_bytes: u32) -> (u64, u32) {
    let block_bytes = u64::from(block_bytes);
    let end_bytes = offset_bytes + u64::from(len_bytes);
    let start_bytes = offset_bytes.div_ceil(block_bytes) * block_bytes;
    let end_bytes = end_bytes / block_bytes * block_bytes;
    if end_bytes <= start_bytes {
        return (start_bytes.min(offset_bytes + u64::from(len_bytes)), 0);
    }
    // Never longer than the request, so it fits in u32.
    (start_bytes, (end_bytes - start_bytes) as u32)
}

/// Submits a valid request. Returns false when the connection must close
/// (the payload could not be read).
fn start(
    op: Op,
    header: &RequestHeader,
    reader: &mut MessageReader<Stream>,
    replies: &Arc<Replies>,
    in_flight: &InFlight,
    batch: &mut Batch,
    config: &ServerConfig,
) -> bool {
    let handle = header.handle;
    let export = Arc::clone(&batch.export);
    match op {
        Op::Read {
            offset_bytes,
            len_bytes,
        } => {
            batch.acquire(in_flight, u64::from(len_bytes));
            let pending = PendingReply::new(
                Arc::clone(replies),
                handle,
                Some((offset_bytes, len_bytes)),
                u64::from(len_bytes),
            );
            if len_bytes == 0 {
                pending.complete(Ok(Some(eraid_buffers::ReadData::new())));
            } else {
                batch.push(
                    ExportCommand::Read {
                        offset_bytes,
                        len_bytes,
                    },
                    done_for(pending),
                );
            }
        }
        Op::Write {
            offset_bytes,
            len_bytes,
            fua,
        } => {
            // Count the bytes before allocating them, so the bound holds.
            batch.acquire(in_flight, u64::from(len_bytes));
            let pending =
                PendingReply::new(Arc::clone(replies), handle, None, u64::from(len_bytes));
            let mut data = batch.write_buffers.take(len_bytes as usize);
            if let Err(e) = reader.fill(&mut data) {
                tracing::debug!("nbd: reading write payload: {e}");
                // Nobody is listening for this reply any more; answering it
                // just keeps the in-flight count honest.
                pending.reply_error(p::EIO);
                return false;
            }
            if len_bytes == 0 {
                pending.complete(Ok(None));
            } else {
                batch.push(
                    ExportCommand::Write {
                        offset_bytes,
                        data: data.freeze(),
                        fua,
                    },
                    done_for(pending),
                );
            }
        }
        Op::Flush => {
            batch.acquire(in_flight, 0);
            let pending = PendingReply::new(Arc::clone(replies), handle, None, 0);
            batch.push(ExportCommand::Flush, done_for(pending));
        }
        Op::Trim {
            offset_bytes,
            len_bytes,
            fua,
        }
        | Op::WriteZeroes {
            offset_bytes,
            len_bytes,
            fua,
        } => {
            // Split into parts of its own: what came before goes first.
            batch.submit(false);
            in_flight.acquire(0);
            let pending = PendingReply::new(Arc::clone(replies), handle, None, 0);
            let is_trim = matches!(op, Op::Trim { .. });
            let parts = split(offset_bytes, len_bytes, config.max_request_bytes);
            if parts.is_empty() {
                pending.complete(Ok(None));
                return true;
            }
            // A zero write carries its own FUA; a trim has none, so FUA on a
            // trim becomes a flush after it.
            let flush_after = is_trim && fua;
            let commands = parts
                .into_iter()
                .map(|(offset_bytes, len_bytes)| {
                    if is_trim {
                        ExportCommand::Trim {
                            offset_bytes,
                            len_bytes,
                        }
                    } else {
                        ExportCommand::WriteZeroes {
                            offset_bytes,
                            len_bytes,
                            fua,
                        }
                    }
                })
                .collect();
            PartSequence::start(export, commands, pending, flush_after);
        }
        Op::BlockStatus { len_bytes } => {
            // The array does not track which ranges were never written or
            // were trimmed, so the whole range is reported as data (flags
            // 0: allocated or unknown), which is always correct. One extent
            // of the requested length also satisfies REQ_ONE.
            batch.acquire(in_flight, 0);
            PendingReply::new(Arc::clone(replies), handle, None, 0)
                .reply_block_status(vec![(len_bytes, 0)]);
        }
        Op::Disconnect => {}
    }
    true
}

/// Cuts a range into pieces of at most `piece_bytes_max`.
fn split(offset_bytes: u64, len_bytes: u32, piece_bytes_max: u32) -> Vec<(u64, u32)> {
    let mut pieces = Vec::new();
    let mut done_bytes: u32 = 0;
    while done_bytes < len_bytes {
        let piece_bytes = (len_bytes - done_bytes).min(piece_bytes_max);
        pieces.push((offset_bytes + u64::from(done_bytes), piece_bytes));
        done_bytes += piece_bytes;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE_BYTES: u64 = 1 << 20;

    fn header(command: u16, offset_bytes: u64, len_bytes: u32) -> RequestHeader {
        RequestHeader {
            flags: 0,
            command,
            handle: 7,
            offset_bytes,
            len_bytes,
        }
    }

    fn judge_default(header: &RequestHeader) -> Verdict {
        judge(
            header,
            SIZE_BYTES,
            false,
            &ServerConfig::default(),
            Session::default(),
        )
    }

    #[test]
    fn trims_round_inward_to_the_block_size() {
        assert_eq!(round_inward(0, 511, 512), (0, 0));
        assert_eq!(round_inward(1, 1535, 512), (512, 1024));
        assert_eq!(round_inward(512, 1024, 512), (512, 1024));
        assert_eq!(round_inward(100, 300, 512).1, 0);
        assert_eq!(
            judge_default(&header(p::CMD_TRIM, 0, 511)),
            Verdict::Run(Op::Trim {
                offset_bytes: 0,
                len_bytes: 0,
                fua: false
            })
        );
    }

    #[test]
    fn refuses_flags_a_command_may_not_carry() {
        let mut read_no_hole = header(p::CMD_READ, 0, 512);
        read_no_hole.flags = p::CMD_FLAG_NO_HOLE;
        assert_eq!(judge_default(&read_no_hole), Verdict::Reject(p::EINVAL));
        let mut zeroes_no_hole = header(p::CMD_WRITE_ZEROES, 0, 512);
        zeroes_no_hole.flags = p::CMD_FLAG_NO_HOLE | p::CMD_FLAG_FUA;
        assert!(matches!(judge_default(&zeroes_no_hole), Verdict::Run(_)));
        let mut flush_fua = header(p::CMD_FLUSH, 0, 0);
        flush_fua.flags = p::CMD_FLAG_FUA;
        assert_eq!(judge_default(&flush_fua), Verdict::Run(Op::Flush));
        let mut unknown = header(p::CMD_WRITE, 0, 512);
        unknown.flags = 1 << 9;
        assert_eq!(judge_default(&unknown), Verdict::Reject(p::EINVAL));
    }

    #[test]
    fn accepts_aligned_in_range_requests() {
        assert_eq!(
            judge_default(&header(p::CMD_READ, 512, 4096)),
            Verdict::Run(Op::Read {
                offset_bytes: 512,
                len_bytes: 4096
            })
        );
        let mut fua_write = header(p::CMD_WRITE, SIZE_BYTES - 512, 512);
        fua_write.flags = p::CMD_FLAG_FUA;
        assert_eq!(
            judge_default(&fua_write),
            Verdict::Run(Op::Write {
                offset_bytes: SIZE_BYTES - 512,
                len_bytes: 512,
                fua: true
            })
        );
        assert_eq!(
            judge_default(&header(p::CMD_FLUSH, 0, 0)),
            Verdict::Run(Op::Flush)
        );
        assert_eq!(
            judge_default(&header(p::CMD_DISC, 0, 0)),
            Verdict::Run(Op::Disconnect)
        );
    }

    #[test]
    fn rejects_out_of_range_with_einval_for_reads_and_enospc_for_writes() {
        assert_eq!(
            judge_default(&header(p::CMD_READ, SIZE_BYTES, 512)),
            Verdict::Reject(p::EINVAL)
        );
        assert_eq!(
            judge_default(&header(p::CMD_TRIM, SIZE_BYTES, 512)),
            Verdict::Reject(p::EINVAL)
        );
        assert_eq!(
            judge_default(&header(p::CMD_WRITE, SIZE_BYTES, 512)),
            Verdict::Reject(p::ENOSPC)
        );
        assert_eq!(
            judge_default(&header(p::CMD_WRITE_ZEROES, SIZE_BYTES - 512, 1024)),
            Verdict::Reject(p::ENOSPC)
        );
        // Offsets near u64::MAX must not wrap around into range.
        assert_eq!(
            judge_default(&header(p::CMD_READ, u64::MAX - 511, 512)),
            Verdict::Reject(p::EINVAL)
        );
    }

    #[test]
    fn rejects_unaligned_oversize_unknown_and_read_only_writes() {
        assert_eq!(
            judge_default(&header(p::CMD_READ, 100, 512)),
            Verdict::Reject(p::EINVAL)
        );
        assert_eq!(
            judge_default(&header(p::CMD_READ, 0, 100)),
            Verdict::Reject(p::EINVAL)
        );
        let big = ServerConfig::default().max_request_bytes + 512;
        assert_eq!(
            judge(
                &header(p::CMD_READ, 0, big),
                u64::MAX,
                false,
                &ServerConfig::default(),
                Session::default()
            ),
            Verdict::Reject(p::EINVAL)
        );
        assert_eq!(
            judge_default(&header(p::CMD_WRITE, 0, big)),
            Verdict::Reject(p::EINVAL)
        );
        assert_eq!(judge_default(&header(99, 0, 0)), Verdict::Reject(p::EINVAL));
        assert_eq!(
            judge(
                &header(p::CMD_WRITE, 0, 512),
                SIZE_BYTES,
                true,
                &ServerConfig::default(),
                Session::default()
            ),
            Verdict::Reject(p::EPERM)
        );
    }

    #[test]
    fn closes_on_undrainable_write_but_allows_long_trims() {
        assert!(matches!(
            judge_default(&header(p::CMD_WRITE, 0, u32::MAX)),
            Verdict::Close(_)
        ));
        let long = u32::MAX - 511;
        assert_eq!(
            judge(
                &header(p::CMD_TRIM, 0, long),
                u64::MAX,
                false,
                &ServerConfig::default(),
                Session::default()
            ),
            Verdict::Run(Op::Trim {
                offset_bytes: 0,
                len_bytes: long,
                fua: false
            })
        );
    }

    #[test]
    fn split_covers_the_range_in_bounded_pieces() {
        let pieces = split(4096, 10_000, 4096);
        assert_eq!(pieces, vec![(4096, 4096), (8192, 4096), (12288, 1808)]);
        assert!(split(0, 0, 4096).is_empty());
        let total: u64 = split(0, u32::MAX, 1 << 25)
            .iter()
            .map(|p| u64::from(p.1))
            .sum();
        assert_eq!(total, u64::from(u32::MAX));
    }
}

//! Gathering the partial stripes of sequential writes into full ones.
//!
//! A sequential stream whose requests do not line up with stripes leaves a
//! partial stripe at the end of each request and the rest of that stripe at
//! the start of the next; written apart, each half reads old data or parity
//! first (read-modify-write or reconstruct-write). Here the tail of a
//! sequential write holds its stripe's lock for a short window instead of
//! starting; the next request's share of the stripe joins the same op, and
//! the stripe goes out as one full-stripe write that reads nothing. A tail
//! nothing joins starts when the window ends.
//!
//! Only plain arrays gather (no journal, cache, growth, rebuild or missing
//! member), only writes that continue a recent write, never FUA. A client
//! that sends its next request only after this reply would wait the
//! window every time: after a wait nothing joined, that stream's next
//! `COOLDOWN_WRITES` writes do not wait (other streams go on gathering),
//! unless a write of that stream joined a tail since its last wait in
//! vain: such a client was only late, and its next tails still wait.
//! Off (window 0) unless the driver sets it: the simulator reproduces the
//! papers' systems, which do not.

use super::op::{OpKind, OpState, Parent};
use super::{Array, Ready};
use crate::io::TimeNs;
use std::collections::VecDeque;

/// Recent write streams remembered to recognise sequential ones (one per
/// client stream, roughly).
const RECENT_STREAMS: usize = 8;

/// A run of writes each starting where the one before ended.
struct Stream {
    id: u64,
    /// Where its last write ended: the next one starts here.
    end: u64,
    /// A later write joined one of its waiting tails since its last wait
    /// in vain: the client does not wait for each reply (one that does
    /// can never join), so a wait in vain means only a late request, and
    /// cools nothing down.
    joined: bool,
    /// Writes of this stream left before its tails wait again, after one
    /// waited in vain (a client that sends the next request only after
    /// this reply).
    cooldown_writes: u32,
}

/// An op holding its stripe lock while it gathers.
struct Gathering {
    lock_key: u64,
    op_id: u64,
    stream_id: u64,
    start_by: TimeNs,
}

#[derive(Default)]
pub(super) struct WriteGather {
    /// Ops holding their stripe lock while they gather.
    gathering: Vec<Gathering>,
    /// Recent streams, oldest first.
    streams: VecDeque<Stream>,
    next_stream_id: u64,
    /// Partial stripes that waited; of those, how many a later request
    /// completed (written whole).
    stripes_waited: u64,
    stripes_completed: u64,
}

/// A stream whose tail a later write joined since its last wait in vain
/// (a client that does not wait for each reply) waits this many windows:
/// with four such clients on two cores, a client's next 1 MiB request
/// often came more than one 2 ms window after the last.
const PIPELINED_WINDOW_FACTOR: u64 = 4;

/// After a wait that nothing joined, this many writes of its stream go out
/// without waiting: a client waiting for each reply loses the window on at
/// most one write in this many. Per stream: four clients streaming at
/// once, one of them late now and then, left 38% of their partial
/// stripes ungathered while a late wait cooled every stream down.
const COOLDOWN_WRITES: u32 = 64;

impl Array {
    fn gather_window_ns(&self) -> u64 {
        self.options.write_gather_window_us.saturating_mul(1_000)
    }

    /// The stream a user write of this range continues, if its last
    /// stripe may gather (and records where the write ends).
    pub(super) fn gather_eligible_write(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        fua: bool,
    ) -> Option<u64> {
        if self.gather_window_ns() == 0 {
            return None;
        }
        let streams = &mut self.gather.streams;
        let end = offset_bytes + len_bytes;
        let continued = streams.iter().position(|s| s.end == offset_bytes);
        let stream = match continued.and_then(|at| streams.remove(at)) {
            Some(mut stream) => {
                stream.end = end;
                stream
            }
            None => {
                if streams.len() == RECENT_STREAMS {
                    streams.pop_front();
                }
                self.gather.next_stream_id += 1;
                Stream {
                    id: self.gather.next_stream_id,
                    end,
                    joined: false,
                    cooldown_writes: 0,
                }
            }
        };
        let id = stream.id;
        let cooling = stream.cooldown_writes > 0;
        streams.push_back(stream);
        // A write that continues no stream starts one; it does not gather.
        continued?;
        if cooling {
            let stream = streams.back_mut().expect("just pushed");
            stream.cooldown_writes -= 1;
            return None;
        }
        let eligible = !fua
            && self.options.journal.is_none()
            && self.cache.is_none()
            && self.reshape.is_none()
            && self.rebuild.is_none()
            && self.geometry.parity_per_stripe() > 0
            && !self.geometry.level.whole_chunk_stripes()
            && self.present.iter().all(|&p| p);
        eligible.then_some(id)
    }

    fn stream_cooling(&self, stream_id: u64) -> bool {
        self.gather
            .streams
            .iter()
            .any(|s| s.id == stream_id && s.cooldown_writes > 0)
    }

    /// A new user write op for a stripe whose op is gathering joins it
    /// (when their bytes do not overlap); returns the segments back if not.
    pub(super) fn join_gathering(
        &mut self,
        parent: Parent,
        lock_key: u64,
        kind: OpKind,
        segments: super::op::Segments,
    ) -> Option<super::op::Segments> {
        let (Parent::User(id), OpKind::Write) = (parent, kind) else {
            return Some(segments);
        };
        let Some((op_id, stream_id)) = self
            .gather
            .gathering
            .iter()
            .find(|g| g.lock_key == lock_key)
            .map(|g| (g.op_id, g.stream_id))
        else {
            return Some(segments);
        };
        let op = self.ops.get_mut(&op_id).expect("gathering op");
        let overlaps = segments.iter().any(|new| {
            op.segments.iter().any(|old| {
                old.data_index == new.data_index
                    && old.intra.start < new.intra.end
                    && new.intra.start < old.intra.end
            })
        });
        // An op has one segment per data shard (plans read and write one
        // range per shard): a new piece of a shard already written joins
        // only when it continues that piece, and is appended to it.
        let continues_or_new = segments.iter().all(|new| {
            op.segments
                .iter()
                .find(|old| old.data_index == new.data_index)
                .is_none_or(|old| old.intra.end == new.intra.start)
        });
        if overlaps || !continues_or_new || segments.iter().any(|s| s.data.is_none()) {
            return Some(segments);
        }
        for new in segments {
            match op
                .segments
                .iter_mut()
                .find(|old| old.data_index == new.data_index)
            {
                Some(old) => {
                    let (Some(head), Some(tail)) = (&old.data, &new.data) else {
                        unreachable!("checked: both carry bytes")
                    };
                    let mut joined = Vec::with_capacity(head.len() + tail.len());
                    joined.extend_from_slice(head);
                    joined.extend_from_slice(tail);
                    old.data = Some(joined.into());
                    old.intra.end = new.intra.end;
                }
                None => op.segments.push(new),
            }
        }
        op.merged_parents.push(id);
        if let Some(stream) = self.gather.streams.iter_mut().find(|s| s.id == stream_id) {
            stream.joined = true;
        }
        op.row = super::op::row_of(&op.segments);
        // Whole: the stripe goes out without reads. Reaching the stripe's
        // end without its head: nothing more can join, so it goes too.
        if self.stripe_fully_covered(op_id) {
            self.gather.stripes_completed += 1;
            self.release_gathering(op_id);
        } else if self.reaches_stripe_end(op_id) {
            self.release_gathering(op_id);
        }
        None
    }

    /// Every data shard of the op is written over the whole chunk (an op
    /// has one segment per shard: `join_gathering` keeps it so).
    fn stripe_fully_covered(&self, op_id: u64) -> bool {
        let op = &self.ops[&op_id];
        let chunk = 0..self.geometry.chunk_bytes;
        (0..op.map.data.len()).all(|d| {
            op.segments
                .iter()
                .any(|s| s.data_index == d && s.intra == chunk)
        })
    }

    /// The op writes its stripe's last data chunk to the end: the stream's
    /// next write starts in the next stripe, so nothing can join this one
    /// (it lacks a head, from a write that did not wait).
    fn reaches_stripe_end(&self, op_id: u64) -> bool {
        let op = &self.ops[&op_id];
        let last = op.map.data.len() - 1;
        op.segments
            .iter()
            .any(|s| s.data_index == last && s.intra.end == self.geometry.chunk_bytes)
    }

    /// Called when an op gets its lock: a gather-eligible partial write
    /// holds it for the window instead of starting. True if it does.
    pub(super) fn gather_at_lock(&mut self, op_id: u64) -> bool {
        let op = self.ops.get_mut(&op_id).expect("op");
        let Some(stream_id) = op.gather_stream.take() else {
            return false;
        };
        // A write of a stream whose wait ended in vain while this one was
        // queued does not wait either (see `Stream::cooldown_writes`).
        if self.stream_cooling(stream_id) {
            return false;
        }
        if self.stripe_fully_covered(op_id) || self.reaches_stripe_end(op_id) {
            return false;
        }
        let joined_before = self
            .gather
            .streams
            .iter()
            .any(|s| s.id == stream_id && s.joined);
        let window_ns = if joined_before {
            self.gather_window_ns()
                .saturating_mul(PIPELINED_WINDOW_FACTOR)
        } else {
            self.gather_window_ns()
        };
        let until = self.now.plus_ns(window_ns);
        let op = self.ops.get_mut(&op_id).expect("op");
        op.state = OpState::Gathering;
        let lock_key = op.lock_key;
        self.gather.gathering.push(Gathering {
            lock_key,
            op_id,
            stream_id,
            start_by: until,
        });
        self.gather.stripes_waited += 1;
        true
    }

    fn release_gathering(&mut self, op_id: u64) {
        self.gather.gathering.retain(|g| g.op_id != op_id);
        self.ops.get_mut(&op_id).expect("gathering op").state = OpState::WaitingLock;
        // It holds its lock: go on from there.
        self.ready.push(Ready::OpLocked(op_id));
    }

    /// Starts the gathering ops whose window has ended (all of them when
    /// `all`: the array is closing).
    pub(super) fn release_gathering_due(&mut self, all: bool) {
        let now = self.now;
        let due: Vec<(u64, u64)> = self
            .gather
            .gathering
            .iter()
            .filter(|g| all || g.start_by <= now)
            .map(|g| (g.op_id, g.stream_id))
            .collect();
        for (op_id, stream_id) in due {
            if !all {
                if let Some(stream) = self.gather.streams.iter_mut().find(|s| s.id == stream_id) {
                    if !std::mem::take(&mut stream.joined) {
                        stream.cooldown_writes = COOLDOWN_WRITES;
                    }
                }
            }
            self.release_gathering(op_id);
        }
    }

    pub(super) fn write_gather_json(&self) -> serde_json::Value {
        serde_json::json!({
            "window_us": self.options.write_gather_window_us,
            "stripes_waited": self.gather.stripes_waited,
            "stripes_completed": self.gather.stripes_completed,
        })
    }

    /// When the next gathering op must start.
    pub(super) fn gather_deadline(&self) -> Option<TimeNs> {
        self.gather.gathering.iter().map(|g| g.start_by).min()
    }
}

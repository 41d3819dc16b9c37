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
//! window every time: after a wait nothing joined, the next
//! `COOLDOWN_WRITES` sequential writes do not wait. Off (window 0) unless the driver sets it: the
//! simulator reproduces the papers' systems, which do not.

use super::op::{OpKind, OpState, Parent, Segment};
use super::{Array, Ready};
use crate::io::TimeNs;
use std::collections::VecDeque;

/// Recent write ends remembered to recognise sequential streams (one per
/// client stream, roughly).
const RECENT_ENDS: usize = 8;

#[derive(Default)]
pub(super) struct WriteGather {
    /// Ops holding their stripe lock while they gather: (lock key, op id,
    /// start by).
    gathering: Vec<(u64, u64, TimeNs)>,
    /// Where recent user writes ended.
    recent_ends: VecDeque<u64>,
    /// Partial stripes that waited; of those, how many a later request
    /// completed (written whole).
    stripes_waited: u64,
    stripes_completed: u64,
    /// Sequential writes left before tails wait again, after one waited in
    /// vain (a client that sends the next request only after this reply).
    cooldown_writes: u32,
}

/// After a wait that nothing joined, this many sequential writes go out
/// without waiting: a client waiting for each reply loses the window on at
/// most one write in this many.
const COOLDOWN_WRITES: u32 = 64;

impl Array {
    fn gather_window_ns(&self) -> u64 {
        self.options.write_gather_window_us.saturating_mul(1_000)
    }

    /// Whether a user write of this range may leave its last stripe
    /// gathering (and records where it ends).
    pub(super) fn gather_eligible_write(
        &mut self,
        offset_bytes: u64,
        len_bytes: u64,
        fua: bool,
    ) -> bool {
        if self.gather_window_ns() == 0 {
            return false;
        }
        let recent = &mut self.gather.recent_ends;
        let continues = recent.contains(&offset_bytes);
        recent.retain(|&end| end != offset_bytes);
        if recent.len() == RECENT_ENDS {
            recent.pop_front();
        }
        recent.push_back(offset_bytes + len_bytes);
        if !continues {
            return false;
        }
        if self.gather.cooldown_writes > 0 {
            self.gather.cooldown_writes -= 1;
            return false;
        }
        !fua && self.options.journal.is_none()
            && self.cache.is_none()
            && self.reshape.is_none()
            && self.rebuild.is_none()
            && self.geometry.parity_per_stripe() > 0
            && !self.geometry.level.whole_chunk_stripes()
            && self.present.iter().all(|&p| p)
    }

    /// A new user write op for a stripe whose op is gathering joins it
    /// (when their bytes do not overlap); returns the segments back if not.
    pub(super) fn join_gathering(
        &mut self,
        parent: Parent,
        lock_key: u64,
        kind: OpKind,
        segments: Vec<Segment>,
    ) -> Option<Vec<Segment>> {
        let (Parent::User(id), OpKind::Write) = (parent, kind) else {
            return Some(segments);
        };
        let Some(&(_, op_id, _)) = self.gather.gathering.iter().find(|g| g.0 == lock_key) else {
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
        op.row = super::op::row_of(&op.segments);
        if self.stripe_fully_covered(op_id) {
            self.gather.stripes_completed += 1;
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

    /// Called when an op gets its lock: a gather-eligible partial write
    /// holds it for the window instead of starting. True if it does.
    pub(super) fn gather_at_lock(&mut self, op_id: u64) -> bool {
        let op = self.ops.get_mut(&op_id).expect("op");
        if !std::mem::take(&mut op.gather_eligible) {
            return false;
        }
        // A write queued behind a wait that ended in vain does not wait
        // again (nor do those after it: see `cooldown_writes`).
        if self.gather.cooldown_writes > 0 {
            return false;
        }
        if self.stripe_fully_covered(op_id) {
            return false;
        }
        let until = self.now.plus_ns(self.gather_window_ns());
        let op = self.ops.get_mut(&op_id).expect("op");
        op.state = OpState::Gathering;
        let lock_key = op.lock_key;
        self.gather.gathering.push((lock_key, op_id, until));
        self.gather.stripes_waited += 1;
        true
    }

    fn release_gathering(&mut self, op_id: u64) {
        self.gather.gathering.retain(|g| g.1 != op_id);
        self.ops.get_mut(&op_id).expect("gathering op").state = OpState::WaitingLock;
        // It holds its lock: go on from there.
        self.ready.push(Ready::OpLocked(op_id));
    }

    /// Starts the gathering ops whose window has ended (all of them when
    /// `all`: the array is closing).
    pub(super) fn release_gathering_due(&mut self, all: bool) {
        let now = self.now;
        let due: Vec<u64> = self
            .gather
            .gathering
            .iter()
            .filter(|g| all || g.2 <= now)
            .map(|g| g.1)
            .collect();
        for op_id in due {
            if !all {
                self.gather.cooldown_writes = COOLDOWN_WRITES;
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
        self.gather.gathering.iter().map(|g| g.2).min()
    }
}

//! Turning user requests into stripe operations.

use super::locks::LockMode;
use super::op::{OpKind, OpState, OpTarget, Parent, Segment, StripeOp};
use super::{Array, FlushPurpose, Pending, Ready};
use crate::geometry::SECTOR_BYTES;
use crate::io::{UserError, UserOp, UserReply, UserRequest};

/// A request's segments grouped by stripe, in order: inline for the one
/// or two stripes most requests touch (made per request, under the
/// engine lock).
pub(super) type StripeGroups = smallvec::SmallVec<[(OpTarget, super::op::Segments); 2]>;

impl Array {
    pub(super) fn submit(&mut self, request: UserRequest) {
        let id = request.id;
        let Some((offset_bytes, len_bytes)) = request.op.byte_range() else {
            if self.journal_flush(id) {
                return;
            }
            if let Some(cache) = &mut self.cache {
                // Everything cached goes to the members first.
                cache.flush_waiters.push(id);
                self.ready.push(Ready::Destage);
            } else {
                self.flush_members(FlushPurpose::Reply(id));
            }
            return;
        };
        if let Err(error) = self.validate(offset_bytes, len_bytes) {
            self.outbox_reply.push_back(UserReply {
                id,
                result: Err(error),
            });
            return;
        }
        if let Err(error) = self.journal_check_length(&request.op, len_bytes) {
            self.outbox_reply.push_back(UserReply {
                id,
                result: Err(error),
            });
            return;
        }
        if len_bytes == 0 {
            self.outbox_reply.push_back(UserReply {
                id,
                result: Ok(matches!(request.op, UserOp::Read { .. }).then(crate::io::ReadData::new)),
            });
            return;
        }
        if !self.survivable() {
            self.outbox_reply.push_back(UserReply {
                id,
                result: Err(self.unavailable()),
            });
            return;
        }
        self.rebuild_note_user_access(offset_bytes, len_bytes);
        // A growth may hold the request back (its window is being moved, or
        // a checkpoint must come first); it is submitted again later.
        let Some(request) = self.reshape_admit(request) else {
            return;
        };
        self.note_user_admitted(id);
        let Some(request) = self.journal_user_request(request) else {
            return;
        };
        if self.cache.is_some() {
            self.submit_cached(request, offset_bytes, len_bytes);
        } else {
            self.submit_direct(request, offset_bytes, len_bytes);
        }
    }

    /// Turns a request into stripe ops on the members.
    pub(super) fn submit_direct(
        &mut self,
        request: UserRequest,
        offset_bytes: u64,
        len_bytes: u64,
    ) {
        let id = request.id;
        let chunks = offset_bytes / self.geometry.chunk_bytes
            ..(offset_bytes + len_bytes).div_ceil(self.geometry.chunk_bytes);
        match request.op {
            UserOp::Read { .. } => {
                let segments = self.split(offset_bytes, len_bytes, None);
                self.start_request(
                    id,
                    chunks,
                    segments,
                    OpKind::Read,
                    Some(len_bytes as usize),
                    false,
                );
            }
            UserOp::Write { data, fua, .. } => {
                let gather_stream = self.gather_eligible_write(offset_bytes, len_bytes, fua);
                let segments = self.split(offset_bytes, len_bytes, Some(&data));
                let last_op = self.start_request(id, chunks, segments, OpKind::Write, None, fua);
                if let (Some(op), Some(stream)) = (last_op, gather_stream) {
                    self.ops.get_mut(&op).expect("just created").gather_stream = Some(stream);
                }
            }
            // Trim is a hint; eraid keeps parity exact by writing zeroes, so
            // reads of trimmed ranges return zeroes. No buffer is made for
            // the zeroes: whole stripes go out as zero-range device ops.
            UserOp::Trim { .. } | UserOp::WriteZeroes { .. } => {
                let fua = matches!(request.op, UserOp::WriteZeroes { fua: true, .. });
                let mut segments = self.split(offset_bytes, len_bytes, None);
                for (_, group) in &mut segments {
                    for segment in group {
                        segment.zeroes = true;
                    }
                }
                self.start_request(id, chunks, segments, OpKind::Write, None, fua);
            }
            UserOp::Flush => unreachable!("handled above"),
        }
    }

    fn validate(&self, offset_bytes: u64, len_bytes: u64) -> Result<(), UserError> {
        if !offset_bytes.is_multiple_of(SECTOR_BYTES) || !len_bytes.is_multiple_of(SECTOR_BYTES) {
            return Err(UserError::Unaligned {
                offset_bytes,
                len_bytes,
            });
        }
        let capacity_bytes = self.capacity_bytes();
        if offset_bytes
            .checked_add(len_bytes)
            .is_none_or(|end| end > capacity_bytes)
        {
            return Err(UserError::OutOfRange {
                offset_bytes,
                len_bytes,
                capacity_bytes,
            });
        }
        Ok(())
    }

    /// Splits a byte range into per-stripe groups of chunk segments, each
    /// stripe in the layout its chunks live in now.
    pub(super) fn split(
        &self,
        offset_bytes: u64,
        len_bytes: u64,
        data: Option<&crate::io::Bytes>,
    ) -> StripeGroups {
        let chunk = self.geometry.chunk_bytes;
        let mut groups = StripeGroups::new();
        let mut at = offset_bytes;
        let end = offset_bytes + len_bytes;
        while at < end {
            let logical_chunk = at / chunk;
            let intra = at % chunk;
            let piece = (chunk - intra).min(end - at);
            let (stripe, data_index) = self.route_chunk(logical_chunk);
            let user_offset = (at - offset_bytes) as usize;
            let segment = Segment {
                data_index,
                intra: intra..intra + piece,
                user_offset,
                data: data.map(|d| d.slice(user_offset..user_offset + piece as usize)),
                zeroes: false,
            };
            match groups.last_mut() {
                Some((s, segments)) if *s == stripe => segments.push(segment),
                _ => groups.push((stripe, smallvec::smallvec![segment])),
            }
            at += piece;
        }
        groups
    }

    pub(super) fn start_request(
        &mut self,
        id: crate::io::RequestId,
        chunks: std::ops::Range<u64>,
        groups: StripeGroups,
        kind: OpKind,
        read_len_bytes: Option<usize>,
        fua: bool,
    ) -> Option<u64> {
        assert!(!groups.is_empty());
        assert!(
            !self.requests.contains_key(&id),
            "request id {id:?} reused while in flight"
        );
        self.requests.insert(
            id,
            Pending {
                remaining_ops: groups.len(),
                read: read_len_bytes.map(super::read_assembly::ReadAssembly::new),
                error: None,
                fua,
                chunks,
                overlay: Vec::new(),
            },
        );
        let mut last_op = None;
        for (stripe, segments) in groups {
            let lock = if kind == OpKind::Read {
                LockMode::Shared
            } else {
                LockMode::Exclusive
            };
            last_op = self.create_op(Parent::User(id), stripe, kind, lock, segments);
        }
        last_op
    }

    /// Creates a stripe op and starts it if its lock is free; returns its
    /// id, or None if the segments joined an op gathering that stripe.
    pub(super) fn create_op(
        &mut self,
        parent: Parent,
        target: OpTarget,
        kind: OpKind,
        lock: LockMode,
        segments: super::op::Segments,
    ) -> Option<u64> {
        let segments = self.join_gathering(parent, target.lock_key(), kind, segments)?;
        let op_id = self.next_op_id;
        self.next_op_id += 1;
        let stripe = target.stripe;
        let lock_key = target.lock_key();
        let map = self.stripe_map_of(target);
        let shard_count = map.data.len() + map.parity.len();
        // CRS parity depends on every byte of a chunk: its ops span chunks.
        let whole_chunks = self.geometry.level.whole_chunk_stripes();
        let row = if segments.is_empty() || whole_chunks {
            0..self.geometry.chunk_bytes
        } else {
            super::op::row_of(&segments)
        };
        // A finished op's box and read slots are reused: one op is made per
        // stripe a request touches, under the driver's engine lock.
        let (spare, mut reads) = match self.spare_ops.pop() {
            Some(mut spare) => {
                let reads = std::mem::take(&mut spare.reads);
                (Some(spare), reads)
            }
            None => (None, Vec::new()),
        };
        reads.clear();
        reads.resize_with(shard_count, || None);
        let op = StripeOp {
            parent,
            stripe,
            lock_key,
            region: self.intent.region_of(stripe),
            map,
            kind,
            lock,
            state: OpState::WaitingLock,
            segments,
            row,
            method: None,
            reads,
            pending_ios: 0,
            read_failed: false,
            bad_shards: Vec::new(),
            repair: None,
            member_failed: false,
            intent_taken: false,
            copy_to: None,
            completes_rebuild: None,
            destage: None,
            merged_parents: Vec::new(),
            gather_stream: None,
        };
        let op = match spare {
            Some(mut spare) => {
                *spare = op;
                spare
            }
            None => Box::new(op),
        };
        self.ops.insert(op_id, op);
        if self.locks.acquire(lock_key, op_id, lock) {
            self.ready.push(Ready::OpLocked(op_id));
        }
        Some(op_id)
    }
}

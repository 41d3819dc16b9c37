//! User requests served through the write-back cache: reads take cached
//! blocks (hits) and read the rest from the members; whole-block writes go
//! into the cache and are acknowledged at once (with a journal, once their
//! record is durable; without one the cache is the paper's NVS, which only
//! the simulator models); the rest is written through under
//! the stripe lock, so it is ordered with destages of the same stripe.

use super::op::{OpKind, OpTarget};
use super::{Array, Ready};
use crate::cache::store::BlockKey;
use crate::cache::BLOCK_BYTES;
use crate::io::{ReadData, UserOp, UserReply, UserRequest};
use std::ops::Range;

/// The part of one cache block a request covers.
struct BlockPiece {
    key: BlockKey,
    /// Byte range inside the block.
    within: Range<usize>,
    /// Byte offset in the user's buffer.
    user_offset: usize,
}

impl BlockPiece {
    fn whole(&self) -> bool {
        self.within.len() == BLOCK_BYTES as usize
    }
}

impl Array {
    fn block_pieces(&self, offset_bytes: u64, len_bytes: u64) -> Vec<BlockPiece> {
        let chunk = self.geometry.chunk_bytes;
        let mut pieces = Vec::new();
        let (mut at, end) = (offset_bytes, offset_bytes + len_bytes);
        while at < end {
            let block_end = (at / BLOCK_BYTES + 1) * BLOCK_BYTES;
            let piece_end = block_end.min(end);
            let (target, data_index) = self.route_chunk(at / chunk);
            assert_eq!(
                target,
                OpTarget::current(target.stripe),
                "no growth runs with a cache"
            );
            let intra = at % chunk;
            let within_start = (at % BLOCK_BYTES) as usize;
            pieces.push(BlockPiece {
                key: BlockKey {
                    stripe: target.stripe,
                    row: (intra / BLOCK_BYTES) as u32,
                    col: data_index as u32,
                },
                within: within_start..within_start + (piece_end - at) as usize,
                user_offset: (at - offset_bytes) as usize,
            });
            at = piece_end;
        }
        pieces
    }

    /// Serves a validated, admitted request with the cache on.
    pub(super) fn submit_cached(
        &mut self,
        request: UserRequest,
        offset_bytes: u64,
        len_bytes: u64,
    ) {
        match &request.op {
            UserOp::Read { .. } => self.cached_read(request, offset_bytes, len_bytes),
            UserOp::Write { .. } => {
                let cache = self.cache.as_mut().expect("cache");
                if !cache.blocked.is_empty() {
                    // Writes keep their order while some wait for room.
                    cache.blocked.push_back(request);
                    self.ready.push(Ready::Destage);
                } else if let Some(request) = self.try_cached_write(request) {
                    self.cache
                        .as_mut()
                        .expect("cache")
                        .blocked
                        .push_back(request);
                    self.ready.push(Ready::Destage);
                }
            }
            UserOp::Trim { .. } | UserOp::WriteZeroes { .. } => {
                // The zeroes are written through; cached copies follow them.
                for piece in self.block_pieces(offset_bytes, len_bytes) {
                    let store = &mut self.cache.as_mut().expect("cache").store;
                    if piece.whole() {
                        store.remove(piece.key);
                    } else if store.get(piece.key).is_some() {
                        store.write(piece.key, piece.within.start, &vec![0; piece.within.len()]);
                    }
                }
                self.cache
                    .as_mut()
                    .expect("cache")
                    .counters
                    .write_through_requests += 1;
                self.submit_direct(request, offset_bytes, len_bytes);
            }
            UserOp::Flush => unreachable!("flushes are handled before"),
        }
    }

    fn cached_read(&mut self, request: UserRequest, offset_bytes: u64, len_bytes: u64) {
        let pieces = self.block_pieces(offset_bytes, len_bytes);
        let cache = self.cache.as_mut().expect("cache");
        // Slices of the cached blocks, shared: a write to one meanwhile
        // copies the block rather than change what this read returns.
        let mut overlay = Vec::new();
        for piece in &pieces {
            if let Some(entry) = cache.store.get(piece.key) {
                overlay.push((piece.user_offset, entry.data.slice(piece.within.clone())));
            }
        }
        cache.counters.read_hit_blocks += overlay.len() as u64;
        cache.counters.read_miss_blocks += (pieces.len() - overlay.len()) as u64;
        if overlay.len() == pieces.len() {
            // Every block cached: the pieces tile the read in order.
            let mut data = ReadData::new();
            for (_, bytes) in overlay {
                data.push(bytes);
            }
            assert_eq!(data.len() as u64, len_bytes, "a cached read's blocks");
            self.outbox_reply.push_back(UserReply {
                id: request.id,
                result: Ok(Some(data)),
            });
            return;
        }
        let id = request.id;
        self.submit_direct(request, offset_bytes, len_bytes);
        // Laid over what the members return: the cache holds the newest.
        if let Some(pending) = self.requests.get_mut(&id) {
            pending.overlay = overlay;
        }
    }

    /// Puts a write into the cache, or returns it if it must wait for room.
    pub(super) fn try_cached_write(&mut self, request: UserRequest) -> Option<UserRequest> {
        let UserOp::Write {
            offset_bytes, data, ..
        } = &request.op
        else {
            unreachable!("only writes are cached")
        };
        let offset_bytes = *offset_bytes;
        let len_bytes = data.len() as u64;
        let pieces = self.block_pieces(offset_bytes, len_bytes);
        let tag = self.journal_seq_of(request.id);
        // Without a working journal, a real array's cache must not hold
        // writes it acknowledged: they go through.
        let journal_failed = self.journal.as_ref().is_some_and(|j| j.failed.is_some());
        let cache = self.cache.as_mut().expect("cache");
        let mut new_units: Vec<_> = pieces
            .iter()
            .filter(|p| p.whole())
            .map(|p| cache.store.unit_of(p.key))
            .filter(|&unit| !cache.store.unit_exists(unit))
            .collect();
        new_units.sort();
        new_units.dedup();
        let new_units = new_units.len() as u64;
        if journal_failed
            || new_units * cache.store.unit_charge_blocks() > cache.store.capacity_blocks() / 4
        {
            // Too large to cache: write it through, updating cached copies.
            for piece in &pieces {
                let bytes = &data[piece.user_offset..piece.user_offset + piece.within.len()];
                if piece.whole() {
                    cache.store.remove(piece.key);
                } else if cache.store.get(piece.key).is_some() {
                    cache.store.write(piece.key, piece.within.start, bytes);
                }
            }
            cache.counters.write_through_requests += 1;
            self.submit_direct(request, offset_bytes, len_bytes);
            return None;
        }
        if !cache.store.make_room(new_units) {
            return Some(request);
        }
        let mut through: Vec<(u64, crate::io::Bytes)> = Vec::new();
        for piece in &pieces {
            let bytes = data.slice(piece.user_offset..piece.user_offset + piece.within.len());
            if !cache
                .store
                .write_tagged(piece.key, piece.within.start, &bytes, tag)
            {
                through.push((offset_bytes + piece.user_offset as u64, bytes));
            }
        }
        cache.counters.written_blocks += (pieces.len() - through.len()) as u64;
        self.ready.push(Ready::Destage);
        if through.is_empty() {
            self.outbox_reply.push_back(UserReply {
                id: request.id,
                result: Ok(None),
            });
            return None;
        }
        // Partial blocks not cached: written through, one request.
        cache.counters.write_through_requests += 1;
        let mut groups = super::submit::StripeGroups::new();
        let chunk = self.geometry.chunk_bytes;
        let first = through.first().expect("pieces written through").0;
        let (last_at, last_bytes) = through.last().expect("pieces written through");
        let chunks = first / chunk..(last_at + last_bytes.len() as u64).div_ceil(chunk);
        for (at, bytes) in &through {
            groups.extend(self.split(*at, bytes.len() as u64, Some(bytes)));
        }
        let fua = matches!(request.op, UserOp::Write { fua: true, .. });
        self.start_request(request.id, chunks, groups, OpKind::Write, None, fua);
        None
    }

    /// A write went through to the members: cached clean copies of its
    /// blocks (a destage may have read them in while it waited for the
    /// stripe lock) are stale now.
    pub(super) fn forget_clean_copies(&mut self, op: &super::op::StripeOp) {
        let Some(cache) = &mut self.cache else {
            return;
        };
        for segment in &op.segments {
            let rows = segment.intra.start / BLOCK_BYTES..segment.intra.end.div_ceil(BLOCK_BYTES);
            for row in rows {
                cache.store.drop_clean(BlockKey {
                    stripe: op.stripe,
                    row: row as u32,
                    col: segment.data_index as u32,
                });
            }
        }
    }

    /// Admits waiting writes, oldest first, while they fit.
    pub(super) fn admit_blocked_writes(&mut self) {
        loop {
            let Some(cache) = &mut self.cache else {
                return;
            };
            let Some(request) = cache.blocked.pop_front() else {
                return;
            };
            if let Some(request) = self.try_cached_write(request) {
                self.cache
                    .as_mut()
                    .expect("cache")
                    .blocked
                    .push_front(request);
                return;
            }
        }
    }
}

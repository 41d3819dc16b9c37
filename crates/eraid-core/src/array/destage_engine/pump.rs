//! The destage engine's steps on the array: start destages, plan and run a
//! destage op's reads, compute and write, and finish it.

use super::work::DestageWork;
use crate::array::locks::LockMode;
use crate::array::op::{OpKind, OpState, OpTarget, Parent};
use crate::array::{Array, FlushPurpose, Owner, Phase, Ready};
use crate::cache::store::Fill;
use crate::cache::BLOCK_BYTES;
use crate::io::{DeviceOp, IoCause, UserError, UserReply};

impl Array {
    /// Starts destages while the schedule wants them and the window has
    /// room; answers flushes once everything is on the members; admits
    /// writes that waited for room.
    pub(in crate::array) fn pump_destage(&mut self) {
        let closing = matches!(self.phase, Phase::Closing(_));
        let rows_per_strip = (self.geometry.chunk_bytes / BLOCK_BYTES) as usize;
        loop {
            let Some(cache) = &mut self.cache else {
                return;
            };
            if cache.failed.is_some()
                || cache.in_flight >= cache.config.destage_window_units
                || !cache.wants_destage(closing)
            {
                break;
            }
            // A filling journal needs its oldest records' blocks out first.
            let unit = if cache.journal_pressure {
                cache.store.take_oldest_tagged()
            } else {
                cache.store.take_lrw()
            };
            let Some(unit) = unit else {
                break;
            };
            cache.in_flight += 1;
            let op_id = self.next_op_id;
            self.create_op(
                Parent::Destage,
                OpTarget::current(unit.stripe),
                OpKind::Destage,
                LockMode::Exclusive,
                Default::default(),
            );
            self.ops.get_mut(&op_id).expect("op created").destage =
                Some(Box::new(DestageWork::new(unit, rows_per_strip)));
        }
        self.admit_blocked_writes();
        let Some(cache) = &mut self.cache else {
            return;
        };
        let everything_out = cache.store.dirty_blocks() == 0 && cache.in_flight == 0;
        if everything_out || cache.failed.is_some() {
            let waiters = std::mem::take(&mut cache.flush_waiters);
            let failed = cache.failed.clone();
            for id in waiters {
                match &failed {
                    Some(reason) => self.outbox_reply.push_back(UserReply {
                        id,
                        result: Err(UserError::Unavailable(reason.clone())),
                    }),
                    None => self.flush_members(FlushPurpose::Reply(id)),
                }
            }
        }
    }

    /// Plans a destage op under its lock and issues its reads.
    pub(in crate::array) fn destage_op_start(&mut self, op_id: u64, readable: &[bool]) {
        let cache = self.cache.as_ref().expect("a destage op needs the cache");
        let op = self.ops.get_mut(&op_id).expect("op exists");
        let (k, m) = (op.map.data.len(), op.map.parity.len());
        let work = op.destage.as_mut().expect("destage work");
        work.plan(&cache.store, &cache.config, k, m, readable);
        let reads: Vec<(usize, usize, u64, usize)> = work
            .read_runs
            .iter()
            .enumerate()
            .map(|(n, run)| {
                let len = run.rows.len() * BLOCK_BYTES as usize;
                (n, run.col, work.row_offset_bytes(run.rows.start), len)
            })
            .collect();
        op.state = OpState::Reading;
        op.read_failed = false;
        op.pending_ios = reads.len();
        let places: Vec<_> = op.map.shards().collect();
        let cache = self.cache.as_mut().expect("cache");
        cache.counters.destage_read_ios += reads.len() as u64;
        for (run, col, intra_bytes, len_bytes) in reads {
            let place = places[col];
            let offset_bytes = self.member_offset_bytes(place.member_chunk, intra_bytes);
            self.issue(
                place.member,
                DeviceOp::Read {
                    offset_bytes,
                    len_bytes,
                },
                IoCause::Destage,
                Owner::Op {
                    op: op_id,
                    shard: run,
                    is_read: true,
                },
            );
        }
        if self.ops[&op_id].pending_ios == 0 {
            self.ready.push(Ready::OpCompute(op_id));
        }
    }

    /// All reads are in: cache the r's, compute parity, issue the writes.
    pub(in crate::array) fn destage_op_compute(&mut self, op_id: u64) {
        let op = self.ops.remove(&op_id).expect("op");
        let (k, m) = (op.map.data.len(), op.map.parity.len());
        let code = self.code_for(k).expect("a cached array has parity");
        let work = op.destage.as_ref().expect("destage work");
        let crate::stripe_code::StripeCode::Matrix(code) = &*code else {
            unreachable!("the cache runs on RAID-5/6 only (its config is checked at open)")
        };
        let outcome = work.compute(code, k, m, &self.parity_buffers);
        let (writes, error) = match outcome {
            Ok((fills, writes)) => {
                // A write through this stripe still pending (it waits for
                // this destage's lock) already changed the cache's view of
                // its blocks: what was read is stale. Caching it clean would
                // let a later partial write make it dirty, and its destage
                // would put the old data back over the newer write. Clean
                // fills are only an optimisation, so skip them then.
                let write_through_pending = self
                    .ops
                    .values()
                    .any(|other| other.kind == OpKind::Write && other.stripe == op.stripe);
                let fills = if write_through_pending {
                    Vec::new()
                } else {
                    fills
                };
                let cache = self.cache.as_mut().expect("cache");
                for (key, bytes) in fills {
                    // A block written since the plan keeps its new data.
                    let fill = cache.store.fill(key, &bytes);
                    assert!(matches!(
                        fill,
                        Fill::Filled | Fill::AlreadyClean | Fill::RefusedDirty
                    ));
                }
                (writes, None)
            }
            Err(reason) => (Vec::new(), Some(UserError::Unavailable(reason))),
        };
        // Counted as issued: a write to a failed member is dropped.
        let present: Vec<bool> = op.map.shards().map(|p| self.present[p.member]).collect();
        let cache = self.cache.as_mut().expect("cache");
        cache.counters.destage_write_ios += writes
            .iter()
            .filter(|(shard, _, _)| present[*shard])
            .count() as u64;
        let writes = writes
            .into_iter()
            .map(|(shard, range, bytes)| {
                (shard, range, super::super::execute::Payload::Bytes(bytes))
            })
            .collect();
        self.op_issue_writes(op_id, op, writes, error);
    }

    /// A destage op finished: its blocks are clean unless written again.
    pub(in crate::array) fn destage_op_done(
        &mut self,
        work: Box<DestageWork>,
        error: Option<UserError>,
    ) {
        let cache = self.cache.as_mut().expect("cache");
        cache.in_flight -= 1;
        match error {
            None => {
                cache.store.destaged(work.unit, &work.written);
                cache.counters.destages += 1;
                cache.counters.transform_read_blocks += work.added.read_blocks;
                cache.counters.transform_write_blocks += work.added.write_blocks;
            }
            Some(error) => {
                cache.store.release(work.unit);
                cache.failed.get_or_insert(error.to_string());
            }
        }
        self.ready.push(Ready::Destage);
    }
}

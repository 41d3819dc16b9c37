//! Running stripe operations: intent, reads, parity computation, writes,
//! completion. The write method is chosen by `plan::plan_write`.

use super::op::{OpKind, OpState, Parent};
use super::plan::{plan_write, WriteMethod, WriteShape};
use super::rebuild_engine::WriteDevices;
use super::rebuilt_row::RowRebuild;
use super::{Array, FlushPurpose, Owner, Ready};

use crate::io::{DeviceOp, IoCause, IoCompletion, UserError, UserReply};
use crate::layout::ShardVec;
use std::ops::Range;

/// What a shard write carries.
pub(super) enum Payload {
    Bytes(crate::io::Bytes),
    /// A parity shard computed by the thread that writes it (`WriteData`).
    Parity(crate::io::WriteData),
    /// Zeroes over the range: no buffer, a zero-range device op.
    Zeroes,
}

pub(super) fn sub(range: &Range<u64>, within: &Range<u64>) -> Range<usize> {
    assert!(
        within.start <= range.start && range.end <= within.end,
        "{range:?} outside {within:?}"
    );
    (range.start - within.start) as usize..(range.end - within.start) as usize
}

/// The user's bytes of every data shard, when the segments cover each of
/// the `k` shards over the whole row (a full-stripe write); else None.
fn whole_row_data<'a>(
    segments: &'a [super::op::Segment],
    k: usize,
    row: &Range<u64>,
) -> Option<Vec<&'a crate::io::Bytes>> {
    // An op has one segment per data shard: a whole row has k of them.
    if segments.len() != k || segments.iter().any(|s| s.intra != *row) {
        return None;
    }
    let mut data: ShardVec<Option<&crate::io::Bytes>> = smallvec::smallvec![None; k];
    for s in segments {
        if s.intra != *row {
            return None;
        }
        data[s.data_index] = Some(s.data.as_ref()?);
    }
    data.into_iter().collect()
}

impl Array {
    pub(super) fn op_cause(&self, op_id: u64) -> IoCause {
        match self.ops[&op_id].parent {
            Parent::User(_) => IoCause::User,
            Parent::Scrub => {
                if self.scrub.as_ref().is_some_and(|s| s.is_resync()) {
                    IoCause::Resync
                } else {
                    IoCause::Scrub
                }
            }
            Parent::Rebuild { .. } => IoCause::Rebuild,
            Parent::Destage => IoCause::Destage,
        }
    }

    /// The op holds its stripe lock: take the write intent if it writes.
    pub(super) fn op_locked(&mut self, op_id: u64) {
        if self.gather_at_lock(op_id) {
            return;
        }
        let now = self.now;
        if self.ops[&op_id].kind == OpKind::Write {
            // Written without them, absent members are stale: every write
            // waits until the record saying so is on disk.
            if let Some(generation) = self.record_absent_members() {
                self.absent_record_generation = Some(generation);
            }
            if let Some(generation) = self.absent_record_generation {
                if generation > self.metadata.superblock_durable {
                    let op = self.ops.get_mut(&op_id).expect("op exists");
                    op.state = OpState::WaitingAbsentRecord { generation };
                    return;
                }
                self.absent_record_generation = None;
            }
        }
        let op = self.ops.get_mut(&op_id).expect("op exists");
        if op.writes_data()
            && self.options.write_intent_bitmap
            && self.geometry.parity_per_stripe() > 0
            && !op.intent_taken
        {
            // Counted as in flight from now on, so a clean cycle cannot clear
            // the region while this op waits for its bit to reach the disks.
            op.intent_taken = true;
            self.intent.begin_write(op.region, now);
            let region = op.region;
            if !self.intent.is_durable(region) {
                op.state = OpState::WaitingIntent;
                self.intent.waiting.push((region, op_id));
                if !self.intent.desired.get(region) {
                    self.intent.desired.set(region, true);
                }
                self.request_bitmap_write(true);
                return;
            }
        }
        self.op_start(op_id);
    }

    /// Called when bitmap writes complete: start ops whose region is durable.
    pub(super) fn wake_intent_waiters(&mut self) {
        let waiting = std::mem::take(&mut self.intent.waiting);
        for (region, op_id) in waiting {
            if self.intent.is_durable(region) {
                self.op_start(op_id);
            } else {
                self.intent.desired.set(region, true);
                self.intent.waiting.push((region, op_id));
                self.request_bitmap_write(true);
            }
        }
    }

    /// Plans the op for the members present now and issues its reads.
    pub(super) fn op_start(&mut self, op_id: u64) {
        // Readable: present, and not a replacement's shard not yet rebuilt
        // (for users' reads and writes: nor any replacement's shard while
        // a rebuild without redirection runs).
        let present: ShardVec<bool> = {
            let op = &self.ops[&op_id];
            let by_user = matches!(op.kind, OpKind::Read | OpKind::Write);
            op.map
                .shards()
                .map(|p| match by_user {
                    true => self.shard_readable_by_users(p.member, op.stripe),
                    false => self.shard_readable(p.member, op.stripe),
                })
                .collect()
        };
        if self.ops[&op_id].kind == OpKind::Destage {
            self.destage_op_start(op_id, &present);
            return;
        }
        // A replace copies the source's shard alone (a rebuild op planned
        // again after the source failed is an ordinary rebuild).
        let copy_plan = match self.ops[&op_id].kind {
            OpKind::Rebuild => self.replace_copy_plan(&self.ops[&op_id].map),
            _ => None,
        };
        // RAID-10: the copy MD's read balance picks (a read of another
        // copy than the first is served like a degraded read of it).
        let balanced = match self.ops[&op_id].kind {
            OpKind::Read => {
                let op = &self.ops[&op_id];
                let places: ShardVec<_> = op.map.shards().collect();
                self.balanced_copy(&places, &present, op.row.start)
            }
            _ => None,
        };
        let op = self.ops.get_mut(&op_id).expect("op exists");
        op.copy_to = copy_plan.map(|(_, device)| device);
        // The op's own stripe shape: during a growth old and new stripes differ.
        let k = op.map.data.len();
        let m = op.map.parity.len();
        // Emptied and sized in place: the op's vector keeps its capacity.
        op.reads.clear();
        op.reads.resize(k + m, None);
        op.read_failed = false;
        op.bad_shards.clear();
        let reads: Option<super::plan::PlanReads> = match op.kind {
            OpKind::Read => {
                if let Some(copy) = balanced.filter(|&shard| shard >= k) {
                    Some(smallvec::smallvec![(copy, op.row.clone())])
                } else if op.segments.iter().all(|s| present[s.data_index]) {
                    Some(
                        op.segments
                            .iter()
                            .map(|s| (s.data_index, s.intra.clone()))
                            .collect(),
                    )
                } else if present.iter().filter(|&&p| p).count() >= k {
                    // Degraded read: enough surviving shards over the row.
                    let row = op.row.clone();
                    Some(
                        (0..k + m)
                            .filter(|&i| present[i])
                            .take(k)
                            .map(|i| (i, row.clone()))
                            .collect(),
                    )
                } else {
                    None
                }
            }
            OpKind::Write => {
                let mut covered: ShardVec<Range<u64>> = smallvec::smallvec![0..0; k];
                for s in &op.segments {
                    covered[s.data_index] = s.intra.clone();
                }
                let shape = WriteShape {
                    row: op.row.clone(),
                    covered: &covered,
                    parity_count: m,
                    present: &present,
                };
                plan_write(&shape).map(|plan| {
                    op.method = Some(plan.method);
                    plan.reads
                })
            }
            OpKind::Scrub { .. } => {
                if present.iter().all(|&p| p) {
                    let row = op.row.clone();
                    Some((0..k + m).map(|i| (i, row.clone())).collect())
                } else {
                    // Degraded: nothing to compare against; skip the stripe.
                    Some(super::plan::PlanReads::new())
                }
            }
            OpKind::Rebuild if copy_plan.is_some() => {
                let (shard, _) = copy_plan.expect("checked");
                Some(smallvec::smallvec![(shard, op.row.clone())])
            }
            OpKind::Destage => unreachable!("planned by the destage engine"),
            // Every readable shard over the whole chunk: the targets are
            // reconstructed from them (and suspect parity checked).
            OpKind::Rebuild => (present.iter().filter(|&&p| p).count() >= k).then(|| {
                let row = op.row.clone();
                (0..k + m)
                    .filter(|&i| present[i])
                    .map(|i| (i, row.clone()))
                    .collect()
            }),
        };
        let Some(reads) = reads else {
            let error = self.unavailable();
            self.ready.push(Ready::OpFinish(op_id, Some(error)));
            return;
        };
        let op = self.ops.get_mut(&op_id).expect("op exists");
        op.state = OpState::Reading;
        op.pending_ios = reads.len();
        let places: ShardVec<_> = op.map.shards().collect();
        let cause = self.op_cause(op_id);
        for (shard, range) in &reads {
            let place = places[*shard];
            let offset_bytes = self.member_offset_bytes(place.member_chunk, range.start);
            let len_bytes = (range.end - range.start) as usize;
            self.ops.get_mut(&op_id).expect("op").reads[*shard] =
                Some((range.clone(), crate::io::ReadBuf::default()));
            self.issue(
                place.member,
                DeviceOp::Read {
                    offset_bytes,
                    len_bytes,
                },
                cause,
                Owner::Op {
                    op: op_id,
                    shard: *shard,
                    is_read: true,
                },
            );
        }
        if reads.is_empty() {
            self.ready.push(Ready::OpCompute(op_id));
        }
    }

    pub(super) fn op_io_done(
        &mut self,
        op_id: u64,
        shard: usize,
        is_read: bool,
        completion: IoCompletion,
    ) {
        // A failure was already charged to its device by `handle_completion`.
        let failed = match completion {
            IoCompletion::Read(bytes) if is_read && self.ops[&op_id].destage.is_some() => {
                let op = self.ops.get_mut(&op_id).expect("op");
                op.destage
                    .as_mut()
                    .expect("destage")
                    .read_done(shard, bytes);
                false
            }
            IoCompletion::Read(bytes) if is_read => {
                let op = self.ops.get_mut(&op_id).expect("op");
                let slot = op.reads[shard].as_mut().expect("read was planned");
                assert_eq!(
                    bytes.len() as u64,
                    slot.0.end - slot.0.start,
                    "driver returned a short read"
                );
                slot.1 = bytes;
                false
            }
            IoCompletion::Done if !is_read => false,
            IoCompletion::Failed(_) => true,
            // Counted by `handle_completion`; repaired once reads settle.
            IoCompletion::ReadError(_) if is_read => {
                self.ops.get_mut(&op_id).expect("op").bad_shards.push(shard);
                false
            }
            other => panic!("completion {other:?} does not match the I/O (read: {is_read})"),
        };
        let op = self.ops.get_mut(&op_id).expect("op");
        op.pending_ios -= 1;
        if failed {
            op.member_failed = true;
            if is_read {
                op.read_failed = true;
            }
        }
        if op.pending_ios > 0 {
            return;
        }
        match op.state {
            OpState::Reading if op.read_failed => self.op_start(op_id),
            OpState::Reading if !op.bad_shards.is_empty() => {
                let mut bad = std::mem::take(&mut op.bad_shards);
                bad.sort_unstable();
                bad.dedup();
                self.start_read_repair(op_id, bad)
            }
            OpState::Reading => self.op_compute(op_id),
            OpState::Writing => self.op_writes_done(op_id),
            state => panic!("I/O completed for an op in state {state:?}"),
        }
    }

    /// All reads are in: compute, then write (or finish a read).
    pub(super) fn op_compute(&mut self, op_id: u64) {
        if self.ops[&op_id].kind == OpKind::Destage {
            self.destage_op_compute(op_id);
            return;
        }
        let mut op = self.ops.remove(&op_id).expect("op");
        let k = op.map.data.len();
        let m = op.map.parity.len();
        let code = self.code_for(k);
        let row = op.row.clone();
        let row_len = (row.end - row.start) as usize;
        let mut writes = OpWrites::new();
        let mut error = None;
        match op.kind {
            OpKind::Read => {
                let parent = match op.parent {
                    Parent::User(id) => id,
                    Parent::Scrub | Parent::Rebuild { .. } | Parent::Destage => {
                        unreachable!("scrub, rebuild and destage ops are not reads")
                    }
                };
                let direct = op
                    .segments
                    .iter()
                    .all(|s| matches!(&op.reads[s.data_index], Some((r, _)) if *r == s.intra));
                let shards = if direct {
                    None
                } else {
                    Some(super::degraded_read::data_shards_of_row(
                        &mut op.reads,
                        &row,
                        k,
                        code.as_ref(),
                    ))
                };
                // Each segment's piece: the member's buffer as read (shared,
                // not copied) or a slice of the row's shard, rebuilt later
                // by whoever first looks at the reply's bytes.
                let pending = self.requests.get_mut(&parent).expect("parent request");
                let read = pending.read.as_mut().expect("read result");
                match shards {
                    // `direct`: each read covers its segment exactly.
                    None if op.segments.len() == 1 => {
                        let s = &op.segments[0];
                        let (_, bytes) = op.reads[s.data_index].take().expect("read");
                        read.put(s.user_offset, bytes.freeze());
                    }
                    None => {
                        let frozen: Vec<Option<crate::io::Bytes>> = op
                            .reads
                            .iter_mut()
                            .map(|r| r.take().map(|(_, bytes)| bytes.freeze()))
                            .collect();
                        for s in &op.segments {
                            let bytes = frozen[s.data_index].clone().expect("read");
                            read.put(s.user_offset, bytes);
                        }
                    }
                    Some(Ok(shards)) => {
                        for s in &op.segments {
                            read.put_deferred(
                                s.user_offset,
                                std::sync::Arc::clone(&shards),
                                s.data_index,
                                sub(&s.intra, &row),
                            );
                        }
                    }
                    Some(Err(reason)) => error = Some(UserError::Unavailable(reason)),
                }
            }
            OpKind::Write => {
                let method = op.method.expect("write planned");
                // Rebuild targets' shards of a stripe the rebuild has not
                // reached: a write over whole chunks rewrites them too (and
                // the stripe is then rebuilt).
                let unrebuilt_targets: ShardVec<bool> = op
                    .map
                    .shards()
                    .map(|p| {
                        self.is_rebuild_target(p.member)
                            && !self.shard_readable(p.member, op.stripe)
                    })
                    .collect();
                let whole_row = row == (0..self.geometry.chunk_bytes);
                let place_present: ShardVec<bool> =
                    op.map.shards().map(|p| self.present[p.member]).collect();
                // Zeroes over every data shard of the row, nothing read: the
                // parity of zeroes is zeroes (every code here is linear), so
                // no byte needs a buffer.
                let all_zeroes = op.segments.iter().all(|s| s.zeroes && s.data.is_none());
                let nothing_read = op.reads.iter().all(|r| r.is_none());
                let zero_stripe = all_zeroes
                    && nothing_read
                    && matches!(
                        method,
                        WriteMethod::DataOnly | WriteMethod::ReconstructWrite
                    );
                match method {
                    _ if zero_stripe => {
                        for i in k..k + m {
                            writes.push((i, row.clone(), Payload::Zeroes));
                        }
                    }
                    WriteMethod::DataOnly => {}
                    WriteMethod::ReadModifyWrite => {
                        let code = std::sync::Arc::clone(code.as_ref().expect("parity code"));
                        // The old parity buffers become the new parity: they
                        // are not read again (op_issue_writes drops reads).
                        // The update runs outside the engine lock, on the
                        // thread that writes a parity shard (WriteData).
                        let parity: Vec<crate::io::ReadBuf> = (k..k + m)
                            .map(|i| op.reads[i].take().expect("parity read").1)
                            .collect();
                        let updates: Vec<ParityUpdate> = op
                            .segments
                            .iter()
                            .map(|s| ParityUpdate {
                                // An op has one segment per data shard.
                                data_index: s.data_index,
                                old_data: op.reads[s.data_index]
                                    .take()
                                    .expect("old data read, once per shard")
                                    .1,
                                new_data: {
                                    assert!(
                                        s.data.is_some() || s.zeroes,
                                        "a write segment without data"
                                    );
                                    s.data.clone()
                                },
                                window: sub(&s.intra, &row),
                            })
                            .collect();
                        let stripe = crate::write_data::StripeParity::deferred(
                            m,
                            row_len,
                            Box::new(move || read_modify_write(&code, parity, updates)),
                        );
                        for i in 0..m {
                            writes.push((k + i, row.clone(), Payload::Parity(stripe.shard(i))));
                        }
                    }
                    WriteMethod::ReconstructWrite | WriteMethod::ReadAllRebuild => {
                        let mut overwritten = vec![false; k];
                        if method == WriteMethod::ReconstructWrite {
                            for s in &op.segments {
                                overwritten[s.data_index] = s.intra == row;
                            }
                        }
                        let code_shared = code.as_ref().expect("parity code");
                        let code: &crate::stripe_code::StripeCode = code_shared;
                        let full_row = whole_row_data(&op.segments, k, &row);
                        if let Some(data) = full_row.as_ref().filter(|_| code.parity_is_data_copy())
                        {
                            // A mirror's full row: every copy is the user's
                            // bytes, shared.
                            for i in k..k + m {
                                writes.push((i, row.clone(), Payload::Bytes(data[0].clone())));
                            }
                        } else if let Some(data) = full_row {
                            // A full-stripe write: parity straight from the
                            // user's bytes, nothing rebuilt or copied, and
                            // encoded later, outside the engine lock, by the
                            // thread that writes a parity shard (WriteData).
                            let stripe = crate::write_data::StripeParity::new(
                                std::sync::Arc::clone(code_shared),
                                data.into_iter().cloned().collect(),
                                m,
                                self.parity_buffers.clone(),
                            );
                            for i in 0..m {
                                writes.push((k + i, row.clone(), Payload::Parity(stripe.shard(i))));
                            }
                        } else if let Some(stripe) = (!unrebuilt_targets.contains(&true))
                            .then(|| {
                                super::reconstruct_write::parity_from_row_buffers(
                                    &mut op,
                                    code_shared,
                                    &self.parity_buffers,
                                )
                            })
                            .flatten()
                        {
                            for i in 0..m {
                                writes.push((k + i, row.clone(), Payload::Parity(stripe.shard(i))));
                            }
                        } else {
                            // A degraded row (or one a rebuild has not
                            // reached): the parity, and the data of rebuild
                            // targets no segment writes, rebuilt from the
                            // survivors with the new bytes laid over, later,
                            // outside the lock.
                            let target_data: Vec<usize> = (0..k)
                                .filter(|&i| {
                                    whole_row
                                        && unrebuilt_targets[i]
                                        && !op.segments.iter().any(|s| s.data_index == i)
                                })
                                .collect();
                            match RowRebuild::take(&mut op, &overwritten, true) {
                                Ok(rows) => {
                                    let wanted: Vec<usize> =
                                        (k..k + m).chain(target_data).collect();
                                    let shards = rows.deferred(
                                        std::sync::Arc::clone(code_shared),
                                        wanted.clone(),
                                    );
                                    for (j, i) in wanted.into_iter().enumerate() {
                                        writes.push((
                                            i,
                                            row.clone(),
                                            Payload::Parity(shards.shard(j)),
                                        ));
                                    }
                                }
                                Err(reason) => error = Some(UserError::Unavailable(reason)),
                            }
                        }
                    }
                }
                if error.is_none() {
                    for s in &op.segments {
                        let payload = match &s.data {
                            Some(data) => Payload::Bytes(data.clone()),
                            None => {
                                assert!(s.zeroes, "a write segment without data");
                                Payload::Zeroes
                            }
                        };
                        writes.push((s.data_index, s.intra.clone(), payload));
                    }
                }
                writes.retain(|(shard, _, _)| place_present[*shard]);
                let targets_whole = unrebuilt_targets
                    .iter()
                    .enumerate()
                    .all(|(i, &t)| !t || writes.iter().any(|(w, r, _)| *w == i && *r == row));
                if error.is_none()
                    && whole_row
                    && unrebuilt_targets.contains(&true)
                    && targets_whole
                    && self.reshape.is_none()
                {
                    op.completes_rebuild = self.rebuild_pass_needing(op.stripe);
                }
            }
            OpKind::Rebuild if op.copy_to.is_some() => {
                // A replace's copy: the source's shard, as read.
                let (shard, read) = op
                    .reads
                    .iter_mut()
                    .enumerate()
                    .find_map(|(i, r)| r.take().map(|r| (i, r)))
                    .expect("the copy read the source's shard");
                let member = op.map.shards().nth(shard).expect("shard").member;
                let device = op.copy_to.expect("checked");
                if self.copy_destination_live(member, device) {
                    writes.push((shard, read.0, Payload::Bytes(read.1.freeze())));
                }
            }
            OpKind::Rebuild => {
                let suspect = self.intent.pinned.contains(&op.region)
                    || self.unresynced_regions.contains(&op.region);
                let place_present: ShardVec<bool> =
                    op.map.shards().map(|p| self.present[p.member]).collect();
                let targets: Vec<usize> = op
                    .map
                    .shards()
                    .enumerate()
                    .filter(|&(i, p)| self.is_rebuild_target(p.member) && place_present[i])
                    .map(|(i, _)| i)
                    .collect();
                let code = code.expect("a rebuild needs redundancy");
                // Parity a crash may have left stale (a region awaiting
                // resync) is compared with the rebuilt parity before it is
                // rewritten: that decision needs the bytes, here.
                let old_parity: Vec<Option<crate::io::ReadBuf>> = if suspect {
                    op.reads[k..]
                        .iter()
                        .map(|r| r.as_ref().map(|(_, b)| b.clone()))
                        .collect()
                } else {
                    Vec::new()
                };
                match RowRebuild::take(&mut op, &vec![false; k], false) {
                    Ok(rows) if suspect => {
                        let shards = rows.compute(&code);
                        for (i, bytes) in shards.into_iter().enumerate() {
                            let stale_parity = i >= k
                                && old_parity[i - k]
                                    .as_ref()
                                    .is_some_and(|read| *read != bytes);
                            if (targets.contains(&i) || stale_parity) && place_present[i] {
                                writes.push((i, row.clone(), Payload::Bytes(bytes.freeze())));
                            }
                        }
                    }
                    Ok(rows) if !targets.is_empty() => {
                        let shards = rows.deferred(code, targets.clone());
                        for (j, i) in targets.into_iter().enumerate() {
                            writes.push((i, row.clone(), Payload::Parity(shards.shard(j))));
                        }
                    }
                    Ok(_) => {}
                    Err(reason) => error = Some(UserError::Unavailable(reason)),
                }
            }
            OpKind::Destage => unreachable!("computed by the destage engine"),
            OpKind::Scrub { repair } => {
                if op.reads.iter().all(|r| r.is_some()) {
                    let data: Vec<&[u8]> = (0..k)
                        .map(|j| &op.reads[j].as_ref().expect("read").1[..])
                        .collect();
                    let mut expected: Vec<Vec<u8>> = vec![vec![0u8; row_len]; m];
                    let mut refs: Vec<&mut [u8]> =
                        expected.iter_mut().map(|p| p.as_mut_slice()).collect();
                    code.as_deref()
                        .expect("scrub needs redundancy")
                        .encode(&data, &mut refs)
                        .expect("shapes match");
                    let mut mismatch = false;
                    for (i, bytes) in expected.into_iter().enumerate() {
                        if op.reads[k + i].as_ref().expect("read").1 != bytes {
                            mismatch = true;
                            if repair {
                                writes.push((k + i, row.clone(), Payload::Bytes(bytes.into())));
                            }
                        }
                    }
                    if let Some(scrub) = &mut self.scrub {
                        scrub.record(op.region, mismatch, false);
                    }
                } else if let Some(scrub) = &mut self.scrub {
                    scrub.record(op.region, false, true);
                }
            }
        }
        self.op_issue_writes(op_id, op, writes, error);
    }

    /// Issues an op's computed writes (or finishes it if there are none).
    pub(super) fn op_issue_writes(
        &mut self,
        op_id: u64,
        mut op: Box<super::op::StripeOp>,
        mut writes: OpWrites,
        error: Option<UserError>,
    ) {
        let places: ShardVec<crate::layout::ChunkPlace> = op.map.shards().collect();
        writes.retain(|(shard, _, _)| self.present[places[*shard].member]);
        // Each write's devices: a copy goes to the new member only; any
        // other write to a replace's source goes to the new member too.
        let devices: ShardVec<WriteDevices> = writes
            .iter()
            .map(|(shard, _, _)| match op.copy_to {
                Some(device) => smallvec::smallvec![device],
                None => self.write_devices(places[*shard].member),
            })
            .collect();
        op.reads.iter_mut().for_each(|r| *r = None);
        op.state = OpState::Writing;
        op.pending_ios = devices.iter().map(|d| d.len()).sum();
        let io_count = op.pending_ios;
        self.ops.insert(op_id, op);
        if error.is_some() || writes.is_empty() {
            self.ready.push(Ready::OpFinish(op_id, error));
            return;
        }
        let cause = self.op_cause(op_id);
        let mut ios = Vec::with_capacity(io_count);
        for ((shard, range, payload), devices) in writes.into_iter().zip(devices) {
            let place = places[shard];
            let offset_bytes = self.member_offset_bytes(place.member_chunk, range.start);
            let device_op = match payload {
                Payload::Bytes(data) => {
                    assert_eq!(data.len() as u64, range.end - range.start);
                    DeviceOp::Write {
                        offset_bytes,
                        data: data.into(),
                    }
                }
                Payload::Parity(data) => {
                    assert_eq!(data.len() as u64, range.end - range.start);
                    DeviceOp::Write { offset_bytes, data }
                }
                Payload::Zeroes => DeviceOp::WriteZeroes {
                    offset_bytes,
                    len_bytes: range.end - range.start,
                },
            };
            let owner = Owner::Op {
                op: op_id,
                shard,
                is_read: false,
            };
            for device in devices {
                ios.push(super::ParkedIo {
                    device,
                    member: place.member,
                    op: device_op.clone(),
                    cause,
                    owner,
                });
            }
        }
        // User writes and destages are recorded in the journal first.
        let ios = if matches!(cause, IoCause::User | IoCause::Destage) {
            self.journal_op_writes(op_id, ios, cause == IoCause::Destage)
        } else {
            ios
        };
        self.issue_parked(ios);
    }

    fn op_writes_done(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        if op.member_failed {
            // Acknowledge only once the failure is on disk, see OpState.
            op.state = OpState::WaitingRecord {
                generation: self.metadata.superblock_requested,
            };
            self.wake_record_waiters();
            return;
        }
        self.op_finish(op_id, None);
    }

    /// Finishes ops whose member-failure record has reached the disks, and
    /// starts writes that waited for absent members to be recorded.
    pub(super) fn wake_record_waiters(&mut self) {
        let durable = self.metadata.superblock_durable;
        let mut recorded: Vec<u64> = self
            .ops
            .iter()
            .filter(|(_, op)| matches!(op.state, OpState::WaitingAbsentRecord { generation } if generation <= durable))
            .map(|(&id, _)| id)
            .collect();
        recorded.sort_unstable();
        for op_id in recorded {
            self.ops.get_mut(&op_id).expect("op").state = OpState::WaitingLock;
            self.ready.push(Ready::OpLocked(op_id));
        }
        self.wake_flush_replies();
        let ready: Vec<u64> = self
            .ops
            .iter()
            .filter(|(_, op)| matches!(op.state, OpState::WaitingRecord { generation } if generation <= durable))
            .map(|(&id, _)| id)
            .collect();
        let mut ready = ready;
        // HashMap order varies between runs; keep the simulator deterministic.
        ready.sort_unstable();
        for op_id in ready {
            self.op_finish(op_id, None);
        }
    }

    /// Releases the op's lock and intent and completes its parent's share.
    pub(super) fn op_finish(&mut self, op_id: u64, error: Option<UserError>) {
        let mut op = self.ops.remove(&op_id).expect("op");
        self.journal_op_finished(op_id);
        let error = error.or_else(|| {
            (matches!(op.kind, OpKind::Write | OpKind::Destage) && !self.survivable())
                .then(|| self.unavailable())
        });
        if op.intent_taken {
            self.intent.end_write(op.region);
        }
        if op.kind == OpKind::Write {
            self.forget_clean_copies(&op);
        }
        self.overlap_note_op(&op, error.is_none());
        for granted in self.locks.release(op.lock_key, op.lock) {
            self.ready.push(Ready::OpLocked(granted));
        }
        match op.parent {
            Parent::Scrub => self.scrub_op_done(op.stripe),
            Parent::Rebuild { pass } => self.rebuild_op_done(pass, op.stripe, error),
            Parent::Destage => {
                let work = op.destage.take().expect("destage work");
                self.destage_op_done(work, error)
            }
            Parent::User(id) => {
                if let (Some(pass), None, false) = (op.completes_rebuild, &error, op.member_failed)
                {
                    self.rebuild_stripe_written_by_user(pass, op.stripe);
                }
                // An op that gathered answers every request that joined it.
                for id in std::iter::once(id).chain(op.merged_parents.iter().copied()) {
                    let pending = self.requests.get_mut(&id).expect("parent request");
                    pending.remaining_ops -= 1;
                    if error.is_some() && pending.error.is_none() {
                        pending.error = error.clone();
                    }
                    if pending.remaining_ops == 0 {
                        let pending = self.requests.remove(&id).expect("parent request");
                        match pending.error {
                            Some(error) => self.outbox_reply.push_back(UserReply {
                                id,
                                result: Err(error),
                            }),
                            None if pending.fua => self.flush_members(FlushPurpose::Reply(id)),
                            None => {
                                let read = pending.read.map(|read| read.finish(pending.overlay));
                                self.outbox_reply.push_back(UserReply {
                                    id,
                                    result: Ok(read),
                                })
                            }
                        }
                    }
                }
            }
        }
        self.keep_spare_op(op);
    }

    /// Keeps a finished op's box and read slots for the next op (see
    /// `create_op`), holding nothing that keeps bytes or buffers alive.
    fn keep_spare_op(&mut self, mut op: Box<super::op::StripeOp>) {
        if self.spare_ops.len() >= SPARE_OPS_MAX {
            return;
        }
        op.reads.clear();
        op.segments = Default::default();
        op.repair = None;
        op.destage = None;
        self.spare_ops.push(op);
    }
}

/// An op's writes (shard, range within the chunk, bytes): inline for up to
/// 8, made per op under the driver's engine lock.
pub(super) type OpWrites = smallvec::SmallVec<[(usize, Range<u64>, Payload); 8]>;

/// Finished ops kept for reuse, at most (about the ops in flight at a
/// queue depth of 32 over a few stripes each).
const SPARE_OPS_MAX: usize = 128;

/// One segment's change to a read-modify-write's parity.
struct ParityUpdate {
    data_index: usize,
    old_data: crate::io::ReadBuf,
    /// None: zeroes.
    new_data: Option<crate::io::Bytes>,
    /// The segment's bytes within the row.
    window: Range<usize>,
}

/// The new parity of a read-modify-write: the old parity buffers, updated
/// in place by each segment's delta. A real member's read buffer is pooled
/// and aligned: written back as it is, no bounce copy.
fn read_modify_write(
    code: &crate::stripe_code::StripeCode,
    mut parity: Vec<crate::io::ReadBuf>,
    updates: Vec<ParityUpdate>,
) -> Vec<crate::io::Bytes> {
    for update in updates {
        let zeroes;
        let new_data: &[u8] = match &update.new_data {
            Some(bytes) => bytes,
            None => {
                zeroes = vec![0u8; update.window.len()];
                &zeroes
            }
        };
        code.update_parity_window(
            update.data_index,
            &update.old_data,
            new_data,
            update.window,
            &mut parity,
        )
        .expect("shapes match");
    }
    parity.into_iter().map(crate::io::ReadBuf::freeze).collect()
}

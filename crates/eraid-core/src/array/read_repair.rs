//! Read-error correction (Linux MD's): a stripe op whose read of a shard
//! came back as a read error (a latent sector error, not a failed device)
//! reconstructs that range from the other shards, rewrites it to the
//! member, reads it back to confirm, and then goes on with the bytes it
//! needed. The member stays in the array; only a failed rewrite, a read
//! back that still fails or differs, or more read errors than
//! `max_read_errors` (counted in `handle_completion`) fail it. Without
//! redundancy left to rebuild from, a user request gets an error and the
//! member stays (as MD returns EIO on RAID-0); a background op (check,
//! rebuild) fails the member as before.

use super::op::{OpKind, OpState, Parent};
use super::{Array, Owner, Ready};
use crate::io::{DeviceOp, IoCompletion, UserError};
use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Reading the range from `k` good shards.
    ReadingOthers,
    /// Writing the reconstructed bytes to the bad shards' members.
    Rewriting,
    /// Reading the bad shards back.
    Verifying,
}

pub(super) struct Repair {
    /// The shards that returned read errors, repaired together.
    bad: Vec<usize>,
    /// The intra-chunk byte range repaired on each of them.
    range: Range<u64>,
    stage: Stage,
    pending: usize,
    /// Per shard: what was read over `range` (good shards), or what was
    /// reconstructed (bad shards).
    bytes: Vec<Option<Vec<u8>>>,
    /// Another good shard returned a read error: repair it too.
    more_bad: Vec<usize>,
    /// A device failed under the repair: plan the op again.
    member_failed: bool,
    /// Bad shards whose read back failed or differed, with why.
    unconfirmed: Vec<(usize, String)>,
}

impl Array {
    /// The op's reads settled and `bad` shards returned read errors.
    pub(super) fn start_read_repair(&mut self, op_id: u64, bad: Vec<usize>) {
        let op = self.ops.get_mut(&op_id).expect("op");
        op.state = OpState::Repairing;
        let k = op.map.data.len();
        let shard_count = k + op.map.parity.len();
        // CRS parity mixes a whole chunk: repair whole chunks there.
        let range = if self.geometry.level.whole_chunk_stripes() {
            op.row.clone()
        } else {
            let ranges: Vec<&Range<u64>> = bad
                .iter()
                .map(|&b| &op.reads[b].as_ref().expect("a bad shard was read").0)
                .collect();
            ranges.iter().map(|r| r.start).min().expect("a bad shard")
                ..ranges.iter().map(|r| r.end).max().expect("a bad shard")
        };
        let stripe = op.stripe;
        let places: Vec<_> = op.map.shards().collect();
        let good: Vec<usize> = (0..shard_count)
            .filter(|i| !bad.contains(i) && self.shard_readable(places[*i].member, stripe))
            .take(k)
            .collect();
        let code = self.code_for(k);
        if good.len() < k || code.is_none() {
            let why = if code.is_none() {
                "the array has no redundancy to rebuild it from"
            } else {
                "too few other members are readable to rebuild it"
            };
            self.read_repair_impossible(op_id, &bad, &range, why);
            return;
        }
        let op = self.ops.get_mut(&op_id).expect("op");
        op.repair = Some(Box::new(Repair {
            bad,
            range: range.clone(),
            stage: Stage::ReadingOthers,
            pending: good.len(),
            bytes: vec![None; shard_count],
            more_bad: Vec::new(),
            member_failed: false,
            unconfirmed: Vec::new(),
        }));
        let cause = self.op_cause(op_id);
        for shard in good {
            let place = places[shard];
            let offset_bytes = self.member_offset_bytes(place.member_chunk, range.start);
            self.issue(
                place.member,
                DeviceOp::Read {
                    offset_bytes,
                    len_bytes: (range.end - range.start) as usize,
                },
                cause,
                Owner::Repair { op: op_id, shard },
            );
        }
    }

    /// No repair is possible: every bad shard's error counts as not
    /// corrected; a user request is answered with an error (the member
    /// stays), a background op fails the member and plans again.
    fn read_repair_impossible(&mut self, op_id: u64, bad: &[usize], range: &Range<u64>, why: &str) {
        let op = &self.ops[&op_id];
        let places: Vec<_> = op.map.shards().collect();
        let user = matches!(op.parent, Parent::User(_));
        let mut reasons = Vec::new();
        for &shard in bad {
            let member = places[shard].member;
            self.health.note_uncorrected(self.slot_device[member]);
            let offset_bytes = self.member_offset_bytes(places[shard].member_chunk, range.start);
            reasons.push(format!(
                "{} could not read {} bytes at offset {offset_bytes}: {why}",
                self.slot_name(member),
                range.end - range.start
            ));
        }
        let reason = reasons.join("; ");
        if user {
            self.ready
                .push(Ready::OpFinish(op_id, Some(UserError::Unavailable(reason))));
            return;
        }
        for &shard in bad {
            self.fail_member(places[shard].member, reason.clone());
        }
        self.op_replan(op_id);
    }

    /// A repair I/O finished (a failure was charged to its device already;
    /// a read error was counted).
    pub(super) fn repair_io_done(&mut self, op_id: u64, shard: usize, completion: IoCompletion) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("op under repair");
        match (repair.stage, completion) {
            (_, IoCompletion::Failed(_)) => repair.member_failed = true,
            (Stage::ReadingOthers, IoCompletion::Read(bytes)) => repair.bytes[shard] = Some(bytes),
            (Stage::ReadingOthers, IoCompletion::ReadError(_)) => repair.more_bad.push(shard),
            (Stage::Rewriting, IoCompletion::Done) => {}
            (Stage::Verifying, IoCompletion::Read(bytes)) => {
                if repair.bytes[shard].as_ref() != Some(&bytes) {
                    repair
                        .unconfirmed
                        .push((shard, "it read back different after the rewrite".into()));
                }
            }
            (Stage::Verifying, IoCompletion::ReadError(reason)) => repair.unconfirmed.push((
                shard,
                format!("it still could not be read after the rewrite ({reason})"),
            )),
            (stage, other) => panic!("repair {stage:?} got completion {other:?}"),
        }
        repair.pending -= 1;
        if repair.pending > 0 {
            return;
        }
        if repair.member_failed {
            self.op_replan(op_id);
            return;
        }
        match repair.stage {
            Stage::ReadingOthers if !repair.more_bad.is_empty() => {
                let (mut bad, more_bad) = (repair.bad.clone(), repair.more_bad.clone());
                let range = repair.range.clone();
                op.repair = None;
                // The new bad shards need the repair's range (they were
                // read over it); the op's own reads of them are replaced.
                for &b in &more_bad {
                    let wanted = op.reads[b].as_ref().map_or(range.clone(), |r| r.0.clone());
                    op.reads[b] = Some((wanted, Vec::new()));
                }
                bad.extend(more_bad);
                self.start_read_repair(op_id, bad);
            }
            Stage::ReadingOthers => self.repair_rewrite(op_id),
            Stage::Rewriting => self.repair_verify(op_id),
            Stage::Verifying => self.repair_verified(op_id),
        }
    }

    /// Reconstructs the bad shards over the range and writes them back.
    fn repair_rewrite(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let k = op.map.data.len();
        let repair = op.repair.as_mut().expect("repair");
        let len = (repair.range.end - repair.range.start) as usize;
        let present: Vec<bool> = repair.bytes.iter().map(Option::is_some).collect();
        let mut shards: Vec<Vec<u8>> = repair
            .bytes
            .iter()
            .map(|b| b.clone().unwrap_or_else(|| vec![0; len]))
            .collect();
        let code = self.code_for(k).expect("checked at the start");
        let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
        code.reconstruct(&mut refs, &present)
            .expect("k good shards rebuild the others");
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("repair");
        for &b in &repair.bad {
            repair.bytes[b] = Some(shards[b].clone());
        }
        repair.stage = Stage::Rewriting;
        repair.pending = repair.bad.len();
        let writes: Vec<(usize, Vec<u8>)> =
            repair.bad.iter().map(|&b| (b, shards[b].clone())).collect();
        self.issue_repair_ios(op_id, writes.into_iter().map(|(b, data)| (b, Some(data))));
    }

    /// Reads the rewritten ranges back.
    fn repair_verify(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("repair");
        repair.stage = Stage::Verifying;
        repair.pending = repair.bad.len();
        let bad = repair.bad.clone();
        self.issue_repair_ios(op_id, bad.into_iter().map(|b| (b, None)));
    }

    /// Issues a write (`Some(data)`) or a read (`None`) of the repair's
    /// range to each shard's member.
    fn issue_repair_ios(
        &mut self,
        op_id: u64,
        ios: impl Iterator<Item = (usize, Option<Vec<u8>>)>,
    ) {
        let op = &self.ops[&op_id];
        let places: Vec<_> = op.map.shards().collect();
        let range = op.repair.as_ref().expect("repair").range.clone();
        let cause = self.op_cause(op_id);
        for (shard, data) in ios.collect::<Vec<_>>() {
            let place = places[shard];
            let offset_bytes = self.member_offset_bytes(place.member_chunk, range.start);
            let device_op = match data {
                Some(data) => DeviceOp::Write { offset_bytes, data },
                None => DeviceOp::Read {
                    offset_bytes,
                    len_bytes: (range.end - range.start) as usize,
                },
            };
            self.issue(
                place.member,
                device_op,
                cause,
                Owner::Repair { op: op_id, shard },
            );
        }
    }

    /// The read back is in: count, fail what did not take, and go on with
    /// the repaired bytes (or plan again without a failed member).
    fn repair_verified(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.take().expect("repair");
        let places: Vec<_> = op.map.shards().collect();
        if repair.unconfirmed.is_empty() {
            for &b in &repair.bad {
                let bytes = repair.bytes[b].as_ref().expect("reconstructed");
                let (wanted, slot) = op.reads[b].as_mut().expect("a bad shard was read");
                let at = (wanted.start - repair.range.start) as usize;
                *slot = bytes[at..at + (wanted.end - wanted.start) as usize].to_vec();
            }
            op.state = OpState::Reading;
            let counted =
                self.options.planted_bug != Some(super::PlantedBug::ReadErrorRepairNotCounted);
            for &b in repair.bad.iter().filter(|_| counted) {
                let device = self.slot_device[places[b].member];
                self.health.note_corrected(device);
            }
            self.ready.push(Ready::OpCompute(op_id));
            return;
        }
        for (shard, why) in &repair.unconfirmed {
            let member = places[*shard].member;
            self.health.note_uncorrected(self.slot_device[member]);
            let offset_bytes =
                self.member_offset_bytes(places[*shard].member_chunk, repair.range.start);
            let reason = format!(
                "read error at offset {offset_bytes} ({} bytes) not corrected: {why}",
                repair.range.end - repair.range.start
            );
            self.fail_member(member, reason);
        }
        self.op_replan(op_id);
    }

    /// Plans the op again from its reads, for the members present now.
    fn op_replan(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        op.repair = None;
        // The failure is recorded before the op is acknowledged.
        op.member_failed = true;
        debug_assert!(op.kind != OpKind::Destage, "destage reads are not repaired");
        self.op_start(op_id);
    }

    /// How a member slot is named in messages.
    pub(super) fn slot_name(&self, member: usize) -> String {
        format!(
            "member {member} ({})",
            self.superblock.members[member].path_hint
        )
    }
}

//! Read-error correction (Linux MD's): a stripe op whose read of a shard
//! came back as a read error (a latent sector error, not a failed device)
//! reconstructs that range from the other shards, rewrites the sectors
//! that fail to the member, reads the range back to confirm, and then goes
//! on with the bytes it needed. The member stays in the array; only a
//! failed rewrite, a read back that still fails or differs, or more read
//! errors than `max_read_errors` (counted in `handle_completion`) fail it.
//! Without redundancy left to rebuild from, a user request gets an error
//! and the member stays (as MD returns EIO on RAID-0); a background op
//! (check, rebuild) fails the member as before.
//!
//! Only the sectors that fail are rewritten (each sector of a bad shard is
//! probed alone): the member's readable sectors are the newest it has,
//! while the reconstruction may come from parity a crash left stale (the
//! write hole). Rewriting a readable sector from it would overwrite a
//! write acknowledged since, and CRS, whose parity mixes whole chunks,
//! reconstructs whole chunks.

use super::op::{OpKind, OpState, Parent};
use super::{Array, Owner, Ready};
use crate::geometry::SECTOR_BYTES;
use crate::io::{DeviceOp, IoCompletion, UserError};
use std::ops::Range;

const SECTOR: usize = SECTOR_BYTES as usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Reading the range from `k` good shards, and the bad shards' range
    /// sector by sector.
    ReadingOthers,
    /// Writing the reconstructed failing sectors to the bad shards' members.
    Rewriting,
    /// Reading the bad shards back.
    Verifying,
}

pub(super) struct Repair {
    /// The shards that returned read errors, repaired together.
    bad: Vec<usize>,
    /// The device under each bad shard when the repair started: a spare
    /// that took its slot since holds none of its sectors.
    bad_devices: Vec<usize>,
    /// The intra-chunk byte range repaired on each of them.
    range: Range<u64>,
    stage: Stage,
    pending: usize,
    /// Per shard: what was read over `range` (good shards), or what the
    /// bad shard holds after the repair (its readable sectors, and the
    /// reconstruction in the failing ones).
    bytes: Vec<Option<Vec<u8>>>,
    /// Per bad shard: its readable sectors over `range` (probed one by one).
    probed: Vec<Vec<u8>>,
    /// Per bad shard: which sectors of `range` failed their probe.
    failing_sectors: Vec<Vec<bool>>,
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
        let replaced = |b: &usize| {
            let member = places[*b].member;
            self.present[member] && !self.shard_readable(member, stripe)
        };
        if bad.iter().any(replaced) {
            // A spare took a bad shard's slot since it was read and holds
            // none of this stripe yet: plan again without it. (A member
            // failed with no spare to take its slot is repaired as before:
            // its I/Os fail, or the rewrite lands where nothing reads it.)
            self.op_replan(op_id);
            return;
        }
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
        let len = (range.end - range.start) as usize;
        assert!(
            range.start.is_multiple_of(SECTOR_BYTES) && len.is_multiple_of(SECTOR),
            "a repair range is whole sectors"
        );
        let sectors = len / SECTOR;
        let bad_devices = bad
            .iter()
            .map(|&b| self.slot_device[places[b].member])
            .collect();
        let op = self.ops.get_mut(&op_id).expect("op");
        op.repair = Some(Box::new(Repair {
            bad: bad.clone(),
            bad_devices,
            range: range.clone(),
            stage: Stage::ReadingOthers,
            pending: good.len() + bad.len() * sectors,
            bytes: vec![None; shard_count],
            probed: vec![vec![0; len]; shard_count],
            failing_sectors: vec![vec![false; sectors]; shard_count],
            more_bad: Vec::new(),
            member_failed: false,
            unconfirmed: Vec::new(),
        }));
        let cause = self.op_cause(op_id);
        for &shard in &bad {
            let place = places[shard];
            for sector in 0..sectors {
                let offset_bytes = self.member_offset_bytes(
                    place.member_chunk,
                    range.start + (sector * SECTOR) as u64,
                );
                self.issue(
                    place.member,
                    DeviceOp::Read {
                        offset_bytes,
                        len_bytes: SECTOR,
                    },
                    cause,
                    Owner::RepairProbe {
                        op: op_id,
                        shard,
                        sector,
                    },
                );
            }
        }
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
            (Stage::ReadingOthers, IoCompletion::Read(bytes)) => {
                repair.bytes[shard] = Some(bytes.into_vec())
            }
            (Stage::ReadingOthers, IoCompletion::ReadError(_)) => repair.more_bad.push(shard),
            (Stage::Rewriting, IoCompletion::Done) => {}
            (Stage::Verifying, IoCompletion::Read(bytes)) => {
                if repair.bytes[shard].as_deref() != Some(&bytes[..]) {
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
        self.repair_io_settled(op_id);
    }

    /// A probe of one sector of a bad shard finished.
    pub(super) fn repair_probe_done(
        &mut self,
        op_id: u64,
        shard: usize,
        sector: usize,
        completion: IoCompletion,
    ) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("op under repair");
        assert_eq!(repair.stage, Stage::ReadingOthers, "probes come first");
        match completion {
            IoCompletion::Failed(_) => repair.member_failed = true,
            IoCompletion::Read(bytes) => {
                assert_eq!(bytes.len(), SECTOR, "a probe reads one sector");
                repair.probed[shard][sector * SECTOR..(sector + 1) * SECTOR]
                    .copy_from_slice(&bytes);
            }
            IoCompletion::ReadError(_) => repair.failing_sectors[shard][sector] = true,
            other => panic!("repair probe got completion {other:?}"),
        }
        self.repair_io_settled(op_id);
    }

    /// One repair I/O fewer in flight: once none is, the next stage.
    fn repair_io_settled(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("op under repair");
        repair.pending -= 1;
        if repair.pending > 0 {
            return;
        }
        let places: Vec<_> = op.map.shards().collect();
        let moved = repair
            .bad
            .iter()
            .zip(&repair.bad_devices)
            .any(|(&b, &device)| self.slot_device[places[b].member] != device);
        if repair.member_failed || moved {
            self.op_replan(op_id);
            return;
        }
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("op under repair");
        match repair.stage {
            Stage::ReadingOthers if !repair.more_bad.is_empty() => {
                let (mut bad, more_bad) = (repair.bad.clone(), repair.more_bad.clone());
                let range = repair.range.clone();
                op.repair = None;
                // The new bad shards need the repair's range (they were
                // read over it); the op's own reads of them are replaced.
                for &b in &more_bad {
                    let wanted = op.reads[b].as_ref().map_or(range.clone(), |r| r.0.clone());
                    op.reads[b] = Some((wanted, crate::io::ReadBuf::default()));
                }
                bad.extend(more_bad);
                self.start_read_repair(op_id, bad);
            }
            Stage::ReadingOthers => self.repair_rewrite(op_id),
            Stage::Rewriting => self.repair_verify(op_id),
            Stage::Verifying => self.repair_verified(op_id),
        }
    }

    /// Reconstructs the bad shards over the range and writes their failing
    /// sectors back (their readable ones are kept: see the module's note).
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
        let mut writes = Vec::new();
        for &b in &repair.bad {
            let mut kept = std::mem::take(&mut repair.probed[b]);
            for run in failing_runs(&repair.failing_sectors[b]) {
                let bytes = run.start * SECTOR..run.end * SECTOR;
                kept[bytes.clone()].copy_from_slice(&shards[b][bytes.clone()]);
                writes.push((b, bytes.start as u64, shards[b][bytes].to_vec()));
            }
            repair.bytes[b] = Some(kept);
        }
        repair.stage = Stage::Rewriting;
        repair.pending = writes.len();
        if writes.is_empty() {
            // Every sector read alone: nothing to rewrite, only to confirm.
            self.repair_verify(op_id);
            return;
        }
        let places: Vec<_> = op.map.shards().collect();
        let range_start = repair.range.start;
        let cause = self.op_cause(op_id);
        for (shard, at_bytes, data) in writes {
            let place = places[shard];
            let offset_bytes = self.member_offset_bytes(place.member_chunk, range_start + at_bytes);
            self.issue(
                place.member,
                DeviceOp::Write {
                    offset_bytes,
                    data: data.into(),
                },
                cause,
                Owner::Repair { op: op_id, shard },
            );
        }
    }

    /// Reads the bad shards' ranges back.
    fn repair_verify(&mut self, op_id: u64) {
        let op = self.ops.get_mut(&op_id).expect("op");
        let repair = op.repair.as_mut().expect("repair");
        repair.stage = Stage::Verifying;
        repair.pending = repair.bad.len();
        let bad = repair.bad.clone();
        let range = repair.range.clone();
        let places: Vec<_> = op.map.shards().collect();
        let cause = self.op_cause(op_id);
        for shard in bad {
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
                *slot = bytes[at..at + (wanted.end - wanted.start) as usize]
                    .to_vec()
                    .into();
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

/// The runs of consecutive failing sectors, as sector ranges.
fn failing_runs(failing: &[bool]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (sector, _) in failing.iter().enumerate().filter(|(_, f)| **f) {
        match runs.last_mut() {
            Some(run) if run.end == sector => run.end += 1,
            _ => runs.push(sector..sector + 1),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::failing_runs;

    #[test]
    fn failing_runs_coalesce_neighbours_only() {
        assert_eq!(failing_runs(&[]), vec![]);
        assert_eq!(failing_runs(&[false, false]), vec![]);
        assert_eq!(
            failing_runs(&[true, true, false, true, false, false, true]),
            vec![0..2, 3..4, 6..7]
        );
    }
}

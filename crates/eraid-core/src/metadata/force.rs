//! Forced assembly (Linux MD's `--assemble --force`): when more members
//! have failed than the array survives, take back failed members that were
//! given, most recent superblock first, as few as make the array run.

use super::assemble::{MemberProbe, SlotState};
use super::superblock::{MemberState, Superblock};
use crate::geometry::Level;

/// How to assemble.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssembleOptions {
    /// Linux MD's `--assemble --force`: when too many members are failed for
    /// the array to run, take back failed members that were given, most
    /// recent superblock (highest event count) first, as few as make it
    /// run; they are recorded active again and every region is marked for
    /// resync. Data written while a member taken back was out is lost on
    /// it, and stripes being written when it failed may be inconsistent.
    pub force: bool,
    /// Assemble without members whose metadata cannot be read or decoded
    /// (a damaged superblock, a read error), when redundancy allows; they
    /// are named in `Assembly::left_out` with the reason. Off, such a
    /// member refuses the whole assembly.
    pub leave_out_unusable: bool,
}

/// A failed member taken back by a forced assembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForcedMember {
    pub slot: usize,
    pub path: String,
    /// Its own superblock's event count, and the array's newest.
    pub events: u64,
    pub array_events: u64,
}

/// How far from running the array is: members (RAID-0/5/6) or mirror
/// pairs (RAID-10) missing beyond what it survives.
fn shortfall(superblock: &Superblock, slots: &[SlotState]) -> usize {
    let absent = |slot: usize| !matches!(slots[slot], SlotState::Present { .. });
    let level = superblock.geometry.level;
    match level {
        Level::Raid10 => {
            let layout = crate::layout::layout_for(&superblock.geometry);
            (0..superblock.geometry.member_count as u64)
                .map(|stripe| layout.stripe_map(stripe))
                .filter(|map| absent(map.data[0].member) && absent(map.parity[0].member))
                .count()
        }
        _ => (0..slots.len())
            .filter(|&slot| absent(slot))
            .count()
            .saturating_sub(level.redundancy()),
    }
}

/// Forced assembly: takes back stale members given, highest event count
/// first, each only if it brings the array closer to running, until it
/// runs. A member whose copy describes another shape of the array (it
/// missed a growth) is never taken back. Returns what was taken back.
pub(super) fn take_back_failed(
    newest: &mut Superblock,
    slots: &mut [SlotState],
    decoded: &[Option<Superblock>],
    probes: &[MemberProbe],
    report: &mut Vec<String>,
) -> Vec<ForcedMember> {
    let mut candidates: Vec<(usize, usize, u64)> = slots
        .iter()
        .enumerate()
        .filter_map(|(slot, state)| match *state {
            SlotState::Stale { probe, events } => Some((slot, probe, events)),
            _ => None,
        })
        .collect();
    candidates.sort_by_key(|&(slot, _, events)| (std::cmp::Reverse(events), slot));
    let mut forced = Vec::new();
    for (slot, probe, events) in candidates {
        let before = shortfall(newest, slots);
        if before == 0 {
            break;
        }
        let copy = decoded[probe].as_ref().expect("stale members decoded");
        let checkpoint = |sb: &Superblock| sb.reshape.as_ref().map(|r| r.checkpoint_chunk);
        if copy.geometry != newest.geometry || checkpoint(copy) != checkpoint(newest) {
            report.push(format!(
                "member {slot}: {} cannot be forced back: its metadata (events {events}) \
                 describes the array before a growth",
                probes[probe].path
            ));
            continue;
        }
        slots[slot] = SlotState::Present { probe };
        if shortfall(newest, slots) == before {
            slots[slot] = SlotState::Stale { probe, events };
            continue;
        }
        let record = &mut newest.members[slot];
        record.state = MemberState::Active;
        record.failure = None;
        report.push(format!(
            "member {slot}: {} forced back in (its events {events}, the array's {}): \
             writes it missed are lost on it; every region will be resynced",
            probes[probe].path, newest.events
        ));
        forced.push(ForcedMember {
            slot,
            path: probes[probe].path.clone(),
            events,
            array_events: newest.events,
        });
    }
    forced
}

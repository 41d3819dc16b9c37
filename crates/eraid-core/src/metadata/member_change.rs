//! Member changes made offline, on the superblocks alone (`eraid add|fail|
//! remove MEMBERS...`): pure, from an assembly to the superblock to write
//! (events bumped), with the rules the running array applies. Every check
//! comes before anything is decided, so a refusal writes nothing.

use super::assemble::{Assembly, SlotState};
use super::superblock::{bounded_failure_reason, MemberRecord, MemberState, Superblock};
use super::SPARES_MAX;
use crate::geometry::Level;
use crate::growth::config::NewMember;
use crate::growth::record::ReshapeState;
use crate::rebuild::record::{RebuildCounters, RebuildKind, RebuildRecord, RebuildState};

#[derive(Clone, Debug)]
pub enum MemberChange {
    /// Fail member slot `slot` as if its device had failed.
    Fail { slot: usize },
    /// Forget a failed or missing slot (below the member count), or drop
    /// spare `index - member_count`.
    Remove { index: usize },
    /// Add a hot spare, or (`spare` false) a replacement for a failed or
    /// missing slot, recorded as the target of a rebuild from stripe 0.
    Add { member: NewMember, spare: bool },
}

/// What a change gives: the superblock to write, and the copy index of a
/// member added (its slot, or `member_count + j` as a spare).
pub struct ChangedSuperblock {
    pub superblock: Superblock,
    pub added_at: Option<usize>,
}

fn name(sb: &Superblock, slot: usize) -> String {
    format!("member {slot} ({})", sb.members[slot].path_hint)
}

/// Whether slot `m` is here and holds all its data.
fn whole(assembly: &Assembly, m: usize) -> bool {
    matches!(assembly.slots[m], SlotState::Present { .. })
        && assembly.superblock.members[m].state == MemberState::Active
}

/// Whether every byte stays available with `also` failed too.
fn survivable_without(assembly: &Assembly, also: usize) -> bool {
    let g = &assembly.superblock.geometry;
    let whole = |m: usize| m != also && whole(assembly, m);
    match g.level {
        Level::Raid10 => {
            let layout = crate::layout::layout_for(g);
            (0..g.member_count as u64).all(|s| {
                let map = layout.stripe_map(s);
                whole(map.data[0].member) || whole(map.parity[0].member)
            })
        }
        level => (0..g.member_count).filter(|&m| !whole(m)).count() <= level.redundancy(),
    }
}

/// The superblock after `change`, or why it is refused.
pub fn apply(assembly: &Assembly, change: MemberChange) -> Result<ChangedSuperblock, String> {
    let mut sb = assembly.superblock.clone();
    let count = sb.geometry.member_count;
    let mut added_at = None;
    match change {
        MemberChange::Fail { slot } => {
            if slot >= count {
                return Err(format!(
                    "there is no member slot {slot}: the array has {count} members; spares are \
                     removed, not failed"
                ));
            }
            if !matches!(assembly.slots[slot], SlotState::Present { .. })
                || sb.members[slot].state == MemberState::Faulty
            {
                return Err(format!("{} is already failed or missing", name(&sb, slot)));
            }
            if sb.members[slot].state == MemberState::Rebuilding {
                return Err(format!(
                    "{} is being rebuilt; serve the array to let the rebuild finish, or fail it \
                     there (eraid fail --control)",
                    name(&sb, slot)
                ));
            }
            if !survivable_without(assembly, slot) {
                let others: Vec<String> = (0..count)
                    .filter(|&m| m != slot && !whole(assembly, m))
                    .map(|m| name(&sb, m))
                    .collect();
                let why = if others.is_empty() {
                    format!("{} has no redundancy", sb.geometry.level.name())
                } else {
                    format!(
                        "{} already failed, missing or rebuilding",
                        others.join(", ")
                    )
                };
                return Err(format!(
                    "failing {} would lose data: {why}",
                    name(&sb, slot)
                ));
            }
            let record = &mut sb.members[slot];
            record.state = MemberState::Faulty;
            record.absent_unwritten_since_events = None;
            record.failure = Some("failed by the operator".into());
        }
        MemberChange::Remove { index } => {
            if let Some(spare) = index.checked_sub(count) {
                if spare >= sb.spares.len() {
                    return Err(format!(
                        "there is no member or spare {index}: the array has {count} members and {} spares",
                        sb.spares.len()
                    ));
                }
                let removed = sb.spares.remove(spare);
                // Removing a replace's new member cancels the replace.
                if let Some(record) = &mut sb.rebuild {
                    let cancels = record.state.unfinished()
                        && record
                            .replace
                            .as_ref()
                            .is_some_and(|r| r.replacement == removed.uuid);
                    if cancels {
                        record.state = RebuildState::Stopped;
                        record.reason =
                            Some("its new member is gone: removed by the operator".into());
                    }
                }
            } else {
                let here = matches!(assembly.slots[index], SlotState::Present { .. });
                let state = sb.members[index].state;
                if here && state != MemberState::Faulty {
                    let what = if state == MemberState::Rebuilding {
                        "being rebuilt"
                    } else {
                        "active"
                    };
                    return Err(format!(
                        "{} is {what}; fail it first (eraid fail)",
                        name(&sb, index)
                    ));
                }
                let record = &mut sb.members[index];
                record.state = MemberState::Faulty;
                record.absent_unwritten_since_events = None;
                record.failure = Some(match record.failure.take() {
                    Some(why) if !why.starts_with("removed") => {
                        bounded_failure_reason(&format!("removed by the operator after: {why}"))
                    }
                    Some(why) => why,
                    None => "removed by the operator".into(),
                });
            }
        }
        MemberChange::Add { member, spare } => {
            let level = sb.geometry.level;
            if level.redundancy() == 0 {
                return Err(format!(
                    "{} has no redundancy: nothing can be rebuilt onto {} and a spare would \
                     never be used",
                    level.name(),
                    member.path_hint
                ));
            }
            if sb
                .reshape
                .as_ref()
                .is_some_and(|r| r.state != ReshapeState::Done)
            {
                return Err("a growth is unfinished; add members once it is done".into());
            }
            let needed_bytes = sb.geometry.data_offset_bytes + sb.geometry.member_data_bytes;
            if member.size_bytes < needed_bytes {
                return Err(format!(
                    "{} is too small: {} bytes, but every member of this array needs at least \
                     {needed_bytes} bytes",
                    member.path_hint, member.size_bytes
                ));
            }
            if sb
                .members
                .iter()
                .chain(&sb.spares)
                .any(|m| m.uuid == member.uuid)
            {
                return Err(format!("{} is already a member or spare", member.path_hint));
            }
            let missing: Vec<usize> = (0..count)
                .filter(|&m| {
                    !matches!(assembly.slots[m], SlotState::Present { .. })
                        || sb.members[m].state == MemberState::Faulty
                })
                .collect();
            if !spare && missing.is_empty() {
                return Err(format!(
                    "the array has no failed or missing member for {} to replace; add it as a \
                     hot spare (--spare) to keep it ready",
                    member.path_hint
                ));
            }
            let rebuild_unfinished = sb.rebuild.as_ref().is_some_and(|r| r.state.unfinished());
            let record = MemberRecord {
                uuid: member.uuid,
                state: MemberState::Spare,
                path_hint: member.path_hint,
                failure: None,
                absent_unwritten_since_events: None,
                re_add_from_events: None,
            };
            if spare || rebuild_unfinished {
                // A replacement waits as a spare for the unfinished
                // rebuild; it takes a slot over when that one is done.
                if sb.spares.len() >= SPARES_MAX {
                    return Err(format!(
                        "the array has {SPARES_MAX} spares already, the most it can record"
                    ));
                }
                sb.spares.push(record);
                added_at = Some(count + sb.spares.len() - 1);
            } else {
                let slot = missing[0];
                sb.members[slot] = MemberRecord {
                    state: MemberState::Rebuilding,
                    ..record
                };
                let config = sb.rebuild.take().map(|r| r.config).unwrap_or_default();
                let total = sb.geometry.stripe_count();
                sb.rebuild = Some(RebuildRecord {
                    growth_checkpoint_chunk: None,
                    config,
                    kind: RebuildKind::Full,
                    targets: vec![slot],
                    checkpoint_stripe: 0,
                    total_stripes: total,
                    state: RebuildState::Running,
                    held: false,
                    reason: None,
                    counters: RebuildCounters::default(),
                    rebuilt_units: None,
                    replace: None,
                });
                added_at = Some(slot);
            }
        }
    }
    sb.events += 1;
    // The result must be what a running array would accept.
    super::lifecycle::check_lifecycle_fields(&sb)
        .map_err(|e| format!("the change would record an inconsistent array: {e}"))?;
    Ok(ChangedSuperblock {
        superblock: sb,
        added_at,
    })
}

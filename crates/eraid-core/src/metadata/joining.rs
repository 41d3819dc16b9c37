//! A growth starts by writing its new members' superblocks, then the old
//! members'. A crash in between leaves copies only joining members hold.
//! No data moves until every member has the new superblock, so the growth
//! may count as started only if every joining member got its copy;
//! otherwise the old members' copies decide (the growth never started).

use super::superblock::Superblock;
use crate::growth::record::ReshapeState;

/// Whether `copy` (one of `copies`) is a joining member's superblock that
/// must not decide the array: no old member's copy lists its member, and
/// not every joining member it names holds the same copy.
pub(super) fn is_unconfirmed_partial_join(copy: &Superblock, copies: &[&Superblock]) -> bool {
    let Some(record) = &copy.reshape else {
        return false;
    };
    let old_count = record.old_geometry.member_count;
    if record.state == ReshapeState::Done || copy.this_member < old_count {
        return false;
    }
    let own_uuid = copy.this_member_uuid();
    let same_array = |other: &&&Superblock| other.array_uuid == copy.array_uuid;
    let is_old_member = |other: &Superblock| {
        copy.members[..old_count.min(copy.members.len())]
            .iter()
            .any(|m| m.uuid == other.this_member_uuid())
    };
    let confirmed = copies
        .iter()
        .filter(same_array)
        .any(|other| is_old_member(other) && other.members.iter().any(|m| m.uuid == own_uuid));
    if confirmed {
        return false;
    }
    let complete = copy.members.iter().skip(old_count).all(|joining| {
        copies
            .iter()
            .filter(same_array)
            .any(|other| other.this_member_uuid() == joining.uuid && other.events == copy.events)
    });
    !complete
}

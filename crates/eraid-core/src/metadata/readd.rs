//! Whether a member that is out of date may be re-added from the
//! write-intent bitmap (Linux MD's `--re-add`): copying only the regions
//! written since it left, instead of all of it.
//!
//! The rule: the newest record says it left without losing a write (absent
//! at a start, or failed by the operator: `re_add_from_events`, never set
//! after an I/O failure); its own copy is not older than that departure
//! (so it is the member that left, not an older image of it); the array has
//! the same shape and bitmap granularity as its copy says (no growth since,
//! so every stripe is where it was); and no growth is unfinished. The
//! array keeps every bitmap mark while such a member is away (see
//! `Array::keeps_bits_for_re_add`), so the marked regions cover every write
//! it missed. Anything else needs a full rebuild.

use super::superblock::{MemberState, Superblock};
use crate::growth::record::ReshapeState;

/// Why the member holding `copy`, in `slot` of the array `newest`
/// describes, cannot be re-added from the bitmap (None: it can).
pub fn re_add_refusal(copy: &Superblock, newest: &Superblock, slot: usize) -> Option<String> {
    let record = &newest.members[slot];
    if newest.geometry.level.redundancy() == 0 {
        return Some("RAID-0 has nothing to copy from".into());
    }
    let Some(left_at) = record.re_add_from_events else {
        return Some(match &record.failure {
            Some(why) => format!("it failed ({why}): a write may be lost on it"),
            None => "the array does not record it as having left cleanly".into(),
        });
    };
    if record.state != MemberState::Faulty {
        return Some(format!("it is recorded {:?}, not failed", record.state));
    }
    if copy.events.saturating_add(1) < left_at {
        return Some(format!(
            "its copy (events {}) is older than when it left (events {left_at}), so the bitmap \
             does not cover what it missed",
            copy.events
        ));
    }
    let shape = |sb: &Superblock| {
        let g = &sb.geometry;
        (
            g.level,
            g.layout,
            g.chunk_bytes,
            g.data_offset_bytes,
            g.member_data_bytes,
            g.member_count,
            sb.bitmap_stripes_per_region,
        )
    };
    if shape(copy) != shape(newest) || copy.placement != newest.placement {
        return Some("the array's layout or bitmap changed since it left (a growth)".into());
    }
    if copy.this_member != slot {
        return Some(format!(
            "its copy says it is member {}, not {slot}",
            copy.this_member
        ));
    }
    if newest
        .reshape
        .as_ref()
        .is_some_and(|r| r.state != ReshapeState::Done)
    {
        return Some("a growth is unfinished".into());
    }
    if newest
        .rebuild
        .as_ref()
        .is_some_and(|r| r.state.unfinished())
    {
        return Some("a rebuild is unfinished; re-add it once that is done".into());
    }
    None
}

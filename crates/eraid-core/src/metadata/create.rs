//! A new array's first metadata: superblocks and an empty bitmap for every
//! member, as writes a driver performs.

use super::bitmap::{IntentBitmap, BITMAP_REGIONS_MAX};
use super::superblock::{is_valid_uuid, ArrayState, MemberRecord, MemberState, Superblock};
use crate::geometry::Geometry;

/// Array bytes one write-intent bit covers at most (MD's default bitmap
/// chunk), unless the bitmap would not fit.
pub const BITMAP_REGION_BYTES: u64 = 64 << 20;
/// A small array gets at least this many regions (each at least
/// `BITMAP_REGION_BYTES_MIN`), so a re-add or a resync after a crash
/// copies a small part of it, not a quarter.
pub const BITMAP_REGIONS_SMALL_ARRAY: u64 = 64;
pub const BITMAP_REGION_BYTES_MIN: u64 = 1 << 20;

/// Stripes per bitmap region for a geometry.
pub fn stripes_per_region(geometry: &Geometry) -> u64 {
    let region_bytes = (geometry.capacity_bytes() / BITMAP_REGIONS_SMALL_ARRAY)
        .clamp(BITMAP_REGION_BYTES_MIN, BITMAP_REGION_BYTES);
    let mut per_region = (region_bytes / geometry.stripe_data_bytes()).max(1);
    while geometry.stripe_count().div_ceil(per_region) > BITMAP_REGIONS_MAX {
        per_region *= 2;
    }
    per_region
}

pub struct NewMember {
    pub uuid: String,
    pub path_hint: String,
}

pub fn new_superblock(
    geometry: Geometry,
    array_uuid: String,
    members: Vec<NewMember>,
    created_unix_s: u64,
) -> Superblock {
    assert_eq!(members.len(), geometry.member_count);
    // UUIDs are generated, never typed: a bad one is a bug of the caller.
    assert!(
        is_valid_uuid(&array_uuid) && members.iter().all(|m| is_valid_uuid(&m.uuid)),
        "invalid uuid"
    );
    Superblock {
        array_uuid,
        events: 1,
        state: ArrayState::Clean,
        geometry,
        this_member: 0,
        members: members
            .into_iter()
            .map(|m| MemberRecord {
                uuid: m.uuid,
                state: MemberState::Active,
                path_hint: m.path_hint,
                failure: None,
                absent_unwritten_since_events: None,
                re_add_from_events: None,
            })
            .collect(),
        bitmap_stripes_per_region: stripes_per_region(&geometry),
        created_unix_s,
        placement: None,
        crs_scaled: None,
        crs_grown_before: Vec::new(),
        reshape: None,
        spares: Vec::new(),
        rebuild: None,
        retired: None,
        journal: None,
        cache: None,
        read_errors: Default::default(),
    }
}

/// (member, offset_bytes, bytes) to write, then flush, on each member. The
/// other slots are zeroed so no earlier array's records survive there.
/// `needs_initial_resync`: the members held data before (not fresh sparse
/// files), so parity is not yet consistent: every region starts dirty and
/// the first assembly resynchronises the whole array.
pub fn initial_writes(
    superblock: &Superblock,
    needs_initial_resync: bool,
) -> Vec<(usize, u64, Vec<u8>)> {
    let regions = superblock
        .geometry
        .stripe_count()
        .div_ceil(superblock.bitmap_stripes_per_region);
    let mut bitmap = IntentBitmap::new(regions);
    let mut superblock = superblock.clone();
    // Without redundancy there is no parity to make consistent.
    if needs_initial_resync && superblock.geometry.parity_per_stripe() > 0 {
        superblock.state = super::superblock::ArrayState::Dirty;
        for region in 0..regions {
            bitmap.set(region, true);
        }
    }
    let superblock = &superblock;
    let bitmap = bitmap.encode(1);
    let mut writes = Vec::new();
    for member in 0..superblock.geometry.member_count {
        let sb = superblock.encode_for(member);
        let sb_slot = Superblock::slot_offset_bytes(superblock.events);
        let other_sb = Superblock::slot_offset_bytes(superblock.events + 1);
        writes.push((member, sb_slot, sb.clone()));
        writes.push((member, other_sb, vec![0u8; sb.len()]));
        writes.push((member, IntentBitmap::slot_offset_bytes(1), bitmap.clone()));
        writes.push((
            member,
            IntentBitmap::slot_offset_bytes(2),
            vec![0u8; bitmap.len()],
        ));
    }
    // Hot spares carry the superblock (naming them as spares), not the
    // bitmap; any old bitmap there is never read while they are spares.
    let count = superblock.geometry.member_count;
    for spare in count..count + superblock.spares.len() {
        let sb = superblock.encode_for(spare);
        writes.push((
            spare,
            Superblock::slot_offset_bytes(superblock.events),
            sb.clone(),
        ));
        writes.push((
            spare,
            Superblock::slot_offset_bytes(superblock.events + 1),
            vec![0u8; sb.len()],
        ));
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Level, ParityLayout, MEMBER_COUNT_MAX, METADATA_BYTES};

    /// Creating the largest array with the longest paths a system allows
    /// (PATH_MAX) writes superblocks that fit and decode on every member.
    #[test]
    fn many_members_with_long_paths_fit_the_superblock() {
        for members in [17, MEMBER_COUNT_MAX] {
            let geometry = Geometry::new(
                Level::Raid6,
                ParityLayout::LeftSymmetric,
                members,
                64 << 10,
                METADATA_BYTES + (1 << 30),
            )
            .unwrap();
            let new_members = (0..members)
                .map(|i| NewMember {
                    uuid: format!("00000000-0000-4000-8000-{i:012}"),
                    path_hint: format!("/{}/member-{i}", "deep/".repeat(800)),
                })
                .collect();
            let sb = new_superblock(geometry, "array".into(), new_members, 0);
            let mut areas = vec![vec![0u8; METADATA_BYTES as usize]; members];
            for (member, offset, bytes) in initial_writes(&sb, true) {
                let at = offset as usize;
                areas[member][at..at + bytes.len()].copy_from_slice(&bytes);
            }
            for (member, area) in areas.iter().enumerate() {
                let decoded = Superblock::decode_newest(area).unwrap();
                assert_eq!(decoded.this_member, member);
                assert!(decoded.members[member]
                    .path_hint
                    .ends_with(&format!("/member-{member}")));
            }
        }
    }
}

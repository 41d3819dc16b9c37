use super::*;
use crate::geometry::{Geometry, Level, ParityLayout};
use proptest::prelude::*;
use std::collections::HashSet;

fn geometry(level: Level, layout: ParityLayout, members: usize, member_chunks: u64) -> Geometry {
    let chunk = 64 << 10;
    Geometry::new(
        level,
        layout,
        members,
        chunk,
        crate::geometry::METADATA_BYTES + member_chunks * chunk,
    )
    .unwrap()
}

fn all_shapes() -> Vec<(Level, ParityLayout)> {
    let mut shapes = vec![
        (Level::Raid0, ParityLayout::None),
        (Level::Raid10, ParityLayout::Near2),
    ];
    for level in [Level::Raid5, Level::Raid6] {
        for layout in [
            ParityLayout::LeftAsymmetric,
            ParityLayout::LeftSymmetric,
            ParityLayout::RightAsymmetric,
            ParityLayout::RightSymmetric,
        ] {
            shapes.push((level, layout));
        }
    }
    shapes
}

proptest! {
    /// Every (member, chunk) slot holds at most one chunk of one stripe, every
    /// logical chunk lands in exactly one data place, and no slot is outside
    /// the members' data areas.
    #[test]
    fn every_layout_is_one_to_one(shape in 0usize..10, members in 2usize..12, member_chunks in 1u64..40) {
        let (level, layout) = all_shapes()[shape];
        prop_assume!(members >= level.member_count_min());
        let g = geometry(level, layout, members, member_chunks);
        let map = layout_for(&g);
        let mut used = HashSet::new();
        for stripe in 0..g.stripe_count() {
            let s = map.stripe_map(stripe);
            prop_assert_eq!(s.data.len(), g.data_per_stripe());
            prop_assert_eq!(s.parity.len(), g.parity_per_stripe());
            for place in s.shards() {
                prop_assert!(place.member < members);
                prop_assert!(place.member_chunk < g.member_chunks());
                prop_assert!(used.insert(place), "slot {:?} used twice", place);
            }
            if level != Level::Raid10 {
                let members_used: HashSet<usize> = s.shards().map(|p| p.member).collect();
                prop_assert_eq!(members_used.len(), members, "a stripe uses every member once");
            } else {
                prop_assert_ne!(s.data[0].member, s.parity[0].member, "copies on distinct members");
            }
        }
        let logical_chunks = g.capacity_bytes() / g.chunk_bytes;
        let mut seen = HashSet::new();
        for chunk in 0..logical_chunks {
            let (stripe, index) = map.locate(chunk);
            prop_assert!(stripe < g.stripe_count());
            prop_assert!(seen.insert((stripe, index)));
        }
    }
}

/// The data members of stripe s, with None where parity sits, as rows.
fn row(map: &dyn Layout, stripe: u64) -> (Vec<usize>, Vec<usize>) {
    let s = map.stripe_map(stripe);
    (
        s.data.iter().map(|p| p.member).collect(),
        s.parity.iter().map(|p| p.member).collect(),
    )
}

/// ALV paper, Fig. 1, state 0 (3 disks, left-asymmetric): disk 0 holds
/// 0 2 P2 6 8 P5; disk 1 holds 1 P1 4 7 P4 10; disk 2 holds P0 3 5 P3 9 11.
#[test]
fn left_asymmetric_matches_alv_figure_1() {
    let g = geometry(Level::Raid5, ParityLayout::LeftAsymmetric, 3, 6);
    let map = layout_for(&g);
    let expected = [
        (vec![0, 1], 2), // 0 1 P0
        (vec![0, 2], 1), // 2 P1 3
        (vec![1, 2], 0), // P2 4 5
        (vec![0, 1], 2), // 6 7 P3
        (vec![0, 2], 1), // 8 P4 9
        (vec![1, 2], 0), // P5 10 11
    ];
    for (stripe, (data, parity)) in expected.into_iter().enumerate() {
        assert_eq!(
            row(map.as_ref(), stripe as u64),
            (data, vec![parity]),
            "stripe {stripe}"
        );
    }
}

/// MD's documented left-symmetric layout for 4 disks (md(4)):
/// row 0: D0 D1 D2 P; row 1: D4 D5 P D3; row 2: D8 P D6 D7; row 3: P D9 D10 D11.
#[test]
fn left_symmetric_matches_md() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 4);
    let map = layout_for(&g);
    assert_eq!(row(map.as_ref(), 0), (vec![0, 1, 2], vec![3]));
    assert_eq!(row(map.as_ref(), 1), (vec![3, 0, 1], vec![2]));
    assert_eq!(row(map.as_ref(), 2), (vec![2, 3, 0], vec![1]));
    assert_eq!(row(map.as_ref(), 3), (vec![1, 2, 3], vec![0]));
}

#[test]
fn right_layouts_start_parity_on_member_zero() {
    for layout in [ParityLayout::RightAsymmetric, ParityLayout::RightSymmetric] {
        let g = geometry(Level::Raid5, layout, 4, 4);
        let map = layout_for(&g);
        for stripe in 0..4u64 {
            assert_eq!(row(map.as_ref(), stripe).1, vec![stripe as usize]);
        }
    }
    let g = geometry(Level::Raid5, ParityLayout::RightAsymmetric, 4, 4);
    assert_eq!(row(layout_for(&g).as_ref(), 1).0, vec![0, 2, 3]);
    let g = geometry(Level::Raid5, ParityLayout::RightSymmetric, 4, 4);
    assert_eq!(row(layout_for(&g).as_ref(), 1).0, vec![2, 3, 0]);
}

/// MD's RAID-6 left-symmetric on 5 disks: P walks down from the last
/// member, Q follows P (wrapping), data starts after Q.
#[test]
fn raid6_left_symmetric_matches_md() {
    let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 5, 5);
    let map = layout_for(&g);
    assert_eq!(row(map.as_ref(), 0), (vec![1, 2, 3], vec![4, 0]));
    assert_eq!(row(map.as_ref(), 1), (vec![0, 1, 2], vec![3, 4]));
    assert_eq!(row(map.as_ref(), 2), (vec![4, 0, 1], vec![2, 3]));
}

#[test]
fn raid10_near_puts_copies_side_by_side() {
    let g = geometry(Level::Raid10, ParityLayout::Near2, 4, 4);
    let map = layout_for(&g);
    assert_eq!(
        map.stripe_map(0).data[0],
        ChunkPlace {
            member: 0,
            member_chunk: 0
        }
    );
    assert_eq!(
        map.stripe_map(0).parity[0],
        ChunkPlace {
            member: 1,
            member_chunk: 0
        }
    );
    assert_eq!(
        map.stripe_map(3).data[0],
        ChunkPlace {
            member: 2,
            member_chunk: 1
        }
    );
    let odd = geometry(Level::Raid10, ParityLayout::Near2, 3, 4);
    let map = layout_for(&odd);
    assert_eq!(
        map.stripe_map(1).data[0],
        ChunkPlace {
            member: 2,
            member_chunk: 0
        }
    );
    assert_eq!(
        map.stripe_map(1).parity[0],
        ChunkPlace {
            member: 0,
            member_chunk: 1
        }
    );
}

fn crs_geometry(members: usize, parity_members: usize, member_chunks: u64) -> Geometry {
    let w = crate::geometry::crs_default_w(members).unwrap();
    let chunk = crate::geometry::crs_default_chunk_bytes(w);
    Geometry::new(
        Level::Crs { parity_members, w },
        ParityLayout::LeftSymmetric,
        members,
        chunk,
        crate::geometry::METADATA_BYTES + member_chunks * chunk,
    )
    .unwrap()
}

proptest! {
    /// CRS: every stripe uses each member once (m parity, k data), every
    /// slot holds one chunk, and every member carries parity m times in
    /// every n stripes (the load rotates evenly).
    #[test]
    fn crs_layout_is_one_to_one_and_rotates_evenly(
        members in 2usize..20,
        parity in 1usize..6,
        member_chunks in 1u64..50,
    ) {
        prop_assume!(parity < members);
        let g = crs_geometry(members, parity, member_chunks);
        let map = layout_for(&g);
        let mut used = HashSet::new();
        let mut parity_turns = vec![0u64; members];
        for stripe in 0..g.stripe_count() {
            let s = map.stripe_map(stripe);
            prop_assert_eq!(s.data.len(), members - parity);
            prop_assert_eq!(s.parity.len(), parity);
            let members_used: HashSet<usize> = s.shards().map(|p| p.member).collect();
            prop_assert_eq!(members_used.len(), members);
            for place in s.shards() {
                prop_assert!(place.member_chunk < g.member_chunks());
                prop_assert!(used.insert(place), "slot {:?} used twice", place);
            }
            for p in &s.parity {
                parity_turns[p.member] += 1;
            }
        }
        let full_cycles = g.stripe_count() / members as u64;
        if g.stripe_count().is_multiple_of(members as u64) {
            for turns in parity_turns {
                prop_assert_eq!(turns, full_cycles * parity as u64);
            }
        }
    }
}

/// With two parity members CRS places chunks exactly as RAID-6
/// left-symmetric does (P then Q, data after them).
#[test]
fn crs_with_two_parity_members_is_raid6_left_symmetric() {
    let crs = layout_for(&crs_geometry(6, 2, 12));
    let raid6 = layout_for(&geometry(Level::Raid6, ParityLayout::LeftSymmetric, 6, 12));
    for stripe in 0..12 {
        assert_eq!(row(&*crs, stripe), row(&*raid6, stripe), "stripe {stripe}");
    }
}

/// (4, 3) over 7 members: stripe 0 puts parity on members 6, 0, 1 and data
/// on 2..=5; stripe 1 on 5, 6, 0 and data on 1..=4.
#[test]
fn crs_three_parity_rotation_by_hand() {
    let crs = layout_for(&crs_geometry(7, 3, 7));
    assert_eq!(row(&*crs, 0), (vec![2, 3, 4, 5], vec![6, 0, 1]));
    assert_eq!(row(&*crs, 1), (vec![1, 2, 3, 4], vec![5, 6, 0]));
}

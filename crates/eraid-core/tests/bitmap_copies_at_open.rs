//! The write-intent bitmap an array opens with is the union of its
//! members' copies. After a crash that kept the last bitmap write on one
//! member only, a region is marked there alone; if that member then fails
//! before the resync reaches the region, a second crash reassembles
//! without it and the region is forgotten: its stale parity is never
//! resynced, and a rebuild keeps it (DST seed 5378: CRS m=2, a check found
//! 2 mismatched stripes after the replacement was rebuilt). The opening now
//! writes the union to every member first.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::UserOp;
use eraid_core::testing::MemHarness;
use eraid_core::Array;

#[test]
fn a_region_marked_on_one_member_only_survives_that_member_failing() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 16);
    // Several regions; the write goes to the last one.
    let mut h = MemHarness::create_with_regions(g, 5, Some(4));
    let mut array = open(&mut h);
    for _ in 0..20 {
        h.idle(&mut array, 50);
    }
    assert_eq!(array.status_json()["dirty_regions"], 0);
    let metadata_bytes = g.data_offset_bytes as usize;
    let before: Vec<Vec<u8>> = h
        .members
        .iter()
        .map(|m| m.as_ref().expect("member").durable[..metadata_bytes].to_vec())
        .collect();
    let offset_bytes = array.capacity_bytes() - 8 * SECTOR_BYTES;
    let write = UserOp::Write {
        offset_bytes,
        data: vec![7; 8 * SECTOR_BYTES as usize].into(),
        fua: true,
    };
    call(&mut h, &mut array, 1, write).expect("write");
    h.crash();
    drop(array);
    // The bitmap write marking the region survived on member 0 alone.
    let keeper = 0;
    for (i, m) in h.members.iter_mut().enumerate() {
        let m = m.as_mut().expect("member");
        if i != keeper {
            m.durable[..metadata_bytes].copy_from_slice(&before[i]);
            m.current[..metadata_bytes].copy_from_slice(&before[i]);
        }
    }
    let mut array = Array::open(h.assemble().expect("assembles"), options(), h.now);
    assert_eq!(
        array.status_json()["dirty_regions"],
        1,
        "the union marks it"
    );
    // The member holding the mark fails before the resync gets there.
    h.members[keeper].as_mut().expect("keeper").failed = true;
    h.run(&mut array);
    let status = array.status_json();
    assert_eq!(status["degraded"], true, "{status}");
    h.crash();
    drop(array);
    h.members[keeper] = None;
    let array = Array::open(h.assemble().expect("assembles degraded"), options(), h.now);
    let status = array.status_json();
    assert_eq!(
        status["dirty_regions"], 1,
        "the region is still marked without the member that held it: {status}"
    );
}

//! A parity array that loses power while degraded opens with its dirty
//! regions unresynced (they cannot be resynced without every member). They
//! must stay marked in the write-intent bitmap however long the array then
//! runs: the clean cycle clearing them let a second crash forget them, and
//! the eventual rebuild left their stale parity (DST seed 10155: CRS m=3,
//! a check found mismatches after the replacements).

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::UserOp;
use eraid_core::testing::MemHarness;
use eraid_core::Array;

fn unresynced_regions_stay_marked(level: Level, layout: ParityLayout, members: usize) {
    let g = geometry(level, layout, members, 16);
    let mut h = MemHarness::create(g, 7);
    let mut array = open(&mut h);
    let victim = 1;
    h.members[victim].as_mut().expect("victim").failed = true;
    for id in 1..=8u64 {
        let write = UserOp::Write {
            offset_bytes: id * 4096,
            data: vec![id as u8; 16 * SECTOR_BYTES as usize].into(),
            fua: false,
        };
        call(&mut h, &mut array, id, write).expect("degraded write succeeds");
    }
    h.crash();
    drop(array);
    h.members[victim] = None;
    let mut array = Array::open(h.assemble().expect("assembles degraded"), options(), h.now);
    h.run(&mut array);
    let status = array.status_json();
    let unresynced = status["unresynced_regions"].as_u64().unwrap();
    assert!(unresynced > 0, "the crash left regions to resync: {status}");
    // Long past the bitmap's clean delay.
    for _ in 0..200 {
        h.idle(&mut array, 50);
    }
    let status = array.status_json();
    assert_eq!(status["unresynced_regions"].as_u64().unwrap(), unresynced);
    assert!(
        status["dirty_regions"].as_u64().unwrap() >= unresynced,
        "unresynced regions stay marked in the bitmap: {status}"
    );
    // And on disk: a second crash still finds them.
    h.crash();
    drop(array);
    let array = Array::open(h.assemble().expect("assembles degraded"), options(), h.now);
    assert_eq!(
        array.status_json()["dirty_regions"].as_u64().unwrap(),
        unresynced,
        "the second open still knows the regions"
    );
}

#[test]
fn a_degraded_crash_keeps_crs_regions_marked_until_rebuilt() {
    unresynced_regions_stay_marked(
        Level::Crs {
            parity_members: 3,
            w: 3,
        },
        ParityLayout::LeftSymmetric,
        7,
    );
}

#[test]
fn a_degraded_crash_keeps_raid5_regions_marked_until_rebuilt() {
    unresynced_regions_stay_marked(Level::Raid5, ParityLayout::LeftSymmetric, 4);
}

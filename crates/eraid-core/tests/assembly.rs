//! Assembly decisions: stale members, foreign members, missing members,
//! and torn superblock writes.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::UserOp;
use eraid_core::metadata::assemble::{assemble, AssemblyError, SlotState};
use eraid_core::testing::MemHarness;

#[test]
fn member_that_missed_writes_is_stale_and_not_used() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 16);
    let mut h = MemHarness::create(g, 1);
    // Run degraded without member 1, write data, close.
    let saved = h.members[1].take();
    let mut array = open(&mut h);
    call(
        &mut h,
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: vec![7; 8192].into(),
            fua: false,
        },
    )
    .unwrap();
    close(&mut h, &mut array);
    // Member 1 comes back with old data: it must be stale, not trusted;
    // it only left (no write lost on it), so it is re-added from the
    // bitmap (`readd.rs` tests that) rather than read as it is.
    h.members[1] = saved;
    let assembly = h.assemble().unwrap();
    assert!(
        matches!(assembly.slots[1], SlotState::Stale { .. }),
        "{:?}",
        assembly.slots
    );
    assert_eq!(assembly.re_add, vec![1], "{:?}", assembly.report);
    let mut array = open(&mut h);
    let data = call(
        &mut h,
        &mut array,
        2,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: 8192,
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(data, vec![7; 8192]);
    close(&mut h, &mut array);
    assert_eq!(array.status_json()["rebuild"]["kind"], "re-add");
    assert_eq!(array.status_json()["rebuild"]["state"], "done");
    assert!(!array.status_json()["degraded"].as_bool().unwrap());
}

#[test]
fn member_of_another_array_is_refused() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 3, 16);
    let mut a = MemHarness::create(g, 1);
    let b = MemHarness::create(g, 2);
    a.members[2] = b.members.into_iter().nth(2).unwrap();
    match a.assemble() {
        Err(AssemblyError::ForeignMember { path, .. }) => assert_eq!(path, "mem2"),
        other => panic!("expected a foreign-member error, got {other:?}"),
    }
}

#[test]
fn raid0_without_a_member_names_it() {
    let g = geometry(Level::Raid0, ParityLayout::None, 3, 16);
    let mut h = MemHarness::create(g, 3);
    h.members[1] = None;
    let error = h.assemble().unwrap_err();
    assert!(
        matches!(error, AssemblyError::MissingMember { slot: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("mem1"), "{error}");
}

#[test]
fn too_many_missing_is_refused() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 16);
    let mut h = MemHarness::create(g, 4);
    h.members[0] = None;
    h.members[3] = None;
    assert!(matches!(
        h.assemble(),
        Err(AssemblyError::TooManyMissing { missing: 2, .. })
    ));
    let g = geometry(Level::Raid10, ParityLayout::Near2, 4, 16);
    let mut h = MemHarness::create(g, 5);
    h.members[0] = None;
    h.members[2] = None;
    assert!(h.assemble().is_ok(), "one copy of each pair is left");
    h.members[1] = None;
    assert!(matches!(
        h.assemble(),
        Err(AssemblyError::MirrorLost { .. })
    ));
}

#[test]
fn torn_superblock_falls_back_to_the_other_slot() {
    let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 4, 16);
    let mut h = MemHarness::create(g, 6);
    let mut array = open(&mut h);
    close(&mut h, &mut array);
    let events_before = array.status_json()["events"].as_u64().unwrap();
    // Damage the newest slot on every member: the older copy still assembles.
    let newest_slot =
        eraid_core::metadata::superblock::Superblock::slot_offset_bytes(events_before) as usize;
    for m in h.members.iter_mut().flatten() {
        m.current[newest_slot + 100] ^= 0xff;
    }
    let assembly = h.assemble().unwrap();
    assert_eq!(assembly.superblock.events, events_before - 1);
    // Damage both slots on one member: it is not a member any more.
    let m = h.members[0].as_mut().unwrap();
    for byte in m.current[..METADATA_BYTES as usize / 4].iter_mut() {
        *byte = 0x5a;
    }
    let probes = h.probes();
    assert!(matches!(
        assemble(&probes),
        Err(AssemblyError::NotAMember { .. })
    ));
}

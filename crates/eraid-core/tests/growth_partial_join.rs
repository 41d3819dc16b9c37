//! A growth writes its joining members' superblocks before the old
//! members'. A crash after only some joining members got theirs must leave
//! the growth not started: the old members decide, and the joining member
//! that holds the newer copy is named to be left out (DST seeds 1427,
//! 30441 on RAID-5; 331 on RAID-0).

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, METADATA_BYTES};
use eraid_core::growth::config::ReshapeStrategy;
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::metadata::assemble::AssemblyError;
use eraid_core::metadata::superblock::Superblock;
use eraid_core::testing::MemHarness;

const MEMBER_CHUNKS: u64 = 12;
const OLD_COUNT: usize = 3;

fn crash_with_one_of_two_joined(level: Level, layout: ParityLayout, strategy: ReshapeStrategy) {
    let g = geometry(level, layout, OLD_COUNT, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, 11);
    let mut array = open(&mut h);
    let data: Vec<u8> = (0..array.capacity_bytes())
        .map(|i| (i % 251) as u8)
        .collect();
    let write = UserOp::Write {
        offset_bytes: 0,
        data: data.clone().into(),
        fua: true,
    };
    call(&mut h, &mut array, 1, write).expect("write ok");
    let members = h.add_blank_members(2, member_bytes);
    let before: Vec<Vec<u8>> = h.members[..OLD_COUNT]
        .iter()
        .map(|m| m.as_ref().unwrap().durable.clone())
        .collect();
    let reply = array.handle_admin(
        h.now,
        AdminCommand::StartGrow {
            members,
            config: growth_config(strategy, 24 * CHUNK),
        },
    );
    assert!(reply.get("error").is_none(), "growth started: {reply}");
    let joined = |h: &MemHarness, index: usize| {
        let m = h.members[index].as_ref().expect("joining member");
        Superblock::decode_newest(&m.durable[..METADATA_BYTES as usize]).is_ok()
    };
    while !(joined(&h, OLD_COUNT) && joined(&h, OLD_COUNT + 1)) {
        assert!(h.step(&mut array), "the joining write never landed");
    }
    // Power fails with the old members as before the growth and only the
    // first joining member's superblock durable; the second is blank, so a
    // driver is not given it.
    h.crash();
    drop(array);
    for (m, image) in h.members.iter_mut().zip(&before) {
        let m = m.as_mut().unwrap();
        m.current = image.clone();
        m.durable = image.clone();
    }
    h.members[OLD_COUNT + 1] = None;
    match h.assemble() {
        Err(
            error @ AssemblyError::SlotBeyondArray {
                slot, member_count, ..
            },
        ) => {
            assert_eq!((slot, member_count), (OLD_COUNT, OLD_COUNT), "{error}");
            assert!(error.to_string().contains("mem3"), "{error}");
        }
        other => panic!("expected the half-joined member to be named, got {other:?}"),
    }
    // Left out, the old members run the old array with the data intact.
    h.members[OLD_COUNT] = None;
    h.members.truncate(OLD_COUNT);
    let assembly = h.assemble().expect("the old members assemble");
    assert_eq!(assembly.superblock.geometry.member_count, OLD_COUNT);
    assert!(
        assembly.superblock.reshape.is_none(),
        "{:?}",
        assembly.report
    );
    assert_eq!(assembly.missing_or_stale(), 0, "{:?}", assembly.report);
    let mut array = open(&mut h);
    assert_eq!(read_all(&mut h, &mut array, 2), data);
    close(&mut h, &mut array);
}

#[test]
fn raid5_crash_with_only_some_joining_members_recorded_keeps_the_old_array() {
    crash_with_one_of_two_joined(
        Level::Raid5,
        ParityLayout::LeftSymmetric,
        ReshapeStrategy::Alv,
    );
}

#[test]
fn raid0_crash_with_only_some_joining_members_recorded_keeps_the_old_array() {
    crash_with_one_of_two_joined(
        Level::Raid0,
        ParityLayout::None,
        ReshapeStrategy::RoundRobin,
    );
}

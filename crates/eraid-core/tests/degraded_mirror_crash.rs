//! A RAID-10 that loses power while degraded: its dirty regions cannot be
//! resynced until the failed member is replaced, and the rebuild copies only
//! the replaced member's chunks. Mirror pairs on two surviving members that
//! the crash left different (one copy written, the other not) must still be
//! made equal once the array is whole: a check then finds no mismatch.
//! (Found by the deterministic simulation, `eraid-dst` seed 19: the
//! rebuild's end dropped the regions as if it had resynced them.)

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::Array;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Returns the mismatches a check finds once the array is whole again.
fn crash_degraded_then_rebuild(seed: u64, members: usize) -> u64 {
    let g = geometry(Level::Raid10, ParityLayout::Near2, members, 16);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x10_10);
    let mut array = open(&mut h);
    let capacity = array.capacity_bytes();
    let victim = rng.gen_range(0..members);
    h.members[victim].as_mut().expect("victim").failed = true;
    // Unflushed writes everywhere; the power loss keeps some copies only.
    for id in 1..=24u64 {
        let len = rng.gen_range(1..=16u64) * SECTOR_BYTES;
        let offset = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        call(
            &mut h,
            &mut array,
            id,
            UserOp::Write {
                offset_bytes: offset,
                data: data.into(),
                fua: false,
            },
        )
        .expect("degraded write succeeds");
    }
    h.crash();
    drop(array);
    h.members[victim] = None;
    let mut array = Array::open(h.assemble().expect("assembles degraded"), options(), h.now);
    h.run(&mut array);
    let size = h.members.iter().flatten().next().unwrap().current.len() as u64;
    let member = h.add_blank_members(1, size).remove(0);
    let reply = array.handle_admin(
        h.now,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
    );
    assert!(reply.get("error").is_none(), "{reply}");
    h.run(&mut array);
    for _ in 0..100 {
        h.idle(&mut array, 50);
    }
    let status = array.status_json();
    assert_eq!(status["degraded"], false, "seed {seed}: rebuilt: {status}");
    assert_eq!(status["unresynced_regions"], 0, "seed {seed}: {status}");
    check(&mut h, &mut array, false).0
}

#[test]
fn mirror_copies_a_crash_left_different_are_resynced_once_a_degraded_raid10_is_whole() {
    for members in [3, 4, 5] {
        for seed in 0..12 {
            let mismatches = crash_degraded_then_rebuild(seed, members);
            assert_eq!(
                mismatches, 0,
                "seed {seed}, {members} members: mirror copies differ after the rebuild"
            );
        }
    }
}

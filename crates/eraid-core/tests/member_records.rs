//! What the superblocks say about members, and when: a member absent at a
//! start stays current until data is written without it (so starting
//! without it by mistake, or a read-only command, costs nothing), a write
//! made without it is acknowledged only once its staleness is on disk, and
//! a flush that saw a member fail is acknowledged only once that failure
//! is on disk. Otherwise a power loss brings the member back as current
//! and serves its stale data.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::UserOp;
use eraid_core::metadata::assemble::{assemble, SlotState};
use eraid_core::testing::MemHarness;
use eraid_core::Array;

const SEEDS: u64 = 24;

fn raid5(seed: u64) -> MemHarness {
    MemHarness::create(
        geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 32),
        seed,
    )
}

fn write(offset_bytes: u64, byte: u8) -> UserOp {
    UserOp::Write {
        offset_bytes,
        data: vec![byte; 8192].into(),
        fua: false,
    }
}

/// Assembles from what is durable on each member.
fn assemble_durable(h: &MemHarness) -> eraid_core::metadata::assemble::Assembly {
    assemble(&h.durable_probes()).expect("assembles")
}

#[test]
fn a_member_absent_at_a_start_stays_current_until_a_write() {
    for seed in 0..SEEDS {
        let mut h = raid5(seed);
        let mut array = open(&mut h);
        call(&mut h, &mut array, 1, write(0, 7)).expect("write");
        let before = read_all(&mut h, &mut array, 2);
        close(&mut h, &mut array);
        // Started without member 3, read from, stopped: nothing written.
        let member = h.members[3].take();
        let mut array = open(&mut h);
        assert_eq!(array.status_json()["members"][3]["state"], "missing");
        assert_eq!(read_all(&mut h, &mut array, 3), before, "seed {seed}");
        let flushed = call(&mut h, &mut array, 4, UserOp::Flush);
        assert!(flushed.is_ok(), "seed {seed}: {flushed:?}");
        close(&mut h, &mut array);
        h.members[3] = member;
        let assembly = h.assemble().expect("assembles with every member");
        assert!(
            matches!(assembly.slots[3], SlotState::Present { .. }),
            "seed {seed}: {:?}",
            assembly.report
        );
        let mut array = open(&mut h);
        assert_eq!(array.status_json()["degraded"], false);
        assert_eq!(read_all(&mut h, &mut array, 5), before, "seed {seed}");
        close(&mut h, &mut array);
    }
}

/// With the write-intent bitmap, its own write orders things too (the
/// metadata queue is FIFO); without it, only the wait for the record does.
#[test]
fn a_write_without_an_absent_member_records_it_before_the_reply() {
    for (seed, bitmap) in (0..SEEDS).flat_map(|s| [(s, true), (s, false)]) {
        let options = eraid_core::ArrayOptions {
            write_intent_bitmap: bitmap,
            ..options()
        };
        let mut h = raid5(seed);
        let mut array = open(&mut h);
        close(&mut h, &mut array);
        let member = h.members[3].take();
        let mut array = Array::open(h.assemble().expect("assembles"), options, h.now);
        h.run(&mut array);
        h.submit(&mut array, 1, write(64 << 10, 9));
        while h.take_reply(1).is_none() {
            assert!(h.step(&mut array), "seed {seed}: write never answered");
        }
        // What a power loss right after the acknowledgement would leave.
        h.members[3] = member;
        let assembly = assemble_durable(&h);
        assert!(
            matches!(assembly.slots[3], SlotState::Stale { .. }),
            "seed {seed} (bitmap {bitmap}): member 3 missed a write but assembles as current: {:?}",
            assembly.report
        );
        let record = &assembly.superblock.members[3];
        assert!(
            record
                .failure
                .as_deref()
                .is_some_and(|f| f.contains("written without it")),
            "seed {seed}: {record:?}"
        );
    }
}

#[test]
fn a_flush_that_saw_a_member_fail_is_acknowledged_once_the_failure_is_recorded() {
    for seed in 0..SEEDS {
        let mut h = raid5(seed);
        let mut array = open(&mut h);
        call(&mut h, &mut array, 1, write(0, 3)).expect("write");
        // Member 2's flush (and everything after) fails; after the reply
        // it works again, as a member that was only unplugged.
        h.submit(&mut array, 2, UserOp::Flush);
        h.members[2].as_mut().expect("member").failed = true;
        while h.take_reply(2).is_none() {
            assert!(h.step(&mut array), "seed {seed}: flush never answered");
        }
        h.members[2].as_mut().expect("member").failed = false;
        let assembly = assemble_durable(&h);
        assert!(
            matches!(assembly.slots[2], SlotState::Stale { .. }),
            "seed {seed}: member 2 failed under an acknowledged flush but assembles as current: {:?}",
            assembly.report
        );
    }
}

//! Power loss at a random instant around a flush under which a member
//! fails (its flush and every later I/O fail), the member then coming back
//! (a cable, not a disk): after reassembly with every member,
//! - every sector acknowledged before a completed flush reads back, except
//!   in stripes written since (a degraded array's write hole: a torn write
//!   there leaves parity that rebuilds the failed member's chunk wrong; the
//!   write-back journal is what closes it);
//! - once a flush that saw the failure has been acknowledged, the failed
//!   member never comes back as current.
//!
//! Failing runs print their seed; ERAID_CRASH_SEEDS sets how many.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::UserOp;
use eraid_core::metadata::assemble::SlotState;
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 32;

fn crash_once(seed: u64, level: Level, layout: ParityLayout, members: usize) {
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    let data_per_stripe = g.data_per_stripe() as u64;
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x51ed_270b));
    let mut array = open(&mut h);
    let capacity = array.capacity_bytes();
    let stripe_bytes = data_per_stripe * CHUNK;
    let sectors = (capacity / SECTOR_BYTES) as usize;
    let mut acked = vec![0u8; capacity as usize];
    let mut flushed = acked.clone();
    let mut touched = vec![false; sectors];
    let victim = rng.gen_range(0..members);
    let crash_round = rng.gen_range(2..14);
    // Half the runs lose power in the very round the member fails.
    let fail_round = if rng.gen_bool(0.5) {
        crash_round
    } else {
        rng.gen_range(1..=crash_round)
    };
    let mut failed = false;
    let mut flushed_after_failure = false;
    let mut id = 1u64;
    for round in 0..=crash_round {
        let flush_round = round == fail_round || rng.gen_bool(0.3);
        let mut writes = Vec::new();
        if flush_round {
            h.submit(&mut array, id, UserOp::Flush);
            if round == fail_round {
                h.members[victim].as_mut().expect("member").failed = true;
                failed = true;
            }
        } else {
            for _ in 0..rng.gen_range(1..6) {
                let len = rng.gen_range(1..=16u64) * SECTOR_BYTES;
                let offset = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                // Until the next flush the whole stripe is uncertain: a
                // torn write there breaks the parity of its other chunks.
                let stripes = offset / stripe_bytes..(offset + len).div_ceil(stripe_bytes);
                let sectors_per_stripe = stripe_bytes / SECTOR_BYTES;
                for s in stripes.start * sectors_per_stripe
                    ..(stripes.end * sectors_per_stripe).min(sectors as u64)
                {
                    touched[s as usize] = true;
                }
                let wid = id + writes.len() as u64;
                h.submit(
                    &mut array,
                    wid,
                    UserOp::Write {
                        offset_bytes: offset,
                        data: data.into(),
                        fua: false,
                    },
                );
                writes.push(wid);
            }
        }
        if round == crash_round {
            // The worst instant is right after the acknowledgement: half
            // the failing flushes lose power there, the rest at random.
            let at_reply = round == fail_round && rng.gen_bool(0.5);
            let steps = if at_reply {
                usize::MAX
            } else {
                rng.gen_range(0..40)
            };
            for _ in 0..steps {
                if at_reply && h.replies.iter().any(|r| r.id.0 == id) {
                    break;
                }
                if !h.step(&mut array) {
                    break;
                }
            }
            if flush_round && h.take_reply(id).is_some_and(|r| r.result.is_ok()) {
                flushed.copy_from_slice(&acked);
                touched.fill(false);
                flushed_after_failure |= failed;
            }
            h.crash();
            break;
        }
        h.run(&mut array);
        if flush_round {
            h.take_reply(id)
                .expect("flush answered")
                .result
                .expect("flush ok");
            flushed.copy_from_slice(&acked);
            touched.fill(false);
            flushed_after_failure |= failed;
            id += 1;
        } else {
            for wid in &writes {
                h.take_reply(*wid)
                    .expect("write answered")
                    .result
                    .expect("write ok");
            }
            let whole = call(
                &mut h,
                &mut array,
                900_000 + id,
                UserOp::Read {
                    offset_bytes: 0,
                    len_bytes: capacity as usize,
                },
            )
            .unwrap()
            .unwrap();
            acked.copy_from_slice(&whole);
            id += writes.len() as u64;
        }
    }
    drop(array);
    // The member is back, whole: only the records decide whether it is
    // current.
    h.members[victim].as_mut().expect("member").failed = false;
    let assembly = h
        .assemble()
        .unwrap_or_else(|e| panic!("seed {seed} {level:?}: reassembly failed: {e}"));
    if flushed_after_failure {
        assert!(
            !matches!(assembly.slots[victim], SlotState::Present { .. }),
            "seed {seed} {level:?}: member {victim} failed under an acknowledged flush but \
             comes back as current: {:?}",
            assembly.report
        );
    }
    let mut array = Array::open(assembly, ArrayOptions { ..options() }, h.now);
    h.run(&mut array);
    assert_flushed_sectors_survive(
        &mut h,
        &mut array,
        &flushed,
        &touched,
        &format!("seed {seed} {level:?} (member {victim} failed at round {fail_round})"),
    );
}

fn seeds() -> u64 {
    std::env::var("ERAID_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

#[test]
fn a_member_failing_under_a_flush_never_returns_as_current_and_flushed_data_survives() {
    for (level, layout, members) in [
        (Level::Raid5, ParityLayout::LeftSymmetric, 4),
        (Level::Raid5, ParityLayout::LeftAsymmetric, 3),
        (Level::Raid6, ParityLayout::LeftSymmetric, 5),
        (Level::Raid10, ParityLayout::Near2, 4),
    ] {
        for seed in 0..seeds() {
            crash_once(seed, level, layout, members);
        }
    }
}

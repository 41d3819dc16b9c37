//! Crash test: at a random instant, every write not yet flushed is dropped,
//! applied or torn (per sector). After reassembly and resync, every write
//! acknowledged before a completed flush must read back, and a check must
//! find no parity mismatch. Failing runs print their seed; set
//! ERAID_CRASH_SEEDS for more.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::{ArrayEvent, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

struct Outcome {
    mismatches: u64,
    resync_started: bool,
}

fn crash_once(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    members: usize,
    resync: bool,
    bitmap: bool,
) -> Outcome {
    let g = geometry(level, layout, members, 32);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9));
    let first = ArrayOptions {
        write_intent_bitmap: bitmap,
        ..options()
    };
    let mut array = Array::open(h.assemble().expect("assembles"), first, h.now);
    h.run(&mut array);
    let capacity = array.capacity_bytes();
    let sectors = (capacity / SECTOR_BYTES) as usize;
    let mut acked = vec![0u8; capacity as usize];
    let mut flushed = acked.clone();
    let mut touched = vec![false; sectors];
    let crash_round = rng.gen_range(1..12);
    let mut id = 1u64;
    for round in 0..=crash_round {
        let flush_round = rng.gen_bool(0.3);
        let mut writes = Vec::new();
        if flush_round {
            h.submit(&mut array, id, UserOp::Flush);
        } else {
            for _ in 0..rng.gen_range(1..6) {
                let len = rng.gen_range(1..=16u64) * SECTOR_BYTES;
                let offset = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                // Sectors written now are uncertain until the next flush.
                for s in offset / SECTOR_BYTES..(offset + len) / SECTOR_BYTES {
                    touched[s as usize] = true;
                }
                h.submit(
                    &mut array,
                    id + writes.len() as u64,
                    UserOp::Write {
                        offset_bytes: offset,
                        data: data.clone().into(),
                        fua: false,
                    },
                );
                writes.push((id + writes.len() as u64, offset, data));
            }
        }
        if round == crash_round {
            let steps = rng.gen_range(0..40);
            for _ in 0..steps {
                if !h.step(&mut array) {
                    break;
                }
            }
            // A flush that answered before the crash still counts.
            if flush_round && h.take_reply(id).is_some_and(|r| r.result.is_ok()) {
                flushed.copy_from_slice(&acked);
                touched.fill(false);
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
            id += 1;
        } else {
            // Concurrent writes may overlap: apply in an order consistent
            // with what the array did by reading back afterwards.
            for (wid, offset, data) in &writes {
                h.take_reply(*wid)
                    .expect("write answered")
                    .result
                    .expect("write ok");
                let _ = (offset, data);
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
    let assembly = h
        .assemble()
        .unwrap_or_else(|e| panic!("seed {seed}: reassembly failed: {e}"));
    let options = ArrayOptions {
        resync_on_open: resync,
        write_intent_bitmap: bitmap,
        ..options()
    };
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    let resync_started = h
        .events
        .iter()
        .any(|e| matches!(e, ArrayEvent::ResyncStarted { .. }));
    assert_flushed_sectors_survive(
        &mut h,
        &mut array,
        &flushed,
        &touched,
        &format!("seed {seed} {level:?}"),
    );
    let mismatches = if level == Level::Raid0 {
        0
    } else {
        check(&mut h, &mut array, false).0
    };
    close(&mut h, &mut array);
    Outcome {
        mismatches,
        resync_started,
    }
}

fn seeds() -> u64 {
    std::env::var("ERAID_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

#[test]
fn flushed_writes_survive_crashes_and_resync_restores_parity() {
    for (level, layout, members) in [
        (Level::Raid5, ParityLayout::LeftSymmetric, 4),
        (Level::Raid5, ParityLayout::LeftAsymmetric, 3),
        (Level::Raid6, ParityLayout::LeftSymmetric, 5),
        (Level::Raid10, ParityLayout::Near2, 4),
        (Level::Raid0, ParityLayout::None, 3),
    ]
    .into_iter()
    .chain(crs_shapes())
    {
        for seed in 0..seeds() {
            let outcome = crash_once(seed, level, layout, members, true, true);
            if level != Level::Raid0 {
                assert_eq!(
                    outcome.mismatches, 0,
                    "seed {seed} {level:?}: parity mismatches after resync"
                );
            }
        }
    }
}

/// The crash injection really does leave parity inconsistent: without the
/// resync, some runs must show mismatches (else the test above proves nothing).
#[test]
fn without_resync_crashes_leave_mismatches() {
    let mut total = 0;
    let mut resynced = 0;
    for seed in 0..seeds() {
        let outcome = crash_once(
            seed,
            Level::Raid5,
            ParityLayout::LeftSymmetric,
            4,
            false,
            true,
        );
        total += outcome.mismatches;
        resynced += outcome.resync_started as u64;
    }
    assert_eq!(resynced, 0);
    assert!(
        total > 0,
        "no crash left a stripe inconsistent: the fault injection is too weak"
    );
}

/// Without a write-intent bitmap, an unclean shutdown resyncs everything:
/// flushed data survives and parity is consistent again.
#[test]
fn without_a_bitmap_an_unclean_shutdown_resyncs_the_whole_array() {
    for seed in 0..seeds() / 2 {
        for (level, layout, members) in [
            (Level::Raid5, ParityLayout::LeftSymmetric, 4),
            (Level::Raid6, ParityLayout::LeftSymmetric, 5),
        ]
        .into_iter()
        .chain(crs_shapes())
        {
            let outcome = crash_once(seed, level, layout, members, true, false);
            assert_eq!(
                outcome.mismatches, 0,
                "seed {seed} {level:?}: mismatches without bitmap"
            );
            assert!(
                outcome.resync_started,
                "seed {seed}: an unclean shutdown must start a resync"
            );
        }
    }
}

/// A RAID-0 whose bitmap marks regions dirty (as `create` marked RAID-0
/// arrays made on used members before it learned better) has nothing to
/// resync: it opens without a resync, serves, and closes with the marks
/// dropped. A resync there used to stop the engine on its first stripe.
#[test]
fn a_raid0_marked_dirty_opens_without_a_resync_and_drops_the_marks() {
    let g = geometry(Level::Raid0, ParityLayout::None, 4, 32);
    let mut h = MemHarness::create(g, 3);
    let mut assembly = h.assemble().expect("assembles");
    for region in 0..assembly.bitmap.region_count() {
        assembly.bitmap.set(region, true);
    }
    assert!(assembly.bitmap.dirty_regions().count() > 0);
    let mut array = Array::open(assembly, options(), h.now);
    h.run(&mut array);
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, ArrayEvent::ResyncStarted { .. })),
        "no resync without redundancy: {:?}",
        h.events
    );
    let data: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    call(
        &mut h,
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 4096,
            data: data.clone().into(),
            fua: false,
        },
    )
    .expect("write ok");
    let back = call(
        &mut h,
        &mut array,
        2,
        UserOp::Read {
            offset_bytes: 4096,
            len_bytes: data.len(),
        },
    )
    .expect("read ok")
    .expect("read data");
    assert_eq!(back, data);
    close(&mut h, &mut array);
    let again = h.assemble().expect("reassembles");
    assert_eq!(again.bitmap.dirty_regions().count(), 0, "marks dropped");
}

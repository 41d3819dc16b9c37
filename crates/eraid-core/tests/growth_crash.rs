//! Crashes during growth: at a random instant every unflushed write is
//! dropped, applied or torn; the array is reassembled, the growth resumes
//! from its last checkpoint and finishes. Every write acknowledged before a
//! completed flush must read back, and parity must check clean. Writes are
//! aimed often at chunks copied but not yet checkpointed, the case where a
//! skipped checkpoint would lose them (shown by `skipped_checkpoint_loses_data`
//! style planted bugs; see the test's comment). ERAID_GROWTH_CRASH_SEEDS
//! sets the seed count.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::{ReshapeConfig, ReshapeStrategy};
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 40;

fn config(strategy: ReshapeStrategy) -> ReshapeConfig {
    // Lazy strategies checkpoint only when the rule or a user write forces
    // it, so copied-not-checkpointed chunks stay around.
    growth_config(strategy, 1 << 30)
}

fn status_u64(array: &Array, field: &str) -> u64 {
    array.status_json()["reshape"][field].as_u64().unwrap_or(0)
}

struct Case {
    level: Level,
    layout: ParityLayout,
    from: usize,
    add: usize,
    strategy: ReshapeStrategy,
}

/// Returns how many flushed writes landed in copied-but-not-checkpointed
/// chunks before the crash (the risky case).
fn crash_during_growth(seed: u64, case: &Case, bitmap: bool) -> u64 {
    let g = geometry(case.level, case.layout, case.from, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x2545_f491));
    let opts = ArrayOptions {
        write_intent_bitmap: bitmap,
        ..options()
    };
    let mut array = Array::open(h.assemble().expect("assembles"), opts.clone(), h.now);
    h.run(&mut array);
    let capacity = array.capacity_bytes();
    let initial: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
    call(
        &mut h,
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: initial.clone().into(),
            fua: true,
        },
    )
    .expect("initial data");
    let mut acked = initial.clone();
    let mut flushed = initial;
    let sectors = (capacity / SECTOR_BYTES) as usize;
    let mut touched = vec![false; sectors];
    // Writes into copied-not-checkpointed chunks, not yet covered by a flush.
    let mut risky_pending = 0u64;
    let mut risky_flushed = 0u64;
    let added = h.add_blank_members(case.add, member_bytes);
    let reply = array.handle_admin(
        h.now,
        AdminCommand::StartGrow {
            members: added,
            config: config(case.strategy),
        },
    );
    assert!(reply.get("error").is_none(), "{reply}");
    let crash_round = rng.gen_range(1..40);
    let mut id = 10u64;
    for round in 0..=crash_round {
        let checkpoint = status_u64(&array, "checkpoint_bytes");
        let copied = status_u64(&array, "processed_bytes").min(capacity);
        let flush = rng.gen_bool(0.3);
        let mut batch = Vec::new();
        if flush {
            id += 1;
            h.submit(&mut array, id, UserOp::Flush);
            batch.push(id);
        } else {
            let mut taken: Vec<(u64, u64)> = Vec::new();
            for _ in 0..rng.gen_range(1..4) {
                let len = rng.gen_range(1..=8u64) * SECTOR_BYTES;
                let (lo, hi) = if copied > checkpoint + len && rng.gen_bool(0.6) {
                    (checkpoint, copied)
                } else {
                    (0, capacity)
                };
                let offset =
                    rng.gen_range(lo / SECTOR_BYTES..(hi - len) / SECTOR_BYTES + 1) * SECTOR_BYTES;
                if taken
                    .iter()
                    .any(|&(o, l)| o < offset + len && offset < o + l)
                {
                    continue;
                }
                taken.push((offset, len));
                if offset < copied && checkpoint < offset + len {
                    risky_pending += 1;
                }
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                acked[offset as usize..(offset + len) as usize].copy_from_slice(&data);
                for s in offset / SECTOR_BYTES..(offset + len) / SECTOR_BYTES {
                    touched[s as usize] = true;
                }
                id += 1;
                h.submit(
                    &mut array,
                    id,
                    UserOp::Write {
                        offset_bytes: offset,
                        data: data.into(),
                        fua: false,
                    },
                );
                batch.push(id);
            }
        }
        let last = round == crash_round;
        let budget = if last {
            rng.gen_range(0..60)
        } else {
            usize::MAX
        };
        let mut steps = 0;
        while !batch.iter().all(|i| h.replies.iter().any(|r| r.id.0 == *i)) && steps < budget {
            assert!(
                h.step(&mut array),
                "requests stuck: {}",
                array.status_json()
            );
            steps += 1;
        }
        let answered = batch.iter().all(|i| h.replies.iter().any(|r| r.id.0 == *i));
        let mut crash_now = false;
        if flush && answered {
            flushed.copy_from_slice(&acked);
            touched.fill(false);
            risky_flushed += risky_pending;
            // Crash soon after risky writes became durable, before a later
            // checkpoint could cover up a skipped one.
            crash_now = risky_pending > 0 && rng.gen_bool(0.5);
            risky_pending = 0;
        }
        for i in &batch {
            if let Some(reply) = h.take_reply(*i) {
                reply.result.expect("request succeeds");
            }
        }
        if last || crash_now {
            break;
        }
        // A few more growth steps between batches.
        for _ in 0..rng.gen_range(0..20) {
            if !h.step(&mut array) {
                break;
            }
        }
    }
    h.crash();
    drop(array);
    let assembly = match h.assemble() {
        Ok(a) => a,
        // The crash came before the growth's first superblock reached the
        // new members: they are blank, and the array is the old one.
        Err(_) => {
            h.members.truncate(case.from);
            h.assemble()
                .unwrap_or_else(|e| panic!("seed {seed}: reassembly failed: {e}"))
        }
    };
    let mut array = Array::open(assembly, opts, h.now);
    h.run(&mut array);
    let grown = h.members.len() > case.from;
    if grown {
        assert_eq!(
            array.status_json()["reshape"]["state"],
            "done",
            "seed {seed} {:?}: growth resumed and finished: {}",
            case.strategy,
            array.status_json()
        );
    }
    assert_flushed_sectors_survive(
        &mut h,
        &mut array,
        &flushed,
        &touched,
        &format!(
            "seed {seed} {:?} {:?} (during growth)",
            case.level, case.strategy
        ),
    );
    if case.level != Level::Raid0 {
        assert_eq!(
            check(&mut h, &mut array, false).0,
            0,
            "seed {seed}: parity after growth"
        );
    }
    close(&mut h, &mut array);
    risky_flushed
}

fn seeds() -> u64 {
    std::env::var("ERAID_GROWTH_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for strategy in [
        ReshapeStrategy::RoundRobin,
        ReshapeStrategy::SemiRr,
        ReshapeStrategy::FastScale,
    ] {
        for add in [1, 2] {
            cases.push(Case {
                level: Level::Raid0,
                layout: ParityLayout::None,
                from: 4,
                add,
                strategy,
            });
        }
    }
    for strategy in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
        for layout in [ParityLayout::LeftAsymmetric, ParityLayout::RightSymmetric] {
            cases.push(Case {
                level: Level::Raid5,
                layout,
                from: 3,
                add: 1,
                strategy,
            });
            cases.push(Case {
                level: Level::Raid5,
                layout,
                from: 4,
                add: 2,
                strategy,
            });
        }
    }
    cases
}

/// Also guards the test itself: over all runs, flushed writes must have
/// landed in copied-not-checkpointed chunks many times, so a growth that
/// skipped the checkpoint before such a write would have been caught.
#[test]
fn flushed_writes_survive_crashes_during_growth() {
    let mut risky = 0;
    for case in cases() {
        for seed in 0..seeds() {
            risky += crash_during_growth(seed, &case, seed % 2 == 0);
        }
    }
    assert!(
        risky >= 20,
        "only {risky} flushed writes hit uncheckpointed chunks"
    );
}

//! Model-based test: random concurrent reads, writes, zeroing and flushes
//! against a flat byte array, for every level and layout, with members
//! failing mid-run, then reassembly. Data must always match the model.

mod common;
use common::*;
use eraid_core::geometry::Level;
use eraid_core::io::UserOp;
use eraid_core::testing::MemHarness;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn run_model(seed: u64, level: Level, layout: eraid_core::geometry::ParityLayout, members: usize) {
    let g = geometry(level, layout, members, 24);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let mut array = open(&mut h);
    let capacity = array.capacity_bytes();
    let mut model = vec![0u8; capacity as usize];
    let mut next_id = 1u64;
    let mut failed_members = 0usize;
    // RAID-10: one member (of a pair) in this test.
    let tolerated = level.redundancy();
    // Up to four failures, spread over the run (RAID-6: rounds 20 and 40).
    let fail_rounds = [20, 40, 30, 50];
    for round in 0..60 {
        // A batch of concurrent requests: writes never overlap each other
        // or the batch's reads, so the expected result is well defined.
        let mut batch: Vec<(u64, UserOp, (u64, u64))> = Vec::new();
        let mut written: Vec<(u64, u64)> = Vec::new();
        for _ in 0..rng.gen_range(1..8) {
            let range = random_range(&mut rng, capacity, 6 * CHUNK);
            if written.iter().any(|&w| overlaps(w, range)) {
                continue;
            }
            let op = match rng.gen_range(0..10) {
                0..=3 => UserOp::Read {
                    offset_bytes: range.0,
                    len_bytes: range.1 as usize,
                },
                4..=7 => {
                    written.push(range);
                    let data: Vec<u8> = (0..range.1).map(|_| rng.gen()).collect();
                    UserOp::Write {
                        offset_bytes: range.0,
                        data: data.into(),
                        fua: rng.gen_bool(0.1),
                    }
                }
                8 => {
                    written.push(range);
                    UserOp::WriteZeroes {
                        offset_bytes: range.0,
                        len_bytes: range.1,
                        fua: false,
                    }
                }
                _ => UserOp::Flush,
            };
            batch.push((next_id, op, range));
            next_id += 1;
        }
        // Reads overlapping a write of the same batch would race: drop them.
        batch.retain(|(_, op, range)| {
            !matches!(op, UserOp::Read { .. }) || !written.iter().any(|&w| overlaps(w, *range))
        });
        for (id, op, _) in &batch {
            h.submit(&mut array, *id, op.clone());
        }
        // Fail a member while the batch is in flight, if the level allows.
        if fail_rounds[..tolerated.min(fail_rounds.len())].contains(&round)
            && failed_members < tolerated
        {
            let victim = rng.gen_range(0..members);
            if let Some(m) = h.members[victim].as_mut() {
                if !(m.failed || level == Level::Raid10 && failed_members > 0) {
                    m.failed = true;
                    failed_members += 1;
                }
            }
        }
        h.run(&mut array);
        for (id, op, range) in batch {
            let reply = h
                .take_reply(id)
                .unwrap_or_else(|| panic!("seed {seed}: request {id} unanswered"));
            let result = reply
                .result
                .unwrap_or_else(|e| panic!("seed {seed}: request {id} failed: {e}"));
            match op {
                UserOp::Read { .. } => {
                    let got = result.expect("read data");
                    let want = &model[range.0 as usize..(range.0 + range.1) as usize];
                    assert!(
                        got == want,
                        "seed {seed} {level:?} {layout:?}: read {range:?} differs from the model"
                    );
                }
                UserOp::Write { data, .. } => {
                    model[range.0 as usize..(range.0 + range.1) as usize].copy_from_slice(&data)
                }
                UserOp::WriteZeroes { .. } => {
                    model[range.0 as usize..(range.0 + range.1) as usize].fill(0)
                }
                _ => {}
            }
        }
    }
    close(&mut h, &mut array);
    // Reassemble without the failed members: every byte must still read back.
    for m in h.members.iter_mut() {
        if m.as_ref().is_some_and(|m| m.failed) {
            *m = None;
        }
    }
    let mut array = open(&mut h);
    let whole = call(
        &mut h,
        &mut array,
        1_000_000,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: capacity as usize,
        },
    )
    .unwrap()
    .unwrap();
    assert!(
        whole == model,
        "seed {seed} {level:?} {layout:?}: array differs from model after reassembly"
    );
    if failed_members == 0 && level != Level::Raid0 {
        assert_eq!(
            check(&mut h, &mut array, false),
            (0, 0),
            "seed {seed}: parity mismatches"
        );
    }
    close(&mut h, &mut array);
}

#[test]
fn random_io_matches_model_for_every_level_and_layout() {
    let seeds: u64 = std::env::var("ERAID_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    for (level, layout, members) in shapes() {
        for seed in 0..seeds {
            run_model(seed, level, layout, members);
        }
    }
}

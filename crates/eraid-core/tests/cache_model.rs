//! Model-based random I/O with the write-back cache on, RAID-5 and RAID-6,
//! every policy: reads always match a flat model; after a flush (which
//! destages everything) a check finds parity clean; after close the array
//! reopened without the cache reads the model back.

mod common;
use common::*;
use eraid_core::cache::config::{Allocation, CacheConfig, CachePolicy};
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES, SECTOR_BYTES};
use eraid_core::io::UserOp;
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CACHE_CHUNK: u64 = 32 * 1024;

fn cached_geometry(level: Level, members: usize) -> Geometry {
    Geometry::new(
        level,
        ParityLayout::LeftSymmetric,
        members,
        CACHE_CHUNK,
        METADATA_BYTES + 24 * CACHE_CHUNK,
    )
    .unwrap()
}

/// Memory charged per block on even seeds, per unit on odd ones.
fn cached_options(policy: CachePolicy, geometry: &Geometry, seed: u64) -> ArrayOptions {
    let allocation = if seed.is_multiple_of(2) {
        Allocation::Block
    } else {
        Allocation::Unit
    };
    let cache = CacheConfig {
        policy,
        allocation,
        // A few stripes' worth: destages start often.
        size_bytes: 2 * geometry.member_count as u64 * CACHE_CHUNK + 256 * 1024,
        destage_window_units: 4,
        ..CacheConfig::default()
    };
    cache.validate(geometry).expect("valid cache config");
    ArrayOptions { cache, ..options() }
}

/// Random ranges, often 4 KiB aligned (cached whole), sometimes not.
fn random_range(rng: &mut ChaCha8Rng, capacity: u64) -> (u64, u64) {
    if rng.gen_bool(0.7) {
        let blocks = capacity / 4096;
        let len = rng.gen_range(1..=4u64);
        let start = rng.gen_range(0..=blocks - len);
        (start * 4096, len * 4096)
    } else {
        let sectors = capacity / SECTOR_BYTES;
        let len = rng.gen_range(1..=(3 * CACHE_CHUNK / SECTOR_BYTES));
        let start = rng.gen_range(0..=sectors - len);
        (start * SECTOR_BYTES, len * SECTOR_BYTES)
    }
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

/// `fail_at`: a member fails while that round's batch is in flight, so
/// destages go on degraded.
fn run_cached_model(
    seed: u64,
    level: Level,
    members: usize,
    policy: CachePolicy,
    fail_at: Option<usize>,
) {
    let geometry = cached_geometry(level, members);
    let mut h = MemHarness::create(geometry, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xcac4e);
    let options = cached_options(policy, &geometry, seed);
    let mut array = Array::open(h.assemble().unwrap(), options, h.now);
    h.run(&mut array);
    let capacity = array.capacity_bytes();
    let mut model = vec![0u8; capacity as usize];
    let mut next_id = 1u64;
    let what = format!("seed {seed} {level:?} {policy:?}");
    for round in 0..150 {
        let mut batch: Vec<(u64, UserOp, (u64, u64))> = Vec::new();
        let mut written: Vec<(u64, u64)> = Vec::new();
        for _ in 0..rng.gen_range(1..10) {
            let range = random_range(&mut rng, capacity);
            if written.iter().any(|&w| overlaps(w, range)) {
                continue;
            }
            let op = match rng.gen_range(0..20) {
                0..=6 => UserOp::Read {
                    offset_bytes: range.0,
                    len_bytes: range.1 as usize,
                },
                7..=17 => {
                    written.push(range);
                    UserOp::Write {
                        offset_bytes: range.0,
                        data: (0..range.1).map(|_| rng.gen()).collect(),
                        fua: rng.gen_bool(0.05),
                    }
                }
                18 => {
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
        batch.retain(|(_, op, range)| {
            !matches!(op, UserOp::Read { .. }) || !written.iter().any(|&w| overlaps(w, *range))
        });
        for (id, op, _) in &batch {
            h.submit(&mut array, *id, op.clone());
        }
        if fail_at == Some(round) {
            let victim = rng.gen_range(0..members);
            h.members[victim].as_mut().expect("member").failed = true;
        }
        h.run(&mut array);
        for (id, op, range) in batch {
            let reply = h
                .take_reply(id)
                .unwrap_or_else(|| panic!("{what}: request {id} unanswered"));
            let result = reply
                .result
                .unwrap_or_else(|e| panic!("{what}: request {id} failed: {e}"));
            let span = range.0 as usize..(range.0 + range.1) as usize;
            match op {
                UserOp::Read { .. } => {
                    assert!(
                        result.unwrap() == model[span],
                        "{what}: read {range:?} differs from the model"
                    )
                }
                UserOp::Write { data, .. } => model[span].copy_from_slice(&data),
                UserOp::WriteZeroes { .. } => model[span].fill(0),
                _ => {}
            }
        }
    }
    let counters = array.cache_counters().expect("the cache is on");
    assert!(
        counters.destages > 0 && counters.read_hit_blocks > 0,
        "{what}: {counters:?}"
    );
    if policy == CachePolicy::MscCt {
        assert!(
            counters.transform_read_blocks + counters.transform_write_blocks > 0,
            "{what}: {counters:?}"
        );
    } else {
        assert_eq!(
            counters.transform_read_blocks + counters.transform_write_blocks,
            0,
            "{what}"
        );
    }
    // A flush destages everything: the members alone hold consistent parity.
    call(&mut h, &mut array, next_id, UserOp::Flush).expect("flush");
    let status = array.status_json();
    assert_eq!(status["cache"]["dirty_bytes"], 0, "{what}: {status}");
    if fail_at.is_none() {
        assert_eq!(
            check(&mut h, &mut array, false),
            (0, 0),
            "{what}: parity after destage"
        );
    }
    close(&mut h, &mut array);
    for m in h.members.iter_mut() {
        if m.as_ref().is_some_and(|m| m.failed) {
            *m = None;
        }
    }
    // Without the cache, the members read back the model.
    let mut array = open(&mut h);
    let whole = call(
        &mut h,
        &mut array,
        1,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: capacity as usize,
        },
    )
    .unwrap()
    .unwrap();
    assert!(
        whole == model,
        "{what}: members differ from the model after close"
    );
    close(&mut h, &mut array);
}

#[test]
fn raid5_cached_random_io_matches_the_model() {
    for policy in [CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt] {
        for seed in 0..3 {
            run_cached_model(seed, Level::Raid5, 5, policy, None);
        }
    }
}

#[test]
fn raid6_cached_random_io_matches_the_model() {
    for policy in [CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt] {
        for seed in 10..13 {
            run_cached_model(seed, Level::Raid6, 6, policy, None);
        }
    }
}

/// A member fails mid-run: destages go on degraded (reading what survives,
/// rebuilding what the failed member held); every read stays right and the
/// members without it hold the model after close.
#[test]
fn degraded_destages_keep_the_data() {
    for policy in [CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt] {
        for seed in 20..22 {
            run_cached_model(seed, Level::Raid5, 5, policy, Some(40));
            run_cached_model(seed, Level::Raid6, 6, policy, Some(40));
        }
    }
}

/// A close with dirty blocks destages them first: nothing is lost.
#[test]
fn close_destages_everything() {
    let geometry = cached_geometry(Level::Raid5, 5);
    let mut h = MemHarness::create(geometry, 7);
    let mut array = Array::open(
        h.assemble().unwrap(),
        cached_options(CachePolicy::MscCt, &geometry, 0),
        h.now,
    );
    h.run(&mut array);
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
    let write = UserOp::Write {
        offset_bytes: 3 * 4096,
        data: data.clone().into(),
        fua: false,
    };
    call(&mut h, &mut array, 1, write).unwrap();
    assert_eq!(
        array.status_json()["cache"]["dirty_bytes"],
        8192,
        "acknowledged from the cache"
    );
    assert_eq!(array.cache_counters().unwrap().destages, 0);
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    let read = UserOp::Read {
        offset_bytes: 3 * 4096,
        len_bytes: 8192,
    };
    assert_eq!(call(&mut h, &mut array, 2, read).unwrap().unwrap(), data);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

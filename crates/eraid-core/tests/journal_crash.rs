//! The journal (issue 17's durability): model-based random I/O with the
//! MSC-CT cache and a journal on RAID-5 and RAID-6, then a crash at a
//! random instant (journal batches and destage writes in flight, torn or
//! not), then replay at the next start: every acknowledged write reads
//! back, parity is consistent, and with a member missing after the crash
//! (the write hole) every byte still reads back.

mod common;
use common::*;
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::{IoCause, Machine, UserOp};
use eraid_core::testing::{MemHarness, MemJournal};
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CHUNK_BYTES: u64 = 32 * 1024;
/// Small, so the log wraps and checkpoints run many times per test.
const JOURNAL_BYTES: u64 = 2 << 20;

fn geometry(level: Level, members: usize) -> Geometry {
    Geometry::new(
        level,
        ParityLayout::LeftSymmetric,
        members,
        CHUNK_BYTES,
        METADATA_BYTES + 24 * CHUNK_BYTES,
    )
    .unwrap()
}

fn cached_options(h: &mut MemHarness, geometry: &Geometry) -> ArrayOptions {
    let cache = CacheConfig {
        policy: CachePolicy::MscCt,
        size_bytes: 2 * geometry.member_count as u64 * CHUNK_BYTES + 256 * 1024,
        destage_window_units: 4,
        // Destages run most of the time, so crashes often cut them.
        high_mark_percent: 30,
        low_mark_percent: 10,
        ..CacheConfig::default()
    };
    cache.validate(geometry).expect("valid cache config");
    journaled_options(h, cache)
}

/// Random ranges, mostly 4 KiB aligned (cached whole), some not.
fn random_write_range(rng: &mut ChaCha8Rng, capacity: u64) -> (u64, u64) {
    if rng.gen_bool(0.8) {
        let blocks = capacity / 4096;
        let len = rng.gen_range(1..=3u64);
        let start = rng.gen_range(0..=blocks - len);
        (start * 4096, len * 4096)
    } else {
        random_range(rng, capacity, 2 * CHUNK_BYTES)
    }
}

#[derive(Default)]
struct CrashSeen {
    journal_batch_in_flight: bool,
    destage_write_in_flight: bool,
}

/// Runs one seed; `lose_member`: a member is missing at the restart.
fn run_journal_crash(seed: u64, level: Level, members: usize, lose_member: bool) -> CrashSeen {
    let geometry = geometry(level, members);
    let mut h = MemHarness::create(geometry, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x10_c4a5);
    let what = format!("seed {seed} {level:?} lose_member {lose_member}");
    // Old data everywhere first, so a stripe made inconsistent by the
    // crash would rebuild a missing member's old blocks wrong.
    let mut array = open(&mut h);
    let mut model = fill(&mut h, &mut array, &mut rng);
    close(&mut h, &mut array);
    h.journal = Some(MemJournal::fresh(
        JOURNAL_BYTES,
        7,
        &format!("array-{seed}"),
    ));
    let mut array = Array::open(
        h.assemble().unwrap(),
        cached_options(&mut h, &geometry),
        h.now,
    );
    h.run(&mut array);
    let capacity = array.capacity_bytes();
    let mut unknown = vec![false; capacity as usize];
    let mut next_id = 1u64;
    let crash_round = rng.gen_range(20..60);
    let mut seen = CrashSeen::default();
    for round in 0..=crash_round {
        let mut batch: Vec<(u64, UserOp, (u64, u64))> = Vec::new();
        let mut written: Vec<(u64, u64)> = Vec::new();
        for _ in 0..rng.gen_range(1..12) {
            let range = random_write_range(&mut rng, capacity);
            if written.iter().any(|&w| overlaps(w, range)) {
                continue;
            }
            written.push(range);
            let op = match rng.gen_range(0..20) {
                0 => UserOp::WriteZeroes {
                    offset_bytes: range.0,
                    len_bytes: range.1,
                    fua: false,
                },
                1 => UserOp::Flush,
                _ => UserOp::Write {
                    offset_bytes: range.0,
                    data: (0..range.1).map(|_| rng.gen()).collect(),
                    fua: rng.gen_bool(0.05),
                },
            };
            batch.push((next_id, op, range));
            next_id += 1;
        }
        for (id, op, _) in &batch {
            h.submit(&mut array, *id, op.clone());
        }
        if round < crash_round {
            h.run(&mut array);
        } else {
            // Crash at a random instant, or once a journal batch or a
            // destage write is in flight (then a few steps more).
            let mode = seed % 3;
            let mut extra = rng.gen_range(0..6);
            for _ in 0..2000 {
                let armed = match mode {
                    0 => true,
                    1 => h.journal_busy(),
                    _ => h
                        .inflight_ios()
                        .iter()
                        .any(|io| io.cause == IoCause::Destage),
                };
                if armed {
                    if extra == 0 {
                        break;
                    }
                    extra -= 1;
                }
                if !h.step(&mut array) {
                    if mode != 2 {
                        break;
                    }
                    // Idle before a destage started: more writes fill
                    // the cache until one does.
                    let range = random_write_range(&mut rng, capacity);
                    if written.iter().any(|&w| overlaps(w, range)) {
                        continue;
                    }
                    written.push(range);
                    let op = UserOp::Write {
                        offset_bytes: range.0,
                        data: (0..range.1).map(|_| rng.gen()).collect(),
                        fua: false,
                    };
                    h.submit(&mut array, next_id, op.clone());
                    batch.push((next_id, op, range));
                    next_id += 1;
                }
            }
            seen.journal_batch_in_flight = h.journal_busy();
            seen.destage_write_in_flight = h
                .inflight_ios()
                .iter()
                .any(|io| io.cause == IoCause::Destage);
        }
        for (id, op, range) in batch {
            let span = range.0 as usize..(range.0 + range.1) as usize;
            let Some(reply) = h.take_reply(id) else {
                // Not acknowledged: either content may be there.
                unknown[span].fill(true);
                continue;
            };
            reply
                .result
                .unwrap_or_else(|e| panic!("{what}: request {id} failed: {e}"));
            match op {
                UserOp::Write { data, .. } => model[span].copy_from_slice(&data),
                UserOp::WriteZeroes { .. } => model[span].fill(0),
                _ => {}
            }
        }
    }
    let journal = array.journal_counters().expect("journal on");
    assert!(journal.records > 0, "{what}: {journal:?}");
    h.crash();
    drop(array);
    let victim = rng.gen_range(0..members);
    if lose_member {
        h.members[victim] = None;
    }
    // Restart: the journal is replayed before anything is served.
    let mut array = Array::open(
        h.assemble().unwrap(),
        cached_options(&mut h, &geometry),
        h.now,
    );
    h.run(&mut array);
    h.submit(
        &mut array,
        next_id,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: capacity as usize,
        },
    );
    h.run(&mut array);
    let whole = h
        .take_reply(next_id)
        .unwrap_or_else(|| panic!("{what}: read unanswered; {}", array.status_json()))
        .result
        .expect("read")
        .expect("bytes");
    for (at, (&got, &want)) in whole.to_vec().iter().zip(&model).enumerate() {
        assert!(
            unknown[at] || got == want,
            "{what}: byte {at} reads {got}, the acknowledged data is {want}"
        );
    }
    if !lose_member {
        call(&mut h, &mut array, next_id + 1, UserOp::Flush).expect("flush");
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: parity");
    }
    array.handle_close(h.now);
    h.run(&mut array);
    assert!(array.is_closed(), "{what}: close: {}", array.status_json());
    seen
}

fn run_seeds(level: Level, members: usize, seeds: std::ops::Range<u64>, lose_member: bool) {
    let (mut batches, mut destages) = (0, 0);
    // ERAID_JOURNAL_SEED=N runs only seed N (to reproduce a failure).
    let only: Option<u64> = std::env::var("ERAID_JOURNAL_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    for seed in seeds.filter(|s| only.is_none_or(|o| o == *s)) {
        let seen = run_journal_crash(seed, level, members, lose_member);
        batches += seen.journal_batch_in_flight as u32;
        destages += seen.destage_write_in_flight as u32;
    }
    // The crashes hit both kinds of write at least once.
    assert!(
        batches > 0 && destages > 0,
        "batches {batches}, destages {destages}"
    );
}

fn seed_count() -> u64 {
    if std::env::var_os("ERAID_SOAK").is_some() {
        200
    } else {
        12
    }
}

#[test]
fn raid5_acknowledged_writes_survive_a_crash() {
    run_seeds(Level::Raid5, 5, 0..seed_count(), false);
}

#[test]
fn raid6_acknowledged_writes_survive_a_crash() {
    run_seeds(Level::Raid6, 6, 100..100 + seed_count(), false);
}

/// The write hole: a member is missing at the restart after the crash;
/// the journal's member writes make the interrupted stripes consistent,
/// so the missing member's blocks (old data included) rebuild right.
#[test]
fn raid5_crash_then_missing_member_loses_nothing() {
    run_seeds(Level::Raid5, 5, 200..200 + seed_count(), true);
}

#[test]
fn raid6_crash_then_missing_member_loses_nothing() {
    run_seeds(Level::Raid6, 6, 300..300 + seed_count(), true);
}

/// The journal device fails mid-run: a warning event, the failure recorded
/// in the superblocks (so the stale journal is never replayed), every
/// write still answered and read back, and after a flush and a crash the
/// members alone hold everything acknowledged.
#[test]
fn a_failing_journal_degrades_to_write_through_losing_nothing() {
    let level = Level::Raid5;
    let geometry = geometry(level, 5);
    let mut h = MemHarness::create(geometry, 77);
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    h.journal = Some(MemJournal::fresh(JOURNAL_BYTES, 9, "array-77"));
    let mut assembly = h.assemble().unwrap();
    assembly.superblock.journal = Some(eraid_core::metadata::superblock::JournalRecord {
        journal_id: 9,
        size_bytes: JOURNAL_BYTES,
        path_hint: "mem-journal".into(),
        failed: None,
    });
    let mut array = Array::open(assembly, cached_options(&mut h, &geometry), h.now);
    h.run(&mut array);
    let capacity = array.capacity_bytes();
    let mut model = vec![0u8; capacity as usize];
    let mut id = 1;
    for round in 0..40 {
        if round == 15 {
            h.journal.as_mut().unwrap().failed = true;
        }
        let mut batch = Vec::new();
        let mut written: Vec<(u64, u64)> = Vec::new();
        for _ in 0..6 {
            let range = random_write_range(&mut rng, capacity);
            if written.iter().any(|&w| overlaps(w, range)) {
                continue;
            }
            written.push(range);
            let data: Vec<u8> = (0..range.1).map(|_| rng.gen()).collect();
            h.submit(
                &mut array,
                id,
                UserOp::Write {
                    offset_bytes: range.0,
                    data: data.clone().into(),
                    fua: false,
                },
            );
            batch.push((id, range, data));
            id += 1;
        }
        h.run(&mut array);
        for (id, range, data) in batch {
            let reply = h.take_reply(id).expect("every write is answered");
            reply.result.expect("write succeeds without the journal");
            model[range.0 as usize..(range.0 + range.1) as usize].copy_from_slice(&data);
        }
    }
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, eraid_core::io::ArrayEvent::JournalFailed { .. })),
        "a warning event"
    );
    let status = array.status_json();
    assert_eq!(status["cache"]["journal"]["state"], "failed", "{status}");
    assert_eq!(read_all(&mut h, &mut array, id), model);
    call(&mut h, &mut array, id + 1, UserOp::Flush).expect("flush");
    h.crash();
    drop(array);
    let assembly = h.assemble().unwrap();
    let record = assembly.superblock.journal.clone().expect("journal record");
    assert!(
        record.failed.is_some(),
        "the failure is recorded: {record:?}"
    );
    // Served again without the failed journal (as `serve` does).
    let mut array = Array::open(assembly, options(), h.now);
    h.run(&mut array);
    assert!(
        read_all(&mut h, &mut array, 1) == model,
        "acknowledged writes survive"
    );
}

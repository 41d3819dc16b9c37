//! Growth under load: random concurrent reads and writes against a flat
//! model while every strategy grows RAID-0 and RAID-5 arrays (in-memory
//! driver with random completion order); data must always match, parity
//! must check clean afterwards, and the grown array must reassemble.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::{ReshapeConfig, ReshapeStrategy};
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::Array;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 48;

fn fast_config(strategy: ReshapeStrategy) -> ReshapeConfig {
    growth_config(strategy, 24 * CHUNK)
}

fn reshape_state(array: &Array) -> String {
    array.status_json()["reshape"]["state"]
        .as_str()
        .unwrap_or("none")
        .to_string()
}

fn verify_all(h: &mut MemHarness, array: &mut Array, model: &[u8], id: &mut u64) {
    let capacity = model.len() as u64;
    let step = 16 * CHUNK;
    let mut at = 0;
    while at < capacity {
        let len = step.min(capacity - at);
        *id += 1;
        let got = call(
            h,
            array,
            *id,
            UserOp::Read {
                offset_bytes: at,
                len_bytes: len as usize,
            },
        )
        .expect("read")
        .expect("bytes");
        assert!(
            got == model[at as usize..(at + len) as usize],
            "data differs in bytes {at}..{}",
            at + len
        );
        at += len;
    }
}

/// Writes `data` at the start of the array (request id 1).
fn write_from_start(h: &mut MemHarness, array: &mut Array, data: &[u8]) {
    let write = UserOp::Write {
        offset_bytes: 0,
        data: data.to_vec().into(),
        fua: false,
    };
    call(h, array, 1, write).expect("write");
}

/// An array of `from` members filled with random data, growing by `add`
/// members with `strategy`: (harness, array, model, rng).
fn filled_and_growing(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    from: usize,
    add: usize,
    strategy: ReshapeStrategy,
) -> (MemHarness, Array, Vec<u8>, ChaCha8Rng) {
    let g = geometry(level, layout, from, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9e0);
    let mut array = open(&mut h);
    let capacity = array.capacity_bytes();
    let model: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
    write_from_start(&mut h, &mut array, &model);
    let added = h.add_blank_members(add, member_bytes);
    let reply = array.handle_admin(
        h.now,
        AdminCommand::StartGrow {
            members: added,
            config: fast_config(strategy),
        },
    );
    assert!(reply.get("error").is_none(), "growth started: {reply}");
    (h, array, model, rng)
}

/// A RAID-5 of 3 members holding a pattern (written and flushed), growing
/// onto one blank member with `config`: (harness, array, model).
fn flushed_raid5_growing(
    seed: u64,
    layout: ParityLayout,
    config: ReshapeConfig,
) -> (MemHarness, Array, Vec<u8>) {
    let g = geometry(Level::Raid5, layout, 3, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, seed);
    let mut array = open(&mut h);
    let capacity = array.capacity_bytes();
    let model: Vec<u8> = (0..capacity)
        .map(|i| (i.wrapping_mul(31 + seed) % 251) as u8)
        .collect();
    write_from_start(&mut h, &mut array, &model);
    call(&mut h, &mut array, 2, UserOp::Flush).unwrap();
    let members = h.add_blank_members(1, member_bytes);
    let reply = array.handle_admin(h.now, AdminCommand::StartGrow { members, config });
    assert!(reply.get("error").is_none(), "growth started: {reply}");
    (h, array, model)
}

fn grow_under_load(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    from: usize,
    add: usize,
    strategy: ReshapeStrategy,
) {
    let (mut h, mut array, mut model, mut rng) =
        filled_and_growing(seed, level, layout, from, add, strategy);
    let capacity = array.capacity_bytes();
    let mut id = 10u64;
    let mut rounds = 0;
    while reshape_state(&array) == "running" {
        rounds += 1;
        assert!(rounds < 10_000, "growth does not finish");
        // A batch of non-overlapping requests submitted together, then a
        // few I/O completions so the growth and users interleave.
        let mut batch = Vec::new();
        let mut taken: Vec<(u64, u64)> = Vec::new();
        for _ in 0..rng.gen_range(1..5) {
            let sectors = capacity / SECTOR_BYTES;
            let len = rng.gen_range(1..=(3 * CHUNK / SECTOR_BYTES));
            let start = rng.gen_range(0..sectors - len);
            let range = (start * SECTOR_BYTES, len * SECTOR_BYTES);
            if taken
                .iter()
                .any(|&(o, l)| o < range.0 + range.1 && range.0 < o + l)
            {
                continue;
            }
            taken.push(range);
            id += 1;
            if rng.gen_bool(0.5) {
                let data: Vec<u8> = (0..range.1).map(|_| rng.gen()).collect();
                model[range.0 as usize..(range.0 + range.1) as usize].copy_from_slice(&data);
                h.submit(
                    &mut array,
                    id,
                    UserOp::Write {
                        offset_bytes: range.0,
                        data: data.into(),
                        fua: false,
                    },
                );
                batch.push((id, None));
            } else {
                h.submit(
                    &mut array,
                    id,
                    UserOp::Read {
                        offset_bytes: range.0,
                        len_bytes: range.1 as usize,
                    },
                );
                batch.push((id, Some(range)));
            }
        }
        if rng.gen_bool(0.2) {
            id += 1;
            h.submit(&mut array, id, UserOp::Flush);
            batch.push((id, None));
        }
        // Step only until this batch is answered: the growth advances
        // alongside, so windows, checkpoints and users interleave.
        let ids: Vec<u64> = batch.iter().map(|(i, _)| *i).collect();
        let mut steps = 0;
        while !ids.iter().all(|i| h.replies.iter().any(|r| r.id.0 == *i)) {
            steps += 1;
            assert!(
                steps < 1_000_000 && h.step(&mut array),
                "requests stuck: {}",
                array.status_json()
            );
        }
        for (rid, read) in batch {
            let reply = h
                .take_reply(rid)
                .expect("answered")
                .result
                .expect("request succeeds");
            if let Some((o, l)) = read {
                assert!(
                    reply.expect("bytes") == model[o as usize..(o + l) as usize],
                    "read {o}+{l} differs mid-growth (seed {seed}, {strategy:?})"
                );
            }
        }
    }
    let status = array.status_json();
    assert_eq!(reshape_state(&array), "done", "{status}");
    assert_eq!(status["member_count"], (from + add) as u64);
    let new_capacity = array.capacity_bytes();
    assert!(new_capacity > capacity);
    verify_all(&mut h, &mut array, &model, &mut id);
    // New space reads back as written.
    let tail: Vec<u8> = (0..new_capacity - capacity).map(|_| rng.gen()).collect();
    id += 1;
    call(
        &mut h,
        &mut array,
        id,
        UserOp::Write {
            offset_bytes: capacity,
            data: tail.clone().into(),
            fua: false,
        },
    )
    .unwrap();
    model.extend_from_slice(&tail);
    if level != Level::Raid0 {
        assert_eq!(
            check(&mut h, &mut array, false),
            (0, 0),
            "parity clean after growth"
        );
    }
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    assert_eq!(array.capacity_bytes(), new_capacity);
    verify_all(&mut h, &mut array, &model, &mut id);
}

fn seeds() -> u64 {
    std::env::var("ERAID_GROWTH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

#[test]
fn raid0_strategies_grow_under_load() {
    for seed in 0..seeds() {
        for strategy in [
            ReshapeStrategy::RoundRobin,
            ReshapeStrategy::SemiRr,
            ReshapeStrategy::FastScale,
        ] {
            for add in [1, 2] {
                grow_under_load(seed, Level::Raid0, ParityLayout::None, 4, add, strategy);
            }
        }
    }
}

#[test]
fn raid5_strategies_grow_under_load() {
    for seed in 0..seeds() {
        for strategy in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
            for layout in [
                ParityLayout::LeftAsymmetric,
                ParityLayout::LeftSymmetric,
                ParityLayout::RightAsymmetric,
                ParityLayout::RightSymmetric,
            ] {
                for (from, add) in [(3, 1), (4, 2)] {
                    grow_under_load(seed, Level::Raid5, layout, from, add, strategy);
                }
            }
        }
    }
}

/// A member fails mid-growth: the growth pauses and says why, users are
/// served degraded from both layouts, and no byte is lost.
fn member_fails_during_growth(
    seed: u64,
    layout: ParityLayout,
    from: usize,
    add: usize,
    strategy: ReshapeStrategy,
) {
    let (mut h, mut array, mut model, mut rng) =
        filled_and_growing(seed ^ 0xfa11, Level::Raid5, layout, from, add, strategy);
    let capacity = array.capacity_bytes();
    for _ in 0..rng.gen_range(5..200) {
        if !h.step(&mut array) {
            break;
        }
    }
    let victim = rng.gen_range(0..from + add);
    h.members[victim].as_mut().unwrap().failed = true;
    let mut id = 100;
    // Users go on: writes and reads across both layouts.
    for _ in 0..20 {
        let len = rng.gen_range(1..=(2 * CHUNK / SECTOR_BYTES)) * SECTOR_BYTES;
        let offset = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        model[offset as usize..(offset + len) as usize].copy_from_slice(&data);
        id += 1;
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
        .unwrap_or_else(|e| panic!("degraded write: {e}; victim {victim}, seed {seed}, {strategy:?} {layout:?} {from}+{add}: {}", array.status_json()["reshape"]));
    }
    h.run(&mut array);
    let status = array.status_json();
    let state = reshape_state(&array);
    if state != "done" {
        assert_eq!(state, "paused", "{status}");
        let reason = status["reshape"]["pause_reason"].as_str().unwrap_or("");
        assert!(
            reason.contains(&format!("member {victim}")),
            "pause names the member: {reason}"
        );
        // The operator cannot resume it while a member is missing.
        let refused = array.handle_admin(h.now, AdminCommand::ResumeGrow);
        let error = refused["error"].as_str().unwrap_or("");
        assert!(
            error.contains("degraded") && error.contains(&victim.to_string()),
            "{refused}"
        );
        assert_eq!(reshape_state(&array), "paused");
    }
    assert_eq!(status["degraded"], true);
    verify_all(&mut h, &mut array, &model, &mut id);
}

#[test]
fn raid5_member_failure_during_growth_loses_nothing() {
    for seed in 0..seeds() * 4 {
        for strategy in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
            for layout in [ParityLayout::LeftAsymmetric, ParityLayout::RightSymmetric] {
                member_fails_during_growth(seed, layout, 3, 1, strategy);
                member_fails_during_growth(seed, layout, 4, 2, strategy);
            }
        }
    }
}

/// Successive growths: fastscale twice (the history grows); semi-rr or
/// round-robin on a fastscale history is refused, changing nothing. Every
/// byte survives each growth, and the result reassembles.
#[test]
fn successive_growths_keep_every_byte() {
    let g = geometry(Level::Raid0, ParityLayout::None, 4, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, 7);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut array = open(&mut h);
    let mut model: Vec<u8> = (0..array.capacity_bytes()).map(|_| rng.gen()).collect();
    write_from_start(&mut h, &mut array, &model);
    let mut id = 10;
    for (round, strategy) in [
        ReshapeStrategy::FastScale,
        ReshapeStrategy::SemiRr,
        ReshapeStrategy::FastScale,
        ReshapeStrategy::RoundRobin,
    ]
    .into_iter()
    .enumerate()
    {
        let members_before = h.members.len();
        let added = h.add_blank_members(1, member_bytes);
        let reply = array.handle_admin(
            h.now,
            AdminCommand::StartGrow {
                members: added,
                config: fast_config(strategy),
            },
        );
        if round % 2 == 1 {
            let error = reply["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("fastscale"),
                "{strategy:?} after fastscale refused: {reply}"
            );
            assert_eq!(array.status_json()["member_count"], members_before as u64);
            h.members.truncate(members_before);
            continue;
        }
        assert!(reply.get("error").is_none(), "{reply}");
        h.run(&mut array);
        assert_eq!(
            reshape_state(&array),
            "done",
            "{}",
            array.status_json()["reshape"]
        );
        verify_all(&mut h, &mut array, &model, &mut id);
        // Fill the new space too, so the next growth moves it.
        let old = model.len() as u64;
        let tail: Vec<u8> = (0..array.capacity_bytes() - old)
            .map(|_| rng.gen())
            .collect();
        id += 1;
        call(
            &mut h,
            &mut array,
            id,
            UserOp::Write {
                offset_bytes: old,
                data: tail.clone().into(),
                fua: false,
            },
        )
        .unwrap();
        model.extend_from_slice(&tail);
    }
    assert_eq!(array.status_json()["member_count"], 6);
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    verify_all(&mut h, &mut array, &model, &mut id);
}

/// md-reshape's window holds MD's stripe cache: a user read far from the
/// window waits while the window reads under `Window` and `Reads`, and goes
/// to the disks at once under `Touching`; once the window writes, only
/// `Window` still holds it. Either way it is answered right.
#[test]
fn md_reshape_window_holds_users_as_its_stripe_cache_says() {
    use eraid_core::growth::config::MdUsersWait;
    for (wait, waits_while_reading, waits_while_writing) in [
        (MdUsersWait::Window, true, true),
        (MdUsersWait::Reads, true, false),
        (MdUsersWait::Touching, false, false),
    ] {
        for (stage, waits) in [
            ("Reading", waits_while_reading),
            ("Writing", waits_while_writing),
        ] {
            let config = ReshapeConfig {
                md_users_wait: wait,
                ..fast_config(ReshapeStrategy::MdReshape)
            };
            let (mut h, mut array, model) =
                flushed_raid5_growing(7, ParityLayout::LeftAsymmetric, config);
            let capacity = array.capacity_bytes();
            // Step to the first ordinary window (past any backed-up one) in `stage`.
            let at_stage = |a: &Array| {
                let w = &a.status_json()["reshape"]["window"];
                w["stage"] == stage && w["backup"] == false
            };
            while !at_stage(&array) {
                assert!(
                    h.step(&mut array),
                    "the growth stalled before a {stage} window"
                );
            }
            let far = capacity - CHUNK;
            let before = h.inflight();
            let read = UserOp::Read {
                offset_bytes: far,
                len_bytes: CHUNK as usize,
            };
            h.submit(&mut array, 2, read);
            let issued = h.inflight() - before;
            if waits {
                assert_eq!(issued, 0, "{wait:?} {stage}: the read waits for the window");
                assert_eq!(array.status_json()["reshape"]["blocked_requests"], 1);
            } else {
                assert!(issued > 0, "{wait:?} {stage}: the read goes to the disks");
            }
            h.run(&mut array);
            let got = h.take_reply(2).expect("answered").result.expect("read");
            assert!(
                got.expect("bytes") == model[far as usize..],
                "{wait:?} {stage}"
            );
        }
    }
}

/// The operator pauses a growth: the window in flight finishes, what was
/// copied is checkpointed, nothing more moves however long it waits, users
/// are served, and it stays paused across a restart; settings can change
/// (bad ones are refused, naming them); resumed, it finishes with every
/// byte in place.
#[test]
fn operator_pauses_tunes_and_resumes_a_growth() {
    use eraid_core::growth::config::GrowthTuning;
    let (mut h, mut array, mut model, _) = filled_and_growing(
        11,
        Level::Raid5,
        ParityLayout::LeftSymmetric,
        3,
        1,
        ReshapeStrategy::Alv,
    );
    for _ in 0..40 {
        h.step(&mut array);
    }
    let answer = array.handle_admin(h.now, AdminCommand::PauseGrow);
    assert!(answer.get("error").is_none(), "{answer}");
    h.run(&mut array);
    let r = array.status_json()["reshape"].clone();
    assert_eq!(r["state"], "paused", "{r}");
    assert_eq!(r["held"], true);
    assert_eq!(r["pause_reason"], "paused by the operator");
    let processed = r["processed_bytes"].as_u64().unwrap();
    assert!(
        processed > 0 && processed < r["total_bytes"].as_u64().unwrap(),
        "{r}"
    );
    assert_eq!(
        r["checkpoint_bytes"], r["processed_bytes"],
        "copied data checkpointed"
    );
    h.idle(&mut array, 5_000);
    assert_eq!(array.status_json()["reshape"]["processed_bytes"], processed);
    let again = array.handle_admin(h.now, AdminCommand::PauseGrow);
    assert!(
        again["error"].as_str().unwrap().contains("already paused"),
        "{again}"
    );

    // Users are served while it is paused.
    let mut id = 100;
    let data: Vec<u8> = (0..2 * CHUNK).map(|i| (i % 253) as u8).collect();
    let at = 3 * CHUNK + 512;
    let write = UserOp::Write {
        offset_bytes: at,
        data: data.clone().into(),
        fua: false,
    };
    call(&mut h, &mut array, id, write).expect("write while paused");
    model[at as usize..(at + 2 * CHUNK) as usize].copy_from_slice(&data);

    // Settings: a bad one is refused and changes nothing; a good one holds.
    let bad = GrowthTuning {
        speed_min_kib_s: Some(10),
        speed_max_kib_s: Some(5),
        ..Default::default()
    };
    let refused = array.handle_admin(h.now, AdminCommand::TuneGrow(bad));
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("speed_min_kib_s"),
        "{refused}"
    );
    let config = &array.status_json()["reshape"]["config"];
    assert_ne!(config["speed_max_kib_s"], 5);
    let good = GrowthTuning {
        latency_bound_ms: Some(30.0),
        ..Default::default()
    };
    let tuned = array.handle_admin(h.now, AdminCommand::TuneGrow(good));
    assert_eq!(
        tuned["reshape"]["config"]["latency_bound_ms"], 30.0,
        "{tuned}"
    );

    // A restart keeps it paused, with its settings.
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    let r = array.status_json()["reshape"].clone();
    assert_eq!(r["state"], "paused", "{r}");
    assert_eq!(r["config"]["latency_bound_ms"], 30.0);
    h.idle(&mut array, 2_000);
    assert_eq!(array.status_json()["reshape"]["processed_bytes"], processed);

    let answer = array.handle_admin(h.now, AdminCommand::ResumeGrow);
    assert!(answer.get("error").is_none(), "{answer}");
    h.run(&mut array);
    while reshape_state(&array) != "done" {
        h.idle(&mut array, 100);
    }
    id += 1;
    verify_all(&mut h, &mut array, &model, &mut id);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    let late = array.handle_admin(h.now, AdminCommand::ResumeGrow);
    assert_eq!(late["error"], "no growth is in progress", "{late}");
}

/// After each of the first windows of a RAID-5 growth, any one member may
/// fail and every byte must still read back, degraded (copied chunks are
/// read from their new places, the rest from intact old stripes).
#[test]
fn any_member_may_fail_after_any_window() {
    let windows = 16;
    for strategy in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
        for layout in [ParityLayout::LeftAsymmetric, ParityLayout::RightSymmetric] {
            for stop in 1..=windows {
                for victim in 0..4 {
                    let (mut h, mut array, model, _) =
                        filled_and_growing(5, Level::Raid5, layout, 3, 1, strategy);
                    run_windows(&mut h, &mut array, stop);
                    h.members[victim].as_mut().unwrap().failed = true;
                    let mut id = 1000;
                    verify_all(&mut h, &mut array, &model, &mut id);
                }
            }
        }
    }
}

/// Steps the growth until `windows` windows have been copied (or it stops).
fn run_windows(h: &mut MemHarness, array: &mut Array, windows: usize) {
    let mut seen = 0;
    let mut last = 0;
    while seen < windows {
        let processed = array.status_json()["reshape"]["processed_bytes"]
            .as_u64()
            .unwrap_or(u64::MAX);
        if processed != last {
            seen += 1;
            last = processed;
        }
        if reshape_state(array) != "running" || !h.step(array) {
            break;
        }
    }
}

/// A crash after any of the first windows of a lazy RAID-5 growth, then
/// any one member missing at the restart: every byte still reads back,
/// degraded. The growth restarts from its checkpoint, so chunks copied since
/// are read from their old stripes again, which the window rule keeps whole.
/// A crash inside a backed-up window leaves its old places half overwritten:
/// the window is rewritten from its backup first, even degraded (this test
/// found reads served from the half-overwritten places when a member was
/// missing); if the missing member is the one holding the backup, that
/// double fault is reported as unavailable for those chunks only.
#[test]
fn a_crash_then_a_missing_member_loses_nothing() {
    let windows = 16;
    for strategy in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
        for layout in [ParityLayout::LeftAsymmetric, ParityLayout::RightSymmetric] {
            for stop in 1..=windows {
                for victim in 0..4 {
                    // Lazy: checkpoints only when the rule forces one.
                    let config = growth_config(strategy, 1 << 30);
                    let (mut h, mut array, model) =
                        flushed_raid5_growing(9 + stop as u64, layout, config);
                    run_windows(&mut h, &mut array, stop);
                    h.crash();
                    h.members[victim] = None;
                    let mut array = open(&mut h);
                    h.run(&mut array);
                    let pending = array.status_json()["reshape"]["pending_backup"].clone();
                    if pending["member"] == victim {
                        // A double fault: the crash came mid-window and the
                        // member holding the window's backup is gone. Its
                        // chunks must be refused, never returned wrong.
                        let lost = pending["start_bytes"].as_u64().unwrap()
                            ..pending["end_bytes"].as_u64().unwrap();
                        verify_chunks_or_refused(&mut h, &mut array, &model, lost);
                    } else {
                        let mut id = 1000;
                        verify_all(&mut h, &mut array, &model, &mut id);
                    }
                }
            }
        }
    }
}

/// Reads chunk by chunk: chunks in `lost` must fail as unavailable, every
/// other chunk must equal the model.
fn verify_chunks_or_refused(
    h: &mut MemHarness,
    array: &mut Array,
    model: &[u8],
    lost: std::ops::Range<u64>,
) {
    let mut at = 0;
    let mut id = 5000;
    while at < model.len() as u64 {
        id += 1;
        let read = UserOp::Read {
            offset_bytes: at,
            len_bytes: CHUNK as usize,
        };
        let got = call(h, array, id, read);
        if lost.contains(&at) {
            let error = got.expect_err("a chunk whose only copy is missing is refused");
            assert!(error.to_string().contains("missing"), "{error}");
        } else {
            let bytes = got.expect("read").expect("bytes");
            assert!(
                bytes == model[at as usize..(at + CHUNK) as usize],
                "chunk at {at}"
            );
        }
        at += CHUNK;
    }
}

/// A crash while a backed-up window is being written, then its backup found
/// damaged at the restart: the growth pauses saying so (it does not retry
/// forever), that window's chunks are refused as unavailable, and every
/// other chunk reads back.
#[test]
fn a_damaged_backup_is_reported_not_retried() {
    let config = growth_config(ReshapeStrategy::Alv, 1 << 30);
    let (mut h, mut array, model) = flushed_raid5_growing(21, ParityLayout::LeftAsymmetric, config);
    // Step until the first window, backed up and recorded, is being written.
    let backup = loop {
        let r = array.status_json()["reshape"].clone();
        if r["window"]["stage"] == "Writing" && !r["pending_backup"].is_null() {
            break r["pending_backup"].clone();
        }
        assert!(h.step(&mut array), "no backed-up window: {r}");
    };
    h.crash();
    let member = backup["member"].as_u64().unwrap() as usize;
    let at = backup["member_offset_bytes"].as_u64().unwrap() as usize;
    let m = h.members[member].as_mut().unwrap();
    for bytes in [&mut m.durable, &mut m.current] {
        bytes[at..at + 512].iter_mut().for_each(|b| *b ^= 0x5a);
    }
    let mut array = open(&mut h);
    let r = array.status_json()["reshape"].clone();
    assert_eq!(r["state"], "paused", "{r}");
    assert!(
        r["pause_reason"].as_str().unwrap().contains("damaged"),
        "{r}"
    );
    let lost = backup["start_bytes"].as_u64().unwrap()..backup["end_bytes"].as_u64().unwrap();
    verify_chunks_or_refused(&mut h, &mut array, &model, lost);
}

/// The engine never asks to be woken at an instant already past: when
/// ALV's run period is over while a window is still in flight, the period
/// ends with the window (an I/O completion). A past deadline would be due
/// at once, again and again, and a real driver would spin on it (the
/// served array's engine then answered nothing).
#[test]
fn alv_never_asks_for_a_tick_in_the_past() {
    let (mut h, mut array, _model) = flushed_raid5_growing(
        3,
        ParityLayout::LeftAsymmetric,
        fast_config(ReshapeStrategy::Alv),
    );
    let mut jumps = 0;
    let mut steps = 0;
    loop {
        h.collect(&mut array);
        let window_in_flight = !array.status_json()["reshape"]["window"].is_null();
        if window_in_flight && jumps < 20 {
            // A whole valve period passes while the window's I/O is out.
            h.now = h.now.plus_ms(1_500);
            array.handle_tick(h.now);
            jumps += 1;
        }
        if let Some(deadline) = array.poll_timeout() {
            assert!(
                deadline > h.now,
                "deadline {deadline:?} is not after now {:?} (step {steps})",
                h.now
            );
        }
        if !h.step(&mut array) {
            break;
        }
        steps += 1;
    }
    assert!(jumps >= 5, "only {jumps} windows were seen in flight");
    assert_eq!(reshape_state(&array), "done", "the growth finished");
}

/// ALV's valve in its three readings (`valve_latency`): user reads that
/// the drives answer slowly (40 ms, over the 15 ms bound) but that the
/// growth never holds back make the load high when the valve times their
/// response (also when it times the controller's processing), and leave it
/// low when it times only their admission.
#[test]
fn alv_valve_times_the_response_or_only_the_admission() {
    use eraid_core::growth::config::ValveLatency;
    for (reading, slow_users_close_it) in [
        (ValveLatency::Response, true),
        (ValveLatency::Processing, true),
        (ValveLatency::Admission, false),
    ] {
        let config = ReshapeConfig {
            valve_latency: reading,
            speed_min_kib_s: 0,
            ..fast_config(ReshapeStrategy::Alv)
        };
        let (mut h, mut array, model) =
            flushed_raid5_growing(9, ParityLayout::LeftAsymmetric, config);
        let mut id = 1_000;
        let (mut periods, mut closed) = (0, 0);
        // Slow reads until the growth is done or (users always late) the
        // valve has shut; then the growth finishes without users.
        while reshape_state(&array) != "done" && closed == 0 {
            // Chunk 0 is in the first window only; once that is moved no
            // read of it is held back again.
            let copied = array.status_json()["reshape"]["processed_bytes"]
                .as_u64()
                .unwrap_or(0);
            let offset_bytes = if copied > 0 { 0 } else { 47 * CHUNK };
            h.submit(
                &mut array,
                id,
                UserOp::Read {
                    offset_bytes,
                    len_bytes: 4096,
                },
            );
            h.now = h.now.plus_ms(40);
            array.handle_tick(h.now);
            while h.take_reply(id).is_none() {
                assert!(h.step(&mut array), "read {id} was answered");
            }
            let reshape = &array.status_json()["reshape"];
            periods = reshape["valve_periods"].as_u64().unwrap_or(periods);
            closed = reshape["valve_closed_periods"].as_u64().unwrap_or(closed);
            id += 1;
            assert!(id < 100_000, "{reading:?}: no verdict");
        }
        if slow_users_close_it {
            assert!(
                closed > 0,
                "{reading:?}: slow responses never closed the valve"
            );
        } else {
            assert!(periods >= 2, "{reading:?}: only {periods} valve periods");
            assert_eq!(
                closed, 0,
                "{reading:?}: the valve closed with no user held back"
            );
        }
        while reshape_state(&array) != "done" {
            h.idle(&mut array, 1_000);
        }
        let mut next = id;
        verify_all(&mut h, &mut array, &model, &mut next);
    }
}

/// What `hold_reads_at_the_moving_window` saw.
struct HeldReads {
    held_reads: u64,
    valve_periods: u64,
    valve_closed_periods: u64,
    next_id: u64,
}

/// Until the growth is done or ALV's valve has shut: reads the start of
/// the window being moved (each must be held), lets `hold_ms` pass while
/// it waits, then lets it finish. Between windows the growth just runs.
fn hold_reads_at_the_moving_window(
    h: &mut MemHarness,
    array: &mut Array,
    hold_ms: u64,
    what: &str,
) -> HeldReads {
    let mut id = 1_000;
    let (mut held_reads, mut periods, mut closed) = (0, 0, 0);
    while reshape_state(array) != "done" && closed == 0 {
        h.collect(array);
        let reshape = &array.status_json()["reshape"];
        periods = reshape["valve_periods"].as_u64().unwrap_or(periods);
        closed = reshape["valve_closed_periods"].as_u64().unwrap_or(closed);
        let capacity = array.capacity_bytes();
        let window = reshape["window"]["start_bytes"].as_u64();
        let Some(start_bytes) = window.filter(|&start| start + 4096 <= capacity) else {
            if !h.step(array) {
                h.idle(array, 100);
            }
            continue;
        };
        h.submit(
            array,
            id,
            UserOp::Read {
                offset_bytes: start_bytes,
                len_bytes: 4096,
            },
        );
        assert!(
            h.take_reply(id).is_none(),
            "{what}: a read of the moving window is held"
        );
        held_reads += 1;
        h.now = h.now.plus_ms(hold_ms);
        array.handle_tick(h.now);
        while h.take_reply(id).is_none() {
            assert!(h.step(array), "read {id} was answered");
        }
        id += 1;
        assert!(id < 100_000, "{what}: no verdict");
    }
    HeldReads {
        held_reads,
        valve_periods: periods,
        valve_closed_periods: closed,
        next_id: id,
    }
}

/// With `valve_latency = admission`, a user read held back while its
/// window is moved (here 600 ms) for longer than the bound is a latecomer:
/// at slack 0 such reads shut the valve.
#[test]
fn alv_valve_counts_a_long_hold_as_late_when_timing_admission() {
    use eraid_core::growth::config::ValveLatency;
    let config = ReshapeConfig {
        valve_latency: ValveLatency::Admission,
        slack: 0.0,
        speed_min_kib_s: 0,
        ..fast_config(ReshapeStrategy::Alv)
    };
    let (mut h, mut array, model) = flushed_raid5_growing(4, ParityLayout::LeftAsymmetric, config);
    let seen = hold_reads_at_the_moving_window(&mut h, &mut array, 600, "admission");
    let (held_reads, closed) = (seen.held_reads, seen.valve_closed_periods);
    assert!(held_reads > 0, "no read was held");
    assert!(
        closed > 0,
        "{held_reads} reads held 600 ms never shut the valve"
    );
    while reshape_state(&array) != "done" {
        h.idle(&mut array, 1_000);
    }
    let mut next = seen.next_id;
    verify_all(&mut h, &mut array, &model, &mut next);
}

/// A user read held back at the window being moved makes the period
/// congested when the valve times the response, and not when it times the
/// controller's processing (the hold is part of the request's time there;
/// congestion is the array's buffers running out). Slack 1 keeps
/// latecomers from shutting the valve, so only congestion can.
#[test]
fn alv_valve_counts_a_hold_as_congestion_only_when_timing_the_response() {
    use eraid_core::growth::config::ValveLatency;
    for (reading, hold_congests) in [
        (ValveLatency::Response, true),
        (ValveLatency::Processing, false),
    ] {
        let config = ReshapeConfig {
            valve_latency: reading,
            slack: 1.0,
            speed_min_kib_s: 0,
            ..fast_config(ReshapeStrategy::Alv)
        };
        let (mut h, mut array, model) =
            flushed_raid5_growing(6, ParityLayout::LeftAsymmetric, config);
        let seen =
            hold_reads_at_the_moving_window(&mut h, &mut array, 300, &format!("{reading:?}"));
        let (held_reads, periods, closed) = (
            seen.held_reads,
            seen.valve_periods,
            seen.valve_closed_periods,
        );
        assert!(held_reads > 0, "{reading:?}: no read was held");
        if hold_congests {
            assert!(
                closed > 0,
                "{reading:?}: {held_reads} held reads never shut the valve"
            );
        } else {
            assert!(periods >= 2, "{reading:?}: only {periods} valve periods");
            assert_eq!(
                closed, 0,
                "{reading:?}: {held_reads} held reads shut the valve"
            );
        }
        while reshape_state(&array) != "done" {
            h.idle(&mut array, 1_000);
        }
        let mut next = seen.next_id;
        verify_all(&mut h, &mut array, &model, &mut next);
    }
}

/// When the valve times the controller's processing, the period is
/// congested once a user request arrives with the array's buffers
/// (`VALVE_USER_BUFFERS` requests) all taken, and not one request sooner.
#[test]
fn alv_valve_is_congested_when_the_array_buffers_run_out() {
    use eraid_core::growth::config::{ValveLatency, VALVE_USER_BUFFERS};
    for (reads, congested) in [(VALVE_USER_BUFFERS, false), (VALVE_USER_BUFFERS + 1, true)] {
        let config = ReshapeConfig {
            valve_latency: ValveLatency::Processing,
            slack: 1.0,
            speed_min_kib_s: 0,
            // Periods short enough to end while this small growth runs.
            valve_period_ms: 5,
            ..fast_config(ReshapeStrategy::Alv)
        };
        let (mut h, mut array, model) =
            flushed_raid5_growing(8, ParityLayout::LeftAsymmetric, config);
        let capacity = array.capacity_bytes();
        // Reads of the array's last sectors, in the old region the first
        // windows do not touch: nothing holds them back.
        let first_id = 1_000;
        for i in 0..reads as u64 {
            h.submit(
                &mut array,
                first_id + i,
                UserOp::Read {
                    offset_bytes: capacity - 4096 * (1 + i % 64),
                    len_bytes: 4096,
                },
            );
        }
        h.run(&mut array);
        for i in 0..reads as u64 {
            assert!(
                h.take_reply(first_id + i).is_some(),
                "read {i} was answered"
            );
        }
        // Valve periods pass: the one with the reads is judged.
        h.idle(&mut array, 10);
        h.idle(&mut array, 10);
        let reshape = &array.status_json()["reshape"];
        let closed = reshape["valve_closed_periods"].as_u64().unwrap_or(0);
        let periods = reshape["valve_periods"].as_u64().unwrap_or(0);
        assert!(periods >= 1, "{reads} reads: no valve period was judged");
        assert_eq!(
            closed > 0,
            congested,
            "{reads} reads at once: {closed} of {periods} periods closed"
        );
        while reshape_state(&array) != "done" {
            h.idle(&mut array, 1_000);
        }
        let mut next = first_id + reads as u64;
        verify_all(&mut h, &mut array, &model, &mut next);
    }
}

/// ALV moves a window in one read per old member and one write per member:
/// the ALV paper's Table 1 decodes to m reads and m + n writes per window
/// for A(m, n). An old member's share of a window (its chunks over the old,
/// narrower stripes) is larger than the aggregation window each member is
/// written in, and is still read in one I/O.
#[test]
fn alv_reads_each_old_member_once_per_window() {
    let config = growth_config(ReshapeStrategy::Alv, 1 << 30);
    let (mut h, mut array, model) = flushed_raid5_growing(3, ParityLayout::LeftAsymmetric, config);
    for _ in 0..200 {
        h.run(&mut array);
        if reshape_state(&array) == "done" {
            break;
        }
        h.idle(&mut array, 10);
    }
    assert_eq!(reshape_state(&array), "done");
    let reshape = &array.status_json()["reshape"];
    // A(3, 1): windows of 2 chunks per member over 3 new data members.
    let window_chunks = 2 * 3;
    let old_windows = 2 * MEMBER_CHUNKS / window_chunks;
    let all_windows = 3 * MEMBER_CHUNKS / window_chunks;
    let backups = reshape["backup_windows"].as_u64().expect("backup_windows");
    assert_eq!(
        reshape["redistribution_reads"].as_u64(),
        Some(3 * old_windows),
        "{reshape}"
    );
    // A backed-up window writes its backup too.
    assert_eq!(
        reshape["redistribution_writes"].as_u64(),
        Some(4 * all_windows + backups),
        "{reshape}"
    );
    let mut id = 100;
    verify_all(&mut h, &mut array, &model, &mut id);
}

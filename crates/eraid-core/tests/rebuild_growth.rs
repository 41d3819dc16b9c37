//! A member fails during a RAID-5 growth: the growth pauses, a hot spare
//! (or a replacement added then) is rebuilt while the growth is paused, in
//! both layouts the array then has (new below the growth's checkpoint, old
//! above it), and the growth goes on by itself and finishes. Random reads
//! and writes run throughout against a flat model; parity checks clean
//! after, and the replacement holds its data (read back with another
//! member removed). The failed member is an old one (in both layouts) or
//! one the growth added (in the new layout only). A crash during that
//! rebuild resumes it from its checkpoint and the growth still finishes.
//! ERAID_REBUILD_SEEDS sets the seed count.

mod common;
use common::lifecycle::*;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::ReshapeStrategy;
use eraid_core::io::{AdminCommand, ArrayEvent, Machine, UserOp};
use eraid_core::metadata::assemble::SlotState;
use eraid_core::metadata::superblock::MemberState;
use eraid_core::rebuild::config::{RebuildConfig, RebuildStrategy};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

const MEMBER_CHUNKS: u64 = 48;

const STRATEGIES: [RebuildStrategy; 4] = [
    RebuildStrategy::Pr,
    RebuildStrategy::Dor,
    RebuildStrategy::Pro,
    RebuildStrategy::ProDor,
];

/// Never throttled, a small window, a checkpoint every 4 chunks of the
/// replacement (as the rebuild tests).
fn rebuild_options_for(strategy: RebuildStrategy) -> ArrayOptions {
    ArrayOptions {
        rebuild: RebuildConfig {
            strategy,
            speed_min_kib_s: u64::MAX / 4096,
            speed_max_kib_s: u64::MAX / 4096,
            window_stripes: 2,
            checkpoint_bytes: 4 * CHUNK,
            hot_zone_bytes: 8 * CHUNK,
            time_slice_ms: 2,
            ..RebuildConfig::default()
        },
        ..options()
    }
}

fn reshape_of(array: &Array) -> Value {
    array.status_json()["reshape"].clone()
}

/// Both images equal, or the first chunk where they differ is named.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(at) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: byte {at} (chunk {}) differs from the model",
            at as u64 / CHUNK
        );
    }
}

/// Which member fails mid-growth.
#[derive(Clone, Copy, Debug)]
enum Victim {
    /// A member the array had before the growth (in both layouts).
    Old,
    /// A member the growth added (in the new layout only).
    Added,
}

/// How the failed member's replacement comes.
#[derive(Clone, Copy, Debug)]
enum Replacement {
    /// A hot spare added before the growth takes over by itself.
    SpareBefore,
    /// The operator adds a replacement once the growth has paused.
    AddedAfter,
}

/// A RAID-5 growing from `from` members by `add`, filled with random data,
/// with a spare first if `replacement` says so. Returns the harness, the
/// array, the model, the rng, and the device serving each slot of the
/// grown array (the spare, if any, is device `from`).
struct Growing {
    h: MemHarness,
    array: Array,
    model: Vec<u8>,
    rng: ChaCha8Rng,
    slot_devices: Vec<usize>,
}

fn growing_raid5(
    seed: u64,
    layout: ParityLayout,
    from: usize,
    add: usize,
    growth: ReshapeStrategy,
    rebuild: RebuildStrategy,
    replacement: Replacement,
) -> Growing {
    let g = geometry(Level::Raid5, layout, from, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6e0f);
    let mut array = open_with(&mut h, rebuild_options_for(rebuild));
    let model = fill(&mut h, &mut array, &mut rng);
    let mut slot_devices: Vec<usize> = (0..from).collect();
    if let Replacement::SpareBefore = replacement {
        add_spare(&mut h, &mut array);
        h.run(&mut array);
    }
    let first_added = h.members.len();
    slot_devices.extend(first_added..first_added + add);
    let members = h.add_blank_members(add, member_bytes);
    // Lazy or eager checkpoints: the growth's checkpoint may lag what it
    // copied when the member fails.
    let sliding = if rng.gen_bool(0.5) {
        1 << 30
    } else {
        6 * CHUNK
    };
    admin_ok(
        &mut h,
        &mut array,
        AdminCommand::StartGrow {
            members,
            config: growth_config(growth, sliding),
        },
    );
    Growing {
        h,
        array,
        model,
        rng,
        slot_devices,
    }
}

/// Steps the growth with user batches in between until it has copied at
/// least `fraction` of its chunks (or is done).
fn grow_until(g: &mut Growing, fraction: f64, next_id: &mut u64, what: &str) {
    loop {
        let reshape = reshape_of(&g.array);
        if reshape["state"] != "running" || reshape["progress"].as_f64().unwrap() >= fraction {
            return;
        }
        if g.rng.gen_bool(0.3) {
            user_batch(
                &mut g.h,
                &mut g.array,
                &mut g.rng,
                &mut g.model,
                next_id,
                what,
            );
        }
        for _ in 0..g.rng.gen_range(1..8) {
            if !g.h.step(&mut g.array) {
                break;
            }
        }
    }
}

/// Fails `victim`'s device and brings its replacement; returns the slot.
fn fail_mid_growth(
    g: &mut Growing,
    from: usize,
    add: usize,
    victim: Victim,
    replacement: Replacement,
    next_id: &mut u64,
    what: &str,
) -> usize {
    let slot = match victim {
        Victim::Old => g.rng.gen_range(0..from),
        Victim::Added => g.rng.gen_range(from..from + add),
    };
    if g.rng.gen_bool(0.5) {
        g.h.members[g.slot_devices[slot]].as_mut().unwrap().failed = true;
    } else {
        admin_ok(&mut g.h, &mut g.array, AdminCommand::FailMember { slot });
    }
    if let Replacement::AddedAfter = replacement {
        // Users go on degraded until the growth notices and pauses.
        while reshape_of(&g.array)["state"] == "running" {
            user_batch(
                &mut g.h,
                &mut g.array,
                &mut g.rng,
                &mut g.model,
                next_id,
                what,
            );
        }
        let member = blank_member(&mut g.h);
        admin_ok(
            &mut g.h,
            &mut g.array,
            AdminCommand::AddMember {
                member,
                spare: false,
            },
        );
    }
    slot
}

/// The growth is done: the new space reads as zeroes.
fn grown_space_is_zeroes(g: &mut Growing) {
    let capacity = g.array.capacity_bytes() as usize;
    if capacity > g.model.len() {
        g.model.resize(capacity, 0);
    }
}

/// Users run until the growth is done; the rebuild must have run while the
/// growth was paused, and the growth must go on with no command.
fn users_until_growth_done(g: &mut Growing, next_id: &mut u64, what: &str) {
    users_until_growth_done_seeing(g, next_id, what, true)
}

/// As `users_until_growth_done`; `see_rebuild`: some batch must run while
/// the rebuild does.
fn users_until_growth_done_seeing(
    g: &mut Growing,
    next_id: &mut u64,
    what: &str,
    see_rebuild: bool,
) {
    let mut rebuilt_beside_paused_growth = false;
    let mut rounds = 0;
    loop {
        let (reshape, rebuild) = (reshape_of(&g.array), rebuild_status(&g.array));
        if rebuild["state"] == "running" {
            assert_eq!(reshape["state"], "paused", "{what}: {reshape}");
            let reason = reshape["pause_reason"].as_str().unwrap_or("");
            assert!(reason.contains("being rebuilt"), "{what}: {reason}");
            // The operator cannot resume it under the rebuild.
            let refused = g.array.handle_admin(g.h.now, AdminCommand::ResumeGrow);
            g.h.collect(&mut g.array);
            assert!(
                refused["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("being rebuilt")),
                "{what}: {refused}"
            );
            rebuilt_beside_paused_growth = true;
        }
        if reshape["state"] == "done" {
            break;
        }
        grown_space_is_zeroes(g);
        user_batch(
            &mut g.h,
            &mut g.array,
            &mut g.rng,
            &mut g.model,
            next_id,
            what,
        );
        rounds += 1;
        assert!(
            rounds < 20_000,
            "{what}: the growth does not finish: {reshape} {rebuild}"
        );
    }
    g.h.run(&mut g.array);
    grown_space_is_zeroes(g);
    assert!(
        rebuilt_beside_paused_growth || !see_rebuild,
        "{what}: no user batch saw the rebuild beside the paused growth"
    );
}

/// The end state: growth and rebuild done, every member active, every byte
/// the model's, parity clean; then, reopened with another member removed,
/// every byte still reads back (so the replacement holds its share).
fn verify_end(g: Growing, failed: usize, what: &str) {
    verify_end_with(g, failed, what, true)
}

/// As `verify_end`; `events`: the run's events since the rebuild began are
/// all in the harness (not cleared by a crash).
fn verify_end_with(g: Growing, failed: usize, what: &str, events: bool) {
    let Growing {
        mut h,
        mut array,
        model,
        ..
    } = g;
    let status = array.status_json();
    assert_eq!(status["rebuild"]["state"], "done", "{what}: {status}");
    assert_eq!(status["reshape"]["state"], "done", "{what}: {status}");
    assert_eq!(status["degraded"], false, "{what}");
    assert!(
        !events
            || h.events.iter().any(|e| {
                matches!(e, ArrayEvent::RebuildFinished { members } if members == &vec![failed])
            }),
        "{what}: no RebuildFinished event: {:?}",
        h.events
    );
    assert!(
        !events
            || h.events
                .iter()
                .any(|e| matches!(e, ArrayEvent::ReshapeFinished { .. })),
        "{what}: no ReshapeFinished event"
    );
    let members = array.geometry().member_count;
    let states: Vec<&str> = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap())
        .collect();
    assert!(states.iter().all(|&s| s == "active"), "{what}: {states:?}");
    assert_same(&read_all(&mut h, &mut array, 9_999), &model, what);
    assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
    close(&mut h, &mut array);
    drop(array);
    let assembly = h.arrange_for_assembly().expect("reassembles");
    assert!(
        matches!(assembly.slots[failed], SlotState::Present { .. }),
        "{what}: replacement {failed} not in sync: {:?}",
        assembly.report
    );
    assert_eq!(
        assembly.superblock.members[failed].state,
        MemberState::Active
    );
    // RAID-5: with any other member gone, every stripe reads the replacement.
    let other = (failed + 1) % members;
    h.members[other] = None;
    let mut array = open_with(&mut h, rebuild_options_for(RebuildStrategy::Pr));
    let back = read_all(&mut h, &mut array, 7_777);
    assert_same(
        &back,
        &model,
        &format!("{what}: with member {other} removed"),
    );
}

#[allow(clippy::too_many_arguments)]
fn failure_during_growth(
    seed: u64,
    layout: ParityLayout,
    from: usize,
    add: usize,
    growth: ReshapeStrategy,
    rebuild: RebuildStrategy,
    victim: Victim,
    replacement: Replacement,
) {
    let what = format!(
        "seed {seed} {layout:?} {from}+{add} {growth:?} {rebuild:?} {victim:?} {replacement:?}"
    );
    let mut g = growing_raid5(seed, layout, from, add, growth, rebuild, replacement);
    let mut next_id = 10;
    let fraction = g.rng.gen_range(0.0..0.9);
    grow_until(&mut g, fraction, &mut next_id, &what);
    assert_ne!(
        reshape_of(&g.array)["state"],
        "done",
        "{what}: the growth ended before the failure"
    );
    let failed = fail_mid_growth(&mut g, from, add, victim, replacement, &mut next_id, &what);
    users_until_growth_done(&mut g, &mut next_id, &what);
    verify_end(g, failed, &what);
}

#[test]
fn failure_during_growth_then_rebuild_then_the_growth_finishes() {
    for seed in 0..rebuild_seeds(8) {
        let rebuild = STRATEGIES[seed as usize % STRATEGIES.len()];
        let layout = if seed % 2 == 0 {
            ParityLayout::LeftSymmetric
        } else {
            ParityLayout::LeftAsymmetric
        };
        for growth in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
            for victim in [Victim::Old, Victim::Added] {
                for replacement in [Replacement::SpareBefore, Replacement::AddedAfter] {
                    let (from, add) = if seed % 3 == 2 { (4, 2) } else { (3, 1) };
                    failure_during_growth(
                        seed,
                        layout,
                        from,
                        add,
                        growth,
                        rebuild,
                        victim,
                        replacement,
                    );
                }
            }
        }
    }
}

/// The stripes (rows) a rebuild record says are rebuilt and durable.
fn recorded_rows(record: &eraid_core::rebuild::record::RebuildRecord) -> Vec<bool> {
    let total = record.total_stripes;
    let mut rebuilt: Vec<bool> = (0..total).map(|s| s < record.checkpoint_stripe).collect();
    if let Some(map) = &record.rebuilt_units {
        let bits = map.decode(total).expect("a recorded map decodes");
        for row in 0..total {
            let unit = row / map.unit_stripes;
            rebuilt[row as usize] |= bits[(unit / 8) as usize] & (1 << (unit % 8)) != 0;
        }
    }
    rebuilt
}

/// What a crash run found, for the summary assertions.
struct CrashOutcome {
    /// Rows recorded rebuilt when the rebuild resumed.
    resumed_rows: u64,
}

/// A member fails mid-growth, its spare is being rebuilt beside the
/// paused growth, users write (and sometimes flush); the machine crashes
/// after a random number of I/O completions. Reassembled, the rebuild
/// resumes from exactly the rows its record holds (against the same cut of
/// the growth), then the growth goes on by itself and finishes; every
/// sector flushed before the crash reads back (except rows a write was in
/// flight in: a degraded RAID-5's write hole), parity checks clean and the
/// replacement holds its data.
fn crash_during_rebuild_beside_growth(
    seed: u64,
    growth: ReshapeStrategy,
    rebuild: RebuildStrategy,
    victim: Victim,
) -> CrashOutcome {
    let (from, add) = (3, 1);
    let layout = ParityLayout::LeftSymmetric;
    let what = format!("crash seed {seed} {growth:?} {rebuild:?} {victim:?}");
    let mut g = growing_raid5(
        seed,
        layout,
        from,
        add,
        growth,
        rebuild,
        Replacement::SpareBefore,
    );
    let mut next_id = 10;
    let fraction = g.rng.gen_range(0.1..0.8);
    grow_until(&mut g, fraction, &mut next_id, &what);
    let slot = match victim {
        Victim::Old => g.rng.gen_range(0..from),
        Victim::Added => g.rng.gen_range(from..from + add),
    };
    g.h.members[g.slot_devices[slot]].as_mut().unwrap().failed = true;
    // Step by step (a batch or a `call` would run the rebuild to its end)
    // until the spare has taken over; a read of every member's chunks
    // finds the failure if the growth has not.
    let mut rounds = 0;
    while rebuild_status(&g.array)["state"] != "running" {
        if !g.h.step(&mut g.array) {
            next_id += 1;
            let read = UserOp::Read {
                offset_bytes: 0,
                len_bytes: (8 * CHUNK) as usize,
            };
            g.h.submit(&mut g.array, next_id, read);
        }
        rounds += 1;
        assert!(rounds < 100_000, "{what}: no rebuild starts");
    }
    let reshape = reshape_of(&g.array);
    assert_eq!(reshape["state"], "paused", "{what}: {reshape}");
    let cut_chunks = reshape["checkpoint_bytes"].as_u64().unwrap() / CHUNK;
    let (old_k, new_k) = ((from - 1) as u64, (from + add - 1) as u64);
    // The row (in its layout) each chunk of the array lives in meanwhile.
    let row_of = |chunk: u64| {
        if chunk < cut_chunks {
            chunk / new_k
        } else {
            chunk / old_k
        }
    };
    let capacity = g.array.capacity_bytes();
    let sectors = (capacity / SECTOR_BYTES) as usize;
    let mut flushed = g.model.clone();
    let mut touched = vec![false; sectors];
    // Everything acknowledged so far is flushed first (stepped: a `call`
    // would run the rebuild to its end).
    next_id += 1;
    g.h.submit(&mut g.array, next_id, UserOp::Flush);
    while g.h.take_reply(next_id).is_none() {
        assert!(
            g.h.step(&mut g.array),
            "{what}: the flush is never answered"
        );
    }
    let crash_after = g.rng.gen_range(1..300);
    let mut steps = 0;
    'run: loop {
        next_id += 1;
        if g.rng.gen_bool(0.25) {
            let id = next_id;
            g.h.submit(&mut g.array, id, UserOp::Flush);
            loop {
                if let Some(reply) = g.h.take_reply(id) {
                    reply.result.expect("flush ok");
                    flushed.copy_from_slice(&g.model);
                    touched.fill(false);
                    break;
                }
                if steps >= crash_after || !g.h.step(&mut g.array) {
                    break 'run;
                }
                steps += 1;
            }
            continue;
        }
        let mut writes = Vec::new();
        for _ in 0..g.rng.gen_range(1..4) {
            let range = random_range(&mut g.rng, capacity, 3 * CHUNK);
            if writes.iter().any(|(_, r, _)| overlaps(*r, range)) {
                continue;
            }
            let data: Vec<u8> = (0..range.1).map(|_| g.rng.gen()).collect();
            for s in range.0 / SECTOR_BYTES..(range.0 + range.1) / SECTOR_BYTES {
                touched[s as usize] = true;
            }
            next_id += 1;
            g.h.submit(
                &mut g.array,
                next_id,
                UserOp::Write {
                    offset_bytes: range.0,
                    data: data.clone().into(),
                    fua: false,
                },
            );
            writes.push((next_id, range, data));
        }
        let mut pending = writes.len();
        while pending > 0 {
            for (id, range, data) in &writes {
                if let Some(reply) = g.h.take_reply(*id) {
                    reply.result.expect("write ok");
                    g.model[range.0 as usize..(range.0 + range.1) as usize].copy_from_slice(data);
                    pending -= 1;
                }
            }
            if pending == 0 {
                break;
            }
            if steps >= crash_after || !g.h.step(&mut g.array) {
                break 'run;
            }
            steps += 1;
        }
        if rebuild_status(&g.array)["state"] != "running" {
            break;
        }
    }
    g.h.crash();
    let Growing {
        mut h,
        array,
        mut rng,
        slot_devices,
        ..
    } = g;
    drop(array);
    let assembly = h
        .arrange_for_assembly()
        .expect("reassembles after the crash");
    let record = assembly.superblock.rebuild.clone();
    let growth_record = assembly.superblock.reshape.clone().expect("growth record");
    let mut array = Array::open(assembly, rebuild_options_for(rebuild), h.now);
    let mut resumed_rows = 0;
    if let Some(record) = record.as_ref().filter(|r| r.state.unfinished()) {
        // The rebuild resumes at its record, against the cut it recorded.
        assert_eq!(
            record.growth_checkpoint_chunk,
            Some(growth_record.checkpoint_chunk),
            "{what}: the rebuild records the growth's cut"
        );
        assert_eq!(growth_record.checkpoint_chunk, cut_chunks, "{what}");
        let recorded = recorded_rows(record);
        let status = rebuild_status(&array);
        resumed_rows = recorded.iter().filter(|&&r| r).count() as u64;
        assert_eq!(
            status["rebuilt_stripes"].as_u64().unwrap(),
            resumed_rows,
            "{what}: every row recorded rebuilt, and only those: {status}"
        );
        assert_eq!(
            status["position_stripes"].as_u64().unwrap(),
            recorded.iter().position(|&r| !r).unwrap_or(recorded.len()) as u64,
            "{what}"
        );
        let reshape = reshape_of(&array);
        assert_eq!(reshape["state"], "paused", "{what}: {reshape}");
        assert_eq!(
            status["growth_checkpoint_bytes"].as_u64(),
            Some(cut_chunks * CHUNK),
            "{what}"
        );
    }
    h.run(&mut array);
    // Rows a write was in flight in when the crash came: only the
    // sectors flushed outside them are sure.
    let mut exposed_rows = std::collections::HashSet::new();
    for (s, _) in touched.iter().enumerate().filter(|(_, &t)| t) {
        exposed_rows.insert(row_of(s as u64 * SECTOR_BYTES / CHUNK));
    }
    let unchecked: Vec<bool> = (0..sectors)
        .map(|s| touched[s] || exposed_rows.contains(&row_of(s as u64 * SECTOR_BYTES / CHUNK)))
        .collect();
    let mut g = Growing {
        model: read_all(&mut h, &mut array, 6_666),
        h,
        array,
        rng: {
            let seed = rng.gen();
            ChaCha8Rng::seed_from_u64(seed)
        },
        slot_devices,
    };
    for s in (0..sectors).filter(|&s| !unchecked[s]) {
        let range = s * SECTOR_BYTES as usize..(s + 1) * SECTOR_BYTES as usize;
        assert!(
            g.model[range.clone()] == flushed[range],
            "{what}: flushed sector {s} lost after the crash"
        );
    }
    users_until_growth_done_seeing(&mut g, &mut next_id, &what, false);
    verify_end_with(g, slot, &what, false);
    CrashOutcome { resumed_rows }
}

#[test]
fn a_crash_during_the_rebuild_beside_a_paused_growth_resumes_and_the_growth_finishes() {
    let mut runs = 0;
    let mut resumed_midway = 0;
    for seed in 0..rebuild_seeds(8) {
        let rebuild = STRATEGIES[seed as usize % STRATEGIES.len()];
        for growth in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape] {
            for victim in [Victim::Old, Victim::Added] {
                let outcome = crash_during_rebuild_beside_growth(seed, growth, rebuild, victim);
                runs += 1;
                resumed_midway += (outcome.resumed_rows > 0) as usize;
            }
        }
    }
    // Not vacuous: many crashes came after a rebuild checkpoint.
    assert!(
        resumed_midway * 4 >= runs,
        "only {resumed_midway} of {runs} crashes resumed a rebuild past row 0"
    );
    eprintln!("{resumed_midway} of {runs} crashes resumed a rebuild past row 0");
}

/// The operator's hand beside it: a spare cannot be added while the growth
/// runs (only once it is paused); a growth the operator pauses during the
/// rebuild stays paused after it, saying so, until resumed; then it
/// finishes.
#[test]
fn an_operator_pause_during_the_rebuild_holds_the_growth_after_it() {
    let what = "operator pause beside the rebuild";
    let mut g = growing_raid5(
        3,
        ParityLayout::LeftSymmetric,
        3,
        1,
        ReshapeStrategy::Alv,
        RebuildStrategy::Pr,
        Replacement::AddedAfter,
    );
    let mut next_id = 10;
    grow_until(&mut g, 0.3, &mut next_id, what);
    assert_eq!(reshape_of(&g.array)["state"], "running", "{what}");
    let member = blank_member(&mut g.h);
    let refused = g.array.handle_admin(
        g.h.now,
        AdminCommand::AddMember {
            member,
            spare: true,
        },
    );
    g.h.collect(&mut g.array);
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("a growth is running")),
        "{what}: {refused}"
    );
    // The refused file is no device of the array: the harness forgets it.
    g.h.members.pop();
    let failed = fail_mid_growth(
        &mut g,
        3,
        1,
        Victim::Old,
        Replacement::AddedAfter,
        &mut next_id,
        what,
    );
    // The replacement takes over once the growth's position is recorded:
    // a checkpoint may still be in flight when it is added.
    let mut steps = 0;
    while rebuild_status(&g.array).is_null() {
        assert!(
            g.h.step(&mut g.array) && steps < 10_000,
            "{what}: no rebuild started: {}",
            reshape_of(&g.array)
        );
        steps += 1;
    }
    assert_eq!(rebuild_status(&g.array)["state"], "running", "{what}");
    admin_ok(&mut g.h, &mut g.array, AdminCommand::PauseGrow);
    g.h.run(&mut g.array);
    let reshape = reshape_of(&g.array);
    assert_eq!(rebuild_status(&g.array)["state"], "done", "{what}");
    assert_eq!(reshape["state"], "paused", "{what}: {reshape}");
    assert_eq!(reshape["held"], true, "{what}: {reshape}");
    assert_eq!(
        reshape["pause_reason"], "paused by the operator",
        "{what}: {reshape}"
    );
    admin_ok(&mut g.h, &mut g.array, AdminCommand::ResumeGrow);
    users_until_growth_done_seeing(&mut g, &mut next_id, what, false);
    verify_end(g, failed, what);
}

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
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::{NewMember, ReshapeStrategy};
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

fn seeds() -> u64 {
    std::env::var("ERAID_REBUILD_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

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

fn open_with(h: &mut MemHarness, options: ArrayOptions) -> Array {
    let assembly = h.arrange_for_assembly().expect("assembles");
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    array
}

fn admin_ok(h: &mut MemHarness, array: &mut Array, command: AdminCommand) -> Value {
    let answer = array.handle_admin(h.now, command.clone());
    h.collect(array);
    assert!(answer.get("error").is_none(), "{command:?}: {answer}");
    answer
}

fn blank_member(h: &mut MemHarness) -> NewMember {
    let size = h.members[0].as_ref().expect("member 0").current.len() as u64;
    h.add_blank_members(1, size).remove(0)
}

fn reshape_of(array: &Array) -> Value {
    array.status_json()["reshape"].clone()
}

fn rebuild_of(array: &Array) -> Value {
    array.status_json()["rebuild"].clone()
}

/// One batch of concurrent non-overlapping requests, stepped until all are
/// answered; reads checked against the model, writes applied to it.
fn user_batch(
    h: &mut MemHarness,
    array: &mut Array,
    rng: &mut ChaCha8Rng,
    model: &mut [u8],
    next_id: &mut u64,
    what: &str,
) {
    let capacity = array.capacity_bytes();
    let mut batch: Vec<(u64, UserOp)> = Vec::new();
    let mut taken: Vec<(u64, u64)> = Vec::new();
    for _ in 0..rng.gen_range(1..6) {
        let range = random_range(rng, capacity, 5 * CHUNK);
        if taken.iter().any(|&t| overlaps(t, range)) {
            continue;
        }
        taken.push(range);
        let op = if rng.gen_bool(0.5) {
            UserOp::Read {
                offset_bytes: range.0,
                len_bytes: range.1 as usize,
            }
        } else {
            UserOp::Write {
                offset_bytes: range.0,
                data: (0..range.1).map(|_| rng.gen()).collect(),
                fua: rng.gen_bool(0.1),
            }
        };
        batch.push((*next_id, op));
        *next_id += 1;
    }
    for (id, op) in &batch {
        h.submit(array, *id, op.clone());
    }
    let mut answered = 0;
    while answered < batch.len() {
        for (id, op) in &batch {
            let Some(reply) = h.take_reply(*id) else {
                continue;
            };
            answered += 1;
            let result = reply
                .result
                .unwrap_or_else(|e| panic!("{what}: request {id} failed: {e}"));
            match op {
                UserOp::Read {
                    offset_bytes,
                    len_bytes,
                } => {
                    let at = *offset_bytes as usize;
                    assert!(
                        result.as_deref() == Some(&model[at..at + len_bytes]),
                        "{what}: read {offset_bytes}+{len_bytes} differs from the model"
                    );
                }
                UserOp::Write {
                    offset_bytes, data, ..
                } => {
                    let at = *offset_bytes as usize;
                    model[at..at + data.len()].copy_from_slice(data);
                }
                _ => unreachable!(),
            }
        }
        if answered < batch.len() {
            assert!(
                h.step(array),
                "{what}: requests unanswered with nothing in flight"
            );
        }
    }
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
        let member = blank_member(&mut h);
        admin_ok(
            &mut h,
            &mut array,
            AdminCommand::AddMember {
                member,
                spare: true,
            },
        );
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
    let mut rebuilt_beside_paused_growth = false;
    let mut rounds = 0;
    loop {
        let (reshape, rebuild) = (reshape_of(&g.array), rebuild_of(&g.array));
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
        rebuilt_beside_paused_growth,
        "{what}: no user batch saw the rebuild beside the paused growth"
    );
}

/// The end state: growth and rebuild done, every member active, every byte
/// the model's, parity clean; then, reopened with another member removed,
/// every byte still reads back (so the replacement holds its share).
fn verify_end(g: Growing, failed: usize, what: &str) {
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
        h.events.iter().any(
            |e| matches!(e, ArrayEvent::RebuildFinished { members } if members == &vec![failed])
        ),
        "{what}: no RebuildFinished event: {:?}",
        h.events
    );
    assert!(
        h.events
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
    assert_same(&read_all(&mut h, &mut array, 9_999), &model, &what);
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
    for seed in 0..seeds() {
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

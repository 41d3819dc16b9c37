//! Rebuild (PR): a failed member's contents are reconstructed onto a
//! replacement or a hot spare while random reads and writes run; every read
//! matches a flat model, parity / mirror copies check clean after, and the
//! array reassembles with the replacement active, its contents right (read
//! back with other members removed, so every stripe depends on it). Crashes
//! at random instants during a rebuild resume from the recorded checkpoint.
//! Bad requests are refused and change nothing. ERAID_REBUILD_SEEDS sets
//! the seed count.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::NewMember;
use eraid_core::io::{AdminCommand, ArrayEvent, Machine, UserOp};
use eraid_core::metadata::assemble::SlotState;
use eraid_core::metadata::superblock::MemberState;
use eraid_core::rebuild::config::RebuildConfig;
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

fn shapes() -> Vec<(Level, ParityLayout, usize)> {
    vec![
        (Level::Raid5, ParityLayout::LeftSymmetric, 4),
        (Level::Raid5, ParityLayout::LeftAsymmetric, 3),
        (Level::Raid6, ParityLayout::LeftSymmetric, 5),
        (Level::Raid10, ParityLayout::Near2, 4),
        (Level::Raid10, ParityLayout::Near2, 3),
    ]
}

/// Never throttled; a small window and frequent checkpoints (every 4
/// chunks of the replacement), so tests see many of both.
fn rebuild_options() -> ArrayOptions {
    ArrayOptions {
        rebuild: RebuildConfig {
            speed_min_kib_s: u64::MAX / 4096,
            speed_max_kib_s: u64::MAX / 4096,
            window_stripes: 2,
            checkpoint_bytes: 4 * CHUNK,
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

fn admin(h: &mut MemHarness, array: &mut Array, command: AdminCommand) -> Value {
    let answer = array.handle_admin(h.now, command);
    h.collect(array);
    answer
}

fn admin_ok(h: &mut MemHarness, array: &mut Array, command: AdminCommand) -> Value {
    let answer = admin(h, array, command.clone());
    assert!(answer.get("error").is_none(), "{command:?}: {answer}");
    answer
}

/// A blank member for the harness, described as a driver would.
fn blank_member(h: &mut MemHarness) -> NewMember {
    let size = h.members[0].as_ref().expect("member 0").current.len() as u64;
    h.add_blank_members(1, size).remove(0)
}

fn rebuild_status(array: &Array) -> Value {
    array.status_json()["rebuild"].clone()
}

fn member_states(array: &Array) -> Vec<String> {
    array.status_json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap().to_string())
        .collect()
}

fn random_range(rng: &mut ChaCha8Rng, capacity: u64, max_bytes: u64) -> (u64, u64) {
    let sectors = capacity / SECTOR_BYTES;
    let len = rng.gen_range(1..=(max_bytes / SECTOR_BYTES).min(sectors));
    let start = rng.gen_range(0..=sectors - len);
    (start * SECTOR_BYTES, len * SECTOR_BYTES)
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

fn read_all(h: &mut MemHarness, array: &mut Array, id: u64) -> Vec<u8> {
    let len_bytes = array.capacity_bytes() as usize;
    call(
        h,
        array,
        id,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes,
        },
    )
    .expect("read ok")
    .expect("read data")
}

/// Fills the array with random bytes and flushes; returns the model.
fn fill(h: &mut MemHarness, array: &mut Array, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let capacity = array.capacity_bytes();
    let model: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
    call(
        h,
        array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: model.clone(),
            fua: true,
        },
    )
    .expect("fill");
    model
}

/// One batch of concurrent requests that never overlap a write of the same
/// batch, stepped (rebuild I/O completing among them) until all answered;
/// reads are checked against the model, writes applied to it.
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
    let mut answered = Vec::new();
    while answered.len() < batch.len() {
        for (id, _) in &batch {
            if answered.contains(id) {
                continue;
            }
            if let Some(reply) = h.take_reply(*id) {
                answered.push(*id);
                let (_, op) = batch.iter().find(|(i, _)| i == id).unwrap();
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
        }
        if answered.len() < batch.len() {
            assert!(
                h.step(array),
                "{what}: requests unanswered with nothing in flight"
            );
        }
    }
}

/// The slots to remove so that, with `replaced` in use, every stripe must
/// read the replacements (only k shards, or one mirror copy, left).
fn others_to_remove(level: Level, members: usize, replaced: &[usize]) -> Vec<usize> {
    let keep_others = match level {
        Level::Raid5 | Level::Raid6 => members - level.redundancy() - replaced.len(),
        _ => unreachable!("mirrors choose their partners"),
    };
    (0..members)
        .filter(|m| !replaced.contains(m))
        .skip(keep_others)
        .collect()
}

/// Closes, removes members other than `replaced` so each stripe depends on
/// the replacements, reopens degraded and reads everything: it must be
/// `expected`. Checks the replacements are recorded active first.
fn verify_replacements(
    h: &mut MemHarness,
    mut array: Array,
    level: Level,
    members: usize,
    replaced: &[usize],
    expected: &[u8],
    what: &str,
) {
    close(h, &mut array);
    drop(array);
    let assembly = h.arrange_for_assembly().expect("reassembles");
    for &slot in replaced {
        assert!(
            matches!(assembly.slots[slot], SlotState::Present { .. }),
            "{what}: replacement {slot} not in sync: {:?}",
            assembly.report
        );
        assert_eq!(assembly.superblock.members[slot].state, MemberState::Active);
    }
    let remove: Vec<usize> = match level {
        // Mirrors: the partner of each replaced slot's chunks.
        Level::Raid10 => {
            let g = assembly.superblock.geometry;
            let layout = eraid_core::layout::layout_for(&g);
            let mut partners = Vec::new();
            for stripe in 0..members as u64 {
                let map = layout.stripe_map(stripe);
                let (a, b) = (map.data[0].member, map.parity[0].member);
                for (x, y) in [(a, b), (b, a)] {
                    if replaced.contains(&x) && !replaced.contains(&y) && !partners.contains(&y) {
                        partners.push(y);
                    }
                }
            }
            // With 3 members a slot has two partners; removing both would
            // lose the third's only copies: keep the first.
            partners.truncate(1);
            partners
        }
        _ => others_to_remove(level, members, replaced),
    };
    for &slot in &remove {
        h.members[slot] = None;
    }
    let mut array = open_with(h, rebuild_options());
    let back = read_all(h, &mut array, 7_777);
    assert!(
        back == expected,
        "{what}: with members {remove:?} removed the replacements read back wrong"
    );
}

/// How the member fails and how its replacement comes.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// The operator fails it, then adds a replacement.
    FailThenAdd,
    /// A hot spare is added first; the member's device then fails and the
    /// spare takes over by itself.
    SpareTakesOver,
}

fn run_rebuild_under_load(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    members: usize,
    scenario: Scenario,
) {
    let what = format!("seed {seed} {level:?} {layout:?} x{members} {scenario:?}");
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7eb1);
    let mut array = open_with(&mut h, rebuild_options());
    let mut model = fill(&mut h, &mut array, &mut rng);
    let mut next_id = 10;
    let failed = rng.gen_range(0..members);
    match scenario {
        Scenario::FailThenAdd => {
            admin_ok(
                &mut h,
                &mut array,
                AdminCommand::FailMember { slot: failed },
            );
            h.run(&mut array);
            for _ in 0..3 {
                user_batch(
                    &mut h,
                    &mut array,
                    &mut rng,
                    &mut model,
                    &mut next_id,
                    &what,
                );
            }
            let member = blank_member(&mut h);
            admin_ok(
                &mut h,
                &mut array,
                AdminCommand::AddMember {
                    member,
                    spare: false,
                },
            );
        }
        Scenario::SpareTakesOver => {
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
            assert_eq!(member_states(&array).last().unwrap(), "spare", "{what}");
            h.members[failed].as_mut().unwrap().failed = true;
        }
    }
    // Users run while the rebuild goes on; some batch must find it midway.
    let mut saw_midway = false;
    let mut rounds = 0;
    loop {
        let status = rebuild_status(&array);
        let running = status["state"] == "running";
        let progress = status["progress"].as_f64().unwrap_or(0.0);
        saw_midway |= running && progress > 0.0 && progress < 1.0;
        if status["state"] == "done" {
            break;
        }
        user_batch(
            &mut h,
            &mut array,
            &mut rng,
            &mut model,
            &mut next_id,
            &what,
        );
        rounds += 1;
        assert!(rounds < 10_000, "{what}: the rebuild does not finish");
    }
    h.run(&mut array);
    assert!(saw_midway, "{what}: no user batch ran during the rebuild");
    let status = rebuild_status(&array);
    assert_eq!(status["state"], "done", "{what}: {status}");
    assert_eq!(status["rebuilt_bytes"], status["total_bytes"], "{what}");
    assert!(
        h.events.iter().any(
            |e| matches!(e, ArrayEvent::RebuildFinished { members } if members == &vec![failed])
        ),
        "{what}: no RebuildFinished event: {:?}",
        h.events
    );
    assert!(
        member_states(&array).iter().all(|s| s == "active"),
        "{what}: {:?}",
        member_states(&array)
    );
    assert_eq!(array.status_json()["degraded"], false, "{what}");
    assert_eq!(read_all(&mut h, &mut array, 9_999), model, "{what}");
    assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
    verify_replacements(&mut h, array, level, members, &[failed], &model, &what);
}

#[test]
fn random_io_during_a_rebuild_reads_the_model_and_the_replacement_is_right() {
    for seed in 0..seeds() {
        for (level, layout, members) in shapes() {
            let scenario = if seed % 2 == 0 {
                Scenario::FailThenAdd
            } else {
                Scenario::SpareTakesOver
            };
            run_rebuild_under_load(seed, level, layout, members, scenario);
        }
    }
}

/// RAID-6 with two members failed at once and two spares: both slots are
/// rebuilt in one pass.
#[test]
fn raid6_rebuilds_two_replacements_in_one_pass() {
    for seed in 0..seeds() {
        let what = format!("seed {seed}");
        let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 5, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6);
        let mut array = open_with(&mut h, rebuild_options());
        let mut model = fill(&mut h, &mut array, &mut rng);
        for _ in 0..2 {
            let member = blank_member(&mut h);
            admin_ok(
                &mut h,
                &mut array,
                AdminCommand::AddMember {
                    member,
                    spare: true,
                },
            );
        }
        h.run(&mut array);
        let a = rng.gen_range(0..5);
        let b = (a + rng.gen_range(1..5)) % 5;
        admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: a });
        admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: b });
        let status = rebuild_status(&array);
        assert_eq!(
            status["targets"].as_array().unwrap().len(),
            2,
            "{what}: {status}"
        );
        let mut next_id = 100;
        while rebuild_status(&array)["state"] == "running" {
            user_batch(
                &mut h,
                &mut array,
                &mut rng,
                &mut model,
                &mut next_id,
                &what,
            );
        }
        h.run(&mut array);
        let status = rebuild_status(&array);
        assert_eq!(status["state"], "done", "{what}: {status}");
        assert!(member_states(&array).iter().all(|s| s == "active"));
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}");
        let mut replaced = vec![a, b];
        replaced.sort_unstable();
        verify_replacements(&mut h, array, Level::Raid6, 5, &replaced, &model, &what);
    }
}

/// What one crash run found.
struct CrashOutcome {
    durable_checkpoint: u64,
    exposed_sectors: usize,
}

/// Writes during a rebuild, flushes now and then, and a crash at a random
/// instant (unflushed writes dropped, applied or torn). After reassembly
/// the rebuild resumes exactly at the durable checkpoint and finishes;
/// every flushed sector reads back, except the replacement's sectors in
/// stripes past the checkpoint that shared a stripe with a write in
/// flight: there a torn write leaves parity and data disagreeing with no
/// intact copy of the replacement's old contents (the write hole of any
/// degraded array, which Linux MD has too). Parity checks clean, and the
/// replacement agrees with the others.
fn crash_during_rebuild(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    members: usize,
) -> CrashOutcome {
    let what = format!("seed {seed} {level:?} {layout:?} x{members}");
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc7a5);
    let mut array = open_with(&mut h, rebuild_options());
    let capacity = array.capacity_bytes();
    let mut acked = fill(&mut h, &mut array, &mut rng);
    let mut flushed = acked.clone();
    let sectors = (capacity / SECTOR_BYTES) as usize;
    let mut touched = vec![false; sectors];
    let failed = rng.gen_range(0..members);
    admin_ok(
        &mut h,
        &mut array,
        AdminCommand::FailMember { slot: failed },
    );
    h.run(&mut array);
    let member = blank_member(&mut h);
    admin_ok(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
    );
    // Crash after a random number of I/O completions, before the end.
    let crash_after = rng.gen_range(1..400);
    let mut steps = 0;
    let mut id = 10;
    'run: loop {
        if rng.gen_bool(0.25) {
            h.submit(&mut array, id, UserOp::Flush);
            loop {
                if let Some(reply) = h.take_reply(id) {
                    reply.result.expect("flush ok");
                    flushed.copy_from_slice(&acked);
                    touched.fill(false);
                    break;
                }
                if steps >= crash_after || !h.step(&mut array) {
                    break 'run;
                }
                steps += 1;
            }
            id += 1;
            continue;
        }
        let mut writes = Vec::new();
        for _ in 0..rng.gen_range(1..4) {
            let range = random_range(&mut rng, capacity, 3 * CHUNK);
            if writes.iter().any(|(_, r, _)| overlaps(*r, range)) {
                continue;
            }
            let data: Vec<u8> = (0..range.1).map(|_| rng.gen()).collect();
            for s in range.0 / SECTOR_BYTES..(range.0 + range.1) / SECTOR_BYTES {
                touched[s as usize] = true;
            }
            h.submit(
                &mut array,
                id,
                UserOp::Write {
                    offset_bytes: range.0,
                    data: data.clone(),
                    fua: false,
                },
            );
            writes.push((id, range, data));
            id += 1;
        }
        let mut pending = writes.len();
        while pending > 0 {
            for (wid, range, data) in &writes {
                if let Some(reply) = h.take_reply(*wid) {
                    reply.result.expect("write ok");
                    acked[range.0 as usize..(range.0 + range.1) as usize].copy_from_slice(data);
                    pending -= 1;
                }
            }
            if pending == 0 {
                break;
            }
            if steps >= crash_after || !h.step(&mut array) {
                break 'run;
            }
            steps += 1;
        }
        if rebuild_status(&array)["state"] != "running" {
            break;
        }
    }
    h.crash();
    drop(array);
    let assembly = match h.arrange_for_assembly() {
        // The replacement's first metadata write did not survive: it is a
        // blank file again, not a member.
        Err(eraid_core::metadata::assemble::AssemblyError::NotAMember { path, .. }) => {
            assert_eq!(path, format!("mem{}", members), "{what}");
            h.members[members] = None;
            h.arrange_for_assembly().expect("reassembles without it")
        }
        other => other.expect("reassembles after the crash"),
    };
    // No rebuild record yet: the crash came before the takeover was
    // recorded (the replacement may be recorded as a spare, which takes
    // over again at open), or the replacement is gone (its own metadata
    // did not survive): a new one is added then.
    let record = assembly.superblock.rebuild.clone();
    let spare_here = assembly.spares.iter().any(|s| s.is_some());
    let mut array = Array::open(assembly, rebuild_options(), h.now);
    // Where the rebuild goes on from (None: it had finished durably).
    let resumed_from = match &record {
        Some(record) if record.state.unfinished() => {
            let resumed = rebuild_status(&array)["position_stripes"].as_u64().unwrap();
            assert_eq!(
                resumed, record.checkpoint_stripe,
                "{what}: the rebuild resumes at the durable checkpoint"
            );
            assert_eq!(
                array.status_json()["members"][failed]["state"],
                "rebuilding",
                "{what}"
            );
            Some(record.checkpoint_stripe)
        }
        Some(record) => {
            assert_eq!(record.state.name(), "done", "{what}");
            None
        }
        None => Some(0),
    };
    h.run(&mut array);
    if record.is_none() && !spare_here {
        let member = blank_member(&mut h);
        admin_ok(
            &mut h,
            &mut array,
            AdminCommand::AddMember {
                member,
                spare: false,
            },
        );
        h.run(&mut array);
    }
    let status = rebuild_status(&array);
    assert_eq!(status["state"], "done", "{what}: {status}");
    let durable_checkpoint = resumed_from.unwrap_or(0);
    // Sectors a torn write in a stripe past the checkpoint can leave wrong
    // on the replacement (see above); mirrors have no such coupling.
    let g = *array.geometry();
    let layout_map = eraid_core::layout::layout_for(&g);
    let mut exposed = vec![false; sectors];
    if level != Level::Raid10 && resumed_from.is_some() {
        let chunk_sectors = (g.chunk_bytes / SECTOR_BYTES) as usize;
        let k = g.data_per_stripe() as u64;
        for stripe in durable_checkpoint..g.stripe_count() {
            let stripe_sectors = stripe as usize * k as usize * chunk_sectors
                ..(stripe as usize + 1) * k as usize * chunk_sectors;
            if !touched[stripe_sectors.clone()].iter().any(|&t| t) {
                continue;
            }
            let map = layout_map.stripe_map(stripe);
            for (j, place) in map.data.iter().enumerate() {
                if place.member == failed {
                    let first = stripe_sectors.start + j * chunk_sectors;
                    exposed[first..first + chunk_sectors].fill(true);
                }
            }
        }
    }
    let unchecked: Vec<bool> = touched
        .iter()
        .zip(&exposed)
        .map(|(&t, &e)| t || e)
        .collect();
    assert_flushed_sectors_survive(&mut h, &mut array, &flushed, &unchecked, &what);
    assert_eq!(check(&mut h, &mut array, false).0, 0, "{what}: mismatches");
    let whole = read_all(&mut h, &mut array, 8_888);
    verify_replacements(&mut h, array, level, members, &[failed], &whole, &what);
    CrashOutcome {
        durable_checkpoint,
        exposed_sectors: exposed.iter().filter(|&&e| e).count(),
    }
}

#[test]
fn a_crash_during_a_rebuild_resumes_from_its_checkpoint_and_loses_nothing_flushed() {
    let mut resumed_midway = 0;
    let mut runs = 0;
    let mut exposed = 0;
    for seed in 0..seeds() * 3 {
        for (level, layout, members) in shapes() {
            let outcome = crash_during_rebuild(seed, level, layout, members);
            runs += 1;
            resumed_midway += (outcome.durable_checkpoint > 0) as usize;
            exposed += outcome.exposed_sectors;
        }
    }
    // Not vacuous: many crashes came after a checkpoint was recorded.
    assert!(
        resumed_midway * 3 >= runs,
        "only {resumed_midway} of {runs} crashes came after a checkpoint"
    );
    eprintln!(
        "{resumed_midway} of {runs} crashes resumed past stripe 0; {exposed} sectors excluded \
         as exposed to the degraded write hole"
    );
}

/// Rebuilt stripes are recorded only after a flush: with a planted bug
/// recording the position without flushing the replacement first, crashes
/// must lose replacement data (this shows the test above can catch it).
/// Checked through the durable image: right after each checkpoint record
/// becomes durable, every stripe below it reads back right from the
/// replacement's durable bytes.
#[test]
fn a_recorded_checkpoint_is_always_durable_on_the_replacement() {
    for seed in 0..seeds() {
        for (level, layout, members) in shapes() {
            let what = format!("seed {seed} {level:?} x{members}");
            let g = geometry(level, layout, members, MEMBER_CHUNKS);
            let mut h = MemHarness::create(g, seed);
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xd0);
            let mut array = open_with(&mut h, rebuild_options());
            fill(&mut h, &mut array, &mut rng);
            // The expected replacement image: the failed member's bytes.
            let failed = rng.gen_range(0..members);
            let data_offset = g.data_offset_bytes as usize;
            let expected = h.members[failed].as_ref().unwrap().current[data_offset..].to_vec();
            admin_ok(
                &mut h,
                &mut array,
                AdminCommand::FailMember { slot: failed },
            );
            h.run(&mut array);
            let member = blank_member(&mut h);
            let device = h.members.len() - 1;
            admin_ok(
                &mut h,
                &mut array,
                AdminCommand::AddMember {
                    member,
                    spare: false,
                },
            );
            let layout_map = eraid_core::layout::layout_for(&g);
            let mut checked = 0;
            while h.step(&mut array) {
                // What a crash now would come back to: the newest durable
                // superblock on any member.
                let newest = h
                    .members
                    .iter()
                    .flatten()
                    .filter_map(|m| {
                        eraid_core::metadata::superblock::Superblock::decode_newest(
                            &m.durable[..data_offset],
                        )
                        .ok()
                    })
                    .max_by_key(|sb| sb.events);
                let Some(record) = newest.and_then(|sb| sb.rebuild) else {
                    continue;
                };
                let image = &h.members[device].as_ref().unwrap().durable[data_offset..];
                for stripe in checked..record.checkpoint_stripe {
                    let map = layout_map.stripe_map(stripe);
                    for place in map.shards().filter(|p| p.member == failed) {
                        let at = (place.member_chunk * g.chunk_bytes) as usize;
                        let len = g.chunk_bytes as usize;
                        assert!(
                            image[at..at + len] == expected[at..at + len],
                            "{what}: stripe {stripe} recorded rebuilt but not durable on the replacement"
                        );
                    }
                }
                checked = checked.max(record.checkpoint_stripe);
            }
            assert_eq!(checked, g.stripe_count(), "{what}: every stripe checked");
        }
    }
}

/// An operator's pause holds across a restart; resumed, the rebuild
/// finishes from where it was.
#[test]
fn a_paused_rebuild_stays_paused_across_a_restart_then_finishes() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 11);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut array = open_with(&mut h, rebuild_options());
    let model = fill(&mut h, &mut array, &mut rng);
    admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: 2 });
    h.run(&mut array);
    let member = blank_member(&mut h);
    admin_ok(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
    );
    for _ in 0..30 {
        h.step(&mut array);
    }
    admin_ok(&mut h, &mut array, AdminCommand::PauseRebuild);
    h.run(&mut array);
    let paused = rebuild_status(&array);
    assert_eq!(paused["state"], "paused");
    let position = paused["position_stripes"].as_u64().unwrap();
    assert!(position > 0 && position < g.stripe_count(), "{paused}");
    assert_eq!(
        paused["checkpoint_bytes"], paused["rebuilt_bytes"],
        "recorded"
    );
    assert!(
        admin(&mut h, &mut array, AdminCommand::PauseRebuild)["error"]
            .as_str()
            .unwrap()
            .contains("already paused")
    );
    close(&mut h, &mut array);
    drop(array);
    let mut array = open_with(&mut h, rebuild_options());
    let again = rebuild_status(&array);
    assert_eq!(again["state"], "paused", "{again}");
    assert_eq!(again["position_stripes"].as_u64().unwrap(), position);
    assert_eq!(
        read_all(&mut h, &mut array, 5),
        model,
        "paused: reads reconstruct"
    );
    admin_ok(&mut h, &mut array, AdminCommand::ResumeRebuild);
    h.run(&mut array);
    assert_eq!(rebuild_status(&array)["state"], "done");
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    verify_replacements(&mut h, array, Level::Raid5, 4, &[2], &model, "paused");
}

/// A spare recorded in the superblocks is a spare again after a restart,
/// and takes over when a member then fails.
#[test]
fn a_spare_survives_a_restart_and_takes_over_later() {
    let g = geometry(Level::Raid10, ParityLayout::Near2, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 5);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut array = open_with(&mut h, rebuild_options());
    let model = fill(&mut h, &mut array, &mut rng);
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
    close(&mut h, &mut array);
    drop(array);
    let mut array = open_with(&mut h, rebuild_options());
    assert_eq!(
        member_states(&array),
        vec!["active", "active", "active", "active", "spare"]
    );
    assert_eq!(array.status_json()["device_count"], 5);
    // Mirrors read the first copy only: a write finds the failure.
    h.members[1].as_mut().unwrap().failed = true;
    call(
        &mut h,
        &mut array,
        2,
        UserOp::Write {
            offset_bytes: 0,
            data: model.clone(),
            fua: false,
        },
    )
    .expect("written degraded");
    assert_eq!(read_all(&mut h, &mut array, 3), model);
    h.run(&mut array);
    assert_eq!(rebuild_status(&array)["state"], "done");
    assert_eq!(array.status_json()["spare_count"], 0);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    verify_replacements(&mut h, array, Level::Raid10, 4, &[1], &model, "spare");
}

/// Every member's durable bytes, to show a refused command wrote nothing.
fn durable_images(h: &MemHarness) -> Vec<Option<Vec<u8>>> {
    h.members
        .iter()
        .map(|m| m.as_ref().map(|m| m.durable.clone()))
        .collect()
}

fn refused(h: &mut MemHarness, array: &mut Array, command: AdminCommand, words: &str) {
    let before = durable_images(h);
    let status = array.status_json();
    let answer = admin(h, array, command.clone());
    h.run(array);
    let error = answer["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{command:?} was accepted: {answer}"));
    assert!(
        error.contains(words),
        "{command:?}: {error:?} should say {words:?}"
    );
    assert_eq!(durable_images(h), before, "{command:?} changed the members");
    assert_eq!(array.status_json()["members"], status["members"]);
    assert_eq!(array.status_json()["device_count"], status["device_count"]);
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    // RAID-5 with one member failed: failing another would lose data.
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 16);
    let mut h = MemHarness::create(g, 1);
    let mut array = open_with(&mut h, rebuild_options());
    admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: 1 });
    h.run(&mut array);
    refused(
        &mut h,
        &mut array,
        AdminCommand::FailMember { slot: 2 },
        "would lose data",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::FailMember { slot: 1 },
        "already failed",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::FailMember { slot: 9 },
        "no member slot 9",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::RemoveMember { slot: 0 },
        "fail it first",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::RemoveMember { slot: 7 },
        "no member or spare 7",
    );
    // A member too small to replace one.
    let small = NewMember {
        uuid: "small".into(),
        path_hint: "small.img".into(),
        size_bytes: 1 << 20,
    };
    h.add_blank_members(1, 1 << 20);
    refused(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member: small,
            spare: false,
        },
        "small.img is too small",
    );
    h.members.pop();
    // A uuid already in the array.
    let twin = NewMember {
        uuid: "member-1-0".into(),
        path_hint: "twin".into(),
        size_bytes: 1 << 30,
    };
    refused(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member: twin,
            spare: true,
        },
        "already a member",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::ResumeRebuild,
        "no rebuild",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::TuneRebuild(eraid_core::rebuild::config::RebuildTuning {
            speed_min_kib_s: Some(10),
            speed_max_kib_s: Some(5),
        }),
        "speed_min_kib_s",
    );

    // A healthy RAID-5: a replacement has nothing to replace.
    let mut h = MemHarness::create(g, 2);
    let mut array = open_with(&mut h, rebuild_options());
    let member = blank_member(&mut h);
    refused(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
        "--spare",
    );

    // RAID-0: nothing to rebuild, no spares, no member may fail.
    let g0 = geometry(Level::Raid0, ParityLayout::None, 3, 16);
    let mut h = MemHarness::create(g0, 3);
    let mut array = open_with(&mut h, rebuild_options());
    for spare in [false, true] {
        let member = blank_member(&mut h);
        refused(
            &mut h,
            &mut array,
            AdminCommand::AddMember { member, spare },
            "no redundancy",
        );
        h.members.pop();
    }
    refused(
        &mut h,
        &mut array,
        AdminCommand::FailMember { slot: 0 },
        "no redundancy",
    );
}

/// A replacement that fails during its rebuild stops it; the slot is
/// failed again and a spare (added later) starts a new rebuild.
#[test]
fn a_replacement_failing_mid_rebuild_stops_it_and_a_spare_starts_again() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 21);
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let mut array = open_with(&mut h, rebuild_options());
    let model = fill(&mut h, &mut array, &mut rng);
    admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: 3 });
    h.run(&mut array);
    let member = blank_member(&mut h);
    let device = h.members.len() - 1;
    admin_ok(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
    );
    for _ in 0..20 {
        h.step(&mut array);
    }
    h.members[device].as_mut().unwrap().failed = true;
    h.run(&mut array);
    let status = rebuild_status(&array);
    assert_eq!(status["state"], "stopped", "{status}");
    assert!(status["reason"].as_str().unwrap().contains("failed"));
    assert_eq!(member_states(&array)[3], "faulty");
    assert_eq!(read_all(&mut h, &mut array, 4), model, "degraded reads");
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
    assert_eq!(rebuild_status(&array)["state"], "done");
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    verify_replacements(&mut h, array, Level::Raid5, 4, &[3], &model, "second");
}

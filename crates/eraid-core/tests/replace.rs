//! Replace (Linux MD's `--replace`): a serving member is copied onto a new
//! one while random reads and writes run; every read matches a flat model,
//! parity / mirror copies check clean after, the new member holds the slot
//! (read back with other members removed, so every stripe depends on it)
//! and the old one is retired (refused by assembly). The source failing
//! mid-copy turns the replace into a rebuild from where it was; the new
//! member failing stops it and the source serves on. Crashes at random
//! instants resume the copy from its checkpoint (or from the first region
//! the bitmap marks) and lose nothing flushed. Bad requests change nothing.
//! ERAID_REBUILD_SEEDS sets the seed count.

mod common;
use common::lifecycle::*;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::{AdminCommand, UserOp};
use eraid_core::metadata::assemble::{AssemblyError, SlotState};
use eraid_core::metadata::superblock::MemberState;
use eraid_core::rebuild::config::RebuildConfig;
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 48;

fn replace_shapes() -> Vec<(Level, ParityLayout, usize)> {
    vec![
        (Level::Raid5, ParityLayout::LeftSymmetric, 4),
        (Level::Raid5, ParityLayout::LeftAsymmetric, 3),
        (Level::Raid6, ParityLayout::LeftSymmetric, 5),
        (Level::Raid10, ParityLayout::Near2, 4),
        (Level::Raid10, ParityLayout::Near2, 3),
    ]
}

/// Never throttled; a small window and frequent checkpoints.
fn replace_options() -> ArrayOptions {
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

/// Closes; the old member (device `old`, if given) must be refused as
/// retired; then, with members other than `slot` removed so every stripe
/// depends on it, the array reads back `expected`.
fn verify_new_member(
    h: &mut MemHarness,
    mut array: Array,
    slot: usize,
    old: Option<usize>,
    expected: &[u8],
    what: &str,
) {
    close(h, &mut array);
    drop(array);
    if let Some(old) = old {
        match h.assemble() {
            Err(AssemblyError::Retired { path, .. }) => {
                assert_eq!(path, format!("mem{old}"), "{what}")
            }
            other => panic!("{what}: the old member is not refused as retired: {other:?}"),
        }
    }
    let assembly = h.arrange_for_assembly().expect("reassembles");
    assert!(
        matches!(assembly.slots[slot], SlotState::Present { .. }),
        "{what}: the new member is not in sync: {:?}",
        assembly.report
    );
    assert_eq!(assembly.superblock.members[slot].state, MemberState::Active);
    assert!(assembly.superblock.spares.is_empty(), "{what}");
    let level = assembly.superblock.geometry.level;
    let members = assembly.superblock.geometry.member_count;
    let remove: Vec<usize> = match level {
        Level::Raid10 => {
            let layout = eraid_core::layout::layout_for(&assembly.superblock.geometry);
            let partner = (0..members as u64)
                .map(|s| layout.stripe_map(s))
                .find_map(|map| {
                    let (a, b) = (map.data[0].member, map.parity[0].member);
                    (a == slot).then_some(b).or((b == slot).then_some(a))
                })
                .expect("the slot has a partner");
            vec![partner]
        }
        _ => (0..members)
            .filter(|&m| m != slot)
            .take(level.redundancy())
            .collect(),
    };
    for &m in &remove {
        h.members[m] = None;
    }
    let mut array = open_with(h, replace_options());
    let back = read_all(h, &mut array, 7_777);
    assert!(
        back == expected,
        "{what}: with members {remove:?} removed, the new member reads back wrong"
    );
}

#[derive(Clone, Copy, Debug)]
enum Trouble {
    None,
    /// The source's device fails mid-copy: the replace becomes a rebuild.
    SourceFails,
    /// The new member's device fails mid-copy: the replace stops.
    NewFails,
}

fn run_replace_under_load(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    members: usize,
    trouble: Trouble,
) {
    let what = format!("seed {seed} {level:?} {layout:?} x{members} {trouble:?}");
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x4e91);
    let mut array = open_with(&mut h, replace_options());
    let mut model = fill(&mut h, &mut array, &mut rng);
    let mut next_id = 10;
    let source = rng.gen_range(0..members);
    let size = member_size(&h);
    let new = blank_member_of(&mut h, size);
    let new_device = h.members.len() - 1;
    let answer = admin(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: source,
            member: new.clone(),
        },
    );
    assert!(answer.get("error").is_none(), "{what}: {answer}");
    let status = rebuild_status(&array);
    assert_eq!(status["kind"], "replace", "{what}: {status}");
    assert_eq!(status["source"]["slot"], source, "{what}");
    assert_eq!(status["target"]["uuid"], new.uuid.as_str(), "{what}");
    // A replace keeps every member serving: not degraded.
    assert_eq!(array.status_json()["degraded"], false, "{what}");
    let trouble_at = rng.gen_range(0.1..0.8);
    let mut trouble_done = false;
    let mut saw_midway = false;
    let mut rounds = 0;
    loop {
        let status = rebuild_status(&array);
        let progress = status["progress"].as_f64().unwrap_or(0.0);
        if status["state"] != "running" {
            break;
        }
        saw_midway |= progress > 0.0 && progress < 1.0;
        if !trouble_done && progress >= trouble_at {
            trouble_done = true;
            match trouble {
                Trouble::None => {}
                Trouble::SourceFails => h.members[source].as_mut().unwrap().failed = true,
                Trouble::NewFails => h.members[new_device].as_mut().unwrap().failed = true,
            }
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
        assert!(rounds < 10_000, "{what}: the replace does not finish");
    }
    h.run(&mut array);
    assert!(saw_midway, "{what}: no user batch ran during the copy");
    let status = rebuild_status(&array);
    assert_eq!(read_all(&mut h, &mut array, 9_999), model, "{what}");
    match trouble {
        Trouble::None => {
            assert_eq!(status["state"], "done", "{what}: {status}");
            assert_eq!(status["kind"], "replace", "{what}: {status}");
            let slot = &array.status_json()["members"][source];
            assert_eq!(slot["uuid"], new.uuid.as_str(), "{what}");
            assert_eq!(slot["state"], "active", "{what}");
            assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
            verify_new_member(&mut h, array, source, Some(source), &model, &what);
        }
        Trouble::SourceFails => {
            // Rebuilt from the others from where the copy was.
            assert_eq!(status["state"], "done", "{what}: {status}");
            assert_eq!(status["kind"], "full", "{what}: {status}");
            assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
            // The failed source is left out (its device fails anyway).
            h.members[source] = None;
            verify_new_member(&mut h, array, source, None, &model, &what);
        }
        Trouble::NewFails => {
            assert_eq!(status["state"], "stopped", "{what}: {status}");
            assert!(
                status["reason"].as_str().unwrap().contains("new member"),
                "{what}: {status}"
            );
            let slot = &array.status_json()["members"][source];
            assert_eq!(slot["state"], "active", "{what}");
            assert_ne!(slot["uuid"], new.uuid.as_str(), "{what}");
            assert_eq!(array.status_json()["spare_count"], 0, "{what}");
            assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
        }
    }
}

#[test]
fn random_io_during_a_replace_reads_the_model_and_the_new_member_is_right() {
    for seed in 0..rebuild_seeds(6) {
        for (level, layout, members) in replace_shapes() {
            run_replace_under_load(seed, level, layout, members, Trouble::None);
        }
    }
}

#[test]
fn a_source_failing_mid_replace_is_rebuilt_onto_the_new_member_from_there() {
    for seed in 0..rebuild_seeds(6) {
        for (level, layout, members) in replace_shapes() {
            run_replace_under_load(seed, level, layout, members, Trouble::SourceFails);
        }
    }
}

#[test]
fn a_new_member_failing_mid_replace_stops_it_and_the_source_serves_on() {
    for seed in 0..rebuild_seeds(6) / 2 + 1 {
        for (level, layout, members) in replace_shapes() {
            run_replace_under_load(seed, level, layout, members, Trouble::NewFails);
        }
    }
}

/// What a crash run found.
struct CrashOutcome {
    resumed_midway: bool,
}

/// Writes during a replace, flushes now and then, and a crash at a random
/// instant (unflushed writes dropped, applied or torn). After reassembly the
/// replace resumes at its checkpoint (lowered to the first region the
/// bitmap marks, where a torn write may have reached one copy only) and
/// finishes; every flushed sector reads back (the source serves throughout,
/// so there is no degraded write hole), parity checks clean, and the new
/// member alone carries its slot.
fn crash_during_replace(
    seed: u64,
    level: Level,
    layout: ParityLayout,
    members: usize,
) -> CrashOutcome {
    let what = format!("seed {seed} {level:?} {layout:?} x{members}");
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    // Several bitmap regions, so a resume need not start from stripe 0.
    let mut h = MemHarness::create_with_regions(g, seed, Some(4));
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc4a5);
    let mut array = open_with(&mut h, replace_options());
    let capacity = array.capacity_bytes();
    let mut acked = fill(&mut h, &mut array, &mut rng);
    let mut flushed = acked.clone();
    let sectors = (capacity / SECTOR_BYTES) as usize;
    let mut touched = vec![false; sectors];
    let source = rng.gen_range(0..members);
    let size = member_size(&h);
    let new = blank_member_of(&mut h, size);
    let answer = admin(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: source,
            member: new.clone(),
        },
    );
    assert!(answer.get("error").is_none(), "{what}: {answer}");
    let crash_after = rng.gen_range(1..500);
    // Half the runs write only in the last quarter of the array, so the
    // first region a crash leaves marked is often past the checkpoint.
    let writes_from = if seed.is_multiple_of(2) {
        0
    } else {
        capacity / 4 * 3
    };
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
            let range = random_range(&mut rng, capacity - writes_from, 3 * CHUNK);
            let range = (range.0 + writes_from, range.1);
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
                    data: data.clone().into(),
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
    let mut new_lost = false;
    let assembly = match h.arrange_for_assembly() {
        // The new member's first metadata write did not survive: a blank
        // file, not a member; the others' record names a missing spare.
        Err(AssemblyError::NotAMember { path, .. }) => {
            assert_eq!(path, format!("mem{members}"), "{what}");
            h.members[members] = None;
            new_lost = true;
            h.arrange_for_assembly().expect("reassembles without it")
        }
        other => other.expect("reassembles after the crash"),
    };
    let record = assembly.superblock.rebuild.clone();
    // Where a torn write may have reached one copy only: the first region
    // the bitmap marks (the array is always dirty after a crash).
    let first_marked = assembly
        .bitmap
        .dirty_regions()
        .next()
        .map(|r| r * assembly.superblock.bitmap_stripes_per_region);
    let per_region = assembly.superblock.bitmap_stripes_per_region;
    let marked_regions: std::collections::BTreeSet<u64> = assembly.bitmap.dirty_regions().collect();
    let mut array = Array::open(assembly, replace_options(), h.now);
    let mut resumed_midway = false;
    match &record {
        Some(record) if record.state.unfinished() && record.replace.is_some() && new_lost => {
            let status = rebuild_status(&array);
            assert_eq!(status["state"], "stopped", "{what}: {status}");
            h.run(&mut array);
        }
        Some(record) if record.state.unfinished() && record.replace.is_some() => {
            let status = rebuild_status(&array);
            let position = status["position_stripes"].as_u64().unwrap();
            let expected = record
                .checkpoint_stripe
                .min(first_marked.unwrap_or(u64::MAX));
            assert_eq!(position, expected, "{what}: {status}");
            // Counted copied: what the record holds, less every stripe of
            // a marked region (past the position too).
            let counted = resumed_copied_stripes(record, &marked_regions, per_region);
            assert_eq!(status["rebuilt_stripes"], counted, "{what}: {status}");
            resumed_midway = position > 0;
            h.run(&mut array);
            let status = rebuild_status(&array);
            assert_eq!(status["state"], "done", "{what}: {status}");
        }
        Some(record) if record.replace.is_some() => {
            // Done before the crash, or stopped (its new member's copy was lost).
            h.run(&mut array);
        }
        // The crash came before the replace was recorded.
        _ => h.run(&mut array),
    }
    assert_flushed_sectors_survive(&mut h, &mut array, &flushed, &touched, &what);
    assert_eq!(check(&mut h, &mut array, false).0, 0, "{what}: mismatches");
    let whole = read_all(&mut h, &mut array, 8_888);
    let replaced = array.status_json()["members"][source]["uuid"] == new.uuid.as_str();
    if replaced {
        // The old member may still hold a pre-retirement copy if the crash
        // came between the record and its retirement: either way it is
        // never taken back.
        verify_new_member(&mut h, array, source, None, &whole, &what);
    } else {
        close(&mut h, &mut array);
    }
    CrashOutcome { resumed_midway }
}

/// Stripes a resumed replace may count copied: those `record` holds
/// (below its checkpoint or in its rebuilt units) outside `marked_regions`.
fn resumed_copied_stripes(
    record: &eraid_core::rebuild::record::RebuildRecord,
    marked_regions: &std::collections::BTreeSet<u64>,
    per_region: u64,
) -> u64 {
    let total = record.total_stripes;
    let bits = record
        .rebuilt_units
        .as_ref()
        .map(|units| units.decode(total).expect("a recorded map decodes"))
        .unwrap_or_default();
    let unit_stripes = eraid_core::rebuild::record::recorded_unit_stripes(total);
    let in_units = |stripe: u64| {
        let unit = stripe / unit_stripes;
        bits.get((unit / 8) as usize)
            .is_some_and(|byte| byte & (1 << (unit % 8)) != 0)
    };
    (0..total)
        .filter(|&s| s < record.checkpoint_stripe || in_units(s))
        .filter(|&s| !marked_regions.contains(&(s / per_region.max(1))))
        .count() as u64
}

#[test]
fn a_crash_during_a_replace_resumes_and_loses_nothing_flushed() {
    let mut midway = 0;
    let mut runs = 0;
    for seed in 0..rebuild_seeds(6) * 3 {
        for (level, layout, members) in replace_shapes() {
            let outcome = crash_during_replace(seed, level, layout, members);
            runs += 1;
            midway += outcome.resumed_midway as usize;
        }
    }
    // Not vacuous: many crashes resumed past stripe 0.
    assert!(
        midway * 4 >= runs,
        "only {midway} of {runs} crashes resumed past stripe 0"
    );
    eprintln!("{midway} of {runs} crashes resumed a replace past stripe 0");
}

/// The command is refused naming `words`, and no byte changes on any member
/// (checked while nothing else runs) or the array's members and spares
/// stay as they were (while a rebuild writes).
fn refused(h: &mut MemHarness, array: &mut Array, command: AdminCommand, words: &str) {
    let busy = rebuild_status(array)["state"] == "running";
    let before = durable_images(h);
    let members_before = array.status_json()["members"].clone();
    let answer = admin(h, array, command.clone());
    let error = answer["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{command:?} was accepted: {answer}"));
    assert!(
        error.contains(words),
        "{command:?}: {error:?} should say {words:?}"
    );
    if busy {
        assert_eq!(
            array.status_json()["members"],
            members_before,
            "{command:?}"
        );
    } else {
        h.run(array);
        assert!(
            durable_images(h) == before,
            "{command:?} changed the members"
        );
    }
}

#[test]
fn bad_replace_requests_are_refused_and_change_nothing() {
    // RAID-0: nothing covers the source if it fails mid-copy.
    let g = geometry(Level::Raid0, ParityLayout::None, 3, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 1);
    let mut array = open_with(&mut h, replace_options());
    let size = member_size(&h);
    let new = blank_member_of(&mut h, size);
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 0,
            member: new,
        },
        "RAID-0 has no redundancy",
    );

    let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 5, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 2);
    let mut array = open_with(&mut h, replace_options());
    let size = member_size(&h);
    // Not a member slot.
    let new = blank_member_of(&mut h, size);
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 9,
            member: new.clone(),
        },
        "no member slot 9",
    );
    // Too small.
    let mut small = new.clone();
    small.size_bytes = size - CHUNK;
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 1,
            member: small,
        },
        "too small",
    );
    // Already a member.
    let mut member = new.clone();
    member.uuid = array.status_json()["members"][2]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember { slot: 1, member },
        "already a member",
    );
    // A failed member has nothing to copy: add a replacement instead.
    let answer = admin(&mut h, &mut array, AdminCommand::FailMember { slot: 3 });
    assert!(answer.get("error").is_none(), "{answer}");
    h.run(&mut array);
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 3,
            member: new.clone(),
        },
        "failed or missing",
    );
    // While a rebuild of that slot runs.
    let replacement = blank_member_of(&mut h, size);
    let answer = admin(
        &mut h,
        &mut array,
        AdminCommand::AddMember {
            member: replacement,
            spare: false,
        },
    );
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(rebuild_status(&array)["state"], "running");
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 3,
            member: new.clone(),
        },
        "being rebuilt",
    );
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 0,
            member: new.clone(),
        },
        "a rebuild of member",
    );
    h.run(&mut array);
    assert_eq!(rebuild_status(&array)["state"], "done");
    // A second replace while one runs.
    let answer = admin(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 0,
            member: new.clone(),
        },
    );
    assert!(answer.get("error").is_none(), "{answer}");
    let other = blank_member_of(&mut h, size);
    refused(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 1,
            member: other,
        },
        "a replace is running",
    );
    h.run(&mut array);
    assert_eq!(rebuild_status(&array)["state"], "done");
}

/// Removing the new member cancels the replace; the source serves on and a
/// restart does not bring the replace back.
#[test]
fn removing_the_new_member_cancels_the_replace() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 3);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut array = open_with(&mut h, replace_options());
    let model = fill(&mut h, &mut array, &mut rng);
    let size = member_size(&h);
    let new = blank_member_of(&mut h, size);
    let answer = admin(
        &mut h,
        &mut array,
        AdminCommand::ReplaceMember {
            slot: 1,
            member: new,
        },
    );
    assert!(answer.get("error").is_none(), "{answer}");
    let answer = admin(&mut h, &mut array, AdminCommand::RemoveMember { slot: 4 });
    assert!(answer.get("error").is_none(), "{answer}");
    h.run(&mut array);
    let status = rebuild_status(&array);
    assert_eq!(status["state"], "stopped", "{status}");
    assert_eq!(array.status_json()["spare_count"], 0);
    close(&mut h, &mut array);
    drop(array);
    h.members[4] = None;
    let mut array = open_with(&mut h, replace_options());
    assert_eq!(rebuild_status(&array)["state"], "stopped");
    assert_eq!(read_all(&mut h, &mut array, 5), model);
}

/// The new member fails while copy stripes are in flight, and a spare that
/// waited for the replace takes a failed slot over at once: the stopped
/// replace's stripes finishing later must not count for the new rebuild
/// (a planted bug reusing pass numbers makes this fail).
#[test]
fn a_rebuild_starting_as_a_replace_stops_ignores_the_replace_stripes() {
    for seed in 0..rebuild_seeds(6) {
        let what = format!("seed {seed}");
        let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 5, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5a5a);
        let mut array = open_with(&mut h, replace_options());
        let model = fill(&mut h, &mut array, &mut rng);
        let answer = admin(&mut h, &mut array, AdminCommand::FailMember { slot: 2 });
        assert!(answer.get("error").is_none(), "{what}: {answer}");
        h.run(&mut array);
        let size = member_size(&h);
        let new = blank_member_of(&mut h, size);
        let new_device = h.members.len() - 1;
        let answer = admin(
            &mut h,
            &mut array,
            AdminCommand::ReplaceMember {
                slot: 0,
                member: new,
            },
        );
        assert!(answer.get("error").is_none(), "{what}: {answer}");
        // A replacement for slot 2 waits as a spare while the replace runs.
        let spare = blank_member_of(&mut h, size);
        let answer = admin(
            &mut h,
            &mut array,
            AdminCommand::AddMember {
                member: spare,
                spare: false,
            },
        );
        assert!(answer.get("error").is_none(), "{what}: {answer}");
        assert_eq!(rebuild_status(&array)["kind"], "replace", "{what}");
        for _ in 0..rng.gen_range(4..40) {
            if !h.step(&mut array) {
                break;
            }
        }
        h.members[new_device].as_mut().unwrap().failed = true;
        let mut steps = 0;
        while rebuild_status(&array)["kind"] == "replace"
            || rebuild_status(&array)["state"] == "running"
        {
            assert!(
                h.step(&mut array),
                "{what}: stalled: {}",
                rebuild_status(&array)
            );
            steps += 1;
            assert!(steps < 100_000, "{what}: the rebuild does not finish");
        }
        let status = rebuild_status(&array);
        assert_eq!(status["kind"], "full", "{what}: {status}");
        assert_eq!(status["state"], "done", "{what}: {status}");
        assert_eq!(read_all(&mut h, &mut array, 77), model, "{what}");
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}");
        h.members[new_device] = None;
        verify_new_member(&mut h, array, 2, None, &model, &what);
    }
}

//! Re-add from the write-intent bitmap (Linux MD's `--re-add`): a member
//! that was only absent (missing at a start) or failed by the operator
//! comes back and only the regions written while it was away are copied.
//! Model-based: random writes while it is away (the bitmap's clean cycle
//! given every chance to clear their marks), then the re-add under more
//! random I/O; every read matches the model, `check` is clean, the member
//! copied exactly the marked stripes (not the whole member), and read back
//! with other members removed (so every stripe depends on it) it holds
//! the model, which it cannot if a marked region was skipped. A member that
//! failed by an I/O error is not re-added. ERAID_REBUILD_SEEDS sets the
//! seed count.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::{AdminCommand, IoCause, Machine, UserOp};
use eraid_core::metadata::assemble::SlotState;
use eraid_core::metadata::superblock::MemberState;
use eraid_core::rebuild::config::RebuildConfig;
use eraid_core::testing::{MemHarness, MemMember};
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// 8 MiB members: enough stripes for some dozens of bitmap regions.
const MEMBER_CHUNKS: u64 = 2048;

fn seeds() -> u64 {
    std::env::var("ERAID_REBUILD_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
}

fn readd_options() -> ArrayOptions {
    ArrayOptions {
        rebuild: RebuildConfig {
            speed_min_kib_s: u64::MAX / 4096,
            speed_max_kib_s: u64::MAX / 4096,
            window_stripes: 4,
            checkpoint_bytes: 64 * CHUNK,
            ..RebuildConfig::default()
        },
        ..options()
    }
}

fn open_with(h: &mut MemHarness) -> Array {
    let assembly = h.arrange_for_assembly().expect("assembles");
    let mut array = Array::open(assembly, readd_options(), h.now);
    h.run(&mut array);
    array
}

fn write(h: &mut MemHarness, array: &mut Array, id: u64, at: u64, data: Vec<u8>, model: &mut [u8]) {
    model[at as usize..at as usize + data.len()].copy_from_slice(&data);
    call(
        h,
        array,
        id,
        UserOp::Write {
            offset_bytes: at,
            data: data.into(),
            fua: false,
        },
    )
    .expect("write");
}

/// Random writes (a few chunks each); returns the stripes they touched.
fn random_writes(
    h: &mut MemHarness,
    array: &mut Array,
    rng: &mut ChaCha8Rng,
    model: &mut [u8],
    count: usize,
    next_id: &mut u64,
) -> BTreeSet<u64> {
    let capacity = array.capacity_bytes();
    let stripe_bytes = array.geometry().stripe_data_bytes();
    let mut stripes = BTreeSet::new();
    for _ in 0..count {
        let len = rng.gen_range(1..=(3 * CHUNK / SECTOR_BYTES)) * SECTOR_BYTES;
        let at = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        write(h, array, *next_id, at, data, model);
        *next_id += 1;
        stripes.extend(at / stripe_bytes..=(at + len - 1) / stripe_bytes);
        // Long idle: a clean cycle would clear these marks if it could.
        h.idle(array, 500);
    }
    stripes
}

#[derive(Clone, Copy, Debug)]
enum Away {
    /// Not given at a start; data is written without it.
    MissingAtStart,
    /// `eraid fail` on a running array.
    FailedByOperator,
}

fn run_readd(seed: u64, level: Level, layout: ParityLayout, members: usize, away: Away) {
    let what = format!("seed {seed} {level:?} x{members} {away:?}");
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x4ead);
    let mut array = open_with(&mut h);
    let capacity = array.capacity_bytes();
    let mut model: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
    let mut next_id = 10;
    write(&mut h, &mut array, 1, 0, model.clone(), &mut model.clone());
    h.idle(&mut array, 500);
    close(&mut h, &mut array);
    drop(array);
    let away_slot = rng.gen_range(0..members);
    let mut array = match away {
        Away::MissingAtStart => {
            let saved = h.members[away_slot].take();
            let array = open_with(&mut h);
            h.members[away_slot] = saved;
            array
        }
        Away::FailedByOperator => {
            let mut array = open_with(&mut h);
            let answer = array.handle_admin(h.now, AdminCommand::FailMember { slot: away_slot });
            assert!(answer.get("error").is_none(), "{what}: {answer}");
            h.run(&mut array);
            array
        }
    };
    let count = rng.gen_range(1..4);
    let written = random_writes(
        &mut h,
        &mut array,
        &mut rng,
        &mut model,
        count,
        &mut next_id,
    );
    assert_eq!(read_all(&mut h, &mut array, 5), model, "{what}: degraded");
    close(&mut h, &mut array);
    drop(array);
    // Back with every member: re-added from the bitmap.
    let assembly = h.arrange_for_assembly().expect("assembles");
    assert_eq!(
        assembly.re_add,
        vec![away_slot],
        "{what}: {:?}",
        assembly.report
    );
    let per_region = assembly.superblock.bitmap_stripes_per_region;
    let marked: BTreeSet<u64> = written.iter().map(|s| s / per_region).collect();
    let marked_stripes: u64 = marked
        .iter()
        .map(|r| (g.stripe_count() - r * per_region).min(per_region))
        .sum();
    assert!(
        marked_stripes * 4 < g.stripe_count(),
        "{what}: the test marks too much to tell a re-add from a full rebuild"
    );
    let rebuild_ios_before = h.ios_by_cause.get(&IoCause::Rebuild).copied().unwrap_or(0);
    let mut array = Array::open(assembly, readd_options(), h.now);
    h.collect(&mut array);
    // Users keep writing and reading while it is re-added.
    let mut during = 0;
    loop {
        let status = array.status_json()["rebuild"].clone();
        if status["state"] == "done" {
            break;
        }
        assert_eq!(status["kind"], "re-add", "{what}: {status}");
        if h.inflight() == 0 {
            h.idle(&mut array, 1);
        }
        // One step of the re-add, then sometimes a user request.
        h.step(&mut array);
        if rng.gen_bool(0.05) {
            let len = rng.gen_range(1..=8) * SECTOR_BYTES;
            let at = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
            if rng.gen_bool(0.5) {
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                write(&mut h, &mut array, next_id, at, data, &mut model);
            } else {
                let back = call(
                    &mut h,
                    &mut array,
                    next_id,
                    UserOp::Read {
                        offset_bytes: at,
                        len_bytes: len as usize,
                    },
                )
                .expect("read")
                .expect("data");
                assert!(
                    back == model[at as usize..(at + len) as usize],
                    "{what}: read during the re-add differs"
                );
            }
            next_id += 1;
            during += 1;
        }
    }
    h.run(&mut array);
    let status = array.status_json()["rebuild"].clone();
    let copied = status["rebuilt_bytes"].as_u64().unwrap();
    let member_bytes = g.member_data_bytes;
    // Exactly the marked stripes were copied (a RAID-10 member holds a
    // shard of only some of them).
    match level {
        Level::Raid10 => assert!(
            copied > 0 && copied <= marked_stripes * CHUNK,
            "{what}: copied {copied} bytes for {marked_stripes} marked stripes"
        ),
        _ => assert_eq!(
            copied,
            marked_stripes * CHUNK,
            "{what}: copied bytes against the {marked_stripes} marked stripes ({during} user requests during)"
        ),
    }
    assert!(
        copied < member_bytes / 4,
        "{what}: copied {copied} of {member_bytes}"
    );
    // The I/O itself, not only the status: at most one read or write per
    // member for each marked stripe.
    let rebuild_ios =
        h.ios_by_cause.get(&IoCause::Rebuild).copied().unwrap_or(0) - rebuild_ios_before;
    assert!(
        rebuild_ios <= marked_stripes * members as u64,
        "{what}: {rebuild_ios} rebuild I/Os for {marked_stripes} marked stripes"
    );
    assert!(
        array.status_json()["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["state"] == "active"),
        "{what}: {}",
        array.status_json()
    );
    assert_eq!(read_all(&mut h, &mut array, 6), model, "{what}: after");
    assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
    close(&mut h, &mut array);
    drop(array);
    // The member alone carries its stripes: remove others and read.
    let assembly = h.arrange_for_assembly().expect("reassembles");
    assert!(
        matches!(assembly.slots[away_slot], SlotState::Present { .. }),
        "{what}: {:?}",
        assembly.report
    );
    assert_eq!(
        assembly.superblock.members[away_slot].state,
        MemberState::Active
    );
    assert_eq!(
        assembly.superblock.members[away_slot].re_add_from_events,
        None
    );
    let removed = depending_on(level, members, away_slot);
    let saved: Vec<(usize, Option<MemMember>)> =
        removed.iter().map(|&s| (s, h.members[s].take())).collect();
    let mut array = open_with(&mut h);
    assert!(
        read_all(&mut h, &mut array, 7) == model,
        "{what}: with {removed:?} removed, the re-added member reads back wrong (a marked region skipped?)"
    );
    close(&mut h, &mut array);
    for (slot, member) in saved {
        h.members[slot] = member;
    }
}

/// Members to remove so that every stripe's data needs `slot`'s shard.
fn depending_on(level: Level, members: usize, slot: usize) -> Vec<usize> {
    match level {
        Level::Raid5 => vec![(slot + 1) % members],
        Level::Raid6 => vec![(slot + 1) % members, (slot + 2) % members],
        // Near-2 with 4 members: slots pair as (0,1) and (2,3).
        Level::Raid10 => vec![slot ^ 1],
        Level::Crs { parity_members, .. } => {
            (1..=parity_members).map(|d| (slot + d) % members).collect()
        }
        Level::Raid0 => unreachable!(),
    }
}

#[test]
fn a_member_away_is_re_added_copying_only_the_marked_regions() {
    let shapes = [
        (Level::Raid5, ParityLayout::LeftSymmetric, 4),
        (Level::Raid6, ParityLayout::LeftSymmetric, 5),
        (Level::Raid10, ParityLayout::Near2, 4),
    ];
    for seed in 0..seeds() {
        for (level, layout, members) in shapes {
            for away in [Away::MissingAtStart, Away::FailedByOperator] {
                run_readd(seed, level, layout, members, away);
            }
        }
    }
}

/// A member whose device failed (a write may be lost on it) is not
/// re-added from the bitmap: it stays stale, needing a full rebuild.
#[test]
fn a_member_that_failed_by_an_io_error_is_not_re_added() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 3);
    let mut array = open_with(&mut h);
    let mut model = vec![0u8; array.capacity_bytes() as usize];
    h.members[1].as_mut().unwrap().failed = true;
    write(
        &mut h,
        &mut array,
        1,
        0,
        vec![7; 3 * CHUNK as usize],
        &mut model,
    );
    assert!(array.is_degraded());
    close(&mut h, &mut array);
    drop(array);
    h.members[1].as_mut().unwrap().failed = false;
    let assembly = h.arrange_for_assembly().expect("assembles");
    assert!(assembly.re_add.is_empty(), "{:?}", assembly.report);
    assert!(
        matches!(assembly.slots[1], SlotState::Stale { .. }),
        "{:?}",
        assembly.slots
    );
    assert!(
        assembly
            .report
            .iter()
            .any(|line| line.contains("cannot be re-added") && line.contains("a write may be lost")),
        "{:?}",
        assembly.report
    );
    let mut array = Array::open(assembly, readd_options(), h.now);
    h.run(&mut array);
    assert!(array.status_json()["rebuild"].is_null());
    assert_eq!(read_all(&mut h, &mut array, 2), model);
}

/// The bitmap's granularity for small arrays: the acceptance's RAID-5 of
/// four 256 MiB members gets regions small enough that 8 MiB written
/// anywhere marks well under a quarter of a member; large arrays keep
/// MD's 64 MiB.
#[test]
fn small_arrays_get_fine_bitmap_regions() {
    use eraid_core::geometry::{Geometry, METADATA_BYTES};
    use eraid_core::metadata::create::stripes_per_region;
    let member = |bytes: u64| {
        Geometry::new(
            Level::Raid5,
            ParityLayout::LeftSymmetric,
            4,
            64 << 10,
            METADATA_BYTES + bytes,
        )
        .unwrap()
    };
    let small = member(256 << 20);
    let per_region = stripes_per_region(&small);
    let region_member_bytes = per_region * small.chunk_bytes;
    // 8 MiB of array data spans at most this many regions, wherever it is.
    let regions = (8u64 << 20).div_ceil(per_region * small.stripe_data_bytes()) + 1;
    assert!(
        regions * region_member_bytes * 4 < small.member_data_bytes,
        "{regions} regions of {region_member_bytes} bytes per member"
    );
    // At least 64 regions (MD's fixed 64 MiB would give 12 here, each a
    // twelfth of every member).
    assert!(
        small.stripe_count().div_ceil(per_region) >= 64,
        "{per_region} stripes per region"
    );
    let large = member(1 << 40);
    assert_eq!(
        stripes_per_region(&large) * large.stripe_data_bytes(),
        (64 << 20) / large.stripe_data_bytes() * large.stripe_data_bytes()
    );
}

/// MD's `--fail` then `--re-add` on a running array
/// (`AdminCommand::ReAddMember` with the member's own superblock): only
/// the marked regions are copied, and a second add of it is refused.
#[test]
fn a_member_failed_by_the_operator_is_re_added_while_running() {
    use eraid_core::geometry::METADATA_BYTES;
    use eraid_core::metadata::superblock::Superblock;
    for seed in 0..seeds() {
        let what = format!("seed {seed}");
        let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xfa11);
        let mut array = open_with(&mut h);
        let capacity = array.capacity_bytes();
        let mut model: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
        write(&mut h, &mut array, 1, 0, model.clone(), &mut model.clone());
        h.idle(&mut array, 500);
        let slot = rng.gen_range(0..4);
        let answer = array.handle_admin(h.now, AdminCommand::FailMember { slot });
        assert!(answer.get("error").is_none(), "{what}: {answer}");
        h.run(&mut array);
        let mut next_id = 10;
        let count = rng.gen_range(1..4);
        let written = random_writes(
            &mut h,
            &mut array,
            &mut rng,
            &mut model,
            count,
            &mut next_id,
        );
        let copy = Superblock::decode_newest(
            &h.members[slot].as_ref().unwrap().current[..METADATA_BYTES as usize],
        )
        .expect("its superblock");
        let answer = array.handle_admin(
            h.now,
            AdminCommand::ReAddMember {
                slot,
                copy: Box::new(copy.clone()),
            },
        );
        assert!(answer.get("error").is_none(), "{what}: {answer}");
        assert_eq!(answer["rebuild"]["kind"], "re-add", "{what}: {answer}");
        h.run(&mut array);
        for _ in 0..1000 {
            if array.status_json()["rebuild"]["state"] == "done" {
                break;
            }
            h.idle(&mut array, 100);
        }
        let status = array.status_json()["rebuild"].clone();
        assert_eq!(status["state"], "done", "{what}: {status}");
        let per_region = array.status_json()["bitmap_stripes_per_region"]
            .as_u64()
            .unwrap_or(0);
        let _ = per_region;
        let copied = status["rebuilt_bytes"].as_u64().unwrap();
        assert!(
            copied > 0 && copied * 4 < g.member_data_bytes,
            "{what}: copied {copied} for {} written stripes",
            written.len()
        );
        let again = array.handle_admin(
            h.now,
            AdminCommand::ReAddMember {
                slot,
                copy: Box::new(copy),
            },
        );
        assert!(
            again["error"]
                .as_str()
                .is_some_and(|e| e.contains("nothing to add back")),
            "{what}: {again}"
        );
        assert_eq!(read_all(&mut h, &mut array, 5), model, "{what}");
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
        close(&mut h, &mut array);
    }
}

/// A re-add holds the bitmap's clean cycle off, so no other timer wakes
/// the array: when the rebuild's rate wait (here MD's idle rule after a
/// user request) is over and an operator's status call lands after it,
/// the array must still ask for a tick, or the re-add stalls with nothing
/// in flight (seen through the binary before the fix).
#[test]
fn a_re_add_waiting_for_idle_users_is_woken_after_a_status_call() {
    use eraid_core::geometry::METADATA_BYTES;
    use eraid_core::metadata::superblock::Superblock;
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 11);
    let options = ArrayOptions {
        rebuild: RebuildConfig {
            // Always between the floor and the ceiling: users hold it.
            speed_min_kib_s: 0,
            speed_max_kib_s: u64::MAX / 4096,
            window_stripes: 4,
            // Longer than the harness' completions take.
            idle_check_ms: 60_000,
            ..RebuildConfig::default()
        },
        ..options()
    };
    let assembly = h.arrange_for_assembly().unwrap();
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    let mut model = vec![0u8; array.capacity_bytes() as usize];
    let answer = array.handle_admin(h.now, AdminCommand::FailMember { slot: 2 });
    assert!(answer.get("error").is_none(), "{answer}");
    h.run(&mut array);
    write(
        &mut h,
        &mut array,
        1,
        0,
        vec![9; 64 * CHUNK as usize],
        &mut model,
    );
    let copy = Superblock::decode_newest(
        &h.members[2].as_ref().unwrap().current[..METADATA_BYTES as usize],
    )
    .unwrap();
    // A user request just before: the rebuild waits for a minute of idle.
    read_all(&mut h, &mut array, 2);
    let answer = array.handle_admin(
        h.now,
        AdminCommand::ReAddMember {
            slot: 2,
            copy: Box::new(copy),
        },
    );
    assert!(answer.get("error").is_none(), "{answer}");
    // Complete what is in flight without ticking.
    h.collect(&mut array);
    while h.inflight() > 0 {
        h.step_where(&mut array, |_| true);
    }
    let rebuild = array.status_json()["rebuild"].clone();
    assert_eq!(rebuild["state"], "running", "{rebuild}");
    // The operator asks for the status after the idle wait is over.
    h.now = h.now.plus_ms(61_000);
    let status = array.handle_admin(h.now, AdminCommand::Status);
    assert_eq!(status["rebuild"]["inflight_stripes"], 0, "{status}");
    let tick = array.poll_timeout();
    assert!(
        tick.is_some_and(|t| t <= h.now),
        "the re-add waits for nothing and asks for no tick: {tick:?}, {}",
        status["rebuild"]
    );
    // Ticked as a driver would, it finishes.
    for _ in 0..10_000 {
        if array.status_json()["rebuild"]["state"] == "done" {
            break;
        }
        match array.poll_timeout() {
            Some(t) if t > h.now => h.now = t,
            _ => {}
        }
        array.handle_tick(h.now);
        h.run(&mut array);
    }
    assert_eq!(array.status_json()["rebuild"]["state"], "done");
    assert_eq!(read_all(&mut h, &mut array, 3), model);
}

/// `eraid add` of a member whose device failed (a write may be lost on it):
/// it goes back into its slot but is rebuilt in full, and a copy of
/// another array is refused, changing nothing.
#[test]
fn a_former_member_the_bitmap_does_not_cover_is_rebuilt_in_full() {
    use eraid_core::geometry::METADATA_BYTES;
    use eraid_core::metadata::superblock::Superblock;
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 5);
    let mut array = open_with(&mut h);
    let mut model = vec![0u8; array.capacity_bytes() as usize];
    h.members[3].as_mut().unwrap().failed = true;
    write(
        &mut h,
        &mut array,
        1,
        0,
        vec![5; 6 * CHUNK as usize],
        &mut model,
    );
    h.members[3].as_mut().unwrap().failed = false;
    let copy = Superblock::decode_newest(
        &h.members[3].as_ref().unwrap().current[..METADATA_BYTES as usize],
    )
    .unwrap();
    let mut foreign = copy.clone();
    foreign.array_uuid = "another-array".into();
    let refused = array.handle_admin(
        h.now,
        AdminCommand::ReAddMember {
            slot: 3,
            copy: Box::new(foreign),
        },
    );
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("another array")),
        "{refused}"
    );
    assert!(array.is_degraded());
    let answer = array.handle_admin(
        h.now,
        AdminCommand::ReAddMember {
            slot: 3,
            copy: Box::new(copy),
        },
    );
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(answer["rebuild"]["kind"], "full", "{answer}");
    h.run(&mut array);
    for _ in 0..1000 {
        if array.status_json()["rebuild"]["state"] == "done" {
            break;
        }
        h.idle(&mut array, 100);
    }
    let status = array.status_json()["rebuild"].clone();
    assert_eq!(status["state"], "done", "{status}");
    assert_eq!(status["rebuilt_bytes"], status["total_bytes"], "{status}");
    assert_eq!(read_all(&mut h, &mut array, 2), model);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

/// A re-add cut by a crash resumes as a re-add: it goes on copying only
/// the stripes of the marked regions (the map it resumes with counts the
/// rest rebuilt, so every strategy's order skips them), whether or not a
/// checkpoint recorded its map before the crash, and the member then holds
/// everything.
#[test]
fn a_re_add_cut_by_a_crash_resumes_copying_only_the_marked_regions() {
    for seed in 0..seeds() {
        for checkpointed in [false, true] {
            re_add_cut_by_a_crash(seed, checkpointed);
        }
    }
}

fn re_add_cut_by_a_crash(seed: u64, checkpointed: bool) {
    let (level, layout, members) = (Level::Raid5, ParityLayout::LeftSymmetric, 4);
    {
        let what = format!("seed {seed} checkpointed {checkpointed}");
        let g = geometry(level, layout, members, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc4a5);
        let options = ArrayOptions {
            rebuild: RebuildConfig {
                // A checkpoint every few copied stripes, or none before
                // the end.
                checkpoint_bytes: if checkpointed { 4 * CHUNK } else { 1 << 40 },
                ..readd_options().rebuild
            },
            ..readd_options()
        };
        let mut array = open_with(&mut h);
        let mut model: Vec<u8> = (0..array.capacity_bytes()).map(|_| rng.gen()).collect();
        write(&mut h, &mut array, 1, 0, model.clone(), &mut model.clone());
        h.idle(&mut array, 500);
        close(&mut h, &mut array);
        drop(array);
        let away_slot = rng.gen_range(0..members);
        let saved = h.members[away_slot].take();
        let mut array = open_with(&mut h);
        h.members[away_slot] = saved;
        let mut next_id = 10;
        random_writes(&mut h, &mut array, &mut rng, &mut model, 2, &mut next_id);
        close(&mut h, &mut array);
        drop(array);
        let assembly = h.arrange_for_assembly().expect("assembles");
        assert_eq!(assembly.re_add, vec![away_slot], "{what}");
        let per_region = assembly.superblock.bitmap_stripes_per_region;
        let mut array = Array::open(assembly, options.clone(), h.now);
        let marked_stripes = array.status_json()["rebuild"]["marked_regions"]
            .as_u64()
            .expect("a re-add counts its regions")
            * per_region;
        assert!(marked_stripes * 4 < g.stripe_count(), "{what}");
        h.collect(&mut array);
        let rebuild_ios_at_open = h.ios_by_cause.get(&IoCause::Rebuild).copied().unwrap_or(0);
        // Up to a recorded checkpoint (or a few stripes), short of the end.
        loop {
            let status = array.status_json()["rebuild"].clone();
            assert_eq!(status["state"], "running", "{what}: {status}");
            let checkpoints = status["checkpoints"].as_u64().unwrap();
            let rebuild_ios =
                h.ios_by_cause.get(&IoCause::Rebuild).copied().unwrap_or(0) - rebuild_ios_at_open;
            if checkpointed && checkpoints >= 1 || !checkpointed && rebuild_ios >= 16 {
                break;
            }
            // One I/O at a time (`idle` would run it to the end).
            if !h.step(&mut array) {
                h.now = h.now.plus_ms(1);
                array.handle_tick(h.now);
            }
        }
        h.crash();
        drop(array);
        let assembly = h
            .arrange_for_assembly()
            .expect("reassembles after the crash");
        let record = assembly
            .superblock
            .rebuild
            .clone()
            .expect("a rebuild record");
        assert!(record.state.unfinished(), "{what}: {record:?}");
        assert_eq!(
            record.counters.copied_bytes > 0,
            checkpointed,
            "{what}: {record:?}"
        );
        let rebuild_ios_before = h.ios_by_cause.get(&IoCause::Rebuild).copied().unwrap_or(0);
        let mut array = Array::open(assembly, options.clone(), h.now);
        let status = array.status_json()["rebuild"].clone();
        assert_eq!(status["kind"], "re-add", "{what}: {status}");
        assert_eq!(
            status["rebuilt_bytes"].as_u64().unwrap(),
            record.counters.copied_bytes,
            "{what}: {status}"
        );
        while array.status_json()["rebuild"]["state"] != "done" {
            if h.inflight() == 0 {
                h.idle(&mut array, 1);
            }
            h.step(&mut array);
        }
        h.run(&mut array);
        let rebuild_ios =
            h.ios_by_cause.get(&IoCause::Rebuild).copied().unwrap_or(0) - rebuild_ios_before;
        assert!(
            rebuild_ios <= marked_stripes * members as u64,
            "{what}: {rebuild_ios} rebuild I/Os after the crash for {marked_stripes} marked stripes"
        );
        assert_eq!(read_all(&mut h, &mut array, 6), model, "{what}: after");
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}: check");
        close(&mut h, &mut array);
        drop(array);
        // Read with its neighbour removed, so every stripe needs it.
        let removed = (away_slot + 1) % members;
        let saved = h.members[removed].take();
        let mut array = open_with(&mut h);
        assert!(
            read_all(&mut h, &mut array, 7) == model,
            "{what}: the re-added member reads back wrong"
        );
        close(&mut h, &mut array);
        h.members[removed] = saved;
    }
}

//! A crash during a rebuild onto a replacement: the array reopens with the
//! rebuild resuming from its checkpoint and a resync of the dirty regions
//! running beside it. The resync skips the stripes the replacement does
//! not hold yet, and the rebuild rewrites them (parity included). When the
//! rebuild ended before the resync finished the region, the region was
//! kept as "unresynced" for a rebuild that had already happened: the array
//! never became clean (DST seeds 4678, 16048, 20967: liveness failure,
//! `unresynced_regions` 1 forever).

mod common;
use common::lifecycle::*;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::io::{AdminCommand, ArrayEvent, DeviceOp, IoCause, UserOp};
use eraid_core::rebuild::config::RebuildStrategy;
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 16;

fn rebuild_options(level: Level) -> ArrayOptions {
    ArrayOptions {
        rebuild: eraid_core::testing::test_rebuild_config(RebuildStrategy::Pr, chunk_bytes(level)),
        ..options()
    }
}

fn resync_ends_clean_after_the_rebuild(level: Level, layout: ParityLayout, members: usize) {
    let what = format!("{level:?} {layout:?} x{members}");
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    // One bitmap region over the whole array: it holds stripes the
    // rebuild had recorded before the crash and stripes it had not.
    let mut h = MemHarness::create_with_regions(g, 11, Some(MEMBER_CHUNKS));
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut array = open_with(&mut h, rebuild_options(level));
    let model = fill(&mut h, &mut array, &mut rng);
    call(&mut h, &mut array, 2, UserOp::Flush).expect("flush");
    admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: 1 });
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
    // Rebuild until a checkpoint covering a quarter of the stripes is
    // recorded, well before the end.
    let checkpoint_min_bytes = MEMBER_CHUNKS / 4 * chunk_bytes(level);
    while rebuild_status(&array)["checkpoint_bytes"].as_u64().unwrap() < checkpoint_min_bytes {
        assert!(h.step(&mut array), "{what}: the rebuild progresses");
    }
    // A write (acknowledged, not flushed) marks the region dirty; the
    // process dies.
    // Only the write's own I/O (and the bitmap's) goes, so the rebuild
    // stays where it was.
    let sector = SECTOR_BYTES as usize;
    h.submit(
        &mut array,
        3,
        UserOp::Write {
            offset_bytes: 0,
            data: model[..sector].to_vec().into(),
            fua: false,
        },
    );
    while h.take_reply(3).is_none() {
        let not_rebuild = |io: &eraid_core::io::DeviceIo| io.cause != IoCause::Rebuild;
        assert!(
            h.step_where(&mut array, not_rebuild),
            "{what}: the write ends"
        );
    }
    assert_eq!(rebuild_status(&array)["state"], "running", "{what}");
    h.crash();
    drop(array);
    let mut array = Array::open(
        h.arrange_for_assembly().expect("reassembles"),
        rebuild_options(level),
        h.now,
    );
    h.collect(&mut array);
    assert_eq!(array.status_json()["dirty_regions"], 1, "{what}");
    // The resync's reads of stripe 0 (rebuilt before the crash) wait
    // until the rebuild is over: the resync skips the stripes the rebuild
    // has not reached, and its region ends after the rebuild.
    let stripe0 = g.data_offset_bytes;
    let held = |io: &eraid_core::io::DeviceIo| {
        io.cause == IoCause::Resync
            && matches!(io.op, DeviceOp::Read { offset_bytes, .. } if offset_bytes == stripe0)
    };
    // First everything but the rebuild: the resync runs ahead of it.
    while h.step_where(&mut array, |io| !held(io) && io.cause != IoCause::Rebuild) {}
    let finished = |h: &MemHarness| {
        h.events
            .iter()
            .any(|e| matches!(e, ArrayEvent::RebuildFinished { .. }))
    };
    while !finished(&h) {
        assert!(
            h.step_where(&mut array, |io| !held(io)),
            "{what}: the rebuild goes on while the resync waits"
        );
    }
    let status = array.status_json();
    assert_eq!(status["activity"]["kind"], "resync", "{what}: {status}");
    assert_eq!(status["activity"]["state"], "running", "{what}: {status}");
    h.run(&mut array);
    let status = array.status_json();
    assert_eq!(status["activity"]["state"], "done", "{what}: {status}");
    assert!(
        status["activity"]["skipped_degraded_stripes"]
            .as_u64()
            .unwrap()
            > 0,
        "{what}: the resync skipped stripes not yet rebuilt: {status}"
    );
    // Long past the bitmap's clean delay.
    for _ in 0..20 {
        h.idle(&mut array, 50);
    }
    let status = array.status_json();
    assert_eq!(status["unresynced_regions"], 0, "{what}: {status}");
    assert_eq!(status["dirty_regions"], 0, "{what}: {status}");
    assert_eq!(check(&mut h, &mut array, false).0, 0, "{what}: mismatches");
    assert_eq!(read_all(&mut h, &mut array, 9), model, "{what}");
}

#[test]
fn raid5_resync_skipping_unrebuilt_stripes_ends_clean_after_the_rebuild() {
    resync_ends_clean_after_the_rebuild(Level::Raid5, ParityLayout::LeftSymmetric, 3);
}

#[test]
fn crs_resync_skipping_unrebuilt_stripes_ends_clean_after_the_rebuild() {
    let (level, layout, members) = crs_shapes()[3];
    resync_ends_clean_after_the_rebuild(level, layout, members);
}

#[test]
fn raid6_resync_skipping_unrebuilt_stripes_ends_clean_after_the_rebuild() {
    resync_ends_clean_after_the_rebuild(Level::Raid6, ParityLayout::LeftSymmetric, 5);
}

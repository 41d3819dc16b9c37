//! Shared helpers for the engine tests.
#![allow(dead_code)]

use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::{Machine, UserError, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};

pub const CHUNK: u64 = 4096;

pub fn shapes() -> Vec<(Level, ParityLayout, usize)> {
    let mut shapes = vec![
        (Level::Raid0, ParityLayout::None, 3),
        (Level::Raid10, ParityLayout::Near2, 4),
        (Level::Raid10, ParityLayout::Near2, 3),
    ];
    for layout in [
        ParityLayout::LeftAsymmetric,
        ParityLayout::LeftSymmetric,
        ParityLayout::RightAsymmetric,
        ParityLayout::RightSymmetric,
    ] {
        shapes.push((Level::Raid5, layout, 4));
        shapes.push((Level::Raid6, layout, 5));
    }
    shapes
}

pub fn geometry(
    level: Level,
    layout: ParityLayout,
    members: usize,
    member_chunks: u64,
) -> Geometry {
    Geometry::new(
        level,
        layout,
        members,
        CHUNK,
        METADATA_BYTES + member_chunks * CHUNK,
    )
    .unwrap()
}

pub fn options() -> ArrayOptions {
    ArrayOptions {
        bitmap_clean_delay_ms: 50,
        scrub_window_stripes: 4,
        resync_on_open: true,
        write_intent_bitmap: true,
        ..ArrayOptions::default()
    }
}

/// Assembles and opens the array on the harness members, running until open.
pub fn open(h: &mut MemHarness) -> Array {
    let assembly = h.assemble().expect("assembles");
    let mut array = Array::open(assembly, options(), h.now);
    h.run(&mut array);
    array
}

/// Submits and runs to completion; returns the reply's result.
pub fn call(
    h: &mut MemHarness,
    array: &mut Array,
    id: u64,
    op: UserOp,
) -> Result<Option<Vec<u8>>, UserError> {
    h.submit(array, id, op);
    h.run(array);
    h.take_reply(id).expect("request answered").result
}

pub fn close(h: &mut MemHarness, array: &mut Array) {
    array.handle_close(h.now);
    h.run(array);
    assert!(array.is_closed(), "array closed");
}

/// Runs a check and returns (mismatches, skipped stripes).
pub fn check(h: &mut MemHarness, array: &mut Array, repair: bool) -> (u64, u64) {
    let reply = array.handle_admin(h.now, eraid_core::io::AdminCommand::StartCheck { repair });
    assert!(reply.get("error").is_none(), "check started: {reply}");
    h.run(array);
    let status = array.status_json();
    let activity = &status["activity"];
    assert_eq!(activity["state"], "done", "{status}");
    (
        activity["mismatches"].as_u64().unwrap(),
        activity["skipped_degraded_stripes"].as_u64().unwrap(),
    )
}

/// A growth configuration for test arrays: small windows so a test sees many
/// windows and checkpoints, and never throttled (the floor is above any rate
/// the harness reaches).
pub fn growth_config(
    strategy: eraid_core::growth::config::ReshapeStrategy,
    sliding_window_bytes_max: u64,
) -> eraid_core::growth::config::ReshapeConfig {
    eraid_core::growth::config::ReshapeConfig {
        aggregation_bytes: 2 * CHUNK,
        md_window_bytes: 6 * CHUNK,
        sliding_window_bytes_max,
        md_page_bytes: 1024,
        speed_min_kib_s: u64::MAX / 4096,
        speed_max_kib_s: u64::MAX / 4096,
        ..eraid_core::growth::config::ReshapeConfig::with_strategy(strategy)
    }
}

/// Reads the whole array and asserts that every sector not `touched` since
/// the last completed flush holds what `flushed` says; `what` names the run.
pub fn assert_flushed_sectors_survive(
    h: &mut MemHarness,
    array: &mut Array,
    flushed: &[u8],
    touched: &[bool],
    what: &str,
) {
    let sector = eraid_core::geometry::SECTOR_BYTES as usize;
    let whole = call(
        h,
        array,
        1,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: flushed.len(),
        },
    )
    .unwrap()
    .unwrap();
    for (s, _) in touched.iter().enumerate().filter(|(_, t)| !**t) {
        let range = s * sector..(s + 1) * sector;
        assert!(
            whole[range.clone()] == flushed[range],
            "{what}: flushed sector {s} lost after a crash"
        );
    }
}

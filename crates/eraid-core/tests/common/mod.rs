//! Shared helpers for the engine tests.
#![allow(dead_code)]

use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES, SECTOR_BYTES};
use eraid_core::io::{Machine, UserError, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

pub mod lifecycle;

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
    shapes.extend(crs_shapes());
    shapes
}

fn crs(parity_members: usize, w: usize) -> Level {
    Level::Crs { parity_members, w }
}

/// CRS shapes: (4, 2) at Jerasure's default w = 3, three parity members,
/// a w = 4 chunk on 8 members (default would be 3), and m = 1 at w = 2.
pub fn crs_shapes() -> Vec<(Level, ParityLayout, usize)> {
    vec![
        (crs(2, 3), ParityLayout::LeftSymmetric, 6),
        (crs(3, 3), ParityLayout::LeftSymmetric, 7),
        (crs(3, 4), ParityLayout::LeftSymmetric, 8),
        (crs(1, 2), ParityLayout::LeftSymmetric, 3),
    ]
}

/// The tests' chunk: 4 KiB, or for CRS w packets of 2 KiB (a CRS chunk
/// is w packets of a power of two bytes).
pub fn chunk_bytes(level: Level) -> u64 {
    match level {
        Level::Crs { w, .. } => w as u64 * 2048,
        _ => CHUNK,
    }
}

/// A left-symmetric RAID-5 of four members.
pub fn raid5_of_four(chunk_bytes: u64, member_chunks: u64) -> Geometry {
    Geometry::new(
        Level::Raid5,
        ParityLayout::LeftSymmetric,
        4,
        chunk_bytes,
        METADATA_BYTES + member_chunks * chunk_bytes,
    )
    .unwrap()
}

pub fn geometry(
    level: Level,
    layout: ParityLayout,
    members: usize,
    member_chunks: u64,
) -> Geometry {
    let chunk = chunk_bytes(level);
    Geometry::new(
        level,
        layout,
        members,
        chunk,
        METADATA_BYTES + member_chunks * chunk,
    )
    .unwrap()
}

pub fn options() -> ArrayOptions {
    eraid_core::testing::test_array_options()
}

/// The test options with a write-back `cache` and the harness's journal as
/// a driver hands it over at start (its leftovers zeroed, records found).
pub fn journaled_options(
    h: &mut MemHarness,
    cache: eraid_core::cache::config::CacheConfig,
) -> ArrayOptions {
    let journal = h
        .journal
        .as_mut()
        .expect("the harness has a journal")
        .setup()
        .expect("journal header");
    ArrayOptions {
        cache,
        journal: Some(journal),
        ..options()
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
    h.take_reply(id)
        .expect("request answered")
        .result
        .map(|data| data.map(|d| d.to_vec()))
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

/// A growth configuration for test arrays (`testing::test_growth_config`
/// at the tests' chunk).
pub fn growth_config(
    strategy: eraid_core::growth::config::ReshapeStrategy,
    sliding_window_bytes_max: u64,
) -> eraid_core::growth::config::ReshapeConfig {
    eraid_core::testing::test_growth_config(strategy, CHUNK, sliding_window_bytes_max)
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

// Random I/O helpers shared by the rebuild, replace and model tests.

pub fn random_range(rng: &mut ChaCha8Rng, capacity: u64, max_bytes: u64) -> (u64, u64) {
    let sectors = capacity / SECTOR_BYTES;
    let len = rng.gen_range(1..=(max_bytes / SECTOR_BYTES).min(sectors));
    let start = rng.gen_range(0..=sectors - len);
    (start * SECTOR_BYTES, len * SECTOR_BYTES)
}

pub fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

/// Reads `len_bytes` at `offset_bytes`, which must succeed.
pub fn read_range(
    h: &mut MemHarness,
    array: &mut Array,
    id: u64,
    offset_bytes: u64,
    len_bytes: usize,
) -> Vec<u8> {
    call(
        h,
        array,
        id,
        UserOp::Read {
            offset_bytes,
            len_bytes,
        },
    )
    .expect("read ok")
    .expect("read data")
}

pub fn read_all(h: &mut MemHarness, array: &mut Array, id: u64) -> Vec<u8> {
    let len_bytes = array.capacity_bytes() as usize;
    read_range(h, array, id, 0, len_bytes)
}

/// Fills the array with random bytes and flushes; returns the model.
pub fn fill(h: &mut MemHarness, array: &mut Array, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let capacity = array.capacity_bytes();
    let model: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
    call(
        h,
        array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: model.clone().into(),
            fua: true,
        },
    )
    .expect("fill");
    model
}

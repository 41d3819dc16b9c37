//! Online growth through the real engine and the real core: new member
//! files join a running array (`EngineHandle::grow`), data written before
//! and during the growth reads back, a refused growth leaves the engine as
//! it was, and the grown array reassembles from its files.

mod grow_support;
use grow_support::*;

use eraid_core::geometry::Level;
use eraid_core::growth::config::{ReshapeConfig, ReshapeStrategy};
use eraid_driver::GrowError;

fn grow_online(level: Level, count: usize, strategy: ReshapeStrategy) {
    let dir = tempfile::tempdir().unwrap();
    let paths = create(dir.path(), level, count);
    let engine = start(&paths);
    let handle = engine.handle();
    wait_until_open(&handle);
    let before = status(&handle);
    let capacity = before["capacity_bytes"].as_u64().unwrap();
    let data = pattern(capacity as usize, 7);
    handle.write(0, data.clone()).unwrap();

    // A refused growth (a RAID-0 strategy on RAID-5 or the reverse) drops
    // the new device again: the next growth still numbers from `count`.
    let added = blank(dir.path(), "new", MEMBER_BYTES);
    let wrong = match level {
        Level::Raid0 => ReshapeStrategy::Alv,
        _ => ReshapeStrategy::FastScale,
    };
    let refused = handle.grow(vec![grow_member(&added, "new-0")], fast(wrong));
    assert!(
        matches!(&refused, Err(GrowError::Refused(reason)) if reason.contains(wrong.name())),
        "{refused:?}"
    );
    assert_eq!(status(&handle)["member_count"], count);
    assert_eq!(handle.stats().by_member.len(), count);

    let started = handle
        .grow(vec![grow_member(&added, "new-1")], fast(strategy))
        .expect("growth starts");
    assert_eq!(started["member_count"], count + 1, "{started:#}");
    assert_eq!(handle.stats().by_member.len(), count + 1);
    // User I/O during the growth.
    let middle = capacity / 2 / CHUNK * CHUNK;
    let overwrite = pattern(3 * CHUNK as usize, 99);
    handle.write(middle, overwrite.clone()).unwrap();
    let mut expected = data;
    expected[middle as usize..middle as usize + overwrite.len()].copy_from_slice(&overwrite);
    let done = wait_done(&handle);
    let grown = done["capacity_bytes"].as_u64().unwrap();
    assert!(grown > capacity, "{done:#}");
    assert_eq!(done["reshape"]["new_member_count"], count + 1);
    assert_eq!(handle.read(0, capacity as usize).unwrap(), expected);
    // The new space is usable.
    let tail = pattern((grown - capacity) as usize, 3);
    handle.write(capacity, tail.clone()).unwrap();
    assert_eq!(handle.read(capacity, tail.len()).unwrap(), tail);
    assert!(
        handle.stats().by_member[count].io.written_bytes > 0,
        "the new member received no writes"
    );
    assert_eq!(engine.close(), eraid_driver::CloseOutcome::Closed);

    // Reassembled from every file, the array has its new shape.
    let mut all = paths.clone();
    all.push(added);
    let engine = start(&all);
    let handle = engine.handle();
    wait_until_open(&handle);
    let reopened = status(&handle);
    assert_eq!(reopened["member_count"], count + 1, "{reopened:#}");
    assert_eq!(reopened["capacity_bytes"], grown);
    assert_eq!(handle.read(0, capacity as usize).unwrap(), expected);
    assert_eq!(handle.read(capacity, tail.len()).unwrap(), tail);
    assert_eq!(engine.close(), eraid_driver::CloseOutcome::Closed);
}

#[test]
fn raid0_grows_online_with_fastscale() {
    grow_online(Level::Raid0, 3, ReshapeStrategy::FastScale);
}

#[test]
fn raid5_grows_online_with_alv() {
    grow_online(Level::Raid5, 3, ReshapeStrategy::Alv);
}

#[test]
fn grow_on_a_closed_engine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let paths = create(dir.path(), Level::Raid0, 2);
    let engine = start(&paths);
    let handle = engine.handle();
    assert_eq!(engine.close(), eraid_driver::CloseOutcome::Closed);
    let added = blank(dir.path(), "new", MEMBER_BYTES);
    let result = handle.grow(
        vec![grow_member(&added, "x")],
        ReshapeConfig::with_strategy(ReshapeStrategy::FastScale),
    );
    assert_eq!(result.unwrap_err(), GrowError::ShuttingDown);
}

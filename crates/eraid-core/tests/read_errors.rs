//! Read errors and member timeouts (issue 19): a read that returns a read
//! error (a latent sector error) is rebuilt from the other members, given
//! to the user, rewritten and read back, and counted per member; the
//! member stays unless the rewrite or the read back fails, or it has had
//! more read errors than `max_read_errors`. Without redundancy the request
//! fails and the member stays. A device I/O that does not complete within
//! the member timeout fails its member; a slow one is reported, not failed.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{DeviceOp, IoCause, Machine, UserOp};
use eraid_core::testing::{BadSectorKind, BadSectors, MemHarness};
use eraid_core::{Array, ArrayOptions};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 16;

fn open_with(h: &mut MemHarness, options: ArrayOptions) -> Array {
    let assembly = h.assemble().expect("assembles");
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    array
}

fn redundant_shapes() -> Vec<(Level, ParityLayout, usize)> {
    shapes()
        .into_iter()
        .filter(|(level, _, _)| level.redundancy() > 0)
        .collect()
}

/// One bad-sector entry per chunk `chunks` of `device`.
fn bad_chunks(
    array: &Array,
    device: usize,
    chunks: std::ops::Range<u64>,
    kind: BadSectorKind,
) -> Vec<BadSectors> {
    let g = array.geometry();
    chunks
        .map(|c| BadSectors {
            device,
            offset_bytes: g.data_offset_bytes + c * g.chunk_bytes,
            len_bytes: g.chunk_bytes,
            kind,
        })
        .collect()
}

fn member(array: &Array, slot: usize) -> serde_json::Value {
    array.status_json()["members"][slot].clone()
}

#[test]
fn read_errors_are_rebuilt_returned_rewritten_and_counted() {
    for (seed, (level, layout, members)) in redundant_shapes().into_iter().enumerate() {
        let seed = seed as u64;
        let what = format!("{} {layout:?} on {members}", level.name());
        let mut h = MemHarness::create(geometry(level, layout, members, MEMBER_CHUNKS), seed);
        let mut array = open_with(&mut h, options());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let model = fill(&mut h, &mut array, &mut rng);
        // Member 0 holds data every level reads (RAID-10 reads the first copy).
        let bad = bad_chunks(&array, 0, 0..8, BadSectorKind::HealsOnWrite);
        h.bad_sectors = bad.clone();
        // The whole array reads right while member 0's chunks fail.
        assert_eq!(read_all(&mut h, &mut array, 2), model, "{what}");
        let after_read = member(&array, 0);
        assert_eq!(after_read["state"], "active", "{what}: {after_read}");
        let corrected_by_read = after_read["read_errors_corrected"].as_u64().unwrap();
        assert!(
            corrected_by_read >= 1,
            "{what}: nothing corrected: {after_read}"
        );
        // Each correction rewrote its chunk (only a write heals one).
        assert_eq!(
            h.bad_sectors.len() as u64,
            bad.len() as u64 - corrected_by_read,
            "{what}: corrections and rewrites differ"
        );
        // A check reads every shard: the chunks no read touched (parity,
        // mirror copies) are corrected too, and nothing mismatches.
        let (mismatches, skipped) = check(&mut h, &mut array, false);
        assert_eq!((mismatches, skipped), (0, 0), "{what}");
        assert!(h.bad_sectors.is_empty(), "{what}: left {:?}", h.bad_sectors);
        let after = member(&array, 0);
        assert_eq!(
            after["read_errors_corrected"],
            bad.len() as u64,
            "{what}: {after}"
        );
        assert_eq!(after["read_errors_failed"], 0, "{what}: {after}");
        assert_eq!(after["state"], "active", "{what}");
        assert_eq!(read_all(&mut h, &mut array, 3), model, "{what}");
        close(&mut h, &mut array);
        // The rewritten member reads back: with member 1 gone (RAID-10:
        // member 0's mirror), member 0's chunks serve the reads.
        h.members[1] = None;
        let mut array = open(&mut h);
        assert_eq!(read_all(&mut h, &mut array, 4), model, "{what}: degraded");
        close(&mut h, &mut array);
    }
}

#[test]
fn a_read_error_under_a_partial_write_is_repaired_and_the_write_lands() {
    // RAID-10 writes both copies without reading.
    let parity_shapes = redundant_shapes()
        .into_iter()
        .filter(|(level, _, _)| *level != Level::Raid10);
    for (seed, (level, layout, members)) in parity_shapes.enumerate() {
        let seed = seed as u64 + 100;
        let what = format!("{} {layout:?} on {members}", level.name());
        let mut h = MemHarness::create(geometry(level, layout, members, MEMBER_CHUNKS), seed);
        let mut array = open_with(&mut h, options());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut model = fill(&mut h, &mut array, &mut rng);
        h.bad_sectors = bad_chunks(&array, 0, 0..MEMBER_CHUNKS, BadSectorKind::HealsOnWrite);
        // Small writes read old data or parity first (read-modify-write);
        // every chunk of member 0 fails once.
        for (i, at) in (0..array.capacity_bytes())
            .step_by(3 * 4096 + 512)
            .enumerate()
        {
            let data = vec![i as u8 ^ 0x5a; 1024];
            let end = (at as usize + data.len()).min(model.len());
            let data = data[..end - at as usize].to_vec();
            model[at as usize..end].copy_from_slice(&data);
            call(
                &mut h,
                &mut array,
                10 + i as u64,
                UserOp::Write {
                    offset_bytes: at,
                    data: data.into(),
                    fua: false,
                },
            )
            .unwrap_or_else(|e| panic!("{what}: write at {at}: {e}"));
        }
        let status = array.status_json();
        let corrected: u64 = status["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["read_errors_corrected"].as_u64().unwrap())
            .sum();
        assert!(
            corrected > 0,
            "{what}: the writes read nothing bad: {status}"
        );
        assert!(
            !array.is_degraded(),
            "{what}: a member was failed: {status}"
        );
        h.bad_sectors.clear();
        assert_eq!(read_all(&mut h, &mut array, 2), model, "{what}");
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{what}");
        close(&mut h, &mut array);
    }
}

/// The rewrite fails, or the read back still fails: the member is failed
/// (the data is still returned right, from the others).
#[test]
fn a_read_error_that_the_rewrite_does_not_fix_fails_the_member() {
    for kind in [BadSectorKind::WriteFails, BadSectorKind::Persists] {
        for (seed, (level, layout, members)) in redundant_shapes().into_iter().enumerate() {
            let seed = seed as u64 + 200;
            let what = format!("{kind:?}: {} {layout:?} on {members}", level.name());
            let mut h = MemHarness::create(geometry(level, layout, members, MEMBER_CHUNKS), seed);
            let mut array = open_with(&mut h, options());
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let model = fill(&mut h, &mut array, &mut rng);
            h.bad_sectors = bad_chunks(&array, 0, 0..4, kind);
            assert_eq!(read_all(&mut h, &mut array, 2), model, "{what}");
            let m1 = member(&array, 0);
            assert_eq!(m1["state"], "faulty", "{what}: {m1}");
            if kind == BadSectorKind::Persists {
                assert!(
                    m1["read_errors_failed"].as_u64().unwrap() >= 1,
                    "{what}: {m1}"
                );
                assert!(
                    m1["failure"].as_str().unwrap().contains("not corrected"),
                    "{what}: {m1}"
                );
            }
            assert_eq!(read_all(&mut h, &mut array, 3), model, "{what}: degraded");
            close(&mut h, &mut array);
        }
    }
}

#[test]
fn more_read_errors_than_allowed_fail_the_member() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 7);
    let mut array = open_with(
        &mut h,
        ArrayOptions {
            max_read_errors: 3,
            ..options()
        },
    );
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let model = fill(&mut h, &mut array, &mut rng);
    h.bad_sectors = bad_chunks(&array, 1, 0..MEMBER_CHUNKS, BadSectorKind::HealsOnWrite);
    // A check reads every chunk of member 1, one stripe after another.
    check(&mut h, &mut array, false);
    let m1 = member(&array, 1);
    assert_eq!(m1["state"], "faulty", "{m1}");
    assert_eq!(m1["read_errors_corrected"], 3, "{m1}");
    assert_eq!(m1["read_errors_failed"], 1, "{m1}");
    assert!(
        m1["failure"].as_str().unwrap().contains("max_read_errors"),
        "{m1}"
    );
    assert_eq!(read_all(&mut h, &mut array, 2), model);
    close(&mut h, &mut array);
}

/// RAID-0, or a RAID-5 already degraded: nothing to rebuild the range
/// from. The read fails, the error is counted, the member stays.
#[test]
fn without_redundancy_a_read_error_fails_the_request_not_the_member() {
    let raid0 = MemHarness::create(
        geometry(Level::Raid0, ParityLayout::None, 3, MEMBER_CHUNKS),
        3,
    );
    let mut raid5 = MemHarness::create(
        geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS),
        4,
    );
    {
        // Written whole first, then member 3 goes missing.
        let mut array = open(&mut raid5);
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        fill(&mut raid5, &mut array, &mut rng);
        close(&mut raid5, &mut array);
        raid5.members[3] = None;
    }
    for (what, mut h) in [("RAID-0", raid0), ("degraded RAID-5", raid5)] {
        let mut array = open(&mut h);
        h.bad_sectors = bad_chunks(&array, 1, 0..MEMBER_CHUNKS, BadSectorKind::HealsOnWrite);
        let len_bytes = array.capacity_bytes() as usize;
        let result = call(
            &mut h,
            &mut array,
            2,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes,
            },
        );
        let error = result.expect_err(what).to_string();
        assert!(
            error.contains("member 1") && error.contains("could not read"),
            "{what}: {error}"
        );
        let m1 = member(&array, 1);
        assert_eq!(m1["state"], "active", "{what}: {m1}");
        assert!(
            m1["read_errors_failed"].as_u64().unwrap() >= 1,
            "{what}: {m1}"
        );
        assert_eq!(m1["read_errors_corrected"], 0, "{what}: {m1}");
        // Once the sectors read again, so does the array.
        h.bad_sectors.clear();
        read_all(&mut h, &mut array, 3);
        close(&mut h, &mut array);
    }
}

fn timeout_options() -> ArrayOptions {
    ArrayOptions {
        member_timeout_ms: Some(1_000),
        ..options()
    }
}

/// Completes every I/O except those to `device`, which stay in flight.
fn run_except(h: &mut MemHarness, array: &mut Array, device: usize) {
    while h.step_where(array, |io| io.member != device) {}
}

#[test]
fn a_hung_member_is_failed_at_the_timeout_and_the_array_goes_on() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 11);
    let mut array = open_with(&mut h, timeout_options());
    let capacity = array.capacity_bytes() as usize;
    let data = vec![0x3c; capacity];
    h.submit(
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: data.clone().into(),
            fua: true,
        },
    );
    run_except(&mut h, &mut array, 2);
    assert!(h.take_reply(1).is_none(), "answered while member 2 hangs");
    assert!(
        h.inflight_ios().iter().any(|io| io.member == 2),
        "nothing held on member 2"
    );
    // Just before the deadline nothing gives; at it member 2 is failed.
    let deadline = array.poll_timeout().expect("a member deadline");
    h.now = eraid_core::io::TimeNs(deadline.0 - 1);
    array.handle_tick(h.now);
    run_except(&mut h, &mut array, 2);
    assert_eq!(member(&array, 2)["state"], "active");
    h.now = deadline;
    array.handle_tick(h.now);
    run_except(&mut h, &mut array, 2);
    let m2 = member(&array, 2);
    assert_eq!(m2["state"], "faulty", "{m2}");
    assert!(
        m2["failure"].as_str().unwrap().contains("did not complete")
            && m2["failure"].as_str().unwrap().contains("member timeout"),
        "{m2}"
    );
    let reply = h
        .take_reply(1)
        .expect("the write is answered once member 2 is failed");
    assert!(reply.result.is_ok(), "{reply:?}");
    assert_eq!(read_all(&mut h, &mut array, 2), data);
    // The hung I/Os complete late: dropped, nothing breaks.
    h.run(&mut array);
    assert_eq!(read_all(&mut h, &mut array, 3), data);
    close(&mut h, &mut array);
}

#[test]
fn a_slow_member_is_reported_not_failed() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 12);
    let mut array = open_with(&mut h, timeout_options());
    let len_bytes = array.capacity_bytes() as usize;
    h.submit(
        &mut array,
        1,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes,
        },
    );
    run_except(&mut h, &mut array, 1);
    assert!(h
        .inflight_ios()
        .iter()
        .any(|io| io.member == 1 && matches!(io.op, DeviceOp::Read { .. })));
    // 900 ms: slow, within the 1 s bound.
    h.now = h.now.plus_ms(900);
    array.handle_tick(h.now);
    h.run(&mut array);
    assert!(h.take_reply(1).expect("answered").result.is_ok());
    let m1 = member(&array, 1);
    assert_eq!(m1["state"], "active", "{m1}");
    let max = m1["latency_ms_max"].as_f64().unwrap();
    assert!(max >= 900.0, "{m1}");
    let mean0 = member(&array, 0)["latency_ms_mean"].as_f64().unwrap();
    assert!(
        m1["latency_ms_mean"].as_f64().unwrap() > 5.0 * mean0,
        "member 1 {m1}, member 0's mean {mean0}"
    );
    close(&mut h, &mut array);
}

/// Two members' I/Os overdue at once: the one waited for longest is
/// failed and the other gets a fresh timeout (its I/Os may only have
/// queued behind the hung member's in the driver); answering within it,
/// it stays. Failing both would lose a RAID-5.
#[test]
fn only_the_longest_overdue_member_is_failed_the_others_get_a_fresh_timeout() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 13);
    let mut array = open_with(&mut h, timeout_options());
    let capacity = array.capacity_bytes() as usize;
    let data = vec![0x7e; capacity];
    h.submit(
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: data.clone().into(),
            fua: false,
        },
    );
    while h.step_where(&mut array, |io| io.member != 1 && io.member != 2) {}
    let deadline = array.poll_timeout().expect("a member deadline");
    h.now = deadline;
    array.handle_tick(h.now);
    let states: Vec<String> = (0..4)
        .map(|m| member(&array, m)["state"].as_str().unwrap().to_string())
        .collect();
    let failed: Vec<usize> = (0..4).filter(|&m| states[m] == "faulty").collect();
    assert_eq!(failed.len(), 1, "{states:?}");
    let survivor = if failed[0] == 1 { 2 } else { 1 };
    // The survivor answers half a timeout later: in time.
    h.now = h.now.plus_ms(500);
    array.handle_tick(h.now);
    h.run(&mut array);
    assert_eq!(member(&array, survivor)["state"], "active");
    assert!(h.take_reply(1).expect("answered").result.is_ok());
    assert_eq!(read_all(&mut h, &mut array, 2), data);
    close(&mut h, &mut array);
}

fn read_error_counts(array: &Array, slot: usize) -> (u64, u64) {
    let m = member(array, slot);
    (
        m["read_errors_corrected"].as_u64().unwrap(),
        m["read_errors_failed"].as_u64().unwrap(),
    )
}

/// The counters survive a restart: a clean stop records them in the
/// superblock, and so does every superblock write while serving (here a
/// member failing), so a crash after it keeps them; what a crash catches
/// after the last write is lost. An older superblock without them opens
/// with none (`metadata::superblock` tests the decoding).
#[test]
fn read_error_counts_survive_a_restart() {
    let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 5, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 21);
    let mut array = open(&mut h);
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let model = fill(&mut h, &mut array, &mut rng);
    // A check reads every chunk (a read skips parity): 4 errors, 4 fixed.
    h.bad_sectors = bad_chunks(&array, 0, 0..4, BadSectorKind::HealsOnWrite);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    assert_eq!(read_error_counts(&array, 0), (4, 0));
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    assert_eq!(read_error_counts(&array, 0), (4, 0), "after a clean stop");
    // More errors, then a superblock write (member 1 fails: its error
    // stays after the rewrite), then a crash: what was written survives.
    h.bad_sectors = bad_chunks(&array, 0, 4..6, BadSectorKind::HealsOnWrite);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    assert_eq!(read_error_counts(&array, 0), (6, 0));
    h.bad_sectors = bad_chunks(&array, 1, 8..9, BadSectorKind::Persists);
    check(&mut h, &mut array, false);
    assert_eq!(member(&array, 1)["state"], "faulty");
    let member_1_failed = read_error_counts(&array, 1).1;
    assert!(member_1_failed >= 1);
    h.crash();
    let mut array = open(&mut h);
    assert_eq!(read_error_counts(&array, 0), (6, 0), "after a crash");
    assert_eq!(read_all(&mut h, &mut array, 2), model);
    // Member 1 is out of the array; its record keeps its counts.
    let uuid_1 = member(&array, 1)["uuid"].as_str().unwrap().to_string();
    let durable = eraid_core::metadata::superblock::Superblock::decode_newest(
        &h.members[0].as_ref().unwrap().durable[..eraid_core::geometry::METADATA_BYTES as usize],
    )
    .unwrap();
    assert_eq!(
        durable.read_errors.get(&uuid_1).map(|c| c.failed),
        Some(member_1_failed),
        "{:?}",
        durable.read_errors
    );
    // Errors after the last superblock write are lost in a crash. (Four
    // rows: member 0 holds data, which a read reads, in some of them.)
    h.bad_sectors = bad_chunks(&array, 0, 10..14, BadSectorKind::HealsOnWrite);
    assert_eq!(read_all(&mut h, &mut array, 3), model);
    assert!(read_error_counts(&array, 0).0 > 6);
    h.crash();
    let mut array = open(&mut h);
    assert_eq!(
        read_error_counts(&array, 0),
        (6, 0),
        "the last ones were lost"
    );
    close(&mut h, &mut array);
}

/// A member fails (its read error stays after the rewrite) while writes
/// it completed are not flushed yet: a later flush must not be answered
/// before the superblock recording the failure is durable, or a crash
/// brings the member back, its failure unrecorded, without those writes
/// (found by the simulation, seed 1465: a flushed write read back as
/// zeroes).
#[test]
fn a_flush_waits_for_the_record_of_a_member_failed_before_it() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 31);
    // Without a bitmap the write needs no metadata write of its own.
    let no_bitmap = ArrayOptions {
        write_intent_bitmap: false,
        ..options()
    };
    let mut array = open_with(&mut h, no_bitmap.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let model = fill(&mut h, &mut array, &mut rng);
    let not_metadata = |io: &eraid_core::io::DeviceIo| io.cause != IoCause::Metadata;
    // Unflushed data on member 0, then member 0 fails.
    let data = vec![0xa5; 4096];
    h.submit(
        &mut array,
        2,
        UserOp::Write {
            offset_bytes: 0,
            data: data.clone().into(),
            fua: false,
        },
    );
    while h.step_where(&mut array, not_metadata) {}
    h.take_reply(2).expect("write answered").result.unwrap();
    h.bad_sectors = bad_chunks(&array, 0, 1..2, BadSectorKind::Persists);
    let len_bytes = array.capacity_bytes() as usize;
    h.submit(
        &mut array,
        3,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes,
        },
    );
    while h.step_where(&mut array, not_metadata) {}
    assert_eq!(member(&array, 0)["state"], "faulty");
    h.submit(&mut array, 4, UserOp::Flush);
    while h.step_where(&mut array, not_metadata) {}
    assert!(
        h.take_reply(4).is_none(),
        "flush answered before the member's failure was recorded"
    );
    h.run(&mut array);
    h.take_reply(4).expect("flush answered").result.unwrap();
    let mut expected = model;
    expected[..data.len()].copy_from_slice(&data);
    let read = h.take_reply(3).expect("read answered").result.unwrap();
    assert_eq!(read.map(|d| d.to_vec()), Some(expected.clone()));
    // Durable now: a crash keeps the member out and the write in.
    h.crash();
    let mut array = open_with(&mut h, no_bitmap);
    assert_eq!(member(&array, 0)["state"], "faulty");
    assert_eq!(read_all(&mut h, &mut array, 5), expected);
    close(&mut h, &mut array);
}

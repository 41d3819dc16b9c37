//! A user write longer than the journal takes at once is refused at once,
//! naming both lengths, and changes nothing; one of exactly that length is
//! taken. Before, a write whose record could never fit beside the room the
//! journal keeps free waited for room for ever, and every write behind it
//! (a 16 MiB NBD write on an array with the smallest journal `create`
//! accepts hung the server). And the status counts the writes that wait
//! for room in the log.

mod common;
use common::*;
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::io::{UserError, UserOp};
use eraid_core::journal::user_write_bytes_max;
use eraid_core::testing::{MemHarness, MemJournal};
use eraid_core::Array;

const CHUNK_BYTES: u64 = 16 * 1024;
const JOURNAL_BYTES: u64 = 512 << 10;

/// A RAID-5 of four members with msc-ct and the small journal, open.
fn open_cached(seed: u64) -> (MemHarness, Array) {
    let geometry = raid5_of_four(CHUNK_BYTES, 32);
    let mut h = MemHarness::create(geometry, seed);
    h.journal = Some(MemJournal::fresh(
        JOURNAL_BYTES,
        seed,
        &format!("array-{seed}"),
    ));
    let cache = CacheConfig {
        policy: CachePolicy::MscCt,
        size_bytes: 2 * geometry.member_count as u64 * CHUNK_BYTES + 256 * 1024,
        destage_window_units: 4,
        ..CacheConfig::default()
    };
    cache.validate(&geometry).expect("valid cache config");
    let options = journaled_options(&mut h, cache);
    let mut array = Array::open(h.assemble().unwrap(), options, h.now);
    h.run(&mut array);
    (h, array)
}

#[test]
fn a_write_longer_than_the_journal_takes_is_refused_and_changes_nothing() {
    let (mut h, mut array) = open_cached(3);

    let max_bytes = user_write_bytes_max(JOURNAL_BYTES);
    assert!(max_bytes >= 64 * 1024, "a useful limit: {max_bytes}");
    let too_long = (max_bytes + 4096) as usize;
    h.submit(
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 0,
            data: vec![0xAB; too_long].into(),
            fua: false,
        },
    );
    h.run(&mut array);
    let reply = h
        .take_reply(1)
        .expect("the long write is answered, not left waiting");
    assert_eq!(
        reply.result,
        Err(UserError::TooLong {
            len_bytes: too_long as u64,
            max_bytes
        })
    );
    let message = reply.result.unwrap_err().to_string();
    assert!(
        message.contains(&too_long.to_string()) && message.contains(&max_bytes.to_string()),
        "{message}"
    );

    // One as long as the whole journal could never be placed: without
    // the limit it waited for room for ever.
    h.submit(
        &mut array,
        5,
        UserOp::Write {
            offset_bytes: 0,
            data: vec![0xCD; JOURNAL_BYTES as usize].into(),
            fua: false,
        },
    );
    h.run(&mut array);
    let reply = h
        .take_reply(5)
        .expect("a write as long as the journal is answered, not left waiting");
    assert!(
        matches!(reply.result, Err(UserError::TooLong { .. })),
        "{reply:?}"
    );

    // Nothing of them was written; a write of exactly the limit is taken.
    h.submit(
        &mut array,
        2,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: too_long,
        },
    );
    h.run(&mut array);
    let before = h
        .take_reply(2)
        .expect("read")
        .result
        .expect("read")
        .expect("bytes");
    assert!(
        before.bytes().all(|b| b == 0),
        "the refused write changed data"
    );
    h.submit(
        &mut array,
        3,
        UserOp::Write {
            offset_bytes: 0,
            data: vec![0x5C; max_bytes as usize].into(),
            fua: false,
        },
    );
    h.run(&mut array);
    h.take_reply(3)
        .expect("answered")
        .result
        .expect("a write of the limit is taken");
    h.submit(
        &mut array,
        4,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: max_bytes as usize,
        },
    );
    h.run(&mut array);
    let after = h
        .take_reply(4)
        .expect("read")
        .result
        .expect("read")
        .expect("bytes");
    assert!(
        after.bytes().all(|b| b == 0x5C),
        "the write of the limit reads back"
    );
}

/// The journal's status says how many writes wait for room in the log and
/// how many answers wait for their records: a burst of writes larger than
/// the log leaves some waiting (what makes cached writes slow when the
/// journal is small), and once everything ran, none.
#[test]
fn the_status_counts_writes_waiting_for_journal_room() {
    let (mut h, mut array) = open_cached(5);
    let waiting = |array: &Array, field: &str| {
        array.status_json()["cache"]["journal"][field]
            .as_u64()
            .unwrap_or_else(|| panic!("journal.{field} in {}", array.status_json()))
    };
    assert_eq!(waiting(&array, "waiting_requests"), 0);
    // Twice the log's bytes of 16 KiB writes at once.
    let writes = 2 * JOURNAL_BYTES / CHUNK_BYTES;
    for id in 0..writes {
        h.submit(
            &mut array,
            100 + id,
            UserOp::Write {
                offset_bytes: (id % 24) * CHUNK_BYTES,
                data: vec![id as u8; CHUNK_BYTES as usize].into(),
                fua: false,
            },
        );
    }
    let (mut most_waiting, mut most_held) = (0, 0);
    while h.step(&mut array) {
        most_waiting = most_waiting.max(waiting(&array, "waiting_requests"));
        most_held = most_held.max(waiting(&array, "held_replies"));
    }
    h.run(&mut array);
    assert!(
        most_waiting > 0 && most_held > 0,
        "a burst over the log's size waits for room ({most_waiting}) and for records ({most_held})"
    );
    for id in 0..writes {
        h.take_reply(100 + id)
            .expect("every write answered")
            .result
            .expect("written");
    }
    for field in [
        "waiting_requests",
        "waiting_ops",
        "held_replies",
        "batches_in_flight",
    ] {
        assert_eq!(waiting(&array, field), 0, "{field} once all ran");
    }
}

//! A user write longer than the journal takes at once is refused at once,
//! naming both lengths, and changes nothing; one of exactly that length is
//! taken. Before, a write whose record could never fit beside the room the
//! journal keeps free waited for room for ever, and every write behind it
//! (a 16 MiB NBD write on an array with the smallest journal `create`
//! accepts hung the server).

mod common;
use common::*;
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::{UserError, UserOp};
use eraid_core::journal::user_write_bytes_max;
use eraid_core::testing::{MemHarness, MemJournal};
use eraid_core::Array;

const CHUNK_BYTES: u64 = 16 * 1024;
const JOURNAL_BYTES: u64 = 512 << 10;

#[test]
fn a_write_longer_than_the_journal_takes_is_refused_and_changes_nothing() {
    let geometry = Geometry::new(
        Level::Raid5,
        ParityLayout::LeftSymmetric,
        4,
        CHUNK_BYTES,
        METADATA_BYTES + 32 * CHUNK_BYTES,
    )
    .unwrap();
    let mut h = MemHarness::create(geometry, 3);
    h.journal = Some(MemJournal::fresh(JOURNAL_BYTES, 3, "array-3"));
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

//! Two crashes in a row on a journaled array. The first tears record N of
//! the journal while N+1 and later land (a power loss writes them in any
//! order); the next run writes its own record N at the same place, with
//! the same length (4 KiB writes all frame alike), and it is acknowledged;
//! then the second crash. Before the log's leftovers were zeroed at start
//! (`scan::leftover_ranges`, done by `MemJournal::setup` as a driver
//! does), the scan after the second crash went on from the new record N
//! into the old N+1 and replayed it, putting data nobody was told of over
//! the acknowledged write.

mod common;
use common::*;
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::Geometry;
use eraid_core::io::UserOp;
use eraid_core::journal::format::{JournalHeader, Record};
use eraid_core::journal::scan::scan;
use eraid_core::testing::{MemHarness, MemJournal};
use eraid_core::Array;

const CHUNK_BYTES: u64 = 16 * 1024;
const JOURNAL_BYTES: u64 = 1 << 20;
const BLOCK: usize = 4096;

fn journaled(h: &mut MemHarness, geometry: &Geometry) -> Array {
    let cache = CacheConfig {
        policy: CachePolicy::MscCt,
        // Roomy, so nothing is destaged and no member-writes record comes
        // between the users' records.
        size_bytes: 4 << 20,
        ..CacheConfig::default()
    };
    cache.validate(geometry).expect("valid cache config");
    let options = journaled_options(h, cache);
    let mut array = Array::open(h.assemble().unwrap(), options, h.now);
    h.run(&mut array);
    array
}

fn write_block(h: &mut MemHarness, array: &mut Array, id: u64, block: u64, fill: u8) {
    call(
        h,
        array,
        id,
        UserOp::Write {
            offset_bytes: block * BLOCK as u64,
            data: vec![fill; BLOCK].into(),
            fua: false,
        },
    )
    .expect("write");
}

fn read_block(h: &mut MemHarness, array: &mut Array, id: u64, block: u64) -> Vec<u8> {
    call(
        h,
        array,
        id,
        UserOp::Read {
            offset_bytes: block * BLOCK as u64,
            len_bytes: BLOCK,
        },
    )
    .expect("read")
    .expect("bytes")
}

/// The journal's user-write records after its checkpoint: (block, fill).
fn user_records(h: &MemHarness) -> Vec<(u64, u8, u64, u64)> {
    let image = &h.journal.as_ref().expect("journal").image;
    let header = JournalHeader::decode_newest(image).expect("header");
    scan(&header, image)
        .into_iter()
        .filter_map(|(placed, record)| match record {
            Record::UserWrite { offset_bytes, data } => Some((
                offset_bytes / BLOCK as u64,
                data[0],
                placed.offset_bytes,
                placed.len_bytes,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn a_second_crash_never_replays_what_a_torn_batch_left_behind() {
    let geometry = raid5_of_four(CHUNK_BYTES, 32);
    let mut h = MemHarness::create(geometry, 11);
    h.journal = Some(MemJournal::fresh(JOURNAL_BYTES, 11, "array-11"));
    let mut array = journaled(&mut h, &geometry);
    for block in 0..6u64 {
        write_block(&mut h, &mut array, 1 + block, block, 0x10 + block as u8);
    }
    h.crash();
    drop(array);
    let records = user_records(&h);
    assert_eq!(
        records.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        (0..6u64).map(|b| (b, 0x10 + b as u8)).collect::<Vec<_>>(),
        "every write is a record of the journal, none destaged"
    );
    // The first crash: the record of block 2 torn, those after it intact
    // (in the story, blocks 2 to 5 were in flight and never answered).
    let (_, _, torn_at, torn_len) = records[2];
    h.journal.as_mut().unwrap().image[(torn_at + 100) as usize] ^= 1;

    // The next run writes block 3 anew and is told it is durable.
    let mut array = journaled(&mut h, &geometry);
    write_block(&mut h, &mut array, 20, 3, 0xee);
    let after = user_records(&h);
    let new_record = after
        .iter()
        .find(|r| r.0 == 3 && r.1 == 0xee)
        .expect("the new write's record");
    assert_eq!(
        (new_record.2, new_record.3),
        (torn_at, torn_len),
        "the new record lies where the torn one did, as long (what lines the old ones up)"
    );
    assert_eq!(read_block(&mut h, &mut array, 21, 3), vec![0xee; BLOCK]);
    h.crash();
    drop(array);

    // After the second crash block 3 holds the acknowledged write, and
    // the blocks whose writes were never answered hold either content.
    let mut array = journaled(&mut h, &geometry);
    let block_3 = read_block(&mut h, &mut array, 30, 3);
    assert!(
        block_3.iter().all(|&b| b == 0xee),
        "block 3 reads {:#x}, not the acknowledged 0xee: a record the torn batch left \
         behind was replayed over an acknowledged write",
        block_3[0]
    );
    for block in 0..2u64 {
        assert_eq!(
            read_block(&mut h, &mut array, 31 + block, block),
            vec![0x10 + block as u8; BLOCK],
            "acknowledged before the first crash"
        );
    }
    close(&mut h, &mut array);
}

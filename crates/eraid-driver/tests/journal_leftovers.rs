//! A crash cut a journal batch short: record 3 torn, records 4 and 5 intact
//! behind it. At the next start the driver zeroes the log past the records
//! it replays (`clear_leftovers`), so once the new run has written its own
//! record 3 (the same length: 4 KiB writes all frame alike) a later scan
//! ends there instead of replaying the old 4 and 5, which nobody was told
//! of, over acknowledged data.

use eraid_core::journal::format::{JournalHeader, Record};
use eraid_core::journal::ring::Ring;
use eraid_core::journal::LOG_START_BYTES;
use eraid_driver::journal_file::{clear_leftovers, create_journal, open_journal};
use eraid_driver::MemberFile;

const JOURNAL_ID: u64 = 0x5eed;

fn write_record(file: &MemberFile, ring: &mut Ring, block: u64, fill: u8) -> u64 {
    let record = Record::UserWrite {
        offset_bytes: block * 4096,
        data: vec![fill; 4096].into(),
    };
    let bytes = record.encode(ring.next_seq(), JOURNAL_ID);
    let placed = ring.append(bytes.len() as u64).expect("room");
    file.write_at(placed.offset_bytes, &bytes).expect("write");
    placed.offset_bytes
}

fn replayed(path: &std::path::Path) -> Vec<(u64, u8)> {
    open_journal(path)
        .expect("opens")
        .setup
        .found
        .iter()
        .map(|(_, record)| match record {
            Record::UserWrite { offset_bytes, data } => (offset_bytes / 4096, data[0]),
            other => panic!("unexpected record {other:?}"),
        })
        .collect()
}

#[test]
fn records_a_torn_batch_left_behind_are_zeroed_before_the_next_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal");
    let size_bytes = LOG_START_BYTES + (1 << 20);
    std::fs::File::create(&path)
        .unwrap()
        .set_len(size_bytes)
        .unwrap();
    create_journal(&path, size_bytes, JOURNAL_ID, "array-1").expect("create");
    let header = JournalHeader::fresh(size_bytes, JOURNAL_ID, "array-1");
    {
        let file = MemberFile::open(&path).unwrap();
        let mut ring = Ring::resume(&header, &[]);
        let offsets: Vec<u64> = (1..=5)
            .map(|block| write_record(&file, &mut ring, block, 0xa0))
            .collect();
        // Record 3 torn (a byte of its payload never landed).
        let at = offsets[2] + 100;
        let byte = file.read_at(at, 1).unwrap()[0];
        file.write_at(at, &[byte ^ 1]).unwrap();
    }
    assert_eq!(replayed(&path), vec![(1, 0xa0), (2, 0xa0)]);

    // The next start: the leftovers go, then the run writes its record 3.
    let opened = open_journal(&path).unwrap();
    clear_leftovers(&opened).expect("clear");
    let placed: Vec<_> = opened.setup.found.iter().map(|(p, _)| *p).collect();
    let mut ring = Ring::resume(&opened.setup.header, &placed);
    write_record(&opened.file, &mut ring, 4, 0xbb);
    drop(opened);

    assert_eq!(
        replayed(&path),
        vec![(1, 0xa0), (2, 0xa0), (4, 0xbb)],
        "the old records 4 and 5 must not follow the new record 3"
    );
    // Nothing a replay needs was touched: the log past the new record reads zero.
    let file = MemberFile::open(&path).unwrap();
    let end = ring.free_ranges().last().expect("free space").clone();
    assert!(file
        .read_at(end.start, (end.end - end.start) as usize)
        .unwrap()
        .iter()
        .all(|&b| b == 0));
}

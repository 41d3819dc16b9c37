//! Finding the records to replay: from the checkpoint, each next record is
//! where the previous one ended, or at the log's start when the writer
//! wrapped. The scan stops at the first place where neither holds the
//! next intact record of this journal (a torn or never written record).

use super::format::{JournalHeader, Record};
use super::ring::{Placed, Ring};
use super::LOG_START_BYTES;

/// The ranges of the log a driver must zero (and make durable) at start,
/// before the first new record, given what [`scan`] found: every part no
/// found record holds (see [`Ring::free_ranges`]: leftovers of a batch cut
/// short would otherwise be replayed after newer records one day).
pub fn leftover_ranges(
    header: &JournalHeader,
    found: &[(Placed, Record)],
) -> Vec<std::ops::Range<u64>> {
    let placed: Vec<Placed> = found.iter().map(|(p, _)| *p).collect();
    Ring::resume(header, &placed).free_ranges()
}

/// The records after the checkpoint, in order. `journal` holds the whole
/// journal (headers included).
pub fn scan(header: &JournalHeader, journal: &[u8]) -> Vec<(Placed, Record)> {
    let end = (header.size_bytes as usize).min(journal.len());
    let mut found = Vec::new();
    let mut at = header.tail_offset_bytes as usize;
    let mut seq = header.tail_seq;
    // Each record is at least one head long, so this bounds the loop even
    // on a journal whose records all look valid.
    let limit = end / super::format::RECORD_HEAD_BYTES + 1;
    while found.len() < limit {
        let here = (at < end)
            .then(|| Record::decode(&journal[at..end], seq, header.journal_id))
            .flatten()
            .map(|r| (at, r));
        let next = here.or_else(|| {
            let start = LOG_START_BYTES as usize;
            (at != start && start < end)
                .then(|| Record::decode(&journal[start..end], seq, header.journal_id))
                .flatten()
                .map(|r| (start, r))
        });
        let Some((offset, (record, len))) = next else {
            break;
        };
        found.push((
            Placed {
                seq,
                offset_bytes: offset as u64,
                len_bytes: len as u64,
            },
            record,
        ));
        at = offset + len;
        seq += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes records through a ring into a journal image, as the driver
    /// would, retiring some so the log wraps.
    #[test]
    fn scan_finds_exactly_the_records_after_the_checkpoint_across_a_wrap() {
        let size = LOG_START_BYTES + 600;
        let mut header = JournalHeader::fresh(size, 3, "u");
        let mut image = vec![0u8; size as usize];
        let mut ring = Ring::resume(&header, &[]);
        let record = |n: u8| Record::UserWrite {
            offset_bytes: n as u64 * 4096,
            data: vec![n; 100].into(),
        };
        let put = |ring: &mut Ring, image: &mut Vec<u8>, n: u8| {
            let bytes = record(n).encode(ring.next_seq(), 3);
            let placed = ring.append(bytes.len() as u64).expect("fits");
            let at = placed.offset_bytes as usize;
            image[at..at + bytes.len()].copy_from_slice(&bytes);
            placed
        };
        let placed: Vec<Placed> = (1..=4).map(|n| put(&mut ring, &mut image, n)).collect();
        let (offset, seq) = ring.retire_below(placed[2].seq);
        header.tail_offset_bytes = offset;
        header.tail_seq = seq;
        let wrapped = put(&mut ring, &mut image, 5);
        assert_eq!(wrapped.offset_bytes, LOG_START_BYTES);
        let found = scan(&header, &image);
        let numbers: Vec<u64> = found
            .iter()
            .map(|(_, r)| match r {
                Record::UserWrite { offset_bytes, .. } => offset_bytes / 4096,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(numbers, vec![3, 4, 5], "old records 1, 2 are not replayed");
        // A torn last record ends the scan before it.
        let at = wrapped.offset_bytes as usize + 40;
        image[at] ^= 1;
        assert_eq!(scan(&header, &image).len(), 2);
        // The ring resumes after the last record found.
        let resumed = Ring::resume(&header, &found.iter().map(|(p, _)| *p).collect::<Vec<_>>());
        assert_eq!(resumed.next_seq(), 6);
    }

    /// A crash tore record 3 of a batch whose records 4 and 5 landed. The
    /// next run resumes after record 2 and writes a new record 3 of the
    /// same length (4 KiB writes all frame alike), then crashes again. The
    /// old records 4 and 5 were never acknowledged: replaying them after
    /// the new record 3 would put stale data over acknowledged data.
    #[test]
    fn records_left_behind_by_a_torn_batch_are_not_replayed_after_newer_ones() {
        let size = LOG_START_BYTES + 4000;
        let header = JournalHeader::fresh(size, 3, "u");
        let mut image = vec![0u8; size as usize];
        let mut ring = Ring::resume(&header, &[]);
        let record = |block: u64, fill: u8| Record::UserWrite {
            offset_bytes: block * 4096,
            data: vec![fill; 100].into(),
        };
        let put = |ring: &mut Ring, image: &mut Vec<u8>, r: Record| {
            let bytes = r.encode(ring.next_seq(), 3);
            let placed = ring.append(bytes.len() as u64).expect("fits");
            let at = placed.offset_bytes as usize;
            image[at..at + bytes.len()].copy_from_slice(&bytes);
            placed
        };
        let placed: Vec<Placed> = (1..=5)
            .map(|n| put(&mut ring, &mut image, record(n, 0xa0)))
            .collect();
        // Record 3 torn; 4 and 5 landed.
        image[placed[2].offset_bytes as usize + 40] ^= 1;
        let found = scan(&header, &image);
        assert_eq!(found.len(), 2);
        let leftovers = leftover_ranges(&header, &found);
        assert_eq!(
            leftovers,
            vec![placed[2].offset_bytes..size],
            "everything after record 2"
        );
        // What a driver does at start (the regression: without it the
        // scan below finds the old records 4 and 5 after the new 3).
        for range in leftovers {
            image[range.start as usize..range.end as usize].fill(0);
        }
        let mut ring = Ring::resume(&header, &found.iter().map(|(p, _)| *p).collect::<Vec<_>>());
        put(&mut ring, &mut image, record(4, 0xbb));
        let found = scan(&header, &image);
        let blocks: Vec<(u64, u8)> = found
            .iter()
            .map(|(_, r)| match r {
                Record::UserWrite { offset_bytes, data } => (offset_bytes / 4096, data[0]),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            blocks,
            vec![(1, 0xa0), (2, 0xa0), (4, 0xbb)],
            "stale records replayed"
        );
    }
}

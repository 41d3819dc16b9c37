//! The journal's file I/O (the format and state machine are the core's,
//! `eraid_core::journal`): making a fresh journal at create, reading one
//! back at start (its checkpoint and the records to replay), and writing
//! the batches the engine hands over, each made durable before the core
//! hears it is done.

use std::path::Path;
use std::sync::Arc;

use eraid_core::array::JournalSetup;
use eraid_core::io::JournalBatch;
use eraid_core::journal::format::JournalHeader;
use eraid_core::journal::scan::{leftover_ranges, scan};
use eraid_core::journal::{HEADER_SLOT_BYTES, LOG_START_BYTES};

use crate::member::{DirectMode, MemberFile, MemberOptions};
use crate::member_io::MemberIo;

/// Journal writes are small and unaligned: buffered I/O and fdatasync.
fn journal_options(writable: bool) -> MemberOptions {
    MemberOptions {
        writable,
        direct: DirectMode::Never,
    }
}

/// Writes a fresh journal header of `size_bytes` into `path` (both slots:
/// an older journal's header is erased, and its records carry another id).
pub fn create_journal(
    path: &Path,
    size_bytes: u64,
    journal_id: u64,
    array_uuid: &str,
) -> Result<(), String> {
    let file = MemberFile::open_with(path, journal_options(true))
        .map_err(|e| format!("cannot open journal {}: {e}", path.display()))?;
    let header = JournalHeader::fresh(size_bytes, journal_id, array_uuid);
    let mut slots = vec![0u8; LOG_START_BYTES as usize];
    let at = header.slot_offset_bytes() as usize;
    slots[at..at + HEADER_SLOT_BYTES as usize].copy_from_slice(&header.encode());
    file.write_at(0, &slots)
        .and_then(|()| file.sync_data())
        .map_err(|e| format!("cannot write journal {}: {e}", path.display()))
}

/// A journal read back at start.
pub struct OpenedJournal {
    pub file: Arc<MemberFile>,
    pub setup: JournalSetup,
}

/// Opens the journal at `path` and reads what to replay. The error names
/// the file and what is wrong with it. It writes nothing: once the journal
/// is known to be the array's, [`clear_leftovers`] must run before the
/// array appends a record.
pub fn open_journal(path: &Path) -> Result<OpenedJournal, String> {
    let name = path.display();
    let file = MemberFile::open_with(path, journal_options(true))
        .map_err(|e| format!("cannot open journal {name}: {e}"))?;
    let slots = file
        .read_at(0, LOG_START_BYTES as usize)
        .map_err(|e| format!("cannot read journal {name}: {e}"))?;
    let header =
        JournalHeader::decode_newest(&slots).map_err(|e| format!("journal {name}: {e}"))?;
    if header.size_bytes > file.size_bytes() {
        return Err(format!(
            "journal {name} is {} bytes but its header says {}: it was truncated",
            file.size_bytes(),
            header.size_bytes
        ));
    }
    let size = usize::try_from(header.size_bytes)
        .map_err(|_| format!("journal {name} is too large to read"))?;
    let image = file
        .read_at(0, size)
        .map_err(|e| format!("cannot read journal {name}: {e}"))?;
    let found = scan(&header, &image);
    Ok(OpenedJournal {
        file: Arc::new(file),
        setup: JournalSetup { header, found },
    })
}

/// Zeroes the parts of the log no record to replay holds, and makes that
/// durable: a batch cut short by a crash can leave intact records there
/// that a later scan would replay after newer ones
/// (`eraid_core::journal::scan::leftover_ranges`). Call it once the journal
/// is known to be the array's (nothing is changed on a wrong file), before
/// the engine appends a record. Files get holes punched, block devices
/// BLKZEROOUT, where they can.
pub fn clear_leftovers(opened: &OpenedJournal) -> Result<(), String> {
    let name = opened.file.path().display();
    for range in leftover_ranges(&opened.setup.header, &opened.setup.found) {
        for piece in aligned_pieces(range) {
            MemberIo::write_zeroes(opened.file.as_ref(), piece.start, piece.end - piece.start)
                .map_err(|e| format!("cannot clear journal {name}: {e}"))?;
        }
    }
    opened
        .file
        .sync_data()
        .map_err(|e| format!("cannot clear journal {name}: flush failed: {e}"))
}

/// Alignment of the middle piece of a range to zero.
const ZERO_ALIGN_BYTES: u64 = 4096;

/// A range cut so its middle is aligned: records end anywhere, and a
/// block device zeroes natively (BLKZEROOUT) only whole sectors; the
/// unaligned ends, under 4 KiB each, are written as zeroes.
fn aligned_pieces(range: std::ops::Range<u64>) -> Vec<std::ops::Range<u64>> {
    let middle_start = range.start.next_multiple_of(ZERO_ALIGN_BYTES);
    let middle_end = range.end - range.end % ZERO_ALIGN_BYTES;
    if middle_start >= middle_end {
        return vec![range];
    }
    [
        range.start..middle_start,
        middle_start..middle_end,
        middle_end..range.end,
    ]
    .into_iter()
    .filter(|p| p.start < p.end)
    .collect()
}

/// Writes one batch and makes it durable.
pub fn write_batch(journal: &dyn MemberIo, batch: &JournalBatch) -> Result<(), String> {
    for (offset_bytes, bytes) in &batch.writes {
        // A record is framed here, outside the engine lock, by reference:
        // the data it carries is copied once, into the journal.
        let pieces = bytes.pieces();
        let slices: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
        journal
            .write_vectored_at(*offset_bytes, &slices)
            .map_err(|e| format!("journal {}: write failed: {e}", journal.label()))?;
    }
    journal
        .sync_data()
        .map_err(|e| format!("journal {}: flush failed: {e}", journal.label()))
}

#[cfg(test)]
mod tests {
    use super::aligned_pieces;

    #[test]
    fn a_range_is_cut_into_aligned_middle_and_short_ends_covering_it_exactly() {
        assert_eq!(
            aligned_pieces(100..10_000),
            vec![100..4096, 4096..8192, 8192..10_000]
        );
        assert_eq!(aligned_pieces(4096..8192), vec![4096..8192]);
        assert_eq!(
            aligned_pieces(100..4000),
            vec![100..4000],
            "no aligned middle"
        );
        assert_eq!(
            aligned_pieces(4096..5000),
            vec![4096..5000],
            "no whole block"
        );
        for (start, end) in [(1u64, 9000u64), (4095, 4097), (8192, 12_289)] {
            let pieces = aligned_pieces(start..end);
            assert_eq!(pieces.first().unwrap().start, start);
            assert_eq!(pieces.last().unwrap().end, end);
            assert!(pieces.windows(2).all(|w| w[0].end == w[1].start));
        }
    }
}

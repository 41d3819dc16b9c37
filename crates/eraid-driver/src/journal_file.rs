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
        MemberIo::write_zeroes(opened.file.as_ref(), range.start, range.end - range.start)
            .map_err(|e| format!("cannot clear journal {name}: {e}"))?;
    }
    opened
        .file
        .sync_data()
        .map_err(|e| format!("cannot clear journal {name}: flush failed: {e}"))
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

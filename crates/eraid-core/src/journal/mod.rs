//! The write-back cache's journal (issue 17's durability): pure format and
//! state only, the driver does the file I/O. A journal is a file or device
//! laid out as two header slots (the checkpoint: where the oldest record
//! still needed starts) and a circular log of checksummed records written
//! sequentially. `format` encodes headers and records, `framed` defers a
//! record's encoding to the thread that writes it, `ring` places
//! records in the log and retires them, `scan` finds the records to replay
//! after a crash.

pub mod format;
pub mod framed;
pub mod ring;
pub mod scan;

/// Bytes of one header slot; two slots precede the log.
pub const HEADER_SLOT_BYTES: u64 = 4096;
/// Where the log starts.
pub const LOG_START_BYTES: u64 = 2 * HEADER_SLOT_BYTES;
/// The smallest journal `create` accepts: room for many stripes' records.
pub const JOURNAL_BYTES_MIN: u64 = 8 << 20;

/// The smallest journal for an array whose stripes hold `stripe_bytes`
/// (data and parity): 64 stripes, at least `JOURNAL_BYTES_MIN`, so a full
/// destage window's records and users' writes fit together.
pub fn journal_bytes_min(stripe_bytes: u64) -> u64 {
    JOURNAL_BYTES_MIN.max(LOG_START_BYTES + 64 * stripe_bytes)
}

/// The longest user write a journal of `journal_size_bytes` takes. A
/// user record must leave the destage band and the write-through room
/// free, together at most half the log, so a record up to half the log
/// (less its head) always finds room once the log drains; a longer one
/// would wait for room for ever, so it is refused instead.
pub fn user_write_bytes_max(journal_size_bytes: u64) -> u64 {
    let half_log_bytes = journal_size_bytes.saturating_sub(LOG_START_BYTES) / 2;
    half_log_bytes.saturating_sub(4096) / 4096 * 4096
}

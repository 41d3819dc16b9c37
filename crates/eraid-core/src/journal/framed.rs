//! A journal write's bytes as the core hands them to the driver: a header
//! slot, encoded already, or a record framed on first access.
//!
//! Why deferred: the core runs behind the driver's engine lock, and framing
//! a record copies every byte of the write it carries and checksums it
//! (CRC32C). The record holds the user's bytes and the members' writes by
//! reference (a stripe's parity perhaps not computed yet), so the thread
//! that writes the batch, outside the lock, frames it, as pieces that
//! borrow the data (`JournalBytes::pieces`); the core only needs the
//! length, which [`Record::framed_len`] gives without framing.

use super::format::Record;
use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

/// Bytes to write at one place of the journal. Derefs to `[u8]` (framing a
/// record then, once); [`JournalBytes::len`] never frames.
#[derive(Clone)]
pub struct JournalBytes(Source);

#[derive(Clone)]
enum Source {
    Ready(Vec<u8>),
    Record {
        record: Record,
        seq: u64,
        journal_id: u64,
        len_bytes: usize,
        framed: OnceLock<Vec<u8>>,
    },
}

impl JournalBytes {
    /// `record`, numbered `seq` in journal `journal_id`, framed when first
    /// looked at.
    pub fn record(record: Record, seq: u64, journal_id: u64) -> JournalBytes {
        let len_bytes = record.framed_len();
        JournalBytes(Source::Record {
            record,
            seq,
            journal_id,
            len_bytes,
            framed: OnceLock::new(),
        })
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Source::Ready(bytes) => bytes.len(),
            Source::Record { len_bytes, .. } => *len_bytes,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes as pieces to write one after another: a record not
    /// framed yet is framed by reference (its head and fields new, the
    /// data it carries borrowed), so writing it copies that data once,
    /// into the journal, instead of once into a frame and again from there.
    pub fn pieces(&self) -> Vec<Cow<'_, [u8]>> {
        match &self.0 {
            Source::Ready(bytes) => vec![Cow::Borrowed(&bytes[..])],
            Source::Record {
                record,
                seq,
                journal_id,
                framed,
                ..
            } => match framed.get() {
                Some(bytes) => vec![Cow::Borrowed(&bytes[..])],
                None => record.encode_pieces(*seq, *journal_id),
            },
        }
    }

    /// False for a record not framed yet (never frames).
    pub fn is_framed(&self) -> bool {
        match &self.0 {
            Source::Ready(_) => true,
            Source::Record { framed, .. } => framed.get().is_some(),
        }
    }
}

impl From<Vec<u8>> for JournalBytes {
    fn from(bytes: Vec<u8>) -> JournalBytes {
        JournalBytes(Source::Ready(bytes))
    }
}

impl Deref for JournalBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Source::Ready(bytes) => bytes,
            Source::Record {
                record,
                seq,
                journal_id,
                len_bytes,
                framed,
            } => framed.get_or_init(|| {
                let bytes = record.encode(*seq, *journal_id);
                assert_eq!(bytes.len(), *len_bytes, "a framed record's length");
                bytes
            }),
        }
    }
}

impl PartialEq for JournalBytes {
    fn eq(&self, other: &JournalBytes) -> bool {
        self[..] == other[..]
    }
}

impl Eq for JournalBytes {}

impl fmt::Debug for JournalBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JournalBytes")
            .field("len", &self.len())
            .field("framed", &self.is_framed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::{MemberData, MemberWrite};

    #[test]
    fn a_record_is_framed_only_when_looked_at_and_as_encode_frames_it() {
        let records = [
            Record::UserWrite {
                offset_bytes: 4096,
                data: vec![5u8; 8192].into(),
            },
            Record::UserZeroes {
                offset_bytes: 0,
                len_bytes: 1 << 20,
            },
            Record::MemberWrites(vec![
                MemberWrite {
                    slot: 1,
                    offset_bytes: 65536,
                    data: MemberData::Bytes(vec![9u8; 4096].into()),
                },
                MemberWrite {
                    slot: 3,
                    offset_bytes: 0,
                    data: MemberData::Zeroes { len_bytes: 4096 },
                },
            ]),
        ];
        for record in records {
            let bytes = JournalBytes::record(record.clone(), 17, 99);
            let expected = record.encode(17, 99);
            assert_eq!(bytes.len(), expected.len(), "{record:?}");
            assert!(!bytes.is_framed(), "framed before anyone looked");
            assert_eq!(&bytes[..], &expected[..]);
            assert!(bytes.is_framed());
            let fresh = JournalBytes::record(record.clone(), 17, 99);
            let joined: Vec<u8> = fresh
                .pieces()
                .iter()
                .flat_map(|p| p.iter().copied())
                .collect();
            assert_eq!(joined, expected, "pieces join to the frame");
            assert!(!fresh.is_framed(), "pieces framed the record");
            let decoded = Record::decode(&bytes, 17, 99).expect("decodes");
            assert_eq!(decoded, (record, expected.len()));
        }
    }

    #[test]
    fn a_members_parity_is_computed_when_its_record_is_framed_not_before() {
        let computed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&computed);
        let parity = crate::write_data::StripeParity::deferred(
            1,
            4096,
            Box::new(move || {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                vec![vec![3u8; 4096].into()]
            }),
        );
        let record = Record::MemberWrites(vec![MemberWrite {
            slot: 0,
            offset_bytes: 0,
            data: MemberData::Bytes(parity.shard(0)),
        }]);
        let bytes = JournalBytes::record(record, 1, 1);
        let len = bytes.len();
        assert!(!computed.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(bytes[..].len(), len);
        assert!(computed.load(std::sync::atomic::Ordering::SeqCst));
    }
}

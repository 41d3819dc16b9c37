//! The journal's on-disk encoding, little-endian, every piece checked by
//! CRC32C. A header slot: magic, generation, the journal's size and id, the
//! array's UUID and the checkpoint (the offset and sequence number of the
//! oldest record still needed). A record: a 32-byte head (magic, kind,
//! sequence number, journal id, payload length, CRC32C of head and payload)
//! then its payload.

use super::HEADER_SLOT_BYTES;
use std::borrow::Cow;

const HEADER_MAGIC: &[u8; 8] = b"ERAIDJH1";
const RECORD_MAGIC: u32 = 0x524A_5245; // "ERJR"
pub const RECORD_HEAD_BYTES: usize = 32;
const UUID_BYTES_MAX: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalHeader {
    /// Bumped on every checkpoint; the newer valid slot wins.
    pub generation: u64,
    pub size_bytes: u64,
    /// Chosen at create and recorded in the superblocks: a journal made
    /// again in the same file never replays the old one's records.
    pub journal_id: u64,
    pub array_uuid: String,
    pub tail_offset_bytes: u64,
    pub tail_seq: u64,
}

impl JournalHeader {
    /// The header of a fresh journal (empty log).
    pub fn fresh(size_bytes: u64, journal_id: u64, array_uuid: &str) -> JournalHeader {
        JournalHeader {
            generation: 1,
            size_bytes,
            journal_id,
            array_uuid: array_uuid.to_string(),
            tail_offset_bytes: super::LOG_START_BYTES,
            tail_seq: 1,
        }
    }

    /// The slot this generation is written to.
    pub fn slot_offset_bytes(&self) -> u64 {
        (self.generation % 2) * HEADER_SLOT_BYTES
    }

    pub fn encode(&self) -> Vec<u8> {
        assert!(
            self.array_uuid.len() <= UUID_BYTES_MAX,
            "array uuid too long"
        );
        let mut out = Vec::with_capacity(HEADER_SLOT_BYTES as usize);
        out.extend_from_slice(HEADER_MAGIC);
        for value in [
            self.generation,
            self.size_bytes,
            self.journal_id,
            self.tail_offset_bytes,
            self.tail_seq,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&(self.array_uuid.len() as u16).to_le_bytes());
        out.extend_from_slice(self.array_uuid.as_bytes());
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out.resize(HEADER_SLOT_BYTES as usize, 0);
        out
    }

    /// Decodes one slot; the error says what was wrong.
    pub fn decode(slot: &[u8]) -> Result<JournalHeader, String> {
        if slot.len() < 8 + 5 * 8 + 2 + 4 || &slot[..8] != HEADER_MAGIC {
            return Err("no eraid journal header (bad magic)".into());
        }
        let u64_at = |at: usize| u64::from_le_bytes(slot[at..at + 8].try_into().expect("8 bytes"));
        let uuid_len = u16::from_le_bytes([slot[48], slot[49]]) as usize;
        if uuid_len > UUID_BYTES_MAX {
            return Err("journal header: array uuid too long".into());
        }
        let crc_at = 50 + uuid_len;
        let stored = u32::from_le_bytes(slot[crc_at..crc_at + 4].try_into().expect("4 bytes"));
        if crc32c::crc32c(&slot[..crc_at]) != stored {
            return Err("journal header checksum mismatch".into());
        }
        let array_uuid = std::str::from_utf8(&slot[50..crc_at])
            .map_err(|_| "journal header: array uuid is not UTF-8".to_string())?
            .to_string();
        Ok(JournalHeader {
            generation: u64_at(8),
            size_bytes: u64_at(16),
            journal_id: u64_at(24),
            tail_offset_bytes: u64_at(32),
            tail_seq: u64_at(40),
            array_uuid,
        })
    }

    /// The newer valid one of the two slots (`slots` is the first
    /// `2 * HEADER_SLOT_BYTES` of the journal).
    pub fn decode_newest(slots: &[u8]) -> Result<JournalHeader, String> {
        let half = HEADER_SLOT_BYTES as usize;
        if slots.len() < 2 * half {
            return Err("journal too short for its headers".into());
        }
        let a = JournalHeader::decode(&slots[..half]);
        let b = JournalHeader::decode(&slots[half..2 * half]);
        match (a, b) {
            (Ok(a), Ok(b)) => Ok(if a.generation >= b.generation { a } else { b }),
            (Ok(one), Err(_)) | (Err(_), Ok(one)) => Ok(one),
            (Err(error), Err(_)) => Err(error),
        }
    }
}

/// One write to one member, as a destage or a user write's stripe op
/// issues it (the offset is the member's absolute byte offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberWrite {
    pub slot: u32,
    pub offset_bytes: u64,
    pub data: MemberData,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberData {
    /// A stripe's parity may still be uncomputed: it is computed when the
    /// record is framed, by the thread that writes the journal batch.
    Bytes(crate::write_data::WriteData),
    Zeroes {
        len_bytes: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A user's write, as it arrived (replayed through the array).
    UserWrite {
        offset_bytes: u64,
        data: crate::io::Bytes,
    },
    /// A user's trim or write of zeroes (eraid writes zeroes for both).
    UserZeroes { offset_bytes: u64, len_bytes: u64 },
    /// A stripe op's member writes (data and parity), recorded before any
    /// reaches a member: replayed as they are, they make the stripe
    /// consistent again whatever member is missing (the write hole).
    MemberWrites(Vec<MemberWrite>),
}

const KIND_USER_WRITE: u8 = 1;
const KIND_USER_ZEROES: u8 = 2;
const KIND_MEMBER_WRITES: u8 = 3;

impl Record {
    fn kind(&self) -> u8 {
        match self {
            Record::UserWrite { .. } => KIND_USER_WRITE,
            Record::UserZeroes { .. } => KIND_USER_ZEROES,
            Record::MemberWrites(_) => KIND_MEMBER_WRITES,
        }
    }

    /// The payload's length, without building it.
    fn payload_len(&self) -> usize {
        match self {
            Record::UserWrite { data, .. } => 8 + data.len(),
            Record::UserZeroes { .. } => 16,
            Record::MemberWrites(writes) => {
                4 + writes
                    .iter()
                    .map(|w| {
                        24 + match &w.data {
                            MemberData::Bytes(bytes) => bytes.len(),
                            MemberData::Zeroes { .. } => 0,
                        }
                    })
                    .sum::<usize>()
            }
        }
    }

    /// The framed record's length (what [`Record::encode`] returns), without
    /// encoding it.
    pub fn framed_len(&self) -> usize {
        RECORD_HEAD_BYTES + self.payload_len()
    }

    /// The record framed for the log, as pieces to write one after another:
    /// the head (its checksum filled in) and the payload's fields are new
    /// bytes; the data the record carries is borrowed, not copied.
    pub fn encode_pieces(&self, seq: u64, journal_id: u64) -> Vec<Cow<'_, [u8]>> {
        let mut pieces: Vec<Cow<'_, [u8]>> = Vec::new();
        // Fields gather here until the next borrowed piece.
        let mut fields = Vec::new();
        match self {
            Record::UserWrite { offset_bytes, data } => {
                fields.extend_from_slice(&offset_bytes.to_le_bytes());
                pieces.push(Cow::Owned(std::mem::take(&mut fields)));
                pieces.push(Cow::Borrowed(&data[..]));
            }
            Record::UserZeroes {
                offset_bytes,
                len_bytes,
            } => {
                fields.extend_from_slice(&offset_bytes.to_le_bytes());
                fields.extend_from_slice(&len_bytes.to_le_bytes());
            }
            Record::MemberWrites(writes) => {
                fields.extend_from_slice(&(writes.len() as u32).to_le_bytes());
                for write in writes {
                    fields.extend_from_slice(&write.slot.to_le_bytes());
                    let (zero, len) = match &write.data {
                        MemberData::Bytes(bytes) => (0u32, bytes.len() as u64),
                        MemberData::Zeroes { len_bytes } => (1u32, *len_bytes),
                    };
                    fields.extend_from_slice(&zero.to_le_bytes());
                    fields.extend_from_slice(&write.offset_bytes.to_le_bytes());
                    fields.extend_from_slice(&len.to_le_bytes());
                    if let MemberData::Bytes(bytes) = &write.data {
                        pieces.push(Cow::Owned(std::mem::take(&mut fields)));
                        pieces.push(Cow::Borrowed(&bytes[..]));
                    }
                }
            }
        }
        if !fields.is_empty() {
            pieces.push(Cow::Owned(fields));
        }
        pieces.retain(|piece| !piece.is_empty());
        let payload_len: usize = pieces.iter().map(|p| p.len()).sum();
        assert_eq!(payload_len, self.payload_len(), "a record's payload length");
        let mut head = Vec::with_capacity(RECORD_HEAD_BYTES);
        head.extend_from_slice(&RECORD_MAGIC.to_le_bytes());
        head.extend_from_slice(&[self.kind(), 0, 0, 0]);
        head.extend_from_slice(&seq.to_le_bytes());
        head.extend_from_slice(&journal_id.to_le_bytes());
        head.extend_from_slice(&(payload_len as u32).to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        let crc = pieces.iter().fold(crc32c::crc32c(&head), |crc, piece| {
            crc32c::crc32c_append(crc, piece)
        });
        head[28..32].copy_from_slice(&crc.to_le_bytes());
        pieces.insert(0, Cow::Owned(head));
        pieces
    }

    /// The record framed for the log: head then payload, in one buffer.
    pub fn encode(&self, seq: u64, journal_id: u64) -> Vec<u8> {
        let pieces = self.encode_pieces(seq, journal_id);
        let mut out = Vec::with_capacity(self.framed_len());
        for piece in &pieces {
            out.extend_from_slice(piece);
        }
        out
    }

    /// The record at the start of `bytes` if it is whole, intact, of this
    /// journal and numbered `seq`; with its framed length.
    pub fn decode(bytes: &[u8], seq: u64, journal_id: u64) -> Option<(Record, usize)> {
        if bytes.len() < RECORD_HEAD_BYTES {
            return None;
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        if u32_at(0) != RECORD_MAGIC || u64_at(8) != seq || u64_at(16) != journal_id {
            return None;
        }
        let len = RECORD_HEAD_BYTES + u32_at(24) as usize;
        if bytes.len() < len {
            return None;
        }
        let mut check = bytes[..len].to_vec();
        check[28..32].fill(0);
        if crc32c::crc32c(&check) != u32_at(28) {
            return None;
        }
        let payload = &bytes[RECORD_HEAD_BYTES..len];
        let record = decode_payload(bytes[4], payload)?;
        Some((record, len))
    }
}

fn decode_payload(kind: u8, payload: &[u8]) -> Option<Record> {
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            payload.get(at..at + 8)?.try_into().ok()?,
        ))
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(
            payload.get(at..at + 4)?.try_into().ok()?,
        ))
    };
    match kind {
        KIND_USER_WRITE => Some(Record::UserWrite {
            offset_bytes: u64_at(0)?,
            data: crate::io::Bytes::copy_from_slice(payload.get(8..)?),
        }),
        KIND_USER_ZEROES => Some(Record::UserZeroes {
            offset_bytes: u64_at(0)?,
            len_bytes: u64_at(8)?,
        }),
        KIND_MEMBER_WRITES => {
            let count = u32_at(0)? as usize;
            let mut at = 4;
            let mut writes = Vec::new();
            for _ in 0..count {
                let slot = u32_at(at)?;
                let zero = u32_at(at + 4)?;
                let offset_bytes = u64_at(at + 8)?;
                let len = u64_at(at + 16)?;
                at += 24;
                let data = if zero == 1 {
                    MemberData::Zeroes { len_bytes: len }
                } else {
                    let end = at.checked_add(usize::try_from(len).ok()?)?;
                    let bytes = crate::io::Bytes::copy_from_slice(payload.get(at..end)?);
                    at = end;
                    MemberData::Bytes(bytes.into())
                };
                writes.push(MemberWrite {
                    slot,
                    offset_bytes,
                    data,
                });
            }
            (at == payload.len()).then_some(Record::MemberWrites(writes))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_any_flipped_bit_is_refused() {
        let record = Record::MemberWrites(vec![
            MemberWrite {
                slot: 2,
                offset_bytes: 1 << 20,
                data: MemberData::Bytes(vec![7; 4096].into()),
            },
            MemberWrite {
                slot: 4,
                offset_bytes: 8192,
                data: MemberData::Zeroes { len_bytes: 4096 },
            },
        ]);
        let bytes = record.encode(9, 77);
        assert_eq!(Record::decode(&bytes, 9, 77), Some((record, bytes.len())));
        assert_eq!(Record::decode(&bytes, 10, 77), None, "wrong sequence");
        assert_eq!(Record::decode(&bytes, 9, 78), None, "another journal's");
        assert_eq!(
            Record::decode(&bytes[..bytes.len() - 1], 9, 77),
            None,
            "torn"
        );
        for at in [5, 30, 40, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            assert_eq!(Record::decode(&bad, 9, 77), None, "bit flipped at {at}");
        }
    }

    #[test]
    fn the_newer_valid_header_slot_wins() {
        let mut header = JournalHeader::fresh(16 << 20, 5, "uuid-a");
        let mut slots = vec![0u8; 2 * HEADER_SLOT_BYTES as usize];
        let write = |slots: &mut Vec<u8>, h: &JournalHeader| {
            let at = h.slot_offset_bytes() as usize;
            slots[at..at + HEADER_SLOT_BYTES as usize].copy_from_slice(&h.encode());
        };
        write(&mut slots, &header);
        header.generation += 1;
        header.tail_seq = 40;
        write(&mut slots, &header);
        assert_eq!(JournalHeader::decode_newest(&slots).unwrap(), header);
        // A torn newer slot: the older checkpoint stands.
        let at = header.slot_offset_bytes() as usize;
        slots[at + 20] ^= 0xff;
        assert_eq!(JournalHeader::decode_newest(&slots).unwrap().tail_seq, 1);
        slots[HEADER_SLOT_BYTES as usize - at + 20] ^= 0xff;
        let error = JournalHeader::decode_newest(&slots).unwrap_err();
        assert!(error.contains("checksum"), "{error}");
    }
}

//! The framing shared by superblock and bitmap records:
//! magic (8) | format version u32 | sequence u64 | body length u32 | crc32c u32 | body.
//! The CRC covers everything but itself. Lengths are padded to 512 bytes.

use thiserror::Error;

const HEADER_BYTES: usize = 28;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RecordError {
    #[error("no {kind} found (blank or foreign data: magic does not match)")]
    NoMagic { kind: &'static str },
    #[error(
        "{kind} format version {found} is not supported (this eraid reads version {supported})"
    )]
    Version {
        kind: &'static str,
        found: u32,
        supported: u32,
    },
    #[error("{kind} is damaged: body length {len} does not fit its slot")]
    Length { kind: &'static str, len: usize },
    #[error("{kind} is damaged: checksum mismatch (torn or corrupted write)")]
    Checksum { kind: &'static str },
    #[error("{kind} is damaged: {reason}")]
    Body { kind: &'static str, reason: String },
}

pub struct RecordKind {
    pub name: &'static str,
    pub magic: [u8; 8],
    pub version: u32,
}

/// Frames `body` and pads it to a multiple of 512 bytes.
pub fn encode(kind: &RecordKind, sequence: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len() + 512);
    out.extend_from_slice(&kind.magic);
    out.extend_from_slice(&kind.version.to_le_bytes());
    out.extend_from_slice(&sequence.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(body);
    let crc = checksum(&out);
    out[24..28].copy_from_slice(&crc.to_le_bytes());
    let padded = out.len().div_ceil(512) * 512;
    out.resize(padded, 0);
    out
}

/// Decodes one slot; returns (sequence, body).
pub fn decode<'a>(kind: &RecordKind, slot: &'a [u8]) -> Result<(u64, &'a [u8]), RecordError> {
    if slot.len() < HEADER_BYTES || slot[..8] != kind.magic {
        return Err(RecordError::NoMagic { kind: kind.name });
    }
    let u32_at = |at: usize| u32::from_le_bytes(slot[at..at + 4].try_into().expect("4 bytes"));
    let version = u32_at(8);
    if version != kind.version {
        return Err(RecordError::Version {
            kind: kind.name,
            found: version,
            supported: kind.version,
        });
    }
    let sequence = u64::from_le_bytes(slot[12..20].try_into().expect("8 bytes"));
    let len = u32_at(20) as usize;
    if HEADER_BYTES + len > slot.len() {
        return Err(RecordError::Length {
            kind: kind.name,
            len,
        });
    }
    let stored_crc = u32_at(24);
    let mut header = slot[..HEADER_BYTES].to_vec();
    header[24..28].fill(0);
    let crc = crc32c::crc32c_append(
        crc32c::crc32c(&header),
        &slot[HEADER_BYTES..HEADER_BYTES + len],
    );
    if crc != stored_crc {
        return Err(RecordError::Checksum { kind: kind.name });
    }
    Ok((sequence, &slot[HEADER_BYTES..HEADER_BYTES + len]))
}

fn checksum(framed_with_zero_crc: &[u8]) -> u32 {
    crc32c::crc32c(framed_with_zero_crc)
}

/// Picks the newest valid of two slots. Errors only if neither is valid,
/// with the first slot's error (the more informative for a blank member).
pub fn newest<'a>(
    kind: &RecordKind,
    slots: [&'a [u8]; 2],
) -> Result<(usize, u64, &'a [u8]), RecordError> {
    let a = decode(kind, slots[0]);
    let b = decode(kind, slots[1]);
    match (a, b) {
        (Ok((sa, ba)), Ok((sb, bb))) => Ok(if sb > sa { (1, sb, bb) } else { (0, sa, ba) }),
        (Ok((s, body)), Err(_)) => Ok((0, s, body)),
        (Err(_), Ok((s, body))) => Ok((1, s, body)),
        (Err(ea), Err(_)) => Err(ea),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: RecordKind = RecordKind {
        name: "test record",
        magic: *b"TESTREC\0",
        version: 1,
    };

    #[test]
    fn round_trip_and_damage_detection() {
        let bytes = encode(&KIND, 7, b"hello");
        assert_eq!(bytes.len() % 512, 0);
        assert_eq!(decode(&KIND, &bytes).unwrap(), (7, &b"hello"[..]));
        for flip in [0usize, 9, 13, 21, 25, 30] {
            let mut torn = bytes.clone();
            torn[flip] ^= 0x40;
            assert!(
                decode(&KIND, &torn).is_err(),
                "flip at {flip} went unnoticed"
            );
        }
    }

    #[test]
    fn newest_valid_slot_wins() {
        let old = encode(&KIND, 3, b"old");
        let new = encode(&KIND, 4, b"new");
        assert_eq!(newest(&KIND, [&old, &new]).unwrap().2, b"new");
        let mut torn = new.clone();
        torn[30] ^= 1;
        assert_eq!(newest(&KIND, [&old, &torn]).unwrap().2, b"old");
        assert!(matches!(
            newest(&KIND, [&[0u8; 512], &[0u8; 512]]),
            Err(RecordError::NoMagic { .. })
        ));
    }
}

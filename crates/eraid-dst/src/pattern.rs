//! Sector contents that name the write they came from, so a read can be
//! judged sector by sector: bytes 0..8 are the writing request's tag,
//! 8..16 the sector's index in the array, the rest a hash of both. Tag 0
//! is an all-zero sector (never written, zeroed or trimmed).

use eraid_core::geometry::SECTOR_BYTES;

pub type Tag = u64;
pub const ZERO_TAG: Tag = 0;

const SECTOR: usize = SECTOR_BYTES as usize;

/// The bytes request `tag` writes into array sector `sector`.
pub fn fill_sector(tag: Tag, sector: u64, out: &mut [u8]) {
    debug_assert_eq!(out.len(), SECTOR);
    if tag == ZERO_TAG {
        out.fill(0);
        return;
    }
    out[..8].copy_from_slice(&tag.to_le_bytes());
    out[8..16].copy_from_slice(&sector.to_le_bytes());
    let mut state = tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ sector.wrapping_add(1);
    for word in out[16..].chunks_mut(8) {
        // splitmix64: cheap, and different for every (tag, sector).
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        word.copy_from_slice(&z.to_le_bytes()[..word.len()]);
    }
}

/// A write's payload: `sectors` sectors from array sector `first`.
pub fn payload(tag: Tag, first: u64, sectors: u64) -> Vec<u8> {
    let mut data = vec![0u8; (sectors * SECTOR_BYTES) as usize];
    for (i, out) in data.chunks_mut(SECTOR).enumerate() {
        fill_sector(tag, first + i as u64, out);
    }
    data
}

/// What a sector read back holds: the tag of the write that produced it,
/// or None if it is no write's content for this sector (garbage, a write
/// landed at the wrong place, a wrong reconstruction).
pub fn identify(sector: u64, bytes: &[u8]) -> Option<Tag> {
    let tag = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let mut expected = [0u8; SECTOR];
    fill_sector(tag, sector, &mut expected);
    (expected[..] == bytes[..]).then_some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_name_their_write_and_place() {
        let data = payload(7, 100, 3);
        for i in 0..3 {
            let bytes = &data[i * SECTOR..(i + 1) * SECTOR];
            assert_eq!(identify(100 + i as u64, bytes), Some(7));
            // The same content at another sector is not that write's.
            assert_eq!(identify(99, bytes), None);
        }
        assert_eq!(identify(5, &[0u8; SECTOR]), Some(ZERO_TAG));
        let mut torn = data[..SECTOR].to_vec();
        torn[300] ^= 1;
        assert_eq!(identify(100, &torn), None);
    }
}

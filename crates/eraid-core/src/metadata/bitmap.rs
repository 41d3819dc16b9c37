//! The write-intent bitmap record: one bit per region of stripes; a set bit
//! means writes may have been in flight there, so parity must be resynced
//! after an unclean shutdown.

use super::record::{self, RecordError, RecordKind};
use super::{BITMAP_SLOTS_BYTES, BITMAP_SLOT_BYTES};

pub const BITMAP_KIND: RecordKind = RecordKind {
    name: "eraid write-intent bitmap",
    magic: *b"ERAIDBM\0",
    version: 1,
};

/// Regions one bitmap record can describe.
pub const BITMAP_REGIONS_MAX: u64 = ((BITMAP_SLOT_BYTES - 1024) * 8) as u64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntentBitmap {
    bits: Vec<u64>,
    region_count: u64,
}

impl IntentBitmap {
    pub fn new(region_count: u64) -> IntentBitmap {
        assert!(
            region_count <= BITMAP_REGIONS_MAX,
            "bitmap of {region_count} regions does not fit its slot"
        );
        IntentBitmap {
            bits: vec![0; region_count.div_ceil(64) as usize],
            region_count,
        }
    }

    pub fn region_count(&self) -> u64 {
        self.region_count
    }

    pub fn get(&self, region: u64) -> bool {
        assert!(region < self.region_count);
        self.bits[(region / 64) as usize] & (1 << (region % 64)) != 0
    }

    pub fn set(&mut self, region: u64, value: bool) {
        assert!(region < self.region_count);
        let word = &mut self.bits[(region / 64) as usize];
        if value {
            *word |= 1 << (region % 64);
        } else {
            *word &= !(1 << (region % 64));
        }
    }

    /// Set regions in order; skips empty words, so it costs O(regions/64 + set).
    pub fn dirty_regions(&self) -> impl Iterator<Item = u64> + '_ {
        self.bits.iter().enumerate().flat_map(|(index, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as u64;
                rest &= rest - 1;
                Some(index as u64 * 64 + bit)
            })
        })
    }

    /// Keeps only the regions set in both.
    pub fn intersect_with(&mut self, other: &IntentBitmap) {
        assert_eq!(self.region_count, other.region_count);
        for (a, b) in self.bits.iter_mut().zip(&other.bits) {
            *a &= b;
        }
    }

    pub fn union_with(&mut self, other: &IntentBitmap) {
        assert_eq!(self.region_count, other.region_count);
        for (a, b) in self.bits.iter_mut().zip(&other.bits) {
            *a |= b;
        }
    }

    pub fn encode(&self, sequence: u64) -> Vec<u8> {
        let mut body = Vec::with_capacity(8 + self.bits.len() * 8);
        body.extend_from_slice(&self.region_count.to_le_bytes());
        for word in &self.bits {
            body.extend_from_slice(&word.to_le_bytes());
        }
        record::encode(&BITMAP_KIND, sequence, &body)
    }

    pub fn slot_offset_bytes(sequence: u64) -> u64 {
        BITMAP_SLOTS_BYTES[(sequence % 2) as usize]
    }

    /// Newest valid bitmap in a metadata area, with its sequence number.
    pub fn decode_newest(
        metadata_area: &[u8],
        region_count: u64,
    ) -> Result<(u64, IntentBitmap), RecordError> {
        let slot = |i: usize| {
            let start = (BITMAP_SLOTS_BYTES[i] as usize).min(metadata_area.len());
            let end = (start + BITMAP_SLOT_BYTES).min(metadata_area.len());
            &metadata_area[start..end]
        };
        let (_, sequence, body) = record::newest(&BITMAP_KIND, [slot(0), slot(1)])?;
        let bad = |reason: String| RecordError::Body {
            kind: BITMAP_KIND.name,
            reason,
        };
        if body.len() < 8 {
            return Err(bad("too short".into()));
        }
        let stored_regions = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
        if region_count > BITMAP_REGIONS_MAX {
            return Err(bad(format!(
                "{region_count} regions do not fit a bitmap (at most {BITMAP_REGIONS_MAX})"
            )));
        }
        if stored_regions != region_count
            || body.len() != 8 + region_count.div_ceil(64) as usize * 8
        {
            return Err(bad(format!(
                "holds {stored_regions} regions, the array has {region_count}"
            )));
        }
        if sequence > super::validate::COUNTER_MAX {
            return Err(bad(format!("sequence {sequence} is out of range")));
        }
        let bits: Vec<u64> = body[8..]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .collect();
        // Bits past the last region would name regions that do not exist.
        let used_in_last = region_count % 64;
        if used_in_last != 0 && bits.last().is_some_and(|&w| w >> used_in_last != 0) {
            return Err(bad(format!("bits set past region {region_count}")));
        }
        Ok((sequence, IntentBitmap { bits, region_count }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_through_slots() {
        let mut bitmap = IntentBitmap::new(130);
        bitmap.set(0, true);
        bitmap.set(129, true);
        let mut area = vec![0u8; 1 << 20];
        let bytes = bitmap.encode(9);
        let at = IntentBitmap::slot_offset_bytes(9) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        let (sequence, decoded) = IntentBitmap::decode_newest(&area, 130).unwrap();
        assert_eq!(sequence, 9);
        assert_eq!(decoded.dirty_regions().collect::<Vec<_>>(), vec![0, 129]);
        assert!(IntentBitmap::decode_newest(&area, 131).is_err());
    }
}

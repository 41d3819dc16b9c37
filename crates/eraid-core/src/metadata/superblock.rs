//! The superblock: what every member records about the array and itself.
//! The body is JSON (self-describing, so later versions can add fields such
//! as a reshape checkpoint with defaults), framed by `record`.

use super::record::{self, RecordError, RecordKind};
use super::{SUPERBLOCK_SLOTS_BYTES, SUPERBLOCK_SLOT_BYTES};
use crate::geometry::Geometry;
use crate::rebuild::record::RebuildRecord;
use crate::reshape::record::{Placement, ReshapeRecord};
use serde::{Deserialize, Serialize};

pub const SUPERBLOCK_KIND: RecordKind = RecordKind {
    name: "eraid superblock",
    magic: *b"ERAIDSB\0",
    version: 1,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrayState {
    /// Shut down cleanly: parity matches data everywhere.
    Clean,
    /// In use or not shut down cleanly: the bitmap names regions to resync.
    Dirty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberState {
    /// In sync and used.
    Active,
    /// Failed or went missing while the array ran: its data is out of date
    /// and it needs a rebuild before it can be used again.
    Faulty,
    /// A replacement being reconstructed: its data is current below the
    /// rebuild record's checkpoint only.
    Rebuilding,
    /// A hot spare (in `Superblock::spares`): carries the array's metadata
    /// and takes over a member slot when one fails.
    Spare,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub uuid: String,
    pub state: MemberState,
    /// Where the member was last seen, for messages only.
    pub path_hint: String,
    /// Why the member was failed: the first error seen (bounded by
    /// `MEMBER_FAILURE_BYTES_MAX`), None while it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The member was absent when the array last started, and no data has
    /// been written since: its own copy (events at least this, less one)
    /// is still current. Cleared when it is back; the first data write
    /// without it records it `Faulty` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent_unwritten_since_events: Option<u64>,
}

/// The longest failure reason a superblock keeps per member (longer ones
/// are cut at a character boundary), so the record stays bounded.
pub const MEMBER_FAILURE_BYTES_MAX: usize = 200;

/// Cuts `reason` to at most `MEMBER_FAILURE_BYTES_MAX` bytes.
pub fn bounded_failure_reason(reason: &str) -> String {
    if reason.len() <= MEMBER_FAILURE_BYTES_MAX {
        return reason.to_string();
    }
    let mut end = MEMBER_FAILURE_BYTES_MAX;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_string()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Superblock {
    pub array_uuid: String,
    /// Bumped on every superblock write; the newest copy is authoritative.
    pub events: u64,
    pub state: ArrayState,
    pub geometry: Geometry,
    /// Which slot of `members` the member holding this copy is.
    pub this_member: usize,
    pub members: Vec<MemberRecord>,
    /// Write-intent bitmap granularity: stripes covered by one bit.
    pub bitmap_stripes_per_region: u64,
    /// Seconds since the Unix epoch at creation (given by the caller).
    pub created_unix_s: u64,
    /// RAID-0 placement after semi-rr or fastscale growth (None: round-robin).
    #[serde(default)]
    pub placement: Option<Placement>,
    /// The growth in progress, or the last one.
    #[serde(default)]
    pub reshape: Option<ReshapeRecord>,
    /// Hot spares; a spare's own copy has `this_member` = member count +
    /// its index here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spares: Vec<MemberRecord>,
    /// The rebuild in progress, or the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<RebuildRecord>,
}

impl Superblock {
    /// Encodes this copy for `this_member`.
    pub fn encode_for(&self, this_member: usize) -> Vec<u8> {
        let mut copy = self.clone();
        copy.this_member = this_member;
        let body = serde_json::to_vec(&copy).expect("superblock serialises");
        let bytes = record::encode(&SUPERBLOCK_KIND, self.events, &body);
        assert!(
            bytes.len() <= SUPERBLOCK_SLOT_BYTES,
            "superblock outgrew its slot"
        );
        bytes
    }

    /// Which slot the write carrying `events` goes to: alternate, so the
    /// previous copy survives a torn write.
    pub fn slot_offset_bytes(events: u64) -> u64 {
        SUPERBLOCK_SLOTS_BYTES[(events % 2) as usize]
    }

    /// Decodes the newest valid superblock from a member's metadata area.
    pub fn decode_newest(metadata_area: &[u8]) -> Result<Superblock, RecordError> {
        let slot = |i: usize| {
            let start = (SUPERBLOCK_SLOTS_BYTES[i] as usize).min(metadata_area.len());
            let end = (start + SUPERBLOCK_SLOT_BYTES).min(metadata_area.len());
            &metadata_area[start..end]
        };
        let (_, sequence, body) = record::newest(&SUPERBLOCK_KIND, [slot(0), slot(1)])?;
        let superblock: Superblock =
            serde_json::from_slice(body).map_err(|e| RecordError::Body {
                kind: SUPERBLOCK_KIND.name,
                reason: e.to_string(),
            })?;
        let bad = |reason: String| RecordError::Body {
            kind: SUPERBLOCK_KIND.name,
            reason,
        };
        if superblock.events != sequence {
            return Err(bad(format!(
                "events {} differ from record sequence {sequence}",
                superblock.events
            )));
        }
        let g = &superblock.geometry;
        let rebuilt = Geometry::new(
            g.level,
            g.layout,
            g.member_count,
            g.chunk_bytes,
            g.data_offset_bytes + g.member_data_bytes,
        )
        .map_err(|e| bad(format!("impossible geometry: {e}")))?;
        if rebuilt != *g {
            return Err(bad("geometry fields are inconsistent".into()));
        }
        if superblock.members.len() != g.member_count
            || superblock.this_member >= g.member_count + superblock.spares.len()
        {
            return Err(bad(format!(
                "member table has {} entries (and {} spares), this member is {}, geometry says {} members",
                superblock.members.len(),
                superblock.spares.len(),
                superblock.this_member,
                g.member_count
            )));
        }
        super::lifecycle::check_lifecycle_fields(&superblock).map_err(bad)?;
        if superblock.bitmap_stripes_per_region == 0 {
            return Err(bad("bitmap region of zero stripes".into()));
        }
        Ok(superblock)
    }

    /// The uuid of the member (or spare) holding this copy.
    pub fn this_member_uuid(&self) -> &str {
        match self.this_member.checked_sub(self.members.len()) {
            None => &self.members[self.this_member].uuid,
            Some(spare) => &self.spares[spare].uuid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Level, ParityLayout, METADATA_BYTES};

    pub fn sample() -> Superblock {
        let geometry = Geometry::new(
            Level::Raid5,
            ParityLayout::LeftSymmetric,
            3,
            64 << 10,
            64 << 20,
        )
        .unwrap();
        Superblock {
            array_uuid: "a".into(),
            events: 5,
            state: ArrayState::Clean,
            geometry,
            this_member: 0,
            members: (0..3)
                .map(|i| MemberRecord {
                    uuid: format!("m{i}"),
                    state: MemberState::Active,
                    path_hint: format!("d{i}"),
                    failure: None,
                    absent_unwritten_since_events: None,
                })
                .collect(),
            bitmap_stripes_per_region: 512,
            created_unix_s: 0,
            placement: None,
            reshape: None,
            spares: Vec::new(),
            rebuild: None,
        }
    }

    fn area_with(writes: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut area = vec![0u8; METADATA_BYTES as usize];
        for (offset, bytes) in writes {
            area[*offset as usize..*offset as usize + bytes.len()].copy_from_slice(bytes);
        }
        area
    }

    #[test]
    fn newest_copy_wins_and_torn_write_falls_back() {
        let mut sb = sample();
        let first = (Superblock::slot_offset_bytes(sb.events), sb.encode_for(1));
        sb.events += 1;
        sb.state = ArrayState::Dirty;
        let second = (Superblock::slot_offset_bytes(sb.events), sb.encode_for(1));
        assert_ne!(first.0, second.0);
        let decoded =
            Superblock::decode_newest(&area_with(&[first.clone(), second.clone()])).unwrap();
        assert_eq!(
            (decoded.events, decoded.state, decoded.this_member),
            (6, ArrayState::Dirty, 1)
        );
        let mut torn = second.clone();
        let half = torn.1.len() / 2;
        torn.1[half..].fill(0);
        let decoded = Superblock::decode_newest(&area_with(&[first, torn])).unwrap();
        assert_eq!(decoded.events, 5);
    }

    #[test]
    fn blank_and_inconsistent_superblocks_are_refused() {
        assert!(matches!(
            Superblock::decode_newest(&vec![0u8; 1 << 20]),
            Err(RecordError::NoMagic { .. })
        ));
        let mut sb = sample();
        sb.members.pop();
        let area = area_with(&[(Superblock::slot_offset_bytes(sb.events), sb.encode_for(0))]);
        assert!(matches!(
            Superblock::decode_newest(&area),
            Err(RecordError::Body { .. })
        ));
        let mut sb = sample();
        sb.geometry.member_data_bytes += 4096;
        let area = area_with(&[(Superblock::slot_offset_bytes(sb.events), sb.encode_for(0))]);
        assert!(Superblock::decode_newest(&area).is_err());
        // A short area (truncated member) is an error, not a panic.
        assert!(Superblock::decode_newest(&[1, 2, 3]).is_err());
    }
}

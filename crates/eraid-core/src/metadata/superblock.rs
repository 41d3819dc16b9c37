//! The superblock: what every member records about the array and itself.
//! The body is JSON (self-describing, so later versions can add fields such
//! as a reshape checkpoint with defaults), framed by `record`.

use super::record::{self, RecordError, RecordKind};
use super::{SUPERBLOCK_SLOTS_BYTES, SUPERBLOCK_SLOT_BYTES};
use crate::geometry::Geometry;
use crate::growth::record::{Placement, ReshapeRecord};
use crate::rebuild::record::RebuildRecord;
use serde::{Deserialize, Serialize};

pub use super::text::{
    bounded_failure_reason, bounded_path_hint, bounded_text_head, bounded_text_tail, is_valid_uuid,
    MEMBER_FAILURE_BYTES_MAX, PATH_HINT_BYTES_MAX, PAUSE_REASON_BYTES_MAX, UUID_BYTES_MAX,
};

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
    /// The member left without losing a write (absent at a start, or
    /// failed by the operator), when the array's events were this: its own
    /// copy (events at least this, less one) holds current data except
    /// where the write-intent bitmap marks writes made since, and those
    /// marks are kept until it is back. It may be re-added by copying only
    /// the marked regions. None after an I/O failure (a write may be lost
    /// on it: it needs a full rebuild) and for active members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub re_add_from_events: Option<u64>,
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
    /// A CRS array grown by scale-crs or epu: its layout's shape (None:
    /// the usual rotated CRS layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crs_scaled: Option<crate::growth::scale_crs::CrsScaledShape>,
    /// The growths of this CRS array before `crs_scaled`, oldest first
    /// (empty: grown at most once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crs_grown_before: Vec<crate::growth::scale_crs::CrsScaledShape>,
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
    /// Set only on the copy a replaced member keeps: it was retired by a
    /// replace and must never be assembled as a member again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired: Option<Retirement>,
    /// The journal made at create (`create --journal`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalRecord>,
    /// The write-back cache chosen at create (None: `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheRecord>,
    /// Read errors per member or spare (by uuid), recorded at every
    /// superblock write (a clean stop, each checkpoint, each member
    /// change) and counted on from there when the array opens again, as
    /// Linux MD keeps `cnt_corrected_read` in its superblock. Members
    /// without any are left out; older superblocks have none; a copy that
    /// would not fit its slot with them leaves them out (`encode_for`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub read_errors: std::collections::BTreeMap<String, ReadErrorCounts>,
}

/// A member's read errors: repaired, and not repaired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadErrorCounts {
    pub corrected: u64,
    pub failed: u64,
}

/// The array's journal: `serve` opens it by `path_hint` (or the path it is
/// given) and checks its header's id, size and array UUID against this.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalRecord {
    pub journal_id: u64,
    pub size_bytes: u64,
    pub path_hint: String,
    /// The journal failed while serving (the reason): it holds nothing
    /// newer than the members and is never replayed again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// The write-back cache's settings recorded at create; `serve` may
/// override them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheRecord {
    pub policy: String,
    pub size_bytes: u64,
    /// The contiguity transform's rule (msc-ct), from `create` or `eraid
    /// tune`; None in superblocks written before it was recorded (the
    /// cache's default rule applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stride: Option<super::stride_record::StrideRecord>,
}

/// Why a member's copy says it is retired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retirement {
    /// The member that took its slot (uuid and where it was last seen).
    pub replaced_by_uuid: String,
    pub replaced_by_path: String,
}

impl Superblock {
    /// A CRS array's `detail --json` fields on its growths: `crs_matrix`,
    /// the coding matrix now (Jerasure's at creation, then the last
    /// growth's choice), and `crs_growths`, every scale-crs or epu growth,
    /// oldest first.
    pub fn crs_growths_json(&self) -> [(&'static str, serde_json::Value); 2] {
        let growths = self.crs_growths();
        let matrix = growths.last().map_or("jerasure", |g| g.matrix.name());
        let list: Vec<serde_json::Value> = growths
            .iter()
            .map(|g| {
                serde_json::json!({
                    "data_members_before": g.old_data_members,
                    "data_members_added": g.added_members,
                    "matrix": g.matrix.name(),
                })
            })
            .collect();
        [("crs_matrix", matrix.into()), ("crs_growths", list.into())]
    }

    /// Every scale-crs or epu growth of this CRS array, oldest first (the
    /// last one may be running).
    pub fn crs_growths(&self) -> Vec<crate::growth::scale_crs::CrsScaledShape> {
        self.crs_grown_before
            .iter()
            .chain(self.crs_scaled.iter())
            .copied()
            .collect()
    }

    /// Encodes this copy for `this_member`. Free text (path hints, failure
    /// and pause reasons) is bounded on the way out, so with at most
    /// `MEMBER_COUNT_MAX` members and valid UUIDs the record always fits
    /// its slot (`tests::the_largest_superblock_fits_its_slot`).
    pub fn encode_for(&self, this_member: usize) -> Vec<u8> {
        let mut copy = self.clone();
        copy.this_member = this_member;
        copy.bound_free_text();
        let mut body = serde_json::to_vec(&copy).expect("superblock serialises");
        if record::encode(&SUPERBLOCK_KIND, self.events, &body).len() > SUPERBLOCK_SLOT_BYTES {
            // The read-error counts are the one optional field: with the
            // longest texts on the most members they are left out, so
            // what fitted before they existed still fits.
            copy.read_errors.clear();
            body = serde_json::to_vec(&copy).expect("superblock serialises");
        }
        let bytes = record::encode(&SUPERBLOCK_KIND, self.events, &body);
        assert!(
            bytes.len() <= SUPERBLOCK_SLOT_BYTES,
            "superblock outgrew its slot"
        );
        bytes
    }

    /// Cuts every free-text field to its bound (they are for messages only).
    pub fn bound_free_text(&mut self) {
        for member in self.members.iter_mut().chain(self.spares.iter_mut()) {
            member.path_hint = bounded_path_hint(&member.path_hint);
            if let Some(failure) = &mut member.failure {
                *failure = bounded_failure_reason(failure);
            }
        }
        if let Some(retired) = &mut self.retired {
            retired.replaced_by_path = bounded_path_hint(&retired.replaced_by_path);
        }
        if let Some(journal) = &mut self.journal {
            journal.path_hint = bounded_path_hint(&journal.path_hint);
            if let Some(failed) = &mut journal.failed {
                *failed = bounded_failure_reason(failed);
            }
        }
        if let Some(cache) = &mut self.cache {
            cache.policy = bounded_text_head(&cache.policy, 16);
            if let Some(note) = cache.stride.as_mut().and_then(|s| s.note.as_mut()) {
                *note = bounded_text_head(note, super::stride_record::STRIDE_NOTE_BYTES_MAX);
            }
        }
        if let Some(reason) = self.reshape.as_mut().and_then(|r| r.pause_reason.as_mut()) {
            *reason = bounded_text_head(reason, PAUSE_REASON_BYTES_MAX);
        }
        if let Some(reason) = self.rebuild.as_mut().and_then(|r| r.reason.as_mut()) {
            *reason = bounded_text_head(reason, PAUSE_REASON_BYTES_MAX);
        }
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
        let mut superblock = superblock;
        super::validate::superblock(&mut superblock).map_err(bad)?;
        super::lifecycle::check_lifecycle_fields(&superblock).map_err(bad)?;
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
                    re_add_from_events: None,
                })
                .collect(),
            bitmap_stripes_per_region: 512,
            created_unix_s: 0,
            placement: None,
            crs_scaled: None,
            crs_grown_before: Vec::new(),
            reshape: None,
            spares: Vec::new(),
            rebuild: None,
            retired: None,
            journal: None,
            cache: None,
            read_errors: Default::default(),
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

    /// Read-error counts were added later: a superblock body without them
    /// decodes (with none), and they round-trip.
    #[test]
    fn read_error_counts_are_optional_and_round_trip() {
        let mut sb = sample();
        let mut body = serde_json::to_value(&sb).unwrap();
        assert!(
            body.get("read_errors").is_none(),
            "none recorded, none written"
        );
        body.as_object_mut().unwrap().remove("read_errors");
        let old: Superblock = serde_json::from_value(body).unwrap();
        assert!(old.read_errors.is_empty());
        let counts = ReadErrorCounts {
            corrected: 3,
            failed: 1,
        };
        sb.read_errors.insert(sb.members[1].uuid.clone(), counts);
        let area = area_with(&[(Superblock::slot_offset_bytes(sb.events), sb.encode_for(1))]);
        let decoded = Superblock::decode_newest(&area).unwrap();
        assert_eq!(decoded.read_errors.get(&sb.members[1].uuid), Some(&counts));
    }

    /// The most a superblock can hold: `MEMBER_COUNT_MAX` members with the
    /// longest UUIDs, paths and failure reasons (all escaping to six JSON
    /// bytes a character), and a growth record with the longest history and
    /// pause reason. Every copy of it fits the slot and decodes back.
    #[test]
    fn the_largest_superblock_fits_its_slot() {
        use crate::geometry::{Level, ParityLayout, MEMBER_COUNT_MAX};
        use crate::growth::config::{ReshapeConfig, ReshapeStrategy};
        use crate::growth::fastscale::{GrowthStrategy, ScalingHistory};
        use crate::growth::record::{ReshapeCounters, ReshapeState};
        let chunk = 4096;
        let member_chunks = 1 << 20;
        let geometry = |members| {
            Geometry::new(
                Level::Raid0,
                ParityLayout::None,
                members,
                chunk,
                METADATA_BYTES + member_chunks * chunk,
            )
            .unwrap()
        };
        let new = geometry(MEMBER_COUNT_MAX);
        let old = geometry(MEMBER_COUNT_MAX - 1);
        let history = |disks: usize| {
            ScalingHistory::with_additions(2, member_chunks, &vec![1; disks - 2]).unwrap()
        };
        let hostile = "\u{1}\"\\".repeat(10_000);
        let record = ReshapeRecord {
            config: ReshapeConfig::with_strategy(ReshapeStrategy::FastScale),
            old_geometry: old,
            old_placement: Some(Placement {
                strategy: GrowthStrategy::FastScale,
                history: history(MEMBER_COUNT_MAX - 1),
            }),
            checkpoint_chunk: u64::MAX,
            total_chunks: u64::MAX,
            old_capacity_chunks: u64::MAX,
            backup: None,
            state: ReshapeState::Paused,
            pause_reason: Some(hostile.clone()),
            held: true,
            counters: ReshapeCounters {
                moved_bytes: u64::MAX,
                redistribution_reads: u64::MAX,
                redistribution_writes: u64::MAX,
                metadata_writes: u64::MAX,
                backup_windows: u64::MAX,
                valve_periods: u64::MAX,
                valve_closed_periods: u64::MAX,
                scaling_read_blocks: u64::MAX,
                scaling_write_blocks: u64::MAX,
                zeroed_bytes: u64::MAX,
                rmw_units: u64::MAX,
                rcw_units: u64::MAX,
                overlap_blocks: u64::MAX,
            },
        };
        let sb = Superblock {
            array_uuid: "a".repeat(UUID_BYTES_MAX),
            events: u64::MAX,
            state: ArrayState::Dirty,
            geometry: new,
            this_member: 0,
            members: (0..MEMBER_COUNT_MAX)
                .map(|i| MemberRecord {
                    uuid: format!("{i:0>width$}", width = UUID_BYTES_MAX),
                    state: MemberState::Faulty,
                    path_hint: format!("/{hostile}/d{i}"),
                    failure: Some(bounded_failure_reason(&hostile)),
                    absent_unwritten_since_events: Some(u64::MAX),
                    re_add_from_events: Some(u64::MAX),
                })
                .collect(),
            bitmap_stripes_per_region: u64::MAX,
            created_unix_s: u64::MAX,
            placement: Some(Placement {
                strategy: GrowthStrategy::FastScale,
                history: history(MEMBER_COUNT_MAX),
            }),
            crs_scaled: None,
            crs_grown_before: Vec::new(),
            reshape: Some(record),
            spares: (0..crate::metadata::SPARES_MAX)
                .map(|i| MemberRecord {
                    uuid: format!("s{i:0>width$}", width = UUID_BYTES_MAX - 1),
                    state: MemberState::Spare,
                    path_hint: format!("/{hostile}/s{i}"),
                    failure: Some(bounded_failure_reason(&hostile)),
                    absent_unwritten_since_events: Some(u64::MAX),
                    re_add_from_events: Some(u64::MAX),
                })
                .collect(),
            rebuild: Some(crate::rebuild::record::RebuildRecord {
                growth_checkpoint_chunk: Some(u64::MAX),
                config: Default::default(),
                kind: Default::default(),
                targets: (0..MEMBER_COUNT_MAX).collect(),
                checkpoint_stripe: u64::MAX,
                total_stripes: u64::MAX,
                state: crate::rebuild::record::RebuildState::Paused,
                held: true,
                reason: Some(hostile.clone()),
                counters: Default::default(),
                replace: Some(crate::rebuild::record::ReplaceRecord {
                    source: usize::MAX,
                    source_uuid: "r".repeat(UUID_BYTES_MAX),
                    replacement: "n".repeat(UUID_BYTES_MAX),
                }),
                // The largest map: every unit's bit set.
                rebuilt_units: Some(crate::rebuild::record::RebuiltUnits::encode(
                    u64::MAX,
                    &vec![0xff; (crate::rebuild::record::RECORDED_UNITS_MAX / 8) as usize],
                )),
            }),
            retired: Some(Retirement {
                replaced_by_uuid: "n".repeat(UUID_BYTES_MAX),
                replaced_by_path: format!("/{hostile}/new"),
            }),
            journal: Some(JournalRecord {
                journal_id: u64::MAX,
                size_bytes: u64::MAX,
                path_hint: format!("/{hostile}/journal"),
                failed: Some(hostile.clone()),
            }),
            cache: Some(CacheRecord {
                policy: hostile.clone(),
                size_bytes: u64::MAX,
                stride: Some(super::super::stride_record::StrideRecord {
                    s_r_max: u32::MAX,
                    s_r_except: vec![
                        (u32::MAX, u32::MAX);
                        super::super::stride_record::STRIDE_EXCEPTIONS_MAX
                    ],
                    s_w_max: u32::MAX,
                    s_w_except: vec![
                        (u32::MAX, u32::MAX);
                        super::super::stride_record::STRIDE_EXCEPTIONS_MAX
                    ],
                    source: super::super::stride_record::StrideSource::Measured,
                    note: Some(hostile.clone()),
                }),
            }),
            // Every member and spare with the largest counts (left out of
            // a copy that would not fit with them).
            read_errors: (0..MEMBER_COUNT_MAX)
                .map(|i| format!("{i:0>width$}", width = UUID_BYTES_MAX))
                .chain(
                    (0..crate::metadata::SPARES_MAX)
                        .map(|i| format!("s{i:0>width$}", width = UUID_BYTES_MAX - 1)),
                )
                .map(|uuid| {
                    let most = ReadErrorCounts {
                        corrected: u64::MAX,
                        failed: u64::MAX,
                    };
                    (uuid, most)
                })
                .collect(),
        };
        for member in [
            0,
            MEMBER_COUNT_MAX - 1,
            MEMBER_COUNT_MAX + crate::metadata::SPARES_MAX - 1,
        ] {
            let bytes = sb.encode_for(member);
            assert!(bytes.len() <= crate::metadata::SUPERBLOCK_SLOT_BYTES);
            let (_, body) = record::decode(&SUPERBLOCK_KIND, &bytes).unwrap();
            let decoded: Superblock = serde_json::from_slice(body).unwrap();
            assert_eq!(decoded.spares.len(), crate::metadata::SPARES_MAX);
            if member >= MEMBER_COUNT_MAX {
                // A spare's own copy: its record is among the spares.
                let spare = &decoded.spares[member - MEMBER_COUNT_MAX];
                assert!(spare
                    .path_hint
                    .ends_with(&format!("/s{}", member - MEMBER_COUNT_MAX)));
                continue;
            }
            // Paths keep their end (the file name), reasons their start.
            assert!(decoded.members[member]
                .path_hint
                .ends_with(&format!("/d{member}")));
            assert!(decoded.members[member].path_hint.starts_with('\u{2026}'));
            assert!(hostile.starts_with(decoded.members[member].failure.as_deref().unwrap()));
            assert_eq!(decoded.members.len(), MEMBER_COUNT_MAX);
        }
    }

    #[test]
    fn bounded_text_keeps_short_text_and_cuts_at_character_boundaries() {
        assert_eq!(bounded_path_hint("/dev/sda"), "/dev/sda");
        assert_eq!(bounded_failure_reason("EIO"), "EIO");
        let wide = "\u{e9}".repeat(1000);
        let head = bounded_text_head(&wide, 11);
        assert_eq!(head, "\u{e9}".repeat(5));
        let tail = bounded_text_tail(&wide, 11);
        assert_eq!(tail, format!("\u{2026}{}", "\u{e9}".repeat(4)));
        let escaped = serde_json::to_string(&bounded_path_hint(&"\n".repeat(1000))).unwrap();
        assert!(
            escaped.len() - 2 <= PATH_HINT_BYTES_MAX,
            "{}",
            escaped.len()
        );
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

#[cfg(test)]
mod crs_tests {
    use super::tests::sample;
    use super::*;
    use crate::geometry::{crs_default_chunk_bytes, Level, ParityLayout, METADATA_BYTES};

    fn crs_sample(parity_members: usize, w: usize, members: usize) -> Superblock {
        let mut sb = sample();
        sb.geometry = Geometry::new(
            Level::Crs { parity_members, w },
            ParityLayout::LeftSymmetric,
            members,
            crs_default_chunk_bytes(w),
            64 << 20,
        )
        .unwrap();
        sb.members = (0..members)
            .map(|i| MemberRecord {
                uuid: format!("00000000-0000-4000-8000-00000000000{i}"),
                ..sb.members[0].clone()
            })
            .collect();
        sb.array_uuid = "00000000-0000-4000-8000-0000000000aa".into();
        sb
    }

    /// Frames `sb` as its JSON is, with `edit` applied to the geometry.
    fn area_with_geometry_edit(sb: &Superblock, edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
        let mut value = serde_json::to_value(sb).unwrap();
        edit(&mut value["geometry"]);
        let body = serde_json::to_vec(&value).unwrap();
        let bytes = record::encode(&SUPERBLOCK_KIND, sb.events, &body);
        let mut area = vec![0u8; METADATA_BYTES as usize];
        let at = Superblock::slot_offset_bytes(sb.events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        area
    }

    fn decode_error(area: &[u8]) -> String {
        match Superblock::decode_newest(area) {
            Ok(_) => panic!("a bad CRS geometry decoded"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_crs_superblock_round_trips_with_its_shape() {
        let sb = crs_sample(2, 3, 6);
        let area = area_with_geometry_edit(&sb, |_| {});
        let decoded = Superblock::decode_newest(&area).unwrap();
        assert_eq!(
            decoded.geometry.level,
            Level::Crs {
                parity_members: 2,
                w: 3
            }
        );
        assert_eq!(decoded.geometry.data_per_stripe(), 4);
        let json = serde_json::to_value(&sb).unwrap();
        assert_eq!(json["geometry"]["level"]["crs"]["parity_members"], 2);
        assert_eq!(json["geometry"]["level"]["crs"]["w"], 3);
    }

    /// Each bad m, w or chunk is refused at decode, naming what is wrong.
    #[test]
    fn bad_crs_shapes_are_refused_at_decode_with_the_reason() {
        let sb = crs_sample(2, 3, 6);
        type Edit = Box<dyn Fn(&mut serde_json::Value)>;
        let cases: Vec<(&str, Edit)> = vec![
            (
                "1 to 16 parity members, got 0",
                Box::new(|g| g["level"]["crs"]["parity_members"] = 0.into()),
            ),
            (
                "needs at least 7 members, got 6",
                Box::new(|g| g["level"]["crs"]["parity_members"] = 6.into()),
            ),
            (
                "w = 9 is out of range",
                Box::new(|g| g["level"]["crs"]["w"] = 9.into()),
            ),
            (
                "w = 1 is out of range",
                Box::new(|g| g["level"]["crs"]["w"] = 1.into()),
            ),
            // 6 members need 2^w >= 6: w = 2 has room for 4.
            (
                "w = 2 has room for 4; use w >= 3",
                Box::new(|g| g["level"]["crs"]["w"] = 2.into()),
            ),
            // 64 KiB is not 3 packets of a power of two.
            (
                "is not w = 3 packets",
                Box::new(|g| g["chunk_bytes"] = (64u64 << 10).into()),
            ),
            (
                "missing field `w`",
                Box::new(|g| g["level"] = serde_json::json!({"crs": {"parity_members": 2}})),
            ),
            (
                "layout left-asymmetric does not apply",
                Box::new(|g| g["layout"] = "left-asymmetric".into()),
            ),
        ];
        for (expected, edit) in cases {
            let error = decode_error(&area_with_geometry_edit(&sb, edit));
            assert!(
                error.contains(expected),
                "expected {expected:?} in {error:?}"
            );
        }
    }

    /// A grown CRS layout's shape must describe the geometry: k + t data
    /// members, m parity, on a CRS array; anything else is refused at
    /// decode, naming the record.
    #[test]
    fn a_grown_crs_shape_must_describe_the_array() {
        use crate::growth::scale_crs::CrsMatrix;
        use crate::growth::scale_crs::CrsScaledShape;
        let shape = |k, m, t| CrsScaledShape {
            old_data_members: k,
            parity_members: m,
            added_members: t,
            matrix: CrsMatrix::Jerasure,
        };
        let mut sb = crs_sample(3, 4, 7);
        sb.crs_scaled = Some(shape(3, 3, 1));
        let decoded = Superblock::decode_newest(&area_with_geometry_edit(&sb, |_| {})).unwrap();
        assert_eq!(decoded.crs_scaled, Some(shape(3, 3, 1)));
        // A superblock from before the matrix choice: Jerasure's.
        let body = serde_json::to_vec(&serde_json::to_value(&sb).unwrap()).unwrap();
        let old_body = String::from_utf8(body)
            .unwrap()
            .replace(",\"matrix\":\"jerasure\"", "");
        assert!(!old_body.contains("matrix"), "{old_body}");
        let bytes = record::encode(&SUPERBLOCK_KIND, sb.events, old_body.as_bytes());
        let mut area = vec![0u8; METADATA_BYTES as usize];
        let at = Superblock::slot_offset_bytes(sb.events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        let decoded = Superblock::decode_newest(&area).unwrap();
        assert_eq!(decoded.crs_scaled, Some(shape(3, 3, 1)));
        // The optimised matrix, and two growths (2 -> 3 -> 4 data members).
        let optimized = CrsScaledShape {
            matrix: CrsMatrix::Optimized,
            ..shape(3, 3, 1)
        };
        sb.crs_scaled = Some(optimized);
        sb.crs_grown_before = vec![CrsScaledShape {
            matrix: CrsMatrix::Optimized,
            ..shape(2, 3, 1)
        }];
        let decoded = Superblock::decode_newest(&area_with_geometry_edit(&sb, |_| {})).unwrap();
        assert_eq!(decoded.crs_growths(), [sb.crs_grown_before[0], optimized]);
        for (before, last) in [
            (vec![shape(2, 3, 2)], Some(shape(3, 3, 1))),
            (vec![shape(1, 3, 1)], Some(shape(3, 3, 1))),
            (vec![shape(3, 3, 1)], None),
        ] {
            sb.crs_grown_before = before;
            sb.crs_scaled = last;
            let error = decode_error(&area_with_geometry_edit(&sb, |_| {}));
            assert!(error.contains("grown CRS layout"), "{error}");
        }
        sb.crs_grown_before.clear();
        for bad in [
            shape(0, 3, 4),
            shape(3, 2, 1),
            shape(3, 3, 2),
            shape(4, 3, 0),
        ] {
            sb.crs_scaled = Some(bad);
            let error = decode_error(&area_with_geometry_edit(&sb, |_| {}));
            assert!(error.contains("grown CRS layout"), "{bad:?}: {error}");
        }
        let mut raid = sample();
        raid.crs_scaled = Some(shape(3, 1, 1));
        let error = decode_error(&area_with_geometry_edit(&raid, |_| {}));
        assert!(error.contains("not CRS"), "{error}");
    }
}

#[cfg(test)]
mod stride_tests {
    use super::tests::sample;
    use super::*;
    use crate::geometry::METADATA_BYTES;
    use crate::metadata::stride_record::{StrideRecord, StrideSource};

    fn cached_sample(stride: Option<StrideRecord>) -> Superblock {
        let mut sb = sample();
        sb.array_uuid = "00000000-0000-4000-8000-0000000000aa".into();
        for (i, member) in sb.members.iter_mut().enumerate() {
            member.uuid = format!("00000000-0000-4000-8000-00000000000{i}");
        }
        sb.cache = Some(CacheRecord {
            policy: "msc-ct".into(),
            size_bytes: 64 << 20,
            stride,
        });
        sb
    }

    /// Frames `body` (a superblock's JSON) as a member's metadata area.
    fn area_of(body: &serde_json::Value, events: u64) -> Vec<u8> {
        let bytes = record::encode(&SUPERBLOCK_KIND, events, &serde_json::to_vec(body).unwrap());
        let mut area = vec![0u8; METADATA_BYTES as usize];
        let at = Superblock::slot_offset_bytes(events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        area
    }

    #[test]
    fn a_stride_record_round_trips() {
        let stride = StrideRecord {
            s_r_max: 13,
            s_r_except: vec![(7, 11)],
            s_w_max: 7,
            s_w_except: Vec::new(),
            source: StrideSource::Measured,
            note: Some("/dev/sdb at 2026-11-27".into()),
        };
        let sb = cached_sample(Some(stride.clone()));
        let bytes = sb.encode_for(0);
        let mut area = vec![0u8; METADATA_BYTES as usize];
        let at = Superblock::slot_offset_bytes(sb.events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        let decoded = Superblock::decode_newest(&area).unwrap();
        assert_eq!(decoded.cache.unwrap().stride, Some(stride));
    }

    /// A superblock written before the rule was recorded (its cache object
    /// has only policy and size) still loads, with no rule.
    #[test]
    fn an_old_cache_record_without_the_rule_loads() {
        let sb = cached_sample(None);
        let mut body = serde_json::to_value(&sb).unwrap();
        assert_eq!(
            body["cache"],
            serde_json::json!({ "policy": "msc-ct", "size_bytes": 64u64 << 20 })
        );
        body["cache"] = serde_json::json!({ "policy": "msc-ct", "size_bytes": 64u64 << 20 });
        let decoded = Superblock::decode_newest(&area_of(&body, sb.events)).unwrap();
        let cache = decoded.cache.unwrap();
        assert_eq!((cache.policy.as_str(), cache.stride), ("msc-ct", None));
    }

    #[test]
    fn a_bad_stride_record_is_refused_at_decode() {
        let sb = cached_sample(Some(StrideRecord::default_rule(None)));
        for (edit, expected) in [
            (
                serde_json::json!({ "s_r_max": 0 }),
                "cache stride rule: s_r_max 0 is outside",
            ),
            (
                serde_json::json!({ "s_w_except": [[9, 3]] }),
                "cache stride rule: s_w exception range 9..=3",
            ),
            (
                serde_json::json!({ "source": "guessed" }),
                "unknown variant `guessed`",
            ),
        ] {
            let mut body = serde_json::to_value(&sb).unwrap();
            for (key, value) in edit.as_object().unwrap() {
                body["cache"]["stride"][key] = value.clone();
            }
            let error = Superblock::decode_newest(&area_of(&body, sb.events))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{expected:?} in {error:?}");
        }
    }
}

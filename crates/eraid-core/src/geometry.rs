//! What an array is made of: level, parity layout, chunk size, member count
//! and member size, and the numbers derived from them.

use serde::{Deserialize, Serialize};

/// Bytes reserved at the start of every member for superblocks and bitmap.
pub const METADATA_BYTES: u64 = 1 << 20;
/// Smallest unit of user I/O.
pub const SECTOR_BYTES: u64 = 512;
pub const CHUNK_BYTES_MIN: u64 = 4 << 10;
pub const CHUNK_BYTES_MAX: u64 = 4 << 20;
pub const CHUNK_BYTES_DEFAULT: u64 = 64 << 10;
/// Most members one array may have (keeps the superblock small).
pub const MEMBER_COUNT_MAX: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Level {
    #[serde(rename = "0")]
    Raid0,
    #[serde(rename = "5")]
    Raid5,
    #[serde(rename = "6")]
    Raid6,
    #[serde(rename = "10")]
    Raid10,
    /// Cauchy Reed-Solomon: `parity_members` (m) parity members and every
    /// chunk cut into `w` packets (a bit-matrix code over GF(2^w)); the
    /// other members hold data.
    #[serde(rename = "crs")]
    Crs { parity_members: usize, w: usize },
}

/// Most parity members a CRS array may have: beyond it the bit-matrix
/// inversions of a degraded stripe grow large for no practical gain.
pub const CRS_PARITY_MAX: usize = 16;
pub const CRS_W_MIN: usize = 2;
pub const CRS_W_MAX: usize = 8;

impl Level {
    pub fn parse(text: &str) -> Result<Level, GeometryError> {
        match text.trim().to_ascii_lowercase().trim_start_matches("raid") {
            "0" => Ok(Level::Raid0),
            "5" => Ok(Level::Raid5),
            "6" => Ok(Level::Raid6),
            "10" => Ok(Level::Raid10),
            "crs" => Err(GeometryError::CrsNeedsShape),
            _ => Err(GeometryError::UnknownLevel(text.to_string())),
        }
    }

    /// The RAID level's number; CRS has none (see `name`).
    pub fn number(self) -> Option<u32> {
        match self {
            Level::Raid0 => Some(0),
            Level::Raid5 => Some(5),
            Level::Raid6 => Some(6),
            Level::Raid10 => Some(10),
            Level::Crs { .. } => None,
        }
    }

    /// How messages name the level: "RAID-5", "CRS (m = 2, w = 3)".
    pub fn name(self) -> String {
        match (self, self.number()) {
            (Level::Crs { parity_members, w }, _) => format!("CRS (m = {parity_members}, w = {w})"),
            (_, Some(number)) => format!("RAID-{number}"),
            (_, None) => unreachable!("every RAID level has a number"),
        }
    }

    /// What `detail --json` shows as `level`: the RAID number, or "crs".
    pub fn json_value(self) -> serde_json::Value {
        match self.number() {
            Some(number) => number.into(),
            None => "crs".into(),
        }
    }

    pub fn member_count_min(self) -> usize {
        match self {
            Level::Raid0 => 2,
            Level::Raid5 => 3,
            Level::Raid6 => 4,
            Level::Raid10 => 2,
            // At least one data member beside the parity members.
            Level::Crs { parity_members, .. } => parity_members + 1,
        }
    }

    /// How many members may be missing while every byte stays readable
    /// (for RAID-10: per mirror pair).
    pub fn redundancy(self) -> usize {
        match self {
            Level::Raid0 => 0,
            Level::Raid5 | Level::Raid10 => 1,
            Level::Raid6 => 2,
            Level::Crs { parity_members, .. } => parity_members,
        }
    }

    /// Whether a stripe operation must span whole chunks: a CRS parity
    /// packet mixes every packet of the data chunks, so no byte range of
    /// a parity chunk depends on the same range of the data alone.
    pub fn whole_chunk_stripes(self) -> bool {
        matches!(self, Level::Crs { .. })
    }
}

/// Where parity goes from stripe to stripe (Linux MD's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParityLayout {
    /// The ALV paper's Fig. 1: parity walks from the last member to the
    /// first; data fills the other members in order.
    LeftAsymmetric,
    /// MD's default: as left-asymmetric, but data starts right after parity.
    LeftSymmetric,
    RightAsymmetric,
    RightSymmetric,
    /// RAID-0 and RAID-10 have no parity to rotate.
    None,
    /// RAID-10 "near": the copies of a chunk sit side by side.
    Near2,
}

impl ParityLayout {
    pub fn parse(text: &str) -> Result<ParityLayout, GeometryError> {
        match text.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "left-asymmetric" | "la" => Ok(ParityLayout::LeftAsymmetric),
            "left-symmetric" | "ls" => Ok(ParityLayout::LeftSymmetric),
            "right-asymmetric" | "ra" => Ok(ParityLayout::RightAsymmetric),
            "right-symmetric" | "rs" => Ok(ParityLayout::RightSymmetric),
            "none" => Ok(ParityLayout::None),
            "near2" | "n2" | "near" => Ok(ParityLayout::Near2),
            _ => Err(GeometryError::UnknownLayout(text.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ParityLayout::LeftAsymmetric => "left-asymmetric",
            ParityLayout::LeftSymmetric => "left-symmetric",
            ParityLayout::RightAsymmetric => "right-asymmetric",
            ParityLayout::RightSymmetric => "right-symmetric",
            ParityLayout::None => "none",
            ParityLayout::Near2 => "near2",
        }
    }

    /// The layout a level uses when none is named.
    pub fn default_for(level: Level) -> ParityLayout {
        match level {
            Level::Raid0 => ParityLayout::None,
            Level::Raid5 | Level::Raid6 | Level::Crs { .. } => ParityLayout::LeftSymmetric,
            Level::Raid10 => ParityLayout::Near2,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error("unknown RAID level '{0}' (expected 0, 5, 6, 10 or crs)")]
    UnknownLevel(String),
    #[error("level crs needs its shape (data and parity members, w), which only `eraid create --level crs --data K --parity M [--w W]` takes (the simulator has no CRS arrays yet)")]
    CrsNeedsShape,
    #[error("CRS needs 1 to {max} parity members, got {got}", max = CRS_PARITY_MAX)]
    CrsBadParity { got: usize },
    #[error("CRS w = {got} is out of range: {min} <= w <= {max}", min = CRS_W_MIN, max = CRS_W_MAX)]
    CrsBadW { got: usize },
    #[error("CRS with {members} members needs k + m <= 2^w: w = {w} has room for {room}; use w >= {needed}")]
    CrsWTooSmall {
        members: usize,
        w: usize,
        room: usize,
        needed: usize,
    },
    #[error("CRS chunk size {chunk_bytes} bytes is not w = {w} packets of a power of two bytes between 4 KiB and 4 MiB in all (e.g. {example} bytes)")]
    CrsBadChunk {
        chunk_bytes: u64,
        w: usize,
        example: u64,
    },
    #[error("unknown layout '{0}' (expected left-asymmetric, left-symmetric, right-asymmetric, right-symmetric; near2 for RAID-10)")]
    UnknownLayout(String),
    #[error("layout {layout} does not apply to {level}")]
    LayoutMismatch { level: String, layout: &'static str },
    #[error("{level} needs at least {min} members, got {got}")]
    TooFewMembers {
        level: String,
        min: usize,
        got: usize,
    },
    #[error("at most {max} members are supported, got {got}")]
    TooManyMembers { max: usize, got: usize },
    #[error("chunk size {0} bytes is not a power of two between 4 KiB and 4 MiB")]
    BadChunk(u64),
    #[error("member size {member_bytes} bytes leaves no room for data: each member needs at least {needed_bytes} bytes (1 MiB metadata + one chunk)")]
    MemberTooSmall {
        member_bytes: u64,
        needed_bytes: u64,
    },
}

/// m and w of a CRS array with `member_count` members: 1 <= m <=
/// `CRS_PARITY_MAX`, at least one data member, w in range and k + m <= 2^w
/// (the Cauchy matrix needs k + m distinct points of GF(2^w)).
fn check_crs_shape(
    member_count: usize,
    parity_members: usize,
    w: usize,
) -> Result<(), GeometryError> {
    if parity_members == 0 || parity_members > CRS_PARITY_MAX {
        return Err(GeometryError::CrsBadParity {
            got: parity_members,
        });
    }
    if !(CRS_W_MIN..=CRS_W_MAX).contains(&w) {
        return Err(GeometryError::CrsBadW { got: w });
    }
    if member_count > 1 << w {
        let needed = crs_default_w(member_count).unwrap_or(CRS_W_MAX + 1);
        return Err(GeometryError::CrsWTooSmall {
            members: member_count,
            w,
            room: 1 << w,
            needed,
        });
    }
    Ok(())
}

/// The smallest w with room for `member_count` = k + m shards, as Jerasure
/// picks it: the study's and the paper's convention.
pub fn crs_default_w(member_count: usize) -> Option<usize> {
    (CRS_W_MIN..=CRS_W_MAX).find(|&w| member_count <= 1 << w)
}

/// The default CRS chunk: w packets of 16 KiB (48 KiB for w = 3, 64 KiB
/// for w = 4), near the 64 KiB default of the other levels.
pub fn crs_default_chunk_bytes(w: usize) -> u64 {
    w as u64 * (16 << 10)
}

/// A CRS chunk is w packets of a power of two bytes (chunks need not be
/// powers of two, packets must, so sectors never straddle packets), within
/// the usual chunk range.
fn check_crs_chunk(chunk_bytes: u64, w: usize) -> Result<(), GeometryError> {
    let packet_bytes = chunk_bytes / w as u64;
    let fits = chunk_bytes.is_multiple_of(w as u64)
        && packet_bytes.is_power_of_two()
        && packet_bytes >= SECTOR_BYTES
        && (CHUNK_BYTES_MIN..=CHUNK_BYTES_MAX).contains(&chunk_bytes);
    if fits {
        Ok(())
    } else {
        Err(GeometryError::CrsBadChunk {
            chunk_bytes,
            w,
            example: crs_default_chunk_bytes(w),
        })
    }
}

/// The fixed shape of an array; everything else is derived from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub level: Level,
    pub layout: ParityLayout,
    pub member_count: usize,
    pub chunk_bytes: u64,
    /// Where data starts on each member (after the metadata area).
    pub data_offset_bytes: u64,
    /// Bytes of data area used on each member, a multiple of the chunk.
    pub member_data_bytes: u64,
}

impl Geometry {
    /// Validates and builds a geometry for members of `member_bytes` each.
    pub fn new(
        level: Level,
        layout: ParityLayout,
        member_count: usize,
        chunk_bytes: u64,
        member_bytes: u64,
    ) -> Result<Geometry, GeometryError> {
        let layout_fits = match level {
            Level::Raid0 => layout == ParityLayout::None,
            Level::Raid10 => layout == ParityLayout::Near2,
            Level::Raid5 | Level::Raid6 => {
                !matches!(layout, ParityLayout::None | ParityLayout::Near2)
            }
            // CRS parity members rotate as RAID-6's P and Q do (left-symmetric).
            Level::Crs { .. } => layout == ParityLayout::LeftSymmetric,
        };
        if let Level::Crs { parity_members, w } = level {
            check_crs_shape(member_count, parity_members, w)?;
        }
        if !layout_fits {
            return Err(GeometryError::LayoutMismatch {
                level: level.name(),
                layout: layout.name(),
            });
        }
        if member_count < level.member_count_min() {
            return Err(GeometryError::TooFewMembers {
                level: level.name(),
                min: level.member_count_min(),
                got: member_count,
            });
        }
        if member_count > MEMBER_COUNT_MAX {
            return Err(GeometryError::TooManyMembers {
                max: MEMBER_COUNT_MAX,
                got: member_count,
            });
        }
        match level {
            Level::Crs { w, .. } => check_crs_chunk(chunk_bytes, w)?,
            _ if !chunk_bytes.is_power_of_two()
                || !(CHUNK_BYTES_MIN..=CHUNK_BYTES_MAX).contains(&chunk_bytes) =>
            {
                return Err(GeometryError::BadChunk(chunk_bytes));
            }
            _ => {}
        }
        let needed_bytes = METADATA_BYTES + chunk_bytes;
        if member_bytes < needed_bytes {
            return Err(GeometryError::MemberTooSmall {
                member_bytes,
                needed_bytes,
            });
        }
        let member_data_bytes = (member_bytes - METADATA_BYTES) / chunk_bytes * chunk_bytes;
        Ok(Geometry {
            level,
            layout,
            member_count,
            chunk_bytes,
            data_offset_bytes: METADATA_BYTES,
            member_data_bytes,
        })
    }

    /// Data chunks per stripe (the code's k).
    pub fn data_per_stripe(&self) -> usize {
        match self.level {
            Level::Raid0 => self.member_count,
            Level::Raid5 => self.member_count - 1,
            Level::Raid6 => self.member_count - 2,
            Level::Raid10 => 1,
            Level::Crs { parity_members, .. } => self.member_count - parity_members,
        }
    }

    /// Redundant chunks per stripe (the code's m).
    pub fn parity_per_stripe(&self) -> usize {
        match self.level {
            Level::Raid0 => 0,
            Level::Raid5 | Level::Raid10 => 1,
            Level::Raid6 => 2,
            Level::Crs { parity_members, .. } => parity_members,
        }
    }

    /// Chunks on each member's data area.
    pub fn member_chunks(&self) -> u64 {
        self.member_data_bytes / self.chunk_bytes
    }

    pub fn stripe_count(&self) -> u64 {
        match self.level {
            // Two copies of every chunk across all members' chunk slots.
            Level::Raid10 => self.member_chunks() * self.member_count as u64 / 2,
            _ => self.member_chunks(),
        }
    }

    pub fn stripe_data_bytes(&self) -> u64 {
        self.chunk_bytes * self.data_per_stripe() as u64
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.stripe_count() * self.stripe_data_bytes()
    }
}

#[cfg(test)]
mod crs_tests {
    use super::*;

    fn crs(
        members: usize,
        parity_members: usize,
        w: usize,
        chunk_bytes: u64,
    ) -> Result<Geometry, GeometryError> {
        let level = Level::Crs { parity_members, w };
        Geometry::new(
            level,
            ParityLayout::LeftSymmetric,
            members,
            chunk_bytes,
            64 << 20,
        )
    }

    /// A CRS chunk is w packets of a power of two bytes within 4 KiB..4 MiB.
    #[test]
    fn crs_chunks_are_w_power_of_two_packets() {
        assert!(crs(6, 2, 3, 12 << 10).is_ok());
        assert!(crs(6, 2, 3, 3 << 20).is_ok());
        assert!(crs(6, 2, 4, 64 << 10).is_ok());
        for (w, chunk) in [
            (3, 64 << 10),
            (3, 3 << 10),
            (3, 15 << 10),
            (3, 6 << 20),
            (4, 24 << 10),
        ] {
            assert!(
                matches!(crs(6, 2, w, chunk), Err(GeometryError::CrsBadChunk { .. })),
                "w = {w}, chunk {chunk}"
            );
        }
    }

    #[test]
    fn crs_shape_limits() {
        let chunk = crs_default_chunk_bytes(3);
        assert_eq!(
            crs(6, 0, 3, chunk),
            Err(GeometryError::CrsBadParity { got: 0 })
        );
        assert_eq!(
            crs(20, 17, 5, crs_default_chunk_bytes(5)),
            Err(GeometryError::CrsBadParity { got: 17 })
        );
        assert_eq!(crs(6, 2, 9, chunk), Err(GeometryError::CrsBadW { got: 9 }));
        assert!(matches!(
            crs(9, 2, 3, chunk),
            Err(GeometryError::CrsWTooSmall { needed: 4, .. })
        ));
        assert!(matches!(
            crs(2, 2, 3, chunk),
            Err(GeometryError::TooFewMembers { min: 3, .. })
        ));
        let g = crs(9, 3, 4, crs_default_chunk_bytes(4)).unwrap();
        assert_eq!((g.data_per_stripe(), g.parity_per_stripe()), (6, 3));
        assert_eq!(crs_default_w(6), Some(3));
        assert_eq!(crs_default_w(4), Some(2));
        assert_eq!(crs_default_w(17), Some(5));
        assert_eq!(crs_default_w(257), None);
    }
}

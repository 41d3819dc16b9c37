//! Plain-data description of a drive: what the model needs, nothing else.
//!
//! A [`DiskSpec`] comes either from DiskSim files (`crate::diskspec`) or from
//! a preset (`presets.rs`). All times are in milliseconds here because that is
//! how datasheets and DiskSim state them; the model converts to nanoseconds.

use super::seek::SeekCurve;

#[derive(Debug, Clone, PartialEq)]
pub struct DiskSpec {
    pub name: String,
    pub geometry: GeometrySpec,
    pub mechanics: MechanicsSpec,
    pub overheads: Overheads,
    /// Time to move one 512-byte sector over the host bus (DiskSim's
    /// "Bulk sector transfer time").
    pub bus_ms_per_sector: f64,
    pub cache: CacheSpec,
    /// Commands the drive accepts at once (in service or queued); more wait
    /// in the host's queue, in arrival order.
    pub queue_depth: usize,
    pub scheduler: SchedulerKind,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GeometrySpec {
    pub surfaces: u32,
    pub sparing: Sparing,
    pub zones: Vec<ZoneSpec>,
}

/// How spare space and slipped (defective) sectors are laid out. These are
/// the DiskSim `dm_layout_g1` schemes the model implements exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sparing {
    /// Scheme 0: every physical sector holds data.
    None,
    /// Scheme 1: `spares` whole tracks at the end of each zone; slips are
    /// zone-relative track numbers.
    TracksPerZone,
    /// Scheme 9: `spares` sectors at the end of each zone; slips are
    /// zone-relative physical sector numbers that are skipped.
    SectorsPerZone,
    /// Scheme 10: as 9, but slips do not consume the zone's spares.
    SectorsPerZoneSlipToEnd,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ZoneSpec {
    pub first_cyl: u32,
    pub last_cyl: u32,
    pub sectors_per_track: u32,
    /// Angle of logical sector 0 of the zone's first track, in sectors.
    pub first_block_offset_sectors: f64,
    /// Sectors reserved at the front of the zone ("Empty space at zone front").
    pub dead_space_sectors: u64,
    pub track_skew_sectors: f64,
    pub cyl_skew_sectors: f64,
    pub spares: u64,
    /// Slipped locations (sectors or tracks, per [`Sparing`]), zone-relative.
    pub slips: Vec<u64>,
    /// Remapped defects: (defective, replacement) zone-relative sectors.
    pub defects: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MechanicsSpec {
    pub rpm: f64,
    pub head_switch_ms: f64,
    /// Extra settling before a write after any head movement.
    pub write_settle_ms: f64,
    pub seek: SeekCurve,
}

/// Per-command controller overheads (DiskSim's names). "after read/write"
/// is the type of the previous command the drive received.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Overheads {
    pub read_hit_after_read_ms: f64,
    pub read_hit_after_write_ms: f64,
    pub read_miss_after_read_ms: f64,
    pub read_miss_after_write_ms: f64,
    pub write_hit_after_read_ms: f64,
    pub write_hit_after_write_ms: f64,
    pub write_miss_after_read_ms: f64,
    pub write_miss_after_write_ms: f64,
    pub read_completion_ms: f64,
    pub write_completion_ms: f64,
}

impl Overheads {
    /// Same overhead for every command, for simple presets.
    pub fn uniform(command_ms: f64) -> Self {
        Overheads {
            read_hit_after_read_ms: command_ms,
            read_hit_after_write_ms: command_ms,
            read_miss_after_read_ms: command_ms,
            read_miss_after_write_ms: command_ms,
            write_hit_after_read_ms: command_ms,
            write_hit_after_write_ms: command_ms,
            write_miss_after_read_ms: command_ms,
            write_miss_after_write_ms: command_ms,
            read_completion_ms: 0.0,
            write_completion_ms: 0.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAhead {
    /// DiskSim "Buffer continuous read" 0.
    None,
    /// 1: to the end of the track holding the request's last sector.
    ToTrackEnd,
    /// 2: to the end of that cylinder.
    ToCylinderEnd,
    /// 3: until the segment is full.
    ToSegmentEnd,
    /// 4: to the end of the track after the request; one track more when the
    /// segment already held the previous track (a sequential stream).
    NextTrack,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastWrite {
    /// Level 0: a write completes when it is on the media.
    Off,
    /// Level 1: write-back only for writes that append to the dirty data.
    Sequential,
    /// Level 2: every write completes once its data is in the buffer.
    Always,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheSpec {
    pub enabled: bool,
    pub segments: usize,
    pub segment_sectors: u64,
    pub read_ahead: ReadAhead,
    pub read_ahead_min_sectors: u64,
    /// 0 means "no limit beyond the segment".
    pub read_ahead_max_sectors: u64,
    pub fast_write: FastWrite,
    pub read_hits_on_write_data: bool,
    pub combine_seq_writes: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    Fcfs,
    /// Circular LOOK by cylinder: ascending, then wrap to the lowest.
    CLook,
    /// Shortest positioning (seek + rotation) time first.
    Sptf,
}

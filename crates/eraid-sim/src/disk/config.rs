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
    /// Time to move one 512-byte sector of read data over the host bus
    /// (the larger of DiskSim's disk "Bulk sector transfer time" and the
    /// "Read block transfer time" of the bus the disk sits on).
    pub bus_read_ms_per_sector: f64,
    /// The same for write data ("Write block transfer time").
    pub bus_write_ms_per_sector: f64,
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
    pub track_order: TrackOrder,
    pub zones: Vec<ZoneSpec>,
}

/// How spare space and slipped (defective) locations are laid out: DiskSim's
/// `dm_layout_g1` sparing schemes 0 to 10. `spares` of a zone counts spare
/// sectors (whole tracks for [`Sparing::TracksPerZone`]) per region; slips
/// and defects are zone-relative physical sector numbers (track numbers for
/// [`Sparing::TracksPerZone`]). A slipped location holds no data and the
/// following data shift by one. When slips "use the spares" the shift stops
/// at the end of the region (the region's spares shrink by one); otherwise
/// it runs to the end of the zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sparing {
    /// Scheme 0: every physical sector holds data (slips are not used).
    None,
    /// Scheme 1: `spares` whole tracks at the end of each zone.
    TracksPerZone,
    /// Schemes 2, 4, 5, 6: `spares` sectors per cylinder, at its end or its
    /// front; slips use them (2, 5) or shift to the end of the zone (4, 6).
    SectorsPerCylinder { at_front: bool, slip_to_end: bool },
    /// Scheme 3: `spares` sectors at the end of each track.
    SectorsPerTrack,
    /// Scheme 7: the spares lie beyond the last zone; every slip shifts the
    /// rest of its zone (zones declare no spares of their own).
    SectorsAtDiskEnd,
    /// Scheme 8: `spares` sectors at the end of every `cylinders`-cylinder
    /// range of a zone (a last, shorter range has none).
    SectorsPerRange { cylinders: u32 },
    /// Scheme 9: `spares` sectors at the end of each zone.
    SectorsPerZone,
    /// Scheme 10: as 9, but slips do not use the zone's spares.
    SectorsPerZoneSlipToEnd,
}

/// Order of the tracks of a cylinder along the LBNs (DiskSim's "LBN-to-PBN
/// mapping scheme").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackOrder {
    /// 0: every cylinder from surface 0 to the last.
    Normal,
    /// 1: serpentine, restarting in each zone: a zone's even cylinders
    /// (counted from its first) ascend, odd ones descend, so a cylinder
    /// switch needs no head switch.
    SerpentinePerZone,
    /// 2: serpentine by absolute cylinder number (even ascend, odd descend).
    Serpentine,
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
    /// Extra settling before a write after any head movement; may be
    /// negative (a write then settles faster than the read curve says), but
    /// a move never takes less than zero.
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
    /// Before any data transfer starts ("Data preparation overhead").
    pub data_prep_ms: f64,
    /// A read that had to wait for the media reconnects to the host to send
    /// its data, and a write completed on the media to report it ("First
    /// reselect overhead").
    pub reselect_ms: f64,
    /// A write that does not continue the last media transfer spends at
    /// least this long positioning ("Minimum seek delay").
    pub min_write_position_ms: f64,
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
            data_prep_ms: 0.0,
            reselect_ms: 0.0,
            min_write_position_ms: 0.0,
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

/// What read-ahead may do with the data of the read that started it
/// (DiskSim's "Read-ahead over requested").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestData {
    /// 0: they stay; with no maximum read-ahead, read-ahead stops when the
    /// segment is full.
    Kept,
    /// 1: read-ahead may push them out of the segment.
    Replaceable,
    /// -1: they leave the segment once sent.
    Dropped,
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

/// When the drive writes write-back data from its buffer to the media.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Destage {
    /// A destage queues with the host's commands and the drive's scheduler
    /// orders them all alike (DiskSim's behaviour, and the default).
    #[default]
    Queued,
    /// In the background: while a host command waits for the mechanism, a
    /// destage waits too, unless the buffer has no segment left for new
    /// writes (then destages compete as `Queued`, so the drive makes room).
    /// Written data is already acknowledged; reads are what the host waits
    /// for, so a write-back drive serves them first.
    Background,
}

impl Destage {
    pub fn parse(name: &str) -> Result<Destage, String> {
        match name.to_ascii_lowercase().as_str() {
            "queued" => Ok(Destage::Queued),
            "background" => Ok(Destage::Background),
            other => Err(format!("'{other}' is not queued or background")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheSpec {
    pub enabled: bool,
    pub segments: usize,
    pub segment_sectors: u64,
    pub read_ahead: ReadAhead,
    pub read_ahead_min_sectors: u64,
    /// 0 means "a segment's worth".
    pub read_ahead_max_sectors: u64,
    pub request_data: RequestData,
    pub fast_write: FastWrite,
    pub read_hits_on_write_data: bool,
    pub combine_seq_writes: bool,
    /// A read that waits for the media reconnects to send its data once
    /// this fraction of it (of the segment, if not `water_by_request`) is
    /// in the buffer, and then keeps the bus (DiskSim's "High (read) water
    /// mark"; 0 sends each sector as soon as it is read).
    pub read_high_water: f64,
    /// The water mark is a fraction of the request, not of the segment
    /// ("Set watermark by reqsize").
    pub water_by_request: bool,
    /// A read whose first sectors are in the buffer sends them at once and
    /// reads only the rest ("Immed transfer partial hit"); otherwise it is a
    /// miss and reads all of it from the media.
    pub partial_hits: bool,
    /// A segment filled from the media is a ring: as read-ahead goes on it
    /// keeps only the last `segment_sectors`, overwriting the oldest (as
    /// DiskSim's segments do). Otherwise read-ahead stops once a segment's
    /// worth is past the request, and the segment keeps the newest sectors
    /// that fit from the start of the fill.
    pub segments_wrap: bool,
    /// When write-back data goes to the media.
    pub destage: Destage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    Fcfs,
    /// Circular LOOK by cylinder: ascending, then wrap to the lowest.
    CLook,
    /// Shortest positioning (seek + rotation) time first.
    Sptf,
}

//! Built-in drives from public datasheet figures.
//!
//! Datasheets give capacity, spindle speed, heads, seek figures, sustained
//! media rates (outer/inner), buffer size and interface, but no zone table.
//! So the layout is synthesised: `ZONES` zones with equal cylinder counts and
//! sectors per track falling linearly from the outer rate to the inner rate;
//! the cylinder count follows from the capacity, and any excess sectors are
//! spares at the end of the last zone. Skews are set to cover a head switch
//! and a one-cylinder seek. Controller overheads are not published; the values
//! here are typical of drives of that era (a few hundred microseconds) and
//! are marked as assumptions.
//!
//! The figures below were transcribed from the cited Seagate product manuals
//! without a copy at hand to re-check them; those marked "about" or
//! "assumption" are the least certain. Verify before publishing numbers.
//!
//! Write caching: the Cheetah (SCSI/FC) drives ship with the write cache off
//! in RAID enclosures and the MSC-CT paper measures write-on-arrival without
//! write-back, so their presets use `FastWrite::Off`; the Barracuda (desktop
//! SATA) ships with it on. Change `spec.cache.fast_write` to taste.

use super::config::{
    CacheSpec, Destage, DiskSpec, FastWrite, GeometrySpec, MechanicsSpec, Overheads, ReadAhead,
    RequestData, SchedulerKind, Sparing, TrackOrder, ZoneSpec,
};
use super::seek::SeekCurve;
use super::ssd::SsdSpec;

const ZONES: u32 = 16;

/// Public figures of one drive model.
#[derive(Debug, Clone, Copy)]
pub struct Datasheet {
    pub name: &'static str,
    pub capacity_sectors: u64,
    pub rpm: f64,
    pub heads: u32,
    pub media_mb_per_s_outer: f64,
    pub media_mb_per_s_inner: f64,
    pub seek_track_to_track_ms: f64,
    pub seek_average_read_ms: f64,
    pub seek_average_write_ms: f64,
    pub seek_full_stroke_ms: f64,
    pub head_switch_ms: f64,
    pub buffer_kib: u64,
    pub interface_mb_per_s: f64,
    /// Assumed controller time per command.
    pub command_overhead_ms: f64,
    /// Assumed controller time to report a completion.
    pub completion_overhead_ms: f64,
    pub write_back: bool,
}

/// Seagate Cheetah 15K.5 FC, ST3146855FC (146.8 GB).
/// Source: Seagate "Cheetah 15K.5 FC Product Manual" (100384772), sections
/// "Formatted capacity" (286,749,488 LBAs), "Performance characteristics"
/// (15K rpm; average seek 3.5 ms read / 4.0 ms write; track-to-track
/// 0.2 ms read; sustained 73-125 MB/s; 16 MB buffer; 4 Gb/s FC) and
/// "Media description" (4 discs, 8 heads). Full stroke 7.9 ms is the
/// 15K-class figure of the same family. Overheads are assumptions.
pub fn cheetah_15k5() -> DiskSpec {
    from_datasheet(&Datasheet {
        name: "Seagate Cheetah 15K.5 ST3146855FC",
        capacity_sectors: 286_749_488,
        rpm: 15_000.0,
        heads: 8,
        media_mb_per_s_outer: 125.0,
        media_mb_per_s_inner: 73.0,
        seek_track_to_track_ms: 0.2,
        seek_average_read_ms: 3.5,
        seek_average_write_ms: 4.0,
        seek_full_stroke_ms: 7.9,
        head_switch_ms: 0.2,
        buffer_kib: 16 * 1024,
        interface_mb_per_s: 400.0,
        command_overhead_ms: 0.15,
        completion_overhead_ms: 0.1,
        write_back: false,
    })
}

/// Seagate Cheetah 10K.7 FC, ST3146807FC (146.8 GB), the ALV paper's drive.
/// Source: Seagate "Cheetah 10K.7 FC Product Manual" (100260911): 286,749,488
/// LBAs; 10K rpm; average seek 4.7 ms read / 5.3 ms write; track-to-track
/// 0.2 ms read; full stroke about 9.5 ms; sustained 39-80 MB/s; 8 MB buffer;
/// 2 Gb/s FC; 4 discs, 8 heads. Overheads are assumptions.
pub fn cheetah_10k7() -> DiskSpec {
    from_datasheet(&Datasheet {
        name: "Seagate Cheetah 10K.7 ST3146807FC",
        capacity_sectors: 286_749_488,
        rpm: 10_000.0,
        heads: 8,
        media_mb_per_s_outer: 80.0,
        media_mb_per_s_inner: 39.0,
        seek_track_to_track_ms: 0.2,
        seek_average_read_ms: 4.7,
        seek_average_write_ms: 5.3,
        seek_full_stroke_ms: 9.5,
        head_switch_ms: 0.3,
        buffer_kib: 8 * 1024,
        interface_mb_per_s: 200.0,
        command_overhead_ms: 0.2,
        completion_overhead_ms: 0.1,
        write_back: false,
    })
}

/// Seagate Barracuda 7200.10 (300 GB SATA). It was first taken for the PRO
/// paper's drive, but the paper's ST3300831AS is a 7200.8: see
/// [`barracuda_7200_8`]. Source: Seagate "Barracuda 7200.10 Serial ATA Product Manual"
/// (100402371): 586,072,368 LBAs; 7,200 rpm; average seek 11 ms read /
/// 12 ms write; track-to-track 0.8 ms; full stroke about 21 ms; 3 Gb/s SATA;
/// and the PRO paper (8 MB cache, "sustained transfer rate of up to 76 MB/s").
/// Inner-zone rate (40 MB/s) and head count (4) are assumptions, as are the
/// overheads.
pub fn barracuda_7200_10() -> DiskSpec {
    from_datasheet(&Datasheet {
        name: "Seagate Barracuda 7200.10 ST3300831AS",
        capacity_sectors: 586_072_368,
        rpm: 7_200.0,
        heads: 4,
        media_mb_per_s_outer: 76.0,
        media_mb_per_s_inner: 40.0,
        seek_track_to_track_ms: 0.8,
        seek_average_read_ms: 11.0,
        seek_average_write_ms: 12.0,
        seek_full_stroke_ms: 21.0,
        head_switch_ms: 0.8,
        buffer_kib: 8 * 1024,
        interface_mb_per_s: 300.0,
        command_overhead_ms: 0.3,
        completion_overhead_ms: 0.05,
        write_back: true,
    })
}

/// Seagate Barracuda 7200.8, ST3300831AS (300 GB SATA, NCQ): the PRO
/// paper's testbed drive (ST3300831AS is a 7200.8 model, not a 7200.10).
/// Where each figure comes from:
/// - the PRO paper, Sec. 3.1: 300 GB, 7,200 rpm, 8 MB cache, "sustained
///   transfer rate of up to 76 MB/s" (the outer-zone media rate here);
/// - Seagate's 7200.8 family specifications as printed in The Tech Report's
///   review ("Seagate's Barracuda 7200.8 hard drive", 2005): average seek
///   8 ms, average sustained transfer 65 MB/s, 150 MB/s interface (SATA
///   1.5 Gb/s), 133 GB per platter;
/// - capacity 586,072,368 LBAs: the 300 GB IDEMA count, and what smartctl
///   reports for a 300 GB 7200.8 (300,069,052,416 bytes).
///
/// Derived: the inner-zone rate, 54 MB/s = 2 x 65 - 76, so that the mean
/// over the (equal-cylinder) zones is the 65 MB/s average; 5 heads, the
/// fewest 66.5 GB surfaces (133 GB platters) that hold 300 GB.
/// Assumptions (not in those sources): write seek 1 ms above read (the gap
/// of the 7200.7 SATA manual's 8.5 / 9.5 ms), track-to-track 0.8 ms and head
/// switch 0.8 ms (the 7200.10 manual's track-to-track), full stroke 17 ms,
/// and the controller overheads. The disk models folder holds no DiskSim
/// model of a 7,200 rpm drive, so the mechanics are these datasheet ones.
/// Desktop SATA drives ship with the write cache on; so does this preset.
pub fn barracuda_7200_8() -> DiskSpec {
    from_datasheet(&Datasheet {
        name: "Seagate Barracuda 7200.8 ST3300831AS",
        capacity_sectors: 586_072_368,
        rpm: 7_200.0,
        heads: 5,
        media_mb_per_s_outer: 76.0,
        media_mb_per_s_inner: 54.0,
        seek_track_to_track_ms: 0.8,
        seek_average_read_ms: 8.0,
        seek_average_write_ms: 9.0,
        seek_full_stroke_ms: 17.0,
        head_switch_ms: 0.8,
        buffer_kib: 8 * 1024,
        interface_mb_per_s: 150.0,
        command_overhead_ms: 0.3,
        completion_overhead_ms: 0.05,
        write_back: true,
    })
}

/// Seagate Cheetah 15K.4 Ultra320 SCSI, ST373454LC (73.4 GB), the MSC-CT
/// paper's drive. Source: Seagate "Cheetah 15K.4 SCSI Product Manual"
/// (100220456): 143,374,744 LBAs; 15K rpm; average seek 3.5 ms read;
/// track-to-track 0.2 ms; full stroke about 7.9 ms; sustained 58-96 MB/s;
/// 8 MB buffer; Ultra320 (320 MB/s); 2 discs, 4 heads. The average write seek
/// of 4.1 ms is the MSC-CT paper's figure (Section I-C). Overheads are
/// assumptions.
pub fn cheetah_15k4() -> DiskSpec {
    from_datasheet(&Datasheet {
        name: "Seagate Cheetah 15K.4 ST373454LC",
        capacity_sectors: 143_374_744,
        rpm: 15_000.0,
        heads: 4,
        media_mb_per_s_outer: 96.0,
        media_mb_per_s_inner: 58.0,
        seek_track_to_track_ms: 0.2,
        seek_average_read_ms: 3.5,
        seek_average_write_ms: 4.1,
        seek_full_stroke_ms: 7.9,
        head_switch_ms: 0.2,
        buffer_kib: 8 * 1024,
        interface_mb_per_s: 320.0,
        command_overhead_ms: 0.15,
        completion_overhead_ms: 0.1,
        write_back: false,
    })
}

/// A generic multi-channel SSD of `capacity_sectors`.
pub fn simple_ssd(capacity_sectors: u64) -> SsdSpec {
    SsdSpec::generic(capacity_sectors)
}

/// Every hard-disk preset by a short name (for command lines and experiment files).
pub fn by_name(name: &str) -> Option<DiskSpec> {
    match name.to_ascii_lowercase().as_str() {
        "cheetah15k5" | "st3146855fc" => Some(cheetah_15k5()),
        "cheetah10k7" | "st3146807fc" => Some(cheetah_10k7()),
        "barracuda7200.10" | "barracuda" => Some(barracuda_7200_10()),
        "barracuda7200.8" | "st3300831as" => Some(barracuda_7200_8()),
        "cheetah15k4" | "st373454lc" => Some(cheetah_15k4()),
        _ => None,
    }
}

/// Builds a full spec from datasheet figures (see the module doc).
pub fn from_datasheet(d: &Datasheet) -> DiskSpec {
    let rev_per_s = d.rpm / 60.0;
    let spt = |mb_s: f64| ((mb_s * 1e6 / 512.0 / rev_per_s).round() as u32).max(1);
    let (outer, inner) = (spt(d.media_mb_per_s_outer), spt(d.media_mb_per_s_inner));
    let spts: Vec<u32> = (0..ZONES)
        .map(|z| {
            let f = f64::from(z) / f64::from(ZONES - 1);
            (f64::from(outer) - f * f64::from(outer.saturating_sub(inner))).round() as u32
        })
        .collect();
    let per_cyl_all_zones: u64 = spts
        .iter()
        .map(|&s| u64::from(s) * u64::from(d.heads))
        .sum();
    let cyls_per_zone = d.capacity_sectors.div_ceil(per_cyl_all_zones.max(1)) as u32;
    let raw = u64::from(cyls_per_zone) * per_cyl_all_zones;
    let period_ms = 60_000.0 / d.rpm;
    let zones = spts
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let sector_ms = period_ms / f64::from(s);
            // Skews just cover the switch, so sequential transfers never wait a turn.
            let track_skew = (d.head_switch_ms / sector_ms).ceil();
            let cyl_skew =
                (d.seek_track_to_track_ms.max(d.head_switch_ms) / sector_ms).ceil() - track_skew;
            let first = i as u32 * cyls_per_zone;
            ZoneSpec {
                first_cyl: first,
                last_cyl: first + cyls_per_zone - 1,
                sectors_per_track: s,
                first_block_offset_sectors: 0.0,
                dead_space_sectors: 0,
                track_skew_sectors: track_skew,
                cyl_skew_sectors: cyl_skew.max(0.0),
                spares: if i + 1 == spts.len() {
                    raw - d.capacity_sectors
                } else {
                    0
                },
                slips: vec![],
                defects: vec![],
            }
        })
        .collect();
    let cylinders = cyls_per_zone * ZONES;
    let buffer_sectors = d.buffer_kib * 2;
    let segments = 16;
    DiskSpec {
        name: d.name.to_string(),
        geometry: GeometrySpec {
            surfaces: d.heads,
            sparing: Sparing::SectorsPerZone,
            track_order: TrackOrder::Normal,
            zones,
        },
        mechanics: MechanicsSpec {
            rpm: d.rpm,
            head_switch_ms: d.head_switch_ms,
            write_settle_ms: (d.seek_average_write_ms - d.seek_average_read_ms).max(0.0),
            seek: SeekCurve::fit(
                d.seek_track_to_track_ms,
                d.seek_average_read_ms,
                d.seek_full_stroke_ms,
                cylinders,
            ),
        },
        overheads: Overheads {
            read_hit_after_read_ms: d.command_overhead_ms / 2.0,
            read_hit_after_write_ms: d.command_overhead_ms / 2.0,
            read_completion_ms: d.completion_overhead_ms,
            write_completion_ms: d.completion_overhead_ms,
            ..Overheads::uniform(d.command_overhead_ms)
        },
        bus_read_ms_per_sector: 512.0 / (d.interface_mb_per_s * 1e6) * 1e3,
        bus_write_ms_per_sector: 512.0 / (d.interface_mb_per_s * 1e6) * 1e3,
        cache: CacheSpec {
            enabled: true,
            segments,
            segment_sectors: buffer_sectors / segments as u64,
            read_ahead: ReadAhead::ToSegmentEnd,
            read_ahead_min_sectors: 0,
            read_ahead_max_sectors: 0,
            request_data: RequestData::Kept,
            fast_write: if d.write_back {
                FastWrite::Always
            } else {
                FastWrite::Off
            },
            read_hits_on_write_data: true,
            combine_seq_writes: true,
            read_high_water: 0.0,
            water_by_request: true,
            partial_hits: false,
            segments_wrap: false,
            destage: Destage::Queued,
        },
        queue_depth: 32,
        scheduler: SchedulerKind::Sptf,
    }
}

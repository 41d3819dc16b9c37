//! Hand-computed cases on a tiny drive: 1 surface, 100 sectors per track,
//! 6,000 rpm (10 ms per revolution, 0.1 ms per sector), no overheads, no bus
//! time, no cache, so every number below can be checked by hand.

use eraid_sim::disk::presets::cheetah_15k5;
use eraid_sim::disk::{
    CacheSpec, Destage, DiskCompletion, DiskModel, DiskRequest, DiskSpec, FastWrite, GeometrySpec,
    MechanicsSpec, Overheads, ReadAhead, RequestData, SchedulerKind, SeekCurve, Sparing,
    TrackOrder, ZoneSpec,
};

fn tiny() -> DiskSpec {
    DiskSpec {
        name: "tiny".into(),
        geometry: GeometrySpec {
            surfaces: 1,
            sparing: Sparing::None,
            track_order: TrackOrder::Normal,
            zones: vec![ZoneSpec {
                first_cyl: 0,
                last_cyl: 99,
                sectors_per_track: 100,
                first_block_offset_sectors: 0.0,
                dead_space_sectors: 0,
                track_skew_sectors: 0.0,
                cyl_skew_sectors: 0.0,
                spares: 0,
                slips: vec![],
                defects: vec![],
            }],
        },
        mechanics: MechanicsSpec {
            rpm: 6000.0,
            head_switch_ms: 0.0,
            write_settle_ms: 0.0,
            seek: SeekCurve::Table(vec![(1, 1.0), (10, 3.0), (99, 6.0)]),
        },
        overheads: Overheads::default(),
        bus_read_ms_per_sector: 0.0,
        bus_write_ms_per_sector: 0.0,
        cache: CacheSpec {
            enabled: false,
            segments: 1,
            segment_sectors: 1,
            read_ahead: ReadAhead::None,
            read_ahead_min_sectors: 0,
            read_ahead_max_sectors: 0,
            request_data: RequestData::Kept,
            fast_write: FastWrite::Off,
            read_hits_on_write_data: false,
            combine_seq_writes: false,
            read_high_water: 0.0,
            water_by_request: true,
            partial_hits: false,
            segments_wrap: false,
            destage: Destage::Queued,
        },
        queue_depth: 1,
        scheduler: SchedulerKind::Fcfs,
    }
}

fn run_one(
    disk: &mut DiskModel,
    at_ns: u64,
    lbn: u64,
    sectors: u32,
    is_read: bool,
) -> DiskCompletion {
    disk.submit(
        at_ns,
        DiskRequest {
            id: lbn,
            lbn,
            sectors,
            is_read,
        },
    )
    .unwrap();
    loop {
        let t = disk.next_event_ns().expect("pending work");
        if let Some(c) = disk.advance(t).into_iter().next() {
            return c;
        }
    }
}

fn service_ms(c: &DiskCompletion) -> f64 {
    (c.finish_ns - c.submit_ns) as f64 / 1e6
}

#[test]
fn one_sector_under_the_head_costs_one_sector_time() {
    let mut d = DiskModel::new(tiny()).unwrap();
    assert!((service_ms(&run_one(&mut d, 0, 0, 1, true)) - 0.1).abs() < 1e-6);
}

#[test]
fn a_full_track_read_costs_one_revolution() {
    let mut d = DiskModel::new(tiny()).unwrap();
    assert!((service_ms(&run_one(&mut d, 0, 0, 100, true)) - 10.0).abs() < 1e-6);
}

#[test]
fn seek_of_five_cylinders_then_rotation() {
    // Seek 5 cylinders: 1 + (5-1) * (3-1)/(10-1) = 1.888.. ms; the platter is
    // then at angle 0.1888.., sector 0 of cylinder 5 is at angle 0, so the
    // head waits 10 - 1.888.. ms; then one sector. Total 10.1 ms.
    let mut d = DiskModel::new(tiny()).unwrap();
    let c = run_one(&mut d, 0, 500, 1, true);
    assert!((service_ms(&c) - 10.1).abs() < 1e-6, "{}", service_ms(&c));
    assert_eq!(c.seek_cyls, 5);
}

#[test]
fn rotational_miss_costs_a_revolution() {
    // After reading sector 0 (done at 0.1 ms) a request for sector 1 issued
    // at 0.1 ms starts at once; one for sector 2 issued at 0.25 ms has just
    // missed it and waits almost a whole revolution.
    let mut d = DiskModel::new(tiny()).unwrap();
    run_one(&mut d, 0, 0, 1, true);
    let on_time = run_one(&mut d, 100_000, 1, 1, true);
    assert!((service_ms(&on_time) - 0.1).abs() < 1e-6);
    let mut d = DiskModel::new(tiny()).unwrap();
    run_one(&mut d, 0, 0, 1, true);
    let late = run_one(&mut d, 250_000, 2, 1, true);
    // Sector 2 starts at 0.2 ms; the next pass is at 10.2 ms: 9.95 + 0.1 ms.
    assert!(
        (service_ms(&late) - 10.05).abs() < 1e-6,
        "{}",
        service_ms(&late)
    );
}

#[test]
fn a_read_reconnects_at_its_water_mark_after_the_reselect() {
    // 10 sectors under the head from 0 ms, one every 0.1 ms; the bus takes
    // 0.2 ms a sector. At a water mark of half the request the drive
    // reconnects when sector 5 is in (0.5 ms), pays the reselect (0.3 ms)
    // and data preparation (0.05 ms), then sends all 10: 0.85 + 2.0 ms.
    let mut spec = tiny();
    spec.cache.segment_sectors = 20;
    spec.bus_read_ms_per_sector = 0.2;
    spec.cache.read_high_water = 0.5;
    spec.overheads.reselect_ms = 0.3;
    spec.overheads.data_prep_ms = 0.05;
    let mut d = DiskModel::new(spec).unwrap();
    let c = run_one(&mut d, 0, 0, 10, true);
    assert!((service_ms(&c) - 2.85).abs() < 1e-6, "{}", service_ms(&c));
}

#[test]
fn a_write_waits_the_minimum_positioning_then_reselects_to_report() {
    // Sector 3 passes at 0.3 ms, before the 0.6 ms minimum positioning is
    // over, so the write waits a revolution (10.3 to 10.4 ms), and reports
    // after the 0.3 ms reselect.
    let mut spec = tiny();
    spec.overheads.min_write_position_ms = 0.6;
    spec.overheads.reselect_ms = 0.3;
    let mut d = DiskModel::new(spec).unwrap();
    let c = run_one(&mut d, 0, 3, 1, false);
    assert!((service_ms(&c) - 10.7).abs() < 1e-6, "{}", service_ms(&c));
}

fn cached_tiny(read_ahead: ReadAhead) -> DiskSpec {
    let mut spec = tiny();
    spec.cache.enabled = true;
    spec.cache.segment_sectors = 20;
    spec.cache.read_ahead = read_ahead;
    spec.cache.partial_hits = true;
    spec.cache.segments_wrap = true;
    spec
}

#[test]
fn a_segment_keeps_only_the_last_sectors_read_ahead() {
    // Reading sectors 0-3 reads ahead to the end of the track (next-track
    // scheme), through a 20-sector segment: it ends holding 80-99.
    let mut d = DiskModel::new(cached_tiny(ReadAhead::NextTrack)).unwrap();
    run_one(&mut d, 0, 0, 4, true);
    let hit = run_one(&mut d, 20_000_000, 90, 4, true);
    assert!(hit.cache_hit);
    assert_eq!(service_ms(&hit), 0.0);
    // Sector 4 was overwritten: read again, 0.4 ms round from angle 0.
    let miss = run_one(&mut d, 30_000_000, 4, 1, true);
    assert!(!miss.cache_hit);
    assert!(
        (service_ms(&miss) - 0.5).abs() < 1e-6,
        "{}",
        service_ms(&miss)
    );
}

#[test]
fn a_partial_hit_reads_only_what_the_buffer_lacks() {
    // After a read of track 0 (read-ahead to its end), sectors 95-104 are
    // half in the buffer: the media supplies 100-104 only (seek one
    // cylinder, 1 ms, to angle 0.1; wait 9 ms for sector 0; 0.5 ms).
    let mut d = DiskModel::new(cached_tiny(ReadAhead::ToTrackEnd)).unwrap();
    d.submit(
        0,
        DiskRequest {
            id: 0,
            lbn: 80,
            sectors: 4,
            is_read: true,
        },
    )
    .unwrap();
    while let Some(t) = d.next_event_ns() {
        d.advance(t);
    }
    let c = run_one(&mut d, 20_000_000, 95, 10, true);
    assert!((service_ms(&c) - 10.5).abs() < 1e-6, "{}", service_ms(&c));
}

/// The cache as eraid's own presets set it (DiskSim files set both flags).
fn cached_tiny_like_presets(read_ahead: ReadAhead) -> DiskSpec {
    let mut spec = cached_tiny(read_ahead);
    spec.cache.partial_hits = false;
    spec.cache.segments_wrap = false;
    spec
}

#[test]
fn a_segment_that_does_not_wrap_keeps_the_request_and_a_segment_past_it() {
    // Reading sectors 0-3 (next-track scheme) stops read-ahead a segment's
    // worth (20) past the request: the segment holds 0-23, and sector 90,
    // which a wrapping segment would hold, was never read.
    assert!(!cheetah_15k5().cache.segments_wrap);
    let mut d = DiskModel::new(cached_tiny_like_presets(ReadAhead::NextTrack)).unwrap();
    run_one(&mut d, 0, 0, 4, true);
    let hit = run_one(&mut d, 20_000_000, 4, 16, true);
    assert!(hit.cache_hit);
    assert_eq!(service_ms(&hit), 0.0);
    // 90 passes under the head at angle 0.9: 9 ms, then 0.1 ms.
    let miss = run_one(&mut d, 30_000_000, 90, 1, true);
    assert!(!miss.cache_hit);
    assert!(
        (service_ms(&miss) - 9.1).abs() < 1e-6,
        "{}",
        service_ms(&miss)
    );
}

#[test]
fn without_partial_hits_a_half_buffered_read_reads_all_from_the_media() {
    // As in the partial-hit case, 80-99 are buffered when 95-104 arrive at
    // angle 0; the media supplies all ten: wait 9.5 ms for sector 95, read
    // 95-99 (0.5 ms), seek one cylinder (1 ms) to angle 0.1, wait 9 ms for
    // sector 100, read 100-104 (0.5 ms): 20.5 ms.
    assert!(!cheetah_15k5().cache.partial_hits);
    let mut d = DiskModel::new(cached_tiny_like_presets(ReadAhead::ToTrackEnd)).unwrap();
    run_one(&mut d, 0, 80, 4, true);
    let c = run_one(&mut d, 20_000_000, 95, 10, true);
    assert!(!c.cache_hit);
    assert!((service_ms(&c) - 20.5).abs() < 1e-6, "{}", service_ms(&c));
}

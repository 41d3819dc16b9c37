//! The effects the papers rest on, shown by the model alone on the presets.

use eraid_sim::disk::presets::{
    barracuda_7200_10, barracuda_7200_8, cheetah_10k7, cheetah_15k4, cheetah_15k5,
};
use eraid_sim::disk::{
    Destage, DiskCompletion, DiskModel, DiskRequest, DiskSpec, ReadAhead, SchedulerKind,
    WORK_DESTAGE,
};

/// A tiny deterministic generator (xorshift), so tests need no RNG crate.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs `reqs` keeping `outstanding` of them in flight (issuing the next as
/// soon as one completes). Returns the completions and the total time in ns.
fn closed_loop(
    disk: &mut DiskModel,
    reqs: &[DiskRequest],
    outstanding: usize,
) -> (Vec<DiskCompletion>, u64) {
    let mut next = 0;
    let mut now = 0;
    let mut done = Vec::new();
    while next < reqs.len().min(outstanding) {
        disk.submit(now, reqs[next]).unwrap();
        next += 1;
    }
    while done.len() < reqs.len() {
        now = disk.next_event_ns().expect("work pending");
        for c in disk.advance(now) {
            done.push(c);
            if next < reqs.len() {
                disk.submit(now, reqs[next]).unwrap();
                next += 1;
            }
        }
    }
    (done, now)
}

fn read(id: u64, lbn: u64, sectors: u32) -> DiskRequest {
    DiskRequest {
        id,
        lbn,
        sectors,
        is_read: true,
    }
}

fn write(id: u64, lbn: u64, sectors: u32) -> DiskRequest {
    DiskRequest {
        id,
        lbn,
        sectors,
        is_read: false,
    }
}

fn random_reads(spec: &DiskSpec, n: u64, sectors: u32, seed: u64) -> Vec<DiskRequest> {
    let cap = DiskModel::new(spec.clone()).unwrap().capacity_sectors();
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| read(i, rng.below(cap - u64::from(sectors)) / 8 * 8, sectors))
        .collect()
}

#[test]
fn sequential_4k_reads_beat_random_by_an_order_of_magnitude() {
    let spec = cheetah_15k5();
    let seq: Vec<_> = (0..2000).map(|i| read(i, 1_000_000 + i * 8, 8)).collect();
    let rnd = random_reads(&spec, 2000, 8, 7);
    let (_, t_seq) = closed_loop(&mut DiskModel::new(spec.clone()).unwrap(), &seq, 1);
    let (_, t_rnd) = closed_loop(&mut DiskModel::new(spec).unwrap(), &rnd, 1);
    let ratio = t_rnd as f64 / t_seq as f64;
    assert!(ratio > 10.0, "sequential only {ratio:.1}x faster");
}

#[test]
fn larger_requests_amortise_positioning() {
    let spec = cheetah_10k7();
    let mb_per_s = |sectors: u32| {
        let reqs = random_reads(&spec, 300, sectors, 11);
        let (_, t) = closed_loop(&mut DiskModel::new(spec.clone()).unwrap(), &reqs, 1);
        300.0 * f64::from(sectors) * 512.0 / (t as f64 / 1e9) / 1e6
    };
    let (small, large) = (mb_per_s(8), mb_per_s(512));
    // 64x the data per positioning: well over 10x the throughput.
    assert!(
        large > 10.0 * small,
        "4 KiB {small:.2} MB/s, 256 KiB {large:.2} MB/s"
    );
}

#[test]
fn seek_cost_grows_with_distance() {
    let spec = cheetah_15k4();
    let disk = DiskModel::new(spec.clone()).unwrap();
    let per_cyl = disk.capacity_sectors() / u64::from(disk.geometry().cylinders());
    let mean_ms = |cyls: u64| {
        let mut rng = Rng(3);
        let mut total = 0.0;
        for _ in 0..200 {
            let mut d = DiskModel::new(spec.clone()).unwrap();
            // Random start instant spreads the rotational phase evenly.
            let (_, t0) = closed_loop(&mut d, &[read(0, 0, 8)], 1);
            let at = t0 + rng.below(10_000_000);
            d.submit(at, read(1, cyls * per_cyl + rng.below(per_cyl / 2), 8))
                .unwrap();
            let c = loop {
                let t = d.next_event_ns().unwrap();
                if let Some(c) = d.advance(t).pop() {
                    break c;
                }
            };
            total += (c.finish_ns - c.submit_ns) as f64 / 1e6;
        }
        total / 200.0
    };
    let (near, mid, far) = (mean_ms(10), mean_ms(1_000), mean_ms(30_000));
    assert!(
        near < mid && mid < far,
        "10 cyl {near:.2} ms, 1000 cyl {mid:.2} ms, 30000 cyl {far:.2} ms"
    );
}

#[test]
fn sptf_beats_fcfs_on_a_deep_random_queue() {
    let time = |kind| {
        let mut spec = cheetah_15k5();
        spec.scheduler = kind;
        spec.queue_depth = 32;
        let reqs = random_reads(&spec, 2000, 8, 5);
        closed_loop(&mut DiskModel::new(spec).unwrap(), &reqs, 32).1 as f64
    };
    let (fcfs, clook, sptf) = (
        time(SchedulerKind::Fcfs),
        time(SchedulerKind::CLook),
        time(SchedulerKind::Sptf),
    );
    assert!(sptf * 1.3 < fcfs, "SPTF {sptf} vs FCFS {fcfs}");
    assert!(clook < fcfs, "C-LOOK {clook} vs FCFS {fcfs}");
}

/// MSC-CT paper, Section I-C and Figs. 1-2: with the write cache off and the
/// host refilling the queue as commands complete, a stream of closely spaced
/// but discontiguous writes loses about a revolution per write, while a
/// contiguous stream does not.
#[test]
fn discontiguous_writes_lose_a_revolution() {
    let mut spec = cheetah_15k4();
    spec.queue_depth = 8;
    let period_ms = 60_000.0 / spec.mechanics.rpm;
    let per_write_ms = |stride_sectors: u64| {
        let reqs: Vec<_> = (0..400)
            .map(|i| write(i, 2_000_000 + i * stride_sectors, 8))
            .collect();
        let (_, t) = closed_loop(&mut DiskModel::new(spec.clone()).unwrap(), &reqs, 32);
        t as f64 / 1e6 / 400.0
    };
    let contiguous = per_write_ms(8);
    let gap_one_block = per_write_ms(16);
    assert!(
        contiguous < 0.3 * period_ms,
        "contiguous {contiguous:.3} ms per write"
    );
    // Measured: contiguous 0.57 ms, strides of 2-4 blocks 4.1 ms (a 4 ms
    // revolution), 8 blocks 0.86 ms once the gap outlasts the controller.
    let gap_far = per_write_ms(64);
    assert!(
        gap_far < 0.5 * gap_one_block,
        "stride 8 blocks: {gap_far:.3} ms per write"
    );
    assert!(
        gap_one_block > 0.7 * period_ms && gap_one_block < 1.3 * period_ms,
        "stride 2 blocks: {gap_one_block:.3} ms per write, revolution {period_ms} ms"
    );
}

/// A lone write arriving just after the previous one finished, a few sectors
/// further on, waits nearly a whole turn.
#[test]
fn a_write_arriving_too_late_waits_a_turn() {
    let spec = cheetah_15k4();
    let period_ms = 60_000.0 / spec.mechanics.rpm;
    let mut d = DiskModel::new(spec).unwrap();
    let (done, t) = closed_loop(&mut d, &[write(0, 2_000_000, 8)], 1);
    assert_eq!(done.len(), 1);
    d.submit(t, write(1, 2_000_016, 8)).unwrap();
    let c = loop {
        let now = d.next_event_ns().unwrap();
        if let Some(c) = d.advance(now).pop() {
            break c;
        }
    };
    let ms = (c.finish_ns - c.submit_ns) as f64 / 1e6;
    assert!(ms > 0.8 * period_ms && ms < 1.3 * period_ms, "{ms:.3} ms");
}

#[test]
fn same_inputs_give_identical_outputs() {
    let run = || {
        let mut spec = cheetah_15k5();
        spec.queue_depth = 16;
        let mut reqs = random_reads(&spec, 500, 16, 9);
        for (i, r) in reqs.iter_mut().enumerate() {
            r.is_read = i % 3 != 0;
        }
        closed_loop(&mut DiskModel::new(spec).unwrap(), &reqs, 16)
    };
    assert_eq!(run(), run());
}

/// With write-back, writes complete from the buffer only while it has room:
/// a burst of scattered writes larger than the buffer completes at the
/// media's pace, not all at bus speed (which would let destages pile up
/// behind every later read without bound).
#[test]
fn write_back_completes_at_media_pace_once_the_buffer_is_full() {
    let spec = barracuda_7200_10();
    let segments = spec.cache.segments as u64;
    let cap = DiskModel::new(spec.clone()).unwrap().capacity_sectors();
    let mut rng = Rng(5);
    let n = 4 * segments;
    let reqs: Vec<DiskRequest> = (0..n)
        .map(|i| write(i, rng.below(cap - 128) / 8 * 8, 128))
        .collect();
    let mut d = DiskModel::new(spec).unwrap();
    let (done, t) = closed_loop(&mut d, &reqs, 8);
    assert_eq!(done.len() as u64, n);
    // The first writes go into empty segments: done at bus speed.
    let first_ms = (done[0].finish_ns - done[0].submit_ns) as f64 / 1e6;
    assert!(done[0].cache_hit && first_ms < 1.0, "{first_ms:.3} ms");
    // The rest wait for destages: scattered 64 KiB writes on a 7,200 rpm
    // drive take several ms each, so the burst lasts far longer than the
    // bus transfers (under 0.3 ms each) would.
    let total_ms = t as f64 / 1e6;
    let media_bound_ms = (n - segments) as f64 * 4.0;
    assert!(
        total_ms > media_bound_ms,
        "{n} writes finished in {total_ms:.1} ms (at least {media_bound_ms:.0} ms at media pace)"
    );
}

/// The PRO paper's drive (Barracuda 7200.8 ST3300831AS) matches the figures
/// its preset was built from: 300 GB, 76 MB/s media rate at the outer zone
/// (the paper's "up to 76 MB/s") and 54 MB/s at the inner, and a random
/// 4 KiB read of about the 8 ms average seek plus half a 7,200 rpm turn
/// (4.17 ms).
#[test]
fn the_pro_paper_drive_matches_its_datasheet() {
    let spec = barracuda_7200_8();
    let cap = DiskModel::new(spec.clone()).unwrap().capacity_sectors();
    assert_eq!(cap, 586_072_368);
    let zone_mb_s = |z: &eraid_sim::disk::ZoneSpec| {
        f64::from(z.sectors_per_track) * 512.0 * spec.mechanics.rpm / 60.0 / 1e6
    };
    let zones = &spec.geometry.zones;
    let (outer, inner) = (zone_mb_s(&zones[0]), zone_mb_s(&zones[zones.len() - 1]));
    assert!((75.5..=76.5).contains(&outer), "outer zone {outer:.1} MB/s");
    assert!((53.5..=54.5).contains(&inner), "inner zone {inner:.1} MB/s");
    let rnd = random_reads(&spec, 2000, 8, 11);
    let (_, t) = closed_loop(&mut DiskModel::new(spec).unwrap(), &rnd, 1);
    let mean_ms = t as f64 / 2000.0 / 1e6;
    assert!(
        (11.0..=14.0).contains(&mean_ms),
        "random 4K read {mean_ms:.2} ms"
    );
}

/// The PRO runs' drive: the paper's Barracuda 7200.8 with C-LOOK and no
/// read-ahead, destaging write-back data as `destage` says.
fn pro_drive(destage: Destage) -> DiskSpec {
    let mut spec = barracuda_7200_8();
    spec.scheduler = SchedulerKind::CLook;
    spec.cache.read_ahead = ReadAhead::None;
    spec.cache.destage = destage;
    spec
}

/// A rebuild's burst of 16 sequential 64 KiB writes lands in the buffer,
/// then a user read arrives at a lower address. Queued with the destages,
/// C-LOOK sweeps up through the whole burst before it; destaged in the
/// background, the drive serves the read first and the burst after.
#[test]
fn background_destage_serves_a_read_before_a_write_burst() {
    let read_after = |destage: Destage| {
        let mut d = DiskModel::new(pro_drive(destage)).unwrap();
        let base = 40_000_000;
        for i in 0..16 {
            d.submit(0, write(i, base + i * 128, 128)).unwrap();
        }
        // The first destage has started by 1 ms; the read is behind the head.
        d.submit(1_000_000, read(100, 20_000_000, 8)).unwrap();
        let mut read_done = None;
        let mut writes_done = 0;
        while let Some(at) = d.next_event_ns() {
            for c in d.advance(at) {
                if c.id == 100 {
                    read_done = Some(c.finish_ns - c.submit_ns);
                } else {
                    assert!(c.cache_hit, "write {} taken into the buffer", c.id);
                    writes_done += 1;
                }
            }
        }
        assert_eq!(writes_done, 16);
        let waits = d.read_waits();
        assert_eq!(waits.reads, 1);
        (read_done.expect("read answered") as f64 / 1e6, waits)
    };
    let (queued_ms, queued) = read_after(Destage::Queued);
    let (background_ms, background) = read_after(Destage::Background);
    // Queued: the read waits for 1 MiB of writes (13 ms at 76 MB/s and more).
    assert!(queued_ms > 15.0, "queued: {queued_ms:.2} ms");
    assert!(queued.behind_ns[WORK_DESTAGE] > 10e6, "{queued:?}");
    // Background: at most the destage in progress, then a seek and a turn.
    assert!(
        background_ms < queued_ms - 8.0,
        "background: {background_ms:.2} ms"
    );
    assert!(background.behind_ns[WORK_DESTAGE] < 2e6, "{background:?}");
}

/// In the background, destages still happen while reads keep coming: once
/// the buffer has no segment left for new writes they compete with the
/// reads as equals, so every write completes while the reads go on.
#[test]
fn background_destage_is_not_starved_by_a_steady_read_stream() {
    let spec = pro_drive(Destage::Background);
    let segments = spec.cache.segments as u64;
    let cap = DiskModel::new(spec.clone()).unwrap().capacity_sectors();
    let mut rng = Rng(9);
    let writes = 3 * segments;
    let mut d = DiskModel::new(spec).unwrap();
    for i in 0..writes {
        d.submit(0, write(1_000 + i, rng.below(cap - 128) / 8 * 8, 128))
            .unwrap();
    }
    // Four readers, each issuing its next read as the last completes.
    let mut next_read = 0;
    for _ in 0..4 {
        d.submit(0, read(next_read, rng.below(cap - 8) / 8 * 8, 8))
            .unwrap();
        next_read += 1;
    }
    let (mut writes_done, mut last_write_ns) = (0, 0);
    while writes_done < writes {
        let now = d.next_event_ns().expect("work pending");
        for c in d.advance(now) {
            if c.id >= 1_000 {
                writes_done += 1;
                last_write_ns = c.finish_ns;
            } else {
                d.submit(now, read(next_read, rng.below(cap - 8) / 8 * 8, 8))
                    .unwrap();
                next_read += 1;
            }
        }
    }
    // 48 scattered writes and the reads between them: well under 3 s of
    // media time on a 7,200 rpm drive, not starved behind the readers.
    assert!(
        last_write_ns < 3_000_000_000,
        "the last write completed at {:.0} ms after {next_read} reads",
        last_write_ns as f64 / 1e6
    );
    assert!(next_read > 4, "reads went on meanwhile");
}

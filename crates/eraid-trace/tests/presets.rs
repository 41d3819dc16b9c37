//! Each preset's generated stream matches the statistics it documents.

use std::collections::{HashMap, VecDeque};

use eraid_trace::synthetic::{OpenLoop, Preset};
use eraid_trace::TraceRequest;

const CAPACITY_BYTES: u64 = 64 << 30;
const REQUESTS: usize = 500_000;

fn generate(preset: Preset) -> Vec<TraceRequest> {
    OpenLoop::new(&preset.spec(42, CAPACITY_BYTES))
        .unwrap()
        .take(REQUESTS)
        .collect()
}

fn read_fraction(requests: &[TraceRequest]) -> f64 {
    requests.iter().filter(|r| r.is_read).count() as f64 / requests.len() as f64
}

fn rate_iops(requests: &[TraceRequest]) -> f64 {
    let last_s = requests.last().unwrap().arrival_ns as f64 / 1e9;
    requests.len() as f64 / last_s
}

fn mean_bytes(requests: &[TraceRequest]) -> f64 {
    requests.iter().map(|r| r.len_bytes as f64).sum::<f64>() / requests.len() as f64
}

/// Variance over mean of arrivals per second: 1 for Poisson, far more for
/// bursty traffic.
fn index_of_dispersion(requests: &[TraceRequest]) -> f64 {
    let mut counts: HashMap<u64, f64> = HashMap::new();
    for r in requests {
        *counts.entry(r.arrival_ns / 1_000_000_000).or_default() += 1.0;
    }
    let seconds = requests.last().unwrap().arrival_ns / 1_000_000_000 + 1;
    let mean = requests.len() as f64 / seconds as f64;
    let variance = (0..seconds)
        .map(|s| (counts.get(&s).copied().unwrap_or(0.0) - mean).powi(2))
        .sum::<f64>()
        / seconds as f64;
    variance / mean
}

/// Share of requests whose 1 MiB region was touched by one of the previous
/// 1,000 requests: a simple measure of locality.
fn recent_region_reuse(requests: &[TraceRequest]) -> f64 {
    let mut recent: VecDeque<u64> = VecDeque::new();
    let mut counts: HashMap<u64, u32> = HashMap::new();
    let mut hits = 0usize;
    for r in requests {
        let region = r.offset_bytes >> 20;
        if counts.get(&region).copied().unwrap_or(0) > 0 {
            hits += 1;
        }
        recent.push_back(region);
        *counts.entry(region).or_default() += 1;
        if recent.len() > 1000 {
            let old = recent.pop_front().unwrap_or_default();
            *counts.entry(old).or_default() -= 1;
        }
    }
    hits as f64 / requests.len() as f64
}

fn check_common(preset: Preset, requests: &[TraceRequest], rate_tolerance: f64) {
    let published = preset.published();
    let reads = read_fraction(requests);
    eprintln!(
        "{preset}: reads {reads:.5}, {:.2} IOPS, mean {:.0} B, dispersion {:.2}, reuse {:.3}",
        rate_iops(requests),
        mean_bytes(requests),
        index_of_dispersion(requests),
        recent_region_reuse(requests)
    );
    let read_tolerance = if published.read_fraction > 0.999 {
        0.0001
    } else {
        0.005
    };
    assert!(
        (reads - published.read_fraction).abs() < read_tolerance,
        "{preset}: reads {reads} vs {}",
        published.read_fraction
    );
    let rate = rate_iops(requests);
    assert!(
        (rate / published.rate_iops - 1.0).abs() < rate_tolerance,
        "{preset}: {rate} IOPS vs {}",
        published.rate_iops
    );
    let mean = mean_bytes(requests);
    assert!(
        (mean / published.mean_request_bytes - 1.0).abs() < 0.02,
        "{preset}: mean size {mean} vs {}",
        published.mean_request_bytes
    );
    for r in requests {
        assert!(
            (published.request_bytes_min..=published.request_bytes_max).contains(&r.len_bytes),
            "{preset}: size {}",
            r.len_bytes
        );
        assert!(r.offset_bytes + r.len_bytes <= CAPACITY_BYTES);
        assert_eq!(r.offset_bytes % 512, 0);
    }
    assert!(requests
        .windows(2)
        .all(|w| w[0].arrival_ns <= w[1].arrival_ns));
}

#[test]
fn financial1_matches_pro_table_2() {
    let requests = generate(Preset::Financial1);
    // PRO Table 2: 35.91% reads, 64.06 IOPS.
    assert_eq!(Preset::Financial1.published().read_fraction, 0.3591);
    assert_eq!(Preset::Financial1.published().rate_iops, 64.06);
    check_common(Preset::Financial1, &requests, 0.01);
    assert!(mean_bytes(&requests) < 8192.0, "small requests");
    assert!(index_of_dispersion(&requests) < 1.5, "Poisson, not bursty");
}

#[test]
fn web_search_matches_pro_table_2_and_wsrch_sizes() {
    let requests = generate(Preset::WebSearch);
    // PRO Table 2: 99.98% reads, 323.75 IOPS; sizes 8-64 KiB.
    assert_eq!(Preset::WebSearch.published().read_fraction, 0.9998);
    assert_eq!(Preset::WebSearch.published().rate_iops, 323.75);
    check_common(Preset::WebSearch, &requests, 0.01);
    assert!(requests
        .iter()
        .all(|r| (8192..=65_536).contains(&r.len_bytes)));
    let share_8k =
        requests.iter().filter(|r| r.len_bytes == 8192).count() as f64 / requests.len() as f64;
    assert!((share_8k - 0.601).abs() < 0.01, "8 KiB share {share_8k}");
    assert!(index_of_dispersion(&requests) < 1.5);
    // "High locality" (ALV 5.1), "strong locality" (EPU V-B).
    let reuse = recent_region_reuse(&requests);
    assert!(reuse > 0.3, "locality {reuse}");
}

#[test]
fn cello99_is_bursty_with_poor_locality() {
    let requests = generate(Preset::Cello99);
    check_common(Preset::Cello99, &requests, 0.05);
    // ALV 5.1: "highly bursty" -- far from Poisson's dispersion of 1.
    let dispersion = index_of_dispersion(&requests);
    assert!(dispersion > 20.0, "dispersion {dispersion}");
    // ALV 5.1: "temporal locality is quite poor".
    let reuse = recent_region_reuse(&requests);
    assert!(reuse < 0.05, "locality {reuse}");
}

#[test]
fn preset_names_round_trip() {
    for preset in Preset::ALL {
        assert_eq!(preset.name().parse::<Preset>(), Ok(preset));
        preset.spec(1, 1 << 30).validate().unwrap();
    }
    assert_eq!("SPC-WebSearch".parse::<Preset>(), Ok(Preset::WebSearch));
    assert!("tpcc".parse::<Preset>().is_err());
}

//! Synthetic generators: determinism, bounds, patterns and the closed loop.

use eraid_trace::synthetic::{
    AddressPattern, ArrivalProcess, ClosedLoop, OpenLoop, SizeDistribution, WeightedSize,
    WorkloadSpec,
};
use eraid_trace::{TraceOptions, TraceRequest};
use proptest::prelude::*;

fn spec(address: AddressPattern, size: SizeDistribution) -> WorkloadSpec {
    WorkloadSpec {
        seed: 9,
        capacity_bytes: 1 << 30,
        device: 3,
        alignment_bytes: 4096,
        read_fraction: 0.7,
        size,
        address,
        arrival: ArrivalProcess::Poisson { rate_iops: 1000.0 },
    }
}

fn all_patterns() -> Vec<AddressPattern> {
    vec![
        AddressPattern::Uniform,
        AddressPattern::Sequential { streams: 4 },
        AddressPattern::HotSpot {
            hot_space_fraction: 0.1,
            hot_access_fraction: 0.9,
        },
        AddressPattern::Zipf {
            exponent: 0.99,
            block_bytes: 65_536,
            scatter: true,
        },
        AddressPattern::Zipf {
            exponent: 1.2,
            block_bytes: 4096,
            scatter: false,
        },
    ]
}

#[test]
fn same_seed_same_requests_and_different_seed_different_requests() {
    for address in all_patterns() {
        let spec = spec(address, SizeDistribution::Fixed { bytes: 8192 });
        let a: Vec<_> = OpenLoop::new(&spec).unwrap().take(1000).collect();
        let b: Vec<_> = OpenLoop::new(&spec).unwrap().take(1000).collect();
        assert_eq!(a, b);
        let other = WorkloadSpec { seed: 10, ..spec };
        let c: Vec<_> = OpenLoop::new(&other).unwrap().take(1000).collect();
        assert_ne!(a, c);
    }
}

#[test]
fn poisson_rate_and_read_ratio() {
    let spec = spec(
        AddressPattern::Uniform,
        SizeDistribution::Fixed { bytes: 4096 },
    );
    let requests: Vec<_> = OpenLoop::new(&spec).unwrap().take(100_000).collect();
    let seconds = requests.last().unwrap().arrival_ns as f64 / 1e9;
    let rate = requests.len() as f64 / seconds;
    assert!((rate / 1000.0 - 1.0).abs() < 0.02, "{rate}");
    let reads = requests.iter().filter(|r| r.is_read).count() as f64 / 1e5;
    assert!((reads - 0.7).abs() < 0.01);
    assert!(requests.iter().all(|r| r.device == 3));
}

#[test]
fn size_distributions() {
    let uniform_set = SizeDistribution::UniformSet {
        sizes_bytes: vec![4096, 8192, 16_384],
    };
    let requests: Vec<_> = OpenLoop::new(&spec(AddressPattern::Uniform, uniform_set))
        .unwrap()
        .take(30_000)
        .collect();
    for size in [4096, 8192, 16_384] {
        let share = requests.iter().filter(|r| r.len_bytes == size).count() as f64 / 30_000.0;
        assert!((share - 1.0 / 3.0).abs() < 0.02, "{size}: {share}");
    }
    let weighted = SizeDistribution::Weighted {
        choices: vec![
            WeightedSize {
                bytes: 4096,
                weight: 3.0,
            },
            WeightedSize {
                bytes: 65_536,
                weight: 1.0,
            },
            WeightedSize {
                bytes: 1 << 20,
                weight: 0.0,
            },
        ],
    };
    assert_eq!(weighted.max_bytes(), 65_536);
    let requests: Vec<_> = OpenLoop::new(&spec(AddressPattern::Uniform, weighted))
        .unwrap()
        .take(40_000)
        .collect();
    let small = requests.iter().filter(|r| r.len_bytes == 4096).count() as f64 / 40_000.0;
    assert!((small - 0.75).abs() < 0.01, "{small}");
    assert!(requests.iter().all(|r| r.len_bytes != 1 << 20));
}

#[test]
fn sequential_streams_interleave() {
    let spec = spec(
        AddressPattern::Sequential { streams: 3 },
        SizeDistribution::Fixed { bytes: 65_536 },
    );
    let requests: Vec<_> = OpenLoop::new(&spec).unwrap().take(3000).collect();
    let slice = (1u64 << 30) / 3 / 4096 * 4096;
    let mut next = [0u64, slice, 2 * slice];
    for r in &requests {
        let stream = (r.offset_bytes / slice) as usize;
        assert_eq!(r.offset_bytes, next[stream]);
        next[stream] += 65_536;
    }
    assert!(next.iter().enumerate().all(|(i, &n)| n > i as u64 * slice));
}

#[test]
fn closed_loop_keeps_the_outstanding_count() {
    let spec = spec(
        AddressPattern::Uniform,
        SizeDistribution::Fixed { bytes: 4096 },
    );
    let mut closed = ClosedLoop::new(&spec, 8).unwrap();
    assert_eq!(closed.outstanding_count(), 8);
    let first = closed.start(100);
    assert_eq!(first.len(), 8);
    assert!(first.iter().all(|r| r.arrival_ns == 100));
    let next = closed.next_request(5_000);
    assert_eq!(next.arrival_ns, 5_000);
    assert_eq!(closed.issued_count(), 9);
    // The same requests as the open loop, retimed.
    let open: Vec<TraceRequest> = OpenLoop::new(&spec).unwrap().take(9).collect();
    let same = |a: &TraceRequest, b: &TraceRequest| {
        (a.offset_bytes, a.len_bytes, a.is_read) == (b.offset_bytes, b.len_bytes, b.is_read)
    };
    assert!(first
        .iter()
        .chain([&next])
        .zip(&open)
        .all(|(a, b)| same(a, b)));
    assert!(ClosedLoop::new(&spec, 0).is_err());
}

#[test]
fn bursty_on_off_arrivals_have_the_configured_mean_rate() {
    let arrival = ArrivalProcess::OnOff {
        on_rate_iops: 2000.0,
        off_rate_iops: 0.0,
        on_mean_s: 0.1,
        off_mean_s: 0.9,
    };
    assert_eq!(arrival.mean_rate_iops(), 200.0);
    let spec = WorkloadSpec {
        arrival,
        ..spec(
            AddressPattern::Uniform,
            SizeDistribution::Fixed { bytes: 512 },
        )
    };
    let requests: Vec<_> = OpenLoop::new(&spec).unwrap().take(400_000).collect();
    let rate = requests.len() as f64 / (requests.last().unwrap().arrival_ns as f64 / 1e9);
    assert!((rate / 200.0 - 1.0).abs() < 0.05, "{rate}");
}

#[test]
fn invalid_specs_are_rejected() {
    let good = spec(
        AddressPattern::Uniform,
        SizeDistribution::Fixed { bytes: 4096 },
    );
    let bad = [
        WorkloadSpec {
            read_fraction: 1.5,
            ..good.clone()
        },
        WorkloadSpec {
            alignment_bytes: 1000,
            ..good.clone()
        },
        WorkloadSpec {
            capacity_bytes: 1024,
            ..good.clone()
        },
        WorkloadSpec {
            size: SizeDistribution::UniformSet {
                sizes_bytes: vec![],
            },
            ..good.clone()
        },
        WorkloadSpec {
            size: SizeDistribution::Fixed { bytes: 0 },
            ..good.clone()
        },
        WorkloadSpec {
            address: AddressPattern::Sequential { streams: 0 },
            ..good.clone()
        },
        WorkloadSpec {
            address: AddressPattern::Zipf {
                exponent: -1.0,
                block_bytes: 4096,
                scatter: false,
            },
            ..good.clone()
        },
        WorkloadSpec {
            arrival: ArrivalProcess::Poisson { rate_iops: 0.0 },
            ..good.clone()
        },
    ];
    for spec in bad {
        assert!(OpenLoop::new(&spec).is_err(), "{spec:?}");
    }
}

#[test]
fn specs_round_trip_through_toml() {
    let spec = spec(
        AddressPattern::Zipf {
            exponent: 0.99,
            block_bytes: 65_536,
            scatter: true,
        },
        SizeDistribution::Weighted {
            choices: vec![WeightedSize {
                bytes: 8192,
                weight: 1.0,
            }],
        },
    );
    let text = toml::to_string(&spec).unwrap();
    let back: WorkloadSpec = toml::from_str(&text).unwrap();
    assert_eq!(back, spec);
    let written = r#"
        seed = 1
        capacity_bytes = 1073741824
        read_fraction = 0.5
        size = { kind = "uniform_set", sizes_bytes = [4096, 8192] }
        address = { kind = "hot_spot", hot_space_fraction = 0.2, hot_access_fraction = 0.8 }
        arrival = { kind = "poisson", rate_iops = 100.0 }
    "#;
    let parsed: WorkloadSpec = toml::from_str(written).unwrap();
    assert_eq!(parsed.alignment_bytes, 512);
    parsed.validate().unwrap();
}

#[test]
fn synthetic_streams_feed_the_replay_options() {
    let spec = spec(
        AddressPattern::Uniform,
        SizeDistribution::Fixed { bytes: 4096 },
    );
    let options = TraceOptions {
        max_duration_ns: Some(1_000_000_000),
        fold_capacity_bytes: Some(1 << 20),
        ..TraceOptions::default()
    };
    let requests: Vec<_> = options
        .apply(OpenLoop::new(&spec).unwrap().map(Ok))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!((900..1100).contains(&requests.len()), "{}", requests.len());
    assert!(requests
        .iter()
        .all(|r| r.offset_bytes + r.len_bytes <= 1 << 20));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_request_is_inside_and_aligned(
        seed in any::<u64>(),
        pattern in 0usize..5,
        capacity_pages in 64u64..100_000,
        sizes in proptest::collection::vec(1u64..64, 1..4),
    ) {
        let address = all_patterns()[pattern].clone();
        let spec = WorkloadSpec {
            seed,
            capacity_bytes: capacity_pages * 4096,
            size: SizeDistribution::UniformSet {
                sizes_bytes: sizes.iter().map(|s| s * 512).collect(),
            },
            ..spec(address, SizeDistribution::Fixed { bytes: 512 })
        };
        prop_assume!(spec.validate().is_ok());
        for r in OpenLoop::new(&spec).unwrap().take(300) {
            prop_assert_eq!(r.offset_bytes % 4096, 0);
            prop_assert!(r.offset_bytes + r.len_bytes <= spec.capacity_bytes);
        }
    }
}

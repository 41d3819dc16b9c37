//! The metrics recorder end to end, and its serde summary.

use eraid_trace::metrics::{MetricsRecorder, MetricsSummary, WindowBy};
use eraid_trace::TraceRequest;

fn request(arrival_ns: u64, is_read: bool) -> TraceRequest {
    TraceRequest {
        arrival_ns,
        device: 0,
        offset_bytes: 0,
        len_bytes: 4096,
        is_read,
    }
}

#[test]
fn summary_of_a_small_run() {
    let mut recorder = MetricsRecorder::with_windows(WindowBy::Requests { count: 2 });
    // Four requests, one per 10 ms, taking 1, 2, 3 and 10 ms.
    for (i, latency_ms) in [1u64, 2, 3, 10].into_iter().enumerate() {
        let arrival_ns = i as u64 * 10_000_000;
        recorder.record(
            &request(arrival_ns, i % 2 == 0),
            arrival_ns + latency_ms * 1_000_000,
        );
    }
    let summary = recorder.summary();
    assert_eq!((summary.requests, summary.reads, summary.writes), (4, 2, 2));
    assert_eq!(summary.read_bytes, 8192);
    assert_eq!(summary.mean_response_ms, 4.0);
    assert_eq!(summary.max_response_ms, 10.0);
    assert!((summary.p50_response_ms - 2.0).abs() < 0.01);
    assert_eq!(summary.mean_read_response_ms, 2.0);
    assert_eq!(summary.mean_write_response_ms, 6.0);
    // First arrival 0, last completion 40 ms.
    assert_eq!(summary.elapsed_s, 0.04);
    assert!((summary.throughput_iops - 100.0).abs() < 1e-9);

    let windows = recorder.windows().unwrap().windows();
    assert_eq!(windows.len(), 2);
    assert_eq!(windows[0].latency_mean_ns, 1.5e6);
    assert_eq!(windows[1].latency_max_ns, 10_000_000);

    let json = serde_json::to_value(&summary).unwrap();
    for key in [
        "requests",
        "mean_response_ms",
        "p50_response_ms",
        "p90_response_ms",
        "p99_response_ms",
        "max_response_ms",
        "throughput_iops",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let back: MetricsSummary = serde_json::from_value(json).unwrap();
    assert_eq!(back, summary);
    let text = toml::to_string(&summary).unwrap();
    assert_eq!(toml::from_str::<MetricsSummary>(&text).unwrap(), summary);
}

#[test]
fn empty_run_serializes_without_nan() {
    let summary = MetricsRecorder::new().summary();
    let json = serde_json::to_string(&summary).unwrap();
    assert!(!json.contains("null") && !json.contains("NaN"), "{json}");
}

//! `eraid sim` (its library half): a tiny trace on a small RAID-5 prints the
//! mean and p99 response times, as text and as JSON.

mod sim_common;

use eraid_sim::driver::run;
use eraid_sim::sim_command::{report_json, report_text, SimOptions};
use sim_common::tiny_trace;

fn options(trace: std::path::PathBuf) -> SimOptions {
    SimOptions {
        level: "5".into(),
        disks: 4,
        chunk: "64K".into(),
        disk_model: "cheetah-15k5".into(),
        trace: Some(trace),
        trace_format: Some("mqsim".into()),
        workload: None,
        outstanding: None,
        seed: 1,
        max_requests: None,
        time_scale: None,
        member_size: Some("1G".into()),
        host_queue_depth: None,
        host_scheduler: None,
    }
}

#[test]
fn sim_on_a_tiny_trace_prints_mean_and_p99() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, feed) = options(tiny_trace(dir.path(), 60)).plan().expect("plan");
    let report = run(&config, &feed).expect("run");
    let text = report_text(&report);
    assert!(text.contains("mean ") && text.contains("p99 "), "{text}");
    assert!(text.contains("requests        60"), "{text}");
    let json = report_json(&report);
    assert!(json["mean_response_ms"].as_f64().expect("mean") > 0.0);
    assert!(
        json["p99_response_ms"].as_f64().expect("p99")
            >= json["p50_response_ms"].as_f64().expect("p50")
    );
    assert_eq!(json["disks"].as_array().expect("disks").len(), 4);
}

#[test]
fn sim_rejects_bad_options_with_the_option_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = tiny_trace(dir.path(), 5);
    let mut bad_level = options(trace.clone());
    bad_level.level = "7".into();
    assert!(bad_level.plan().unwrap_err().contains("--level"));
    let mut bad_model = options(trace.clone());
    bad_model.disk_model = "floppy".into();
    assert!(bad_model.plan().unwrap_err().contains("--disk-model"));
    let mut both = options(trace);
    both.workload = Some("financial1".into());
    assert!(both.plan().is_err());
}

#[test]
fn a_malformed_trace_line_is_reported_with_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.trace");
    std::fs::write(&path, "1000 0 8 8 1\n2000 0 x 8 1\n").expect("write");
    let (config, feed) = options(path).plan().expect("plan");
    let error = run(&config, &feed).unwrap_err();
    assert!(error.contains("bad.trace:2"), "{error}");
}

/// The host settings of the experiment files are flags of `eraid sim` too:
/// one request at a time behind CFQ keeps the drives' queues short, and
/// the burst waits at the host instead; bad values name the flag.
#[test]
fn sim_host_flags_shape_the_host_and_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = tiny_trace(dir.path(), 200);
    let mut fast = options(trace.clone());
    fast.time_scale = Some(0.01);
    let (config, feed) = fast.plan().expect("plan");
    let free = run(&config, &feed).expect("run");
    let mut serial = fast.clone();
    serial.host_queue_depth = Some(1);
    serial.host_scheduler = Some("cfq".into());
    let (config, feed) = serial.plan().expect("plan");
    let one = run(&config, &feed).expect("run");
    let deepest = |r: &eraid_sim::driver::SimReport| {
        r.disks
            .iter()
            .map(|d| d.max_queue_length)
            .max()
            .expect("disks")
    };
    // One user request at a time (its parity I/O or a bitmap write may
    // share a drive with it); the free-running burst piles up.
    assert!(deepest(&one) <= 2, "one at a time: {}", deepest(&one));
    assert!(deepest(&free) > 4, "free: {}", deepest(&free));
    assert!(
        one.host_waited_requests > 100,
        "{}",
        one.host_waited_requests
    );
    assert_eq!(free.host_waited_requests, 0);
    let mut zero = fast.clone();
    zero.host_queue_depth = Some(0);
    assert!(zero.plan().unwrap_err().contains("--host-queue-depth"));
    let mut closed = fast.clone();
    closed.trace = None;
    closed.workload = Some("financial1".into());
    closed.outstanding = Some(4);
    closed.host_queue_depth = Some(2);
    assert!(closed.plan().unwrap_err().contains("--host-queue-depth"));
    let mut sched = fast;
    sched.host_scheduler = Some("deadline".into());
    assert!(sched.plan().unwrap_err().contains("--host-scheduler"));
}

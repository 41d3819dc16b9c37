//! Same inputs and seed, same bytes out: for one run and for a whole
//! experiment's results folder.

mod sim_common;

use eraid_core::geometry::Level;
use eraid_sim::driver::{run, FeedSpec, SyntheticSource};
use eraid_sim::experiment::{load, run_experiment};
use eraid_sim::report::write_all;
use eraid_trace::synthetic::Preset;
use sim_common::{small_array, tiny_trace};

fn financial_json(seed: u64) -> String {
    let mut config = small_array(Level::Raid5, 4, 512);
    config.seed = seed;
    config.max_requests = Some(400);
    let feed = FeedSpec::Synthetic {
        source: SyntheticSource::Preset(Preset::Financial1),
        outstanding: None,
    };
    serde_json::to_string(&run(&config, &feed).expect("run")).expect("json")
}

#[test]
fn same_seed_gives_identical_report_bytes() {
    let a = financial_json(7);
    assert_eq!(a, financial_json(7));
    assert_ne!(a, financial_json(8), "the seed must matter");
}

#[test]
fn an_experiment_twice_writes_identical_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    tiny_trace(dir.path(), 150);
    let file = dir.path().join("small.toml");
    std::fs::write(
        &file,
        r#"
name = "small"
seed = 3
[array]
disks = 4
member_size = "256M"
[disk]
model = "cheetah-15k5"
[workload]
trace = "tiny.trace"
format = "mqsim"
[run]
window_requests = 20
[[variant]]
name = "raid0"
array.level = 0
[[variant]]
name = "raid5"
array.level = 5
[[variant]]
name = "raid6"
array.level = 6
"#,
    )
    .expect("write experiment");
    let experiment = load(&file).expect("load");
    let out = |name: &str, threads: usize| {
        let result = run_experiment(&experiment, threads, &|_, _, _| {}).expect("run");
        let dir = dir.path().join(name);
        let written = write_all(&experiment, &result, &dir).expect("write");
        (dir, written)
    };
    // Different thread counts too: scheduling must not leak into results.
    let (a, files_a) = out("a", 1);
    let (b, files_b) = out("b", 3);
    assert_eq!(files_a, files_b);
    assert!(files_a.iter().any(|f| f.ends_with(".svg")), "{files_a:?}");
    for name in &files_a {
        let x = std::fs::read(a.join(name)).expect("read a");
        let y = std::fs::read(b.join(name)).expect("read b");
        assert!(x == y, "{name} differs between two runs");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("summary.json")).expect("summary"))
            .expect("json");
    assert_eq!(summary["experiment"], "small");
    assert_eq!(summary["seed"], 3);
    let variants = summary["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 3);
    for key in [
        "requests",
        "mean_response_ms",
        "p50_response_ms",
        "p99_response_ms",
        "max_response_ms",
        "throughput_iops",
        "metadata_writes",
        "device_ios_user",
    ] {
        assert!(variants[1]["metrics"][key].is_number(), "missing {key}");
    }
    assert_eq!(variants[1]["metrics"]["requests"], 150);
}

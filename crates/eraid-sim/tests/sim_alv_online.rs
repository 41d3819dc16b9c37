//! `experiments/alv-online.toml` at a quarter of its size (512 MiB of each
//! drive instead of 2 GiB): ALV must finish sooner than MD-Reshape and
//! give users a lower mean response time under every workload (issue 5's
//! acceptance on the shipped file; the full-size figures are in the
//! README). The file names its traces in `data/traces`, relative to itself.

mod sim_common;

use eraid_sim::experiment::{parse, run_experiment};
use sim_common::metric;

#[test]
fn alv_online_beats_md_reshape_on_both_numbers_under_every_workload() {
    let dir = sim_common::experiments_dir();
    let text = std::fs::read_to_string(dir.join("alv-online.toml")).expect("alv-online.toml");
    assert!(
        text.contains("member_size = \"2G\""),
        "the file's size moved"
    );
    let text = text.replace("member_size = \"2G\"", "member_size = \"512M\"");
    let mut experiment = parse("alv-online.toml", &text, &dir).unwrap_or_else(|e| panic!("{e}"));
    experiment.runs.retain(|r| {
        r.name.starts_with("md-reshape-")
            || (r.name.starts_with("alv-") && !r.name.starts_with("alv-paper-"))
    });
    assert_eq!(experiment.runs.len(), 8, "md-reshape and alv in 4 groups");
    let result = run_experiment(&experiment, 2, &|_, _, _| {}).expect("run");
    for group in ["tpcc", "tpcc-light", "cello", "web"] {
        let (alv, md) = (format!("alv-{group}"), format!("md-reshape-{group}"));
        assert_eq!(metric(&result, &alv, "growth_done"), 1.0, "{alv} finished");
        assert_eq!(metric(&result, &md, "growth_done"), 1.0, "{md} finished");
        for key in ["redistribution_time_s", "mean_response_ms"] {
            let (a, m) = (metric(&result, &alv, key), metric(&result, &md, key));
            assert!(
                a < m,
                "{group}: alv {key} {a:.1} is not below md-reshape's {m:.1}"
            );
        }
    }
}

//! `[failure]` in experiment files: a good table becomes the run's failure
//! plan (and the array's rebuild settings); bad input is an error naming
//! the file, the run and the setting.

use eraid_core::rebuild::config::RebuildStrategy;
use eraid_sim::driver::Target;
use eraid_sim::experiment::parse;

const GOOD: &str = r#"
name = "t"
[array]
level = 5
disks = 4
[disk]
model = "cheetah-15k5"
[workload]
preset = "financial1"
[run]
until = "rebuild-done"
[failure]
member = 2
at_s = 1.5
spare = true
strategy = "pr"
speed_min = 10000
speed_max = "30M"
sample_ms = 250
"#;

fn error(text: &str) -> String {
    parse("exp/t.toml", text, std::path::Path::new(".")).expect_err("should fail")
}

fn assert_names(text: &str, what: &[&str]) {
    let e = error(text);
    assert!(e.starts_with("exp/t.toml:"), "{e}");
    for w in what {
        assert!(e.contains(w), "'{w}' missing from: {e}");
    }
}

#[test]
fn a_good_failure_becomes_the_plan_and_the_rebuild_settings() {
    let e = parse("exp/t.toml", GOOD, std::path::Path::new(".")).expect("parse");
    let config = &e.runs[0].config;
    let plan = config.failure.as_ref().expect("a failure plan");
    assert_eq!(plan.member, 2);
    assert_eq!(plan.at_ns, 1_500_000_000);
    assert!(plan.spare && plan.until_done);
    assert_eq!(plan.sample_ns, 250_000_000);
    assert_eq!(plan.config.strategy, RebuildStrategy::Pr);
    assert_eq!(plan.config.speed_min_kib_s, 10_000);
    assert_eq!(plan.config.speed_max_kib_s, 30 * 1024);
    let Target::Array { options, .. } = &config.target else {
        panic!("an array")
    };
    assert_eq!(options.rebuild, plan.config);
    // The synthetic load runs until the rebuild is done, not 10,000 requests.
    assert_eq!(config.max_requests, None);
}

#[test]
fn a_variant_may_turn_redirection_of_reads_off() {
    let text = format!(
        "{GOOD}\n[[variant]]\nname = \"md-2.6.11\"\nfailure.redirect_reads = false\n[[variant]]\nname = \"default\"\n"
    );
    let e = parse("exp/t.toml", &text, std::path::Path::new(".")).expect("parse");
    let redirect = |run: usize| {
        let plan = e.runs[run].config.failure.as_ref().expect("a failure plan");
        plan.config.redirect_reads
    };
    assert!(!redirect(0), "the paper's PR reconstructs every read");
    assert!(
        redirect(1),
        "by default rebuilt units are read from the replacement"
    );
    assert_names(
        &GOOD.replace("spare = true", "spare = true\nredirect_reads = \"no\""),
        &["redirect_reads"],
    );
}

#[test]
fn a_variant_may_turn_the_failure_off() {
    let text = format!("{GOOD}\n[[variant]]\nname = \"healthy\"\nfailure.enabled = false\nrun.until = \"workload-done\"\n");
    let e = parse("exp/t.toml", &text, std::path::Path::new(".")).expect("parse");
    assert!(e.runs[0].config.failure.is_none());
}

#[test]
fn bad_member_index_is_named() {
    assert_names(
        &GOOD.replace("member = 2", "member = 4"),
        &["run 't'", "[failure] member", "4", "4-disk"],
    );
    assert_names(
        &GOOD.replace("member = 2", "member = -1"),
        &["[failure] member", "-1"],
    );
    assert_names(
        &GOOD.replace("member = 2\n", ""),
        &["[failure] member", "missing"],
    );
}

#[test]
fn negative_time_is_named() {
    assert_names(
        &GOOD.replace("at_s = 1.5", "at_s = -2.0"),
        &["[failure] at_s", "-2"],
    );
}

#[test]
fn unknown_strategy_is_named() {
    assert_names(
        &GOOD.replace("strategy = \"pr\"", "strategy = \"fastest\""),
        &["[failure] strategy", "fastest"],
    );
}

#[test]
fn bad_rates_are_named() {
    assert_names(
        &GOOD.replace("speed_min = 10000", "speed_min = 40000"),
        &["[failure] speed_min", "speed_max"],
    );
    assert_names(
        &GOOD.replace("speed_max = \"30M\"", "speed_max = \"fast\""),
        &["[failure] speed_max", "fast"],
    );
    assert_names(
        &GOOD.replace("sample_ms = 250", "sample_ms = 0"),
        &["[failure] sample_ms"],
    );
    assert_names(
        &GOOD.replace("sample_ms = 250", "window_stripes = 0"),
        &["[failure]", "window_stripes"],
    );
}

#[test]
fn unknown_keys_and_impossible_combinations_are_named() {
    assert_names(&GOOD.replace("spare = true", "spares = true"), &["spares"]);
    assert_names(
        &GOOD.replace("level = 5", "level = 0"),
        &["[failure]", "RAID-0", "no redundancy"],
    );
    assert_names(
        &GOOD.replace("spare = true", "spare = false"),
        &["[run] until", "rebuild-done", "spare"],
    );
    assert_names(
        &format!("{GOOD}\n[growth]\nadd = 1\nstrategy = \"alv\"\n"),
        &["[failure]", "[growth]"],
    );
    assert_names(
        &GOOD.replace("until = \"rebuild-done\"", "until = \"rebuilt\""),
        &["[run] until", "rebuilt"],
    );
}

//! A bad experiment file is an error naming the file and the setting.

mod sim_common;

use eraid_sim::experiment::{load, parse};
use sim_common::experiments_dir;

const GOOD: &str = r#"
name = "t"
[array]
level = 5
disks = 4
[disk]
model = "cheetah-15k5"
[workload]
preset = "financial1"
"#;

fn error(text: &str) -> String {
    parse("exp/t.toml", text, std::path::Path::new(".")).expect_err("should fail")
}

#[test]
fn the_good_file_parses() {
    let e = parse("exp/t.toml", GOOD, std::path::Path::new(".")).expect("parse");
    assert_eq!(e.runs.len(), 1);
    assert_eq!(e.runs[0].config.max_requests, Some(10_000));
}

#[test]
fn unknown_key_names_file_and_field() {
    let e = error(&GOOD.replace("disks = 4", "diskz = 4"));
    assert!(e.starts_with("exp/t.toml:"), "{e}");
    assert!(e.contains("diskz"), "{e}");
}

#[test]
fn wrong_type_names_file_and_field() {
    let e = error(&GOOD.replace("disks = 4", "disks = \"four\""));
    assert!(e.starts_with("exp/t.toml:") && e.contains("disks"), "{e}");
}

#[test]
fn bad_values_name_file_run_and_setting() {
    let e = error(&GOOD.replace("level = 5", "level = 7"));
    assert!(
        e.contains("exp/t.toml") && e.contains("[array] level"),
        "{e}"
    );
    let e = error(&GOOD.replace("cheetah-15k5", "floppy"));
    assert!(
        e.contains("exp/t.toml") && e.contains("[disk] model"),
        "{e}"
    );
    let e = error(&GOOD.replace(
        "preset = \"financial1\"",
        "preset = \"financial1\"\ntrace = \"x\"",
    ));
    assert!(e.contains("[workload]"), "{e}");
    let e = error(&format!("{GOOD}\n[run]\ndata_mode = \"keep\"\n"));
    assert!(e.contains("[run] data_mode"), "{e}");
}

#[test]
fn variant_and_sweep_mistakes_are_named() {
    let e = error(&format!(
        "{GOOD}\n[[variant]]\nname = \"a\"\narray.levle = 0\n"
    ));
    assert!(e.starts_with("exp/t.toml:") && e.contains("levle"), "{e}");
    let e = error(&format!(
        "{GOOD}\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\n"
    ));
    assert!(e.contains("two runs are named 'a'"), "{e}");
    let e = error(&format!(
        "{GOOD}\n[sweep]\nfield = \"array.disks\"\nvalues = [\"x\"]\n"
    ));
    assert!(e.contains("sweep field 'array.disks'"), "{e}");
}

#[test]
fn a_missing_file_is_named() {
    let e = load(std::path::Path::new("/nonexistent/exp.toml")).unwrap_err();
    assert!(e.contains("/nonexistent/exp.toml"), "{e}");
}

#[test]
fn shipped_experiments_load() {
    let levels = load(&experiments_dir().join("raid-levels.toml")).expect("raid-levels.toml");
    let names: Vec<&str> = levels.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "raid0-wsrch",
            "raid0-tpcc",
            "raid5-wsrch",
            "raid5-tpcc",
            "raid6-wsrch",
            "raid6-tpcc"
        ]
    );
    load(&experiments_dir().join("stride.toml")).expect("stride.toml");
}

#[test]
fn bad_cache_settings_name_the_setting() {
    let e = error(&format!("{GOOD}[cache]\npolicy = \"lru\"\n"));
    assert!(e.contains("[cache] policy") && e.contains("\"lru\""), "{e}");
    let e = error(&format!(
        "{GOOD}[cache]\npolicy = \"sc\"\nallocation = \"pages\"\n"
    ));
    assert!(e.contains("[cache] allocation"), "{e}");
    let disk = GOOD.replace("level = 5", "level = \"disk\"");
    let e = error(&format!("{disk}[cache]\npolicy = \"msc-ct\"\n"));
    assert!(e.contains("[cache]") && e.contains("bare disk"), "{e}");
}

#[test]
fn bad_exponential_stride_mean_names_the_setting() {
    let stride = GOOD.replace(
        "preset = \"financial1\"",
        "stride = { op = \"write\", stride_blocks = 64, mean_stride_blocks = 0.5 }",
    );
    let e = error(&stride);
    assert!(
        e.contains("stride.mean_stride_blocks") && e.contains("0.5"),
        "{e}"
    );
    let nan = stride.replace("0.5", "nan");
    assert!(error(&nan).contains("stride.mean_stride_blocks"));
    let good = stride.replace("0.5", "10.0");
    parse("exp/t.toml", &good, std::path::Path::new(".")).expect("mean 10 parses");
}

#[test]
fn disk_destage_is_checked_and_applied() {
    let e = error(&GOOD.replace(
        "model = \"cheetah-15k5\"",
        "model = \"cheetah-15k5\"\ndestage = \"later\"",
    ));
    assert!(
        e.contains("[disk] destage") && e.contains("'later' is not queued or background"),
        "{e}"
    );
    let text = GOOD.replace(
        "model = \"cheetah-15k5\"",
        "model = \"cheetah-15k5\"\ndestage = \"background\"",
    );
    let destage = |text: &str| {
        let e = parse("exp/t.toml", text, std::path::Path::new(".")).expect("parse");
        match &e.runs[0].config.disk {
            eraid_sim::driver::DiskChoice::Hdd(spec) => spec.cache.destage,
            other => panic!("a hard disk expected, got {other:?}"),
        }
    };
    assert_eq!(destage(&text), eraid_sim::disk::Destage::Background);
    assert_eq!(destage(GOOD), eraid_sim::disk::Destage::Queued);
}

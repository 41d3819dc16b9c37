//! The simulator's results do not move when the real data path changes
//! (issue 24, acceptance 6): each experiment file's `summary.json` must be
//! byte-identical to the one recorded in `golden/experiment-summaries.sha256`.
//! CI runs the quick files (about 30 s); `ERAID_GOLDEN_ALL=1` runs every
//! file with a recorded digest (hours on a 2-core machine).
//!
//! A change that is meant to move the simulator's results (a model fix)
//! records the new digests: run the experiments and put the new
//! `sha256sum OUT/NAME/summary.json` lines in the golden file, saying why
//! in the commit.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use support::*;

/// Files that run in seconds, checked on every test run.
const QUICK: [&str; 6] = [
    "fastscale-migration",
    "fastscale-uniformity",
    "stride",
    "raid-levels",
    "msc-ct-stride-sweep",
    "fastscale-after",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Experiment name -> the sha256 (hex) of its recorded summary.json.
fn recorded() -> BTreeMap<String, String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/experiment-summaries.sha256");
    let text = std::fs::read_to_string(&path).expect("the golden digests");
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (digest, name) = line
                .split_once("  ")
                .unwrap_or_else(|| panic!("golden line '{line}' is not 'DIGEST  NAME'"));
            assert_eq!(digest.len(), 64, "golden line '{line}'");
            (name.trim().to_string(), digest.to_string())
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs `name`'s experiment file and returns the sha256 of its summary.json.
fn run(name: &str, dir: &Path) -> String {
    let file = repo().join("experiments").join(format!("{name}.toml"));
    let out = dir.join(name);
    let file_arg = file.to_string_lossy().into_owned();
    let out_arg = out.to_string_lossy().into_owned();
    eraid(
        dir,
        &["experiment", "run", &file_arg, "--out", &out_arg, "--quiet"],
    )
    .expect_ok();
    sha256_hex(&std::fs::read(out.join("summary.json")).expect("summary.json"))
}

#[test]
fn every_recorded_digest_names_a_shipped_experiment() {
    let recorded = recorded();
    for name in recorded.keys() {
        let file = repo().join("experiments").join(format!("{name}.toml"));
        assert!(
            file.exists(),
            "golden digest for {name}, but no {}",
            file.display()
        );
    }
    for name in QUICK {
        assert!(recorded.contains_key(name), "no golden digest for {name}");
    }
}

#[test]
fn quick_experiments_give_the_recorded_summaries() {
    let recorded = recorded();
    let all = std::env::var_os("ERAID_GOLDEN_ALL").is_some();
    let names: Vec<&str> = if all {
        recorded.keys().map(String::as_str).collect()
    } else {
        QUICK.to_vec()
    };
    let scratch = scratch();
    let mut moved = Vec::new();
    for name in names {
        let got = run(name, scratch.path());
        if got != recorded[name] {
            moved.push(format!("{name}: {} recorded, {got} now", recorded[name]));
        }
    }
    assert!(
        moved.is_empty(),
        "the simulator's results moved (summary.json differs):\n{}",
        moved.join("\n")
    );
}

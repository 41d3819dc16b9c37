//! `eraid disk validate` on each of DiskSim 4.0's eleven validation drives
//! (data/disk-models/<drive>/, loaded through its run file) exits 0 and
//! prints a demerit; a bad trace or a missing model is refused with an
//! error naming it.

mod support;

use std::path::PathBuf;

use support::*;

const DRIVES: [&str; 11] = [
    "atlas10k",
    "atlas_III",
    "barracuda",
    "cheetah4LP",
    "cheetah9LP",
    "dec_rz26",
    "hp_c2247a",
    "hp_c2490a",
    "hp_c3323a",
    "ibm18es",
    "st41601n",
];

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disk-models")
}

#[test]
fn every_disksim_validation_drive_validates_and_prints_its_demerit() {
    let scratch = scratch();
    for drive in DRIVES {
        let model = models_dir().join(drive);
        let trace = model.join(format!("{drive}.trace"));
        let model = model.to_str().unwrap();
        let trace = trace.to_str().unwrap();
        let text = eraid(
            scratch.path(),
            &["disk", "validate", "--model", model, "--trace", trace],
        )
        .expect_ok();
        let demerit_ms: f64 = text
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("demerit"))
            .and_then(|rest| rest.trim().strip_suffix(" ms"))
            .unwrap_or_else(|| panic!("{drive}: no demerit line in {:?}", text.stdout))
            .parse()
            .unwrap_or_else(|e| panic!("{drive}: demerit not a number: {e}"));
        let json = eraid(
            scratch.path(),
            &[
                "disk", "validate", "--model", model, "--trace", trace, "--json",
            ],
        )
        .expect_ok()
        .json();
        let exact = json["demerit_ms"].as_f64().unwrap();
        assert!((exact - demerit_ms).abs() < 0.0005, "{drive}: {json}");
        // A real figure: positive and well under the drive's mean service.
        let mean_ms = json["mean_service_ms_measured"].as_f64().unwrap();
        assert!(exact > 0.0 && exact < 0.1 * mean_ms, "{drive}: {json}");
    }
}

#[test]
fn a_bad_trace_line_or_a_missing_model_is_named() {
    let scratch = scratch();
    let dir = scratch.path();
    std::fs::write(
        dir.join("bad.trace"),
        "R Miss 100 8 5000 1000\nX Miss 1 2 3 4\n",
    )
    .unwrap();
    let model = models_dir().join("atlas10k");
    let out = eraid(
        dir,
        &[
            "disk",
            "validate",
            "--model",
            model.to_str().unwrap(),
            "--trace",
            "bad.trace",
        ],
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("bad.trace:2"), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);

    let out = eraid(
        dir,
        &[
            "disk",
            "validate",
            "--model",
            "no-such-model",
            "--trace",
            "bad.trace",
        ],
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("no-such-model"), "{}", out.stderr);
}

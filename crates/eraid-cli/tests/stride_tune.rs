//! The MSC-CT stride benchmark on real members (issue 17): `create` with
//! the msc-ct cache measures S_r_max / S_w_max on the first member (or
//! takes them by hand, or the default with --no-tune) and records them in
//! the superblock; `detail --json` shows them; `serve` uses them; `eraid
//! tune` re-measures a stopped array without changing its data. Bad input
//! is refused, naming what is wrong, and changes nothing.

mod support;

use support::*;

const MEMBERS: [&str; 5] = ["d0", "d1", "d2", "d3", "d4"];
const DATA_OFFSET_BYTES: u64 = 1 << 20;

fn create_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "create",
        "--level",
        "5",
        "--size",
        "16M",
        "--journal",
        "j.img",
        "--journal-size",
        "32M",
        "--cache-size",
        "8M",
    ];
    args.extend_from_slice(extra);
    args.extend(MEMBERS);
    args
}

/// A measured rule, or the default with the reason (a file system that
/// refuses O_DIRECT is not measured).
fn assert_benchmarked(stride: &serde_json::Value, context: &impl std::fmt::Display) {
    for field in ["s_r_max", "s_w_max"] {
        let value = stride[field].as_u64().unwrap_or(0);
        // Strides 1..=16 are measured on 64 KiB strips: at most 17.
        assert!((1..=17).contains(&value), "{field} {value}: {context}");
    }
    match stride["source"].as_str() {
        Some("measured") => {
            let note = stride["note"].as_str().unwrap_or("");
            assert!(note.contains("strides 1 to 16"), "{context}");
        }
        Some("default") => {
            let note = stride["note"].as_str().unwrap_or("");
            assert!(note.contains("O_DIRECT"), "{context}");
        }
        other => panic!("source {other:?}: {context}"),
    }
}

#[test]
fn create_measures_the_rule_records_it_and_serve_uses_it() {
    // On a disk: the benchmark times only members opened with O_DIRECT.
    let scratch = scratch_on_disk();
    let dir = scratch.path();
    let created = eraid(dir, &create_args(&["--cache", "msc-ct"])).expect_ok();
    assert!(
        created.stderr.contains("stride benchmark on"),
        "progress is shown: {created}"
    );
    let detail = detail_json(dir, &MEMBERS);
    let stride = &detail["cache"]["stride"];
    assert_benchmarked(stride, &detail);
    assert!(
        created
            .stdout
            .contains(&format!("S_r_max {}", stride["s_r_max"])),
        "create prints the rule it recorded: {created} / {detail}"
    );

    // By hand: recorded as given, and the served cache uses it.
    std::fs::remove_file(dir.join("j.img")).unwrap();
    let mut args = create_args(&[
        "--cache",
        "msc-ct",
        "--force",
        "--stride-max-read",
        "5",
        "--stride-max-write",
        "3",
    ]);
    eraid(dir, &args).expect_ok();
    let detail = detail_json(dir, &MEMBERS);
    let stride = &detail["cache"]["stride"];
    assert_eq!(
        (&stride["s_r_max"], &stride["s_w_max"], &stride["source"]),
        (&5.into(), &3.into(), &"manual".into()),
        "{detail}"
    );
    let control = dir.join("control.sock").display().to_string();
    let server = Server::start_with(dir, &["--control", &control], &MEMBERS);
    let status = live(dir, &control);
    let served = &status["cache"]["stride"];
    assert_eq!(
        (&served["s_r_max"], &served["s_w_max"]),
        (&5.into(), &3.into()),
        "{status}"
    );
    server.stop();

    // --no-tune: the stated default, said so.
    std::fs::remove_file(dir.join("j.img")).unwrap();
    args = create_args(&["--force", "--no-tune"]);
    let created = eraid(dir, &args).expect_ok();
    assert!(!created.stderr.contains("stride benchmark on"), "{created}");
    let detail = detail_json(dir, &MEMBERS);
    let stride = &detail["cache"]["stride"];
    assert_eq!(
        (&stride["s_r_max"], &stride["s_w_max"], &stride["source"]),
        (&8.into(), &8.into(), &"default".into()),
        "{detail}"
    );
}

/// `tune` re-measures a stopped array: the rule is recorded on every
/// member (events bumped), and the data area is unchanged (the benchmark
/// writes back what it read).
#[test]
fn tune_re_measures_a_stopped_array_without_changing_its_data() {
    let scratch = scratch_on_disk();
    let dir = scratch.path();
    eraid(dir, &create_args(&["--no-tune"])).expect_ok();
    // Data that is not zeroes in the span the benchmark rewrites.
    let d0 = dir.join("d0");
    let pattern: Vec<u8> = (0..4u32 << 20).map(|i| (i % 253) as u8).collect();
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new().write(true).open(&d0).unwrap();
        file.write_all_at(&pattern, DATA_OFFSET_BYTES).unwrap();
    }
    let before = detail_json(dir, &MEMBERS);
    let data_hashes = |dir: &std::path::Path| -> Vec<Vec<u8>> {
        MEMBERS
            .iter()
            .map(|m| std::fs::read(dir.join(m)).unwrap()[DATA_OFFSET_BYTES as usize..].to_vec())
            .collect()
    };
    let data_before = data_hashes(dir);

    let mut args = vec!["tune"];
    args.extend(MEMBERS);
    let tuned = eraid(dir, &args).expect_ok();
    assert!(tuned.stderr.contains("stride benchmark on"), "{tuned}");
    assert!(tuned.stdout.contains("recorded stride rule"), "{tuned}");
    let after = detail_json(dir, &MEMBERS);
    assert_benchmarked(&after["cache"]["stride"], &after);
    assert_eq!(
        after["events"].as_u64().unwrap(),
        before["events"].as_u64().unwrap() + 1,
        "{after}"
    );
    assert!(data_hashes(dir) == data_before, "tune changed the data");

    let mut args = vec!["tune", "--stride-max-read", "12", "--stride-max-write", "1"];
    args.extend(MEMBERS);
    eraid(dir, &args).expect_ok();
    let after = detail_json(dir, &MEMBERS);
    let stride = &after["cache"]["stride"];
    assert_eq!(
        (&stride["s_r_max"], &stride["s_w_max"], &stride["source"]),
        (&12.into(), &1.into(), &"manual".into()),
        "{after}"
    );
    // Every member carries it: any four of five still assemble with it.
    let detail = detail_json(dir, &MEMBERS[1..]);
    assert_eq!(detail["cache"]["stride"]["s_r_max"], 12, "{detail}");
}

#[test]
fn bad_stride_flags_and_tune_targets_are_refused_changing_nothing() {
    let scratch = scratch();
    let dir = scratch.path();
    // Flags refused before anything is created.
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--cache", "sc", "--no-tune"],
            vec!["--no-tune", "only the msc-ct cache"],
        ),
        (
            vec![
                "--cache",
                "pbgc",
                "--stride-max-read",
                "4",
                "--stride-max-write",
                "4",
            ],
            vec!["--stride-max-read", "only the msc-ct cache"],
        ),
        (vec!["--stride-max-read", "4"], vec!["--stride-max-write"]),
        (
            vec!["--stride-max-read", "0", "--stride-max-write", "4"],
            vec!["--stride-max-read", "0"],
        ),
        (
            vec!["--stride-max-read", "4", "--stride-max-write", "5000"],
            vec!["--stride-max-write", "5000"],
        ),
        (
            vec![
                "--no-tune",
                "--stride-max-read",
                "4",
                "--stride-max-write",
                "4",
            ],
            vec!["--no-tune", "cannot be used with"],
        ),
    ];
    for (flags, names) in cases {
        rejected(dir, &create_args(&flags), &names);
    }
    let mut plain = vec!["create", "--level", "5", "--size", "16M", "--no-tune"];
    plain.extend(MEMBERS);
    rejected(dir, &plain, &["--no-tune", "only the msc-ct cache", "none"]);

    // tune: on an array without a cache, through a control socket, with a
    // member missing, with bad values.
    let mut plain = vec!["create", "--level", "5", "--size", "16M"];
    plain.extend(MEMBERS);
    eraid(dir, &plain).expect_ok();
    let mut args = vec!["tune"];
    args.extend(MEMBERS);
    rejected(dir, &args, &["no write-back cache", "nothing changed"]);
    rejected(
        dir,
        &["tune", "--control", "c.sock"],
        &["c.sock", "stopped", "eraid tune MEMBERS"],
    );
    for name in MEMBERS {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    eraid(dir, &create_args(&["--no-tune"])).expect_ok();
    let mut args = vec!["tune"];
    args.extend(&MEMBERS[..4]);
    rejected(dir, &args, &["slot 4", "missing", "nothing changed"]);
    let mut args = vec!["tune", "--stride-max-read", "7"];
    args.extend(MEMBERS);
    rejected(dir, &args, &["--stride-max-write"]);
    let mut args = vec!["tune", "--stride-max-read", "x", "--stride-max-write", "2"];
    args.extend(MEMBERS);
    rejected(dir, &args, &["--stride-max-read", "x"]);
    rejected(dir, &["tune"], &["MEMBERS"]);
}

//! A CRS (Cauchy Reed-Solomon) array through the built binary: create with
//! --data/--parity (default w), serve, write random data over NBD (full
//! stripes by nbdcopy, partial chunks by qemu-io), read back, `detail
//! --json` shows its shape, `check` finds 0 mismatches and `check --repair`
//! fixes a damaged chunk; with two members removed (several pairs) the data
//! reads back and takes partial writes. Bad flags and `grow` are refused
//! without changing anything.

mod support;

use std::path::Path;
use std::time::Duration;
use support::*;

const DATA_BYTES: u64 = 24 * MIB;
const MEMBERS: [&str; 6] = ["d0", "d1", "d2", "d3", "d4", "d5"];

fn create_4_plus_2(dir: &Path) {
    let mut args = vec![
        "--level", "crs", "--data", "4", "--parity", "2", "--size", "48M",
    ];
    args.extend_from_slice(&MEMBERS);
    create(dir, &args);
}

fn check(dir: &Path, repair: bool, members: &[&str]) -> Out {
    let mut args = vec!["check"];
    if repair {
        args.push("--repair");
    }
    args.extend_from_slice(members);
    eraid(dir, &args)
}

/// Writes `pattern` over `len` bytes at `offset` through NBD (a partial
/// chunk: CRS rewrites its stripe's whole parity chunks) and in the model.
fn patch(dir: &Path, uri: &str, model: &mut [u8], offset: u64, len: u64, pattern: u8) {
    let command = format!("write -P {pattern} {offset} {len}");
    run_tool(dir, "qemu-io", &["-f", "raw", uri, "-c", &command]).expect_ok();
    model[offset as usize..(offset + len) as usize].fill(pattern);
}

fn read_back_equals(dir: &Path, uri: &str, model: &[u8], what: &str) {
    let _ = std::fs::remove_file(dir.join("readback.bin"));
    run_tool(dir, "nbdcopy", &[uri, "readback.bin"]).expect_ok();
    let got = std::fs::read(dir.join("readback.bin")).unwrap();
    assert!(
        got.len() >= model.len() && got[..model.len()] == *model,
        "{what}: the array differs from what was written"
    );
}

#[test]
fn a_crs_array_serves_checks_repairs_and_survives_two_missing_members() {
    if !require_tools("crs array", &["nbdcopy", "qemu-io"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create_4_plus_2(dir);
    let detail = detail_json(dir, &MEMBERS);
    assert_eq!(detail["level"], "crs", "{detail:#}");
    assert_eq!(detail["data_members"], 4, "{detail:#}");
    assert_eq!(detail["parity_members"], 2, "{detail:#}");
    // Jerasure's default for k + m = 6: the smallest w with 6 <= 2^w.
    assert_eq!(detail["w"], 3, "{detail:#}");
    assert_eq!(detail["chunk_bytes"], 3 * 16384, "{detail:#}");

    write_random(&dir.join("data.bin"), DATA_BYTES, 41);
    let mut model = std::fs::read(dir.join("data.bin")).unwrap();
    let server = Server::start(dir, &MEMBERS);
    run_tool(dir, "nbdcopy", &["data.bin", &server.uri]).expect_ok();
    // Partial chunks: inside one packet, across packets, across chunks.
    for (offset, len, pattern) in [
        (1536, 2560, 0xab),
        (20480, 9000 / 512 * 512, 0x5c),
        (49152 - 1024, 4096, 0x11),
    ] {
        patch(dir, &server.uri, &mut model, offset, len, pattern);
    }
    read_back_equals(dir, &server.uri, &model, "healthy");
    server.stop();
    let out = check(dir, false, &MEMBERS);
    assert!(out.ok() && out.stdout.contains("0 mismatches"), "{out}");

    // A damaged chunk on d2 (in the first stripes' data area): check finds
    // it, --repair rewrites parity, the next check is clean.
    flip_bytes(&dir.join("d2"), MIB + 4096, 512);
    let out = check(dir, false, &MEMBERS);
    assert!(!out.ok() && !out.stdout.contains(" 0 mismatches"), "{out}");
    let out = check(dir, true, &MEMBERS);
    assert!(out.stdout.contains("mismatch"), "{out}");
    let out = check(dir, false, &MEMBERS);
    assert!(out.ok() && out.stdout.contains("0 mismatches"), "{out}");
    // The repair kept d2's (damaged) data and made parity agree with it.
    let server = Server::start(dir, &MEMBERS);
    run_tool(dir, "nbdcopy", &[&server.uri, "repaired.bin"]).expect_ok();
    server.stop();
    model = std::fs::read(dir.join("repaired.bin")).unwrap();

    // Any two members away: data members, parity members, mixed (member
    // roles rotate per stripe, so each pair loses data somewhere).
    let away = dir.join("away");
    std::fs::create_dir(&away).unwrap();
    for (round, pair) in [[0usize, 1], [2, 5], [3, 4]].into_iter().enumerate() {
        for &i in &pair {
            std::fs::rename(dir.join(MEMBERS[i]), away.join(MEMBERS[i])).unwrap();
        }
        let survivors: Vec<&str> = (0..6)
            .filter(|i| !pair.contains(i))
            .map(|i| MEMBERS[i])
            .collect();
        let server = Server::start(dir, &survivors);
        let what = format!("members {pair:?} missing");
        read_back_equals(dir, &server.uri, &model, &what);
        // Degraded partial writes, then read back through the survivors.
        let pattern = 0x21 + round as u8;
        patch(dir, &server.uri, &mut model, 7 * 512, 3 * 512, pattern);
        patch(
            dir,
            &server.uri,
            &mut model,
            300_000 / 512 * 512,
            70_000 / 512 * 512,
            pattern,
        );
        read_back_equals(dir, &server.uri, &model, &format!("{what}, after writes"));
        server.stop();
        // Put them back as they were: written without, they are stale, so
        // start over from a fresh copy of the survivors' view: re-create
        // the array and copy the model in.
        for &i in &pair {
            std::fs::rename(away.join(MEMBERS[i]), dir.join(MEMBERS[i])).unwrap();
        }
        let mut args = vec![
            "create", "--level", "crs", "--data", "4", "--parity", "2", "--force",
        ];
        args.extend_from_slice(&MEMBERS);
        eraid(dir, &args).expect_ok();
        std::fs::write(dir.join("model.bin"), &model).unwrap();
        let mut server = Server::start(dir, &MEMBERS);
        run_tool(dir, "nbdcopy", &["model.bin", &server.uri]).expect_ok();
        // Members that held data are resynchronised in full on the first
        // start after `create --force`; stopped before that ends, the next
        // round's degraded start is (rightly) refused as unsynchronised.
        server.wait_for_log("ResyncFinished", Duration::from_secs(300));
        server.stop();
    }
    let out = check(dir, false, &MEMBERS);
    assert!(out.ok() && out.stdout.contains("0 mismatches"), "{out}");
}

#[test]
fn bad_crs_flags_are_refused_and_change_nothing() {
    let scratch = scratch();
    let dir = scratch.path();
    let with = |extra: &[&'static str]| {
        let mut args = vec!["create", "--size", "48M"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&MEMBERS);
        args
    };
    rejected(
        dir,
        &with(&["--level", "crs", "--data", "4"]),
        &["--parity"],
    );
    rejected(
        dir,
        &with(&["--level", "crs", "--data", "4", "--parity", "1"]),
        &["--data 4 --parity 1", "6 were named"],
    );
    rejected(
        dir,
        &with(&["--level", "crs", "--data", "4", "--parity", "2", "--w", "2"]),
        &["w = 2", "use w >= 3"],
    );
    rejected(
        dir,
        &with(&["--level", "crs", "--data", "4", "--parity", "2", "--w", "9"]),
        &["w = 9"],
    );
    rejected(
        dir,
        &with(&[
            "--level", "crs", "--data", "4", "--parity", "2", "--chunk", "64K",
        ]),
        &["65536", "w = 3 packets"],
    );
    rejected(
        dir,
        &with(&["--level", "crs", "--data", "0", "--parity", "6"]),
        &["at least 1 data"],
    );
    rejected(
        dir,
        &with(&["--level", "6", "--parity", "2"]),
        &["--parity", "crs only"],
    );
}

/// A CRS array grows by scale-crs or epu only: a RAID strategy is refused,
/// naming both, before anything is read or written.
#[test]
fn growing_a_crs_array_with_a_raid_strategy_is_refused_and_changes_nothing() {
    let scratch = scratch();
    let dir = scratch.path();
    create_4_plus_2(dir);
    blank(dir, "d6", 48 * MIB);
    let mut args = vec!["grow"];
    args.extend_from_slice(&MEMBERS);
    args.extend_from_slice(&["--add", "d6", "--strategy", "alv"]);
    rejected(dir, &args, &["alv grows RAID-5", "scale-crs or epu"]);
}

/// Served: `detail --control` shows the shape, `grow --control` with a
/// RAID strategy is refused before it asks the server anything, and the
/// server keeps serving.
#[test]
fn a_served_crs_array_shows_its_shape_and_refuses_a_raid_growth() {
    let scratch = scratch();
    let dir = scratch.path();
    create_4_plus_2(dir);
    blank(dir, "d6", 48 * MIB);
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &MEMBERS);
    let status = live(dir, "ctl.sock");
    assert_eq!(status["level"], "crs", "{status:#}");
    assert_eq!(status["data_members"], 4, "{status:#}");
    assert_eq!(status["parity_members"], 2, "{status:#}");
    assert_eq!(status["w"], 3, "{status:#}");
    let text = eraid(dir, &["detail", "--control", "ctl.sock"]).expect_ok();
    assert!(text.stdout.contains("CRS (k = 4, m = 2, w = 3)"), "{text}");
    let before = file_hash(&dir.join("d6"));
    let out = eraid(
        dir,
        &[
            "grow",
            "--control",
            "ctl.sock",
            "--add",
            "d6",
            "--strategy",
            "fastscale",
        ],
    );
    assert!(
        !out.ok()
            && out
                .stderr
                .contains("fastscale grows RAID-0; for CRS use scale-crs or epu"),
        "{out}"
    );
    assert_eq!(
        before,
        file_hash(&dir.join("d6")),
        "a refused growth wrote d6"
    );
    assert!(server.running(), "{}", server.log_text());
    assert!(live(dir, "ctl.sock")["reshape"].is_null());
    server.stop();
}

/// The optimised post-scaling matrix, twice: a 4+2 array holding data
/// grows offline by epu then by scale-crs, each `--matrix optimized`;
/// `detail --json` names the matrix and both growths, `check` is clean,
/// the data reads back, and with two members away (old, the newest) too.
/// A bad `--matrix` is refused, naming it, and changes nothing.
#[test]
fn a_crs_array_grows_twice_with_the_optimized_matrix() {
    if !require_tools("crs grows twice", &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create_4_plus_2(dir);
    write_random(&dir.join("data.bin"), DATA_BYTES, 43);
    let model = std::fs::read(dir.join("data.bin")).unwrap();
    let server = Server::start(dir, &MEMBERS);
    run_tool(dir, "nbdcopy", &["data.bin", &server.uri]).expect_ok();
    server.stop();
    blank(dir, "d6", 48 * MIB);
    blank(dir, "d7", 48 * MIB);
    let mut bad = vec!["grow"];
    bad.extend_from_slice(&MEMBERS);
    bad.extend_from_slice(&["--add", "d6", "--strategy", "epu", "--matrix", "cauchy"]);
    rejected(dir, &bad, &["--matrix", "cauchy", "jerasure or optimized"]);

    let all: Vec<&str> = MEMBERS.iter().copied().chain(["d6", "d7"]).collect();
    for (members, added, strategy) in [(6, "d6", "epu"), (7, "d7", "scale-crs")] {
        let mut args = vec!["grow"];
        args.extend_from_slice(&all[..members]);
        args.extend_from_slice(&["--add", added, "--strategy", strategy]);
        args.extend_from_slice(&["--matrix", "optimized"]);
        eraid(dir, &args).expect_ok();
        let detail = detail_json(dir, &all[..members + 1]);
        assert_eq!(detail["data_members"], members - 1, "{detail:#}");
        assert_eq!(detail["crs_matrix"], "optimized", "{detail:#}");
        let growths = detail["crs_growths"].as_array().unwrap();
        assert_eq!(growths.len(), members - 5, "{detail:#}");
        assert!(
            growths.iter().all(|g| g["matrix"] == "optimized"),
            "{detail:#}"
        );
        let out = check(dir, false, &all[..members + 1]);
        assert!(out.ok() && out.stdout.contains("0 mismatches"), "{out}");
    }
    let server = Server::start(dir, &all);
    read_back_equals(dir, &server.uri, &model, "after two growths");
    server.stop();
    let survivors: Vec<&str> = all
        .iter()
        .copied()
        .filter(|m| *m != "d1" && *m != "d7")
        .collect();
    let server = Server::start(dir, &survivors);
    read_back_equals(dir, &server.uri, &model, "d1 and d7 missing");
    server.stop();
}

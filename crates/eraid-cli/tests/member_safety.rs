//! Members that are missing, shrink or are not files: `check` with a member
//! left off changes nothing, a member shrinking while served is failed (not
//! read as zeroes), and a FIFO named as a member is refused at once.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// `check` is read-only in effect: with a member left off the command line
/// it must refuse (a degraded array has nothing to compare), name the
/// member, and leave every superblock byte-identical, so the array stays
/// whole.
#[test]
fn check_with_a_member_left_off_refuses_and_changes_nothing() {
    let s = scratch();
    let d = s.path();
    create(
        d,
        &["--level", "10", "--size", "64M", "d0", "d1", "d2", "d3"],
    );
    let all = ["d0", "d1", "d2", "d3"];
    let before = metadata_areas(d, &all);
    let out = rejected(d, &["check", "d1", "d2", "d3"], &["member 0", "d0"]);
    assert!(
        out.stderr.contains("degraded"),
        "the refusal should say why: {out}"
    );
    assert!(
        metadata_areas(d, &all) == before,
        "`check d1 d2 d3` changed a member's metadata area"
    );
    // A member of another array in place of d0: refused too.
    create(
        d,
        &["--level", "10", "--size", "64M", "x0", "x1", "x2", "x3"],
    );
    rejected(
        d,
        &["check", "x0", "d1", "d2", "d3"],
        &["x0", "another array"],
    );
    assert!(
        metadata_areas(d, &all) == before,
        "`check x0 d1 d2 d3` changed a member's metadata area"
    );
    let detail = detail_json(d, &all);
    for member in detail["members"].as_array().unwrap() {
        assert_eq!(
            member["state"], "active",
            "after the refused check: {detail:#}"
        );
    }
    // With every member the check runs, and finds nothing.
    let out = eraid(d, &["check", "d0", "d1", "d2", "d3"]).expect_ok();
    assert!(out.stdout.contains("0 mismatches"), "{out}");
}

/// A member truncated under a running server: reads past its new end are
/// I/O errors that fail it, so everything reads back right (degraded, from
/// parity) instead of as zeroes, and the member is no longer active.
#[test]
fn a_member_that_shrinks_while_served_is_failed_and_data_reads_back() {
    let test = "a_member_that_shrinks_while_served_is_failed_and_data_reads_back";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let s = scratch();
    let d = s.path();
    let members = ["d0", "d1", "d2", "d3"];
    create(
        d,
        &["--level", "5", "--size", "64M", "d0", "d1", "d2", "d3"],
    );
    let data_bytes = 150 * MIB;
    write_random(&d.join("data.bin"), data_bytes, 25);
    let server = Server::start_with(d, &["--control", "ctl.sock"], &members);
    run_tool(d, "nbdcopy", &["--flush", "data.bin", &server.uri]).expect_ok();
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("d2"))
        .unwrap()
        .set_len(32 * MIB)
        .unwrap();
    // The whole array (189 MiB); its first 150 MiB are compared.
    run_tool(d, "nbdcopy", &[&server.uri, "back.bin"]).expect_ok();
    assert_same_prefix(
        &d.join("data.bin"),
        &d.join("back.bin"),
        data_bytes,
        "read back after d2 shrank",
    );
    let live_status = live(d, "ctl.sock");
    let states: Vec<&str> = live_status["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap())
        .collect();
    assert_eq!(states[2], "faulty", "the shrunk member: {live_status:#}");
    assert!(
        server.log_text().contains("shrank"),
        "the log should say why d2 failed:\n{}",
        server.log_text()
    );
    // Writes after the failure go around d2 and never extend it again.
    run_tool(d, "nbdcopy", &["--flush", "data.bin", &server.uri]).expect_ok();
    assert_eq!(std::fs::metadata(d.join("d2")).unwrap().len(), 32 * MIB);
    server.stop();
    let detail = detail_json(d, &["d0", "d1", "d3"]);
    assert_ne!(detail["members"][2]["state"], "active", "{detail:#}");
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// A FIFO named as a member must be refused at once by every command (an
/// open() of a FIFO blocks until a peer appears, deaf to SIGTERM), naming
/// it and saying what it is.
#[test]
fn a_fifo_member_is_refused_at_once() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    create(d, &["--level", "5", "--size", "8M", "x", "y", "z"]);
    mkfifo(&d.join("fifo"));
    let cases: [&[&str]; 5] = [
        &["serve", "--socket", "s.sock", "a", "b", "fifo"],
        &["check", "a", "b", "fifo"],
        &[
            "create", "--level", "5", "--force", "--size", "8M", "x", "y", "fifo",
        ],
        &["grow", "a", "b", "c", "--add", "fifo"],
        &["serve", "--socket", "s.sock", "fifo", "a", "b"],
    ];
    for args in cases {
        let before = snapshot(d);
        let mut child = Command::new(eraid_bin())
            .args(args)
            .current_dir(d)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let Some(status) = wait_timeout(&mut child, Duration::from_secs(10)) else {
            signal(&child, SIGKILL);
            let _ = child.wait();
            panic!("`eraid {}` blocked on the FIFO", args.join(" "));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(
            status.code(),
            Some(2),
            "`eraid {}`: {stderr}",
            args.join(" ")
        );
        assert!(
            stderr.contains("fifo") && stderr.contains("FIFO"),
            "`eraid {}` should name the FIFO: {stderr}",
            args.join(" ")
        );
        assert_eq!(
            before,
            snapshot(d),
            "`eraid {}` changed files",
            args.join(" ")
        );
    } // detail only reads: it shows the array and the FIFO as unusable, at once.
    let before = snapshot(d);
    let out = run(d, eraid_bin(), &["detail", "a", "b", "fifo"]);
    assert!(
        out.ok() && out.stdout.contains("fifo") && out.stdout.contains("not a regular file"),
        "{out}"
    );
    assert_eq!(before, snapshot(d), "detail changed files");
}

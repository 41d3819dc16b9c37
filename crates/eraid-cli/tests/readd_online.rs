//! Re-add through the real binary (issue 15 acceptance 4): a 4-member
//! RAID-5 of 256 MiB members is served without d2 and 8 MiB are written;
//! served again with d2, d2 is re-added from the write-intent bitmap and
//! only the marked regions are copied (`detail --json` shows the bytes,
//! under a quarter of a member); the data reads back equal (also with d0
//! left out, so every stripe needs d2) and `eraid check` finds 0
//! mismatches. Then `eraid fail d1` and `eraid add d1` on the served array:
//! d1 is re-added the same way (MD's `--re-add`).

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::*;

const MEMBER_BYTES: u64 = 256 * MIB;
const DATA_BYTES: u64 = 8 * MIB;

fn copy_in(dir: &std::path::Path, uri: &str, file: &str) {
    let out = run(dir, tool("nbdcopy"), &["--flush", file, uri]);
    assert!(out.ok(), "nbdcopy {file}: {out}");
}

fn read_back(dir: &std::path::Path, uri: &str, what: &str) {
    let _ = std::fs::remove_file(dir.join("readback.bin"));
    let out = run(dir, tool("nbdcopy"), &[uri, "readback.bin"]);
    assert!(out.ok(), "{what}: reading back: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        what,
    );
}

/// Waits for the rebuild to be done (at most 60 s: a re-add copies
/// little); returns the final status.
fn rebuild_done(test: &str, dir: &std::path::Path, server: &mut Server) -> Value {
    let started = Instant::now();
    loop {
        let status = live(dir, "ctl.sock");
        if status["rebuild"]["state"] == "done" {
            return status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60) && server.running(),
            "{test}: the rebuild did not finish: {:#}\n{}",
            status["rebuild"],
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn assert_re_added(test: &str, status: &Value, slot: u64) -> u64 {
    let rebuild = &status["rebuild"];
    assert_eq!(rebuild["state"], "done", "{test}: {status:#}");
    assert_eq!(rebuild["kind"], "re-add", "{test}: {status:#}");
    assert_eq!(rebuild["target"]["slot"], slot, "{test}: {status:#}");
    let copied = rebuild["rebuilt_bytes"].as_u64().expect("rebuilt_bytes");
    assert!(
        copied > 0 && copied * 4 < MEMBER_BYTES,
        "{test}: copied {copied} bytes of a {MEMBER_BYTES}-byte member: {status:#}"
    );
    assert_eq!(status["degraded"], false, "{test}: {status:#}");
    assert!(
        status["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["state"] == "active"),
        "{test}: {status:#}"
    );
    copied
}

#[test]
fn a_member_served_around_is_re_added_copying_only_what_was_written() {
    let test = "issue 15 acceptance 4 (re-add, RAID-5 4 x 256 MiB)";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    eraid(
        dir,
        &[
            "create", "--level", "5", "--chunk", "64K", "--size", "256M", "d0", "d1", "d2", "d3",
        ],
    )
    .expect_ok();
    write_random(&dir.join("data.bin"), DATA_BYTES, 1504);

    // Without d2: 8 MiB written, then a clean stop.
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d1", "d3"]);
    copy_in(dir, &server.uri, "data.bin");
    // The server does not hold d2's file: adding it back is refused, with
    // the way that works.
    let refused = eraid(dir, &["add", "d2", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("serve again naming every member"),
        "{test}: {refused}"
    );
    // Longer than the bitmap's 5 s idle delay: the marks must stay anyway.
    std::thread::sleep(Duration::from_secs(6));
    server.stop();
    let offline = detail_json(dir, &["d0", "d1", "d2", "d3"]);
    assert_eq!(offline["state"], "clean, degraded", "{test}: {offline:#}");
    assert_eq!(
        offline["members"][2]["state"], "re-addable",
        "{test}: {offline:#}"
    );

    // With d2: re-added from the bitmap.
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d1", "d2", "d3"]);
    assert!(
        server
            .log_text()
            .contains("re-added from the write-intent bitmap"),
        "{test}: {}",
        server.log_text()
    );
    let status = rebuild_done(test, dir, &mut server);
    let copied = assert_re_added(test, &status, 2);
    eprintln!("{test}: d2 re-added, {copied} bytes copied");
    read_back(dir, &server.uri, &format!("{test}: after the re-add"));
    assert_check_clean(test, dir);

    // MD's --fail then --re-add on the served array, while it is written.
    eraid(dir, &["fail", "d1", "--control", "ctl.sock"]).expect_ok();
    copy_in(dir, &server.uri, "data.bin");
    let refused = eraid(dir, &["add", "--spare", "d1", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("not as a spare"),
        "{test}: {refused}"
    );
    let out = eraid(dir, &["add", "d1", "--control", "ctl.sock"]).expect_ok();
    assert!(
        out.stdout.contains("re-added from the write-intent bitmap"),
        "{test}: {out}"
    );
    let status = rebuild_done(test, dir, &mut server);
    assert_re_added(test, &status, 1);
    let refused = eraid(dir, &["add", "d1", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("nothing to add back"),
        "{test}: {refused}"
    );
    read_back(
        dir,
        &server.uri,
        &format!("{test}: after the second re-add"),
    );
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert_eq!(check.code(), Some(0), "{test}: {check}");
    server.stop();

    // d1 and d2 alone carry their chunks: without d0 every stripe needs
    // one of them reconstructed or read, and all must be right.
    let server = Server::start(dir, &["d1", "d2", "d3"]);
    read_back(dir, &server.uri, &format!("{test}: without d0"));
    server.stop();
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

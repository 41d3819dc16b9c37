//! Rebuild through the real binary (issue 15 acceptance 2, at 64 MiB per
//! member): a served 4-member RAID-5 with a hot spare; while `nbdcopy`
//! writes random data, `eraid fail d1 --control ctl.sock`; the spare takes
//! over and is rebuilt (`detail --json` shows the rebuild, then 4 active
//! members and no spare); the data reads back equal and `eraid check`
//! finds 0 mismatches. Bad requests on the way are refused.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const MEMBER_BYTES: u64 = 64 * MIB;
const DATA_BYTES: u64 = 120 * MIB;

#[test]
fn a_spare_takes_over_a_failed_member_while_nbdcopy_writes() {
    let test = "issue 15 acceptance 2 (RAID-5 4 + spare, 64 MiB)";
    if !require_tools(test, &["nbdcopy", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    eraid(
        dir,
        &[
            "create", "--level", "5", "--chunk", "64K", "--size", "64M", "d0", "d1", "d2", "d3",
        ],
    )
    .expect_ok();
    blank(dir, "d4", MEMBER_BYTES);
    blank(dir, "small", MEMBER_BYTES / 2);
    write_random(&dir.join("data.bin"), DATA_BYTES, 1502);
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d1", "d2", "d3"]);

    // Refused before anything changes: a replacement on a healthy array,
    // a spare too small, failing a file that is no member.
    let refused = eraid(dir, &["add", "d4", "--control", "ctl.sock"]);
    assert_eq!(refused.code(), Some(2), "{test}: {refused}");
    assert!(refused.stderr.contains("--spare"), "{test}: {refused}");
    let refused = eraid(dir, &["add", "--spare", "small", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("too small"),
        "{test}: {refused}"
    );
    let refused = eraid(dir, &["fail", "small", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("not a member"),
        "{test}: {refused}"
    );

    // The spare, and rate settings that keep the rebuild running while
    // nbdcopy writes (below the floor it does not yield to users).
    // A strategy that does not exist is refused by name, before anything.
    let refused = eraid(
        dir,
        &[
            "add",
            "--spare",
            "--strategy",
            "fast",
            "d4",
            "--control",
            "ctl.sock",
        ],
    );
    assert!(
        !refused.ok() && refused.stderr.contains("pr, dor, pro, pro-dor"),
        "{test}: {refused}"
    );
    assert_eq!(live(dir, "ctl.sock")["spare_count"], 0, "{test}");
    let refused = eraid(
        dir,
        &["rebuild", "set", "--hot-zone", "0", "--control", "ctl.sock"],
    );
    assert!(
        !refused.ok() && refused.stderr.contains("hot_zone_bytes must be positive"),
        "{test}: {refused}"
    );
    // Settings given before any failure are kept for the next rebuild,
    // and the answer says no rebuild runs (not "rebuild done of nothing").
    let out = eraid(
        dir,
        &[
            "rebuild",
            "set",
            "--time-slice-ms",
            "100",
            "--control",
            "ctl.sock",
        ],
    )
    .expect_ok();
    assert!(
        out.stdout.contains("no rebuild running") && !out.stdout.contains("done"),
        "{test}: {out}"
    );
    let out = eraid(
        dir,
        &[
            "add",
            "--spare",
            "--strategy",
            "pr",
            "d4",
            "--control",
            "ctl.sock",
        ],
    )
    .expect_ok();
    assert!(out.stdout.contains("hot spare"), "{test}: {out}");
    // PRO on top of PR (the rate settings apply to it).
    eraid(
        dir,
        &[
            "rebuild",
            "set",
            "--strategy",
            "pro",
            "--speed-min",
            "8000",
            "--speed-max",
            "16000",
            "--control",
            "ctl.sock",
        ],
    )
    .expect_ok();
    let status = live(dir, "ctl.sock");
    assert_eq!(status["spare_count"], 1, "{test}: {status:#}");
    assert_eq!(
        member_names_and_states(&status).last().unwrap(),
        &("d4".to_string(), "spare".to_string())
    );

    let mut writer = spawn_repeated_writer(dir, &server.uri, 8);
    std::thread::sleep(Duration::from_millis(200));
    let out = eraid(dir, &["fail", "d1", "--control", "ctl.sock"]).expect_ok();
    assert!(out.stdout.contains("a spare took over"), "{test}: {out}");
    assert!(
        writer.try_wait().unwrap().is_none(),
        "{test}: nbdcopy finished before the failure; nothing ran during the rebuild"
    );
    // During the rebuild: d4 in slot 1, rebuilding; failing a second member
    // of the RAID-5 now would lose data.
    let during = live(dir, "ctl.sock");
    let rebuild = &during["rebuild"];
    assert_eq!(rebuild["state"], "running", "{test}: {during:#}");
    assert_eq!(rebuild["strategy"], "pro", "{test}: {during:#}");
    assert_eq!(rebuild["target"]["slot"], 1, "{test}: {during:#}");
    assert_eq!(
        member_names_and_states(&during)[1],
        ("d4".to_string(), "rebuilding".to_string()),
        "{test}: {during:#}"
    );
    let refused = eraid(dir, &["fail", "d2", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("would lose data"),
        "{test}: {refused}"
    );

    let status = wait_timeout(&mut writer, Duration::from_secs(120)).expect("nbdcopy finishes");
    assert!(
        status.success(),
        "{test}: nbdcopy failed\n{}",
        server.log_text()
    );
    let wait = rebuild_wait_ok(test, dir, &server);
    assert!(wait.stdout.contains("rebuild done"), "{test}: {wait}");

    let after = live(dir, "ctl.sock");
    let rebuild = &after["rebuild"];
    assert_eq!(rebuild["state"], "done", "{test}: {after:#}");
    assert_eq!(rebuild["rebuilt_bytes"], rebuild["total_bytes"], "{test}");
    assert_eq!(after["spare_count"], 0, "{test}: {after:#}");
    assert_eq!(after["degraded"], false, "{test}: {after:#}");
    let members = member_names_and_states(&after);
    assert_eq!(members.len(), 4, "{test}: {after:#}");
    assert!(
        members.iter().all(|(_, state)| state == "active"),
        "{test}: {after:#}"
    );
    assert_eq!(members[1].0, "d4", "{test}: {after:#}");

    // The data reads back, and parity agrees with it on every member.
    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{test}: reading back: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        &format!("{test}: data read back after the rebuild"),
    );
    assert_check_clean(test, dir);
    // The replaced member's file is released on request.
    eraid(dir, &["remove", "d1", "--control", "ctl.sock"]).expect_ok();
    server.stop();

    // What the superblocks record: d4 active in slot 1; d1 is no member.
    let detail = detail_json(dir, &["d0", "d2", "d3", "d4"]);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(detail["rebuild"]["state"], "done", "{test}: {detail:#}");
    assert!(
        member_names_and_states(&detail)
            .iter()
            .all(|(_, state)| state == "active"),
        "{test}: {detail:#}"
    );
    let refused = eraid(dir, &["detail", "d0", "d1", "d2", "d3", "d4"]);
    assert!(
        !refused.ok() && refused.stderr.contains("leave"),
        "{test}: {refused}"
    );
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

/// Issue 15 acceptance 3: the same at 256 MiB per member, with the server
/// SIGKILLed once the rebuild is at least 30% done (and a checkpoint is
/// recorded): restarted, the rebuild resumes (its `rebuilt_bytes` never
/// goes below what was checkpointed) and finishes; the data reads back
/// equal and `eraid check` finds 0 mismatches. The rate is held at 20 MB/s
/// so the kill lands mid-rebuild and the test stays well under a minute.
#[test]
fn a_rebuild_killed_past_30_percent_resumes_from_its_checkpoint() {
    let test = "issue 15 acceptance 3 (RAID-5 4 x 256 MiB + spare, SIGKILL mid-rebuild)";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    const MEMBER_BYTES: u64 = 256 * MIB;
    const DATA_BYTES: u64 = 300 * MIB;
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
    blank(dir, "d4", MEMBER_BYTES);
    write_random(&dir.join("data.bin"), DATA_BYTES, 1503);
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d1", "d2", "d3"]);
    eraid(dir, &["add", "--spare", "d4", "--control", "ctl.sock"]).expect_ok();
    let rate = ["--speed-min", "20000", "--speed-max", "20000"];
    let mut set = vec!["rebuild", "set"];
    set.extend(rate);
    set.extend(["--control", "ctl.sock"]);
    eraid(dir, &set).expect_ok();

    let mut writer = Command::new(tool("nbdcopy"))
        .args(["--flush", "data.bin", &server.uri])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nbdcopy");
    std::thread::sleep(Duration::from_millis(100));
    let out = eraid(dir, &["fail", "d1", "--control", "ctl.sock"]).expect_ok();
    assert!(out.stdout.contains("a spare took over"), "{test}: {out}");
    let status = wait_timeout(&mut writer, Duration::from_secs(120)).expect("nbdcopy finishes");
    assert!(
        status.success(),
        "{test}: nbdcopy failed\n{}",
        server.log_text()
    );

    // SIGKILL once at least 30% is rebuilt and a checkpoint is recorded.
    let checkpointed = loop {
        let rebuild = live(dir, "ctl.sock")["rebuild"].clone();
        assert_eq!(rebuild["state"], "running", "{test}: {rebuild:#}");
        let progress = rebuild["progress"].as_f64().unwrap();
        let checkpoint = rebuild["checkpoint_bytes"].as_u64().unwrap();
        if progress >= 0.3 && checkpoint > 0 {
            assert!(progress < 0.9, "{test}: too late to kill: {rebuild:#}");
            server.kill9();
            break checkpoint;
        }
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "{test}: no checkpoint past 30%: {rebuild:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("{test}: killed with {checkpointed} bytes checkpointed");

    // d1 was replaced by the spare: serve the others.
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d2", "d3", "d4"]);
    let mut lowest = u64::MAX;
    let after = loop {
        let status = live(dir, "ctl.sock");
        let rebuild = &status["rebuild"];
        let rebuilt = rebuild["rebuilt_bytes"].as_u64().unwrap();
        lowest = lowest.min(rebuilt);
        assert!(
            rebuilt >= checkpointed,
            "{test}: rebuilt_bytes {rebuilt} went below the checkpoint {checkpointed}: {rebuild:#}"
        );
        if rebuild["state"] == "done" {
            break status;
        }
        assert_eq!(rebuild["state"], "running", "{test}: {rebuild:#}");
        assert!(
            server.running() && started.elapsed() < Duration::from_secs(100),
            "{test}: the resumed rebuild did not finish: {rebuild:#}\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        lowest < MEMBER_BYTES,
        "{test}: never saw the rebuild running"
    );
    assert_eq!(
        after["rebuild"]["rebuilt_bytes"],
        after["rebuild"]["total_bytes"]
    );
    assert_eq!(after["degraded"], false, "{test}: {after:#}");
    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{test}: reading back: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        &format!("{test}: data read back after the resumed rebuild"),
    );
    assert_check_clean(test, dir);
    server.stop();
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

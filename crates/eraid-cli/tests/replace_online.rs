//! Replace and double failures through the real binary (issue 15
//! acceptance 5, at 64 MiB per member): `eraid replace d0 --with d4` on a
//! served RAID-6 while `nbdcopy` writes: the copy runs with every member
//! serving (not degraded), then d4 holds slot 0 and d0 is retired (refused
//! by `detail`); the data reads back equal and `eraid check` finds 0
//! mismatches. Bad replace requests are refused and change nothing. A
//! RAID-6 with two members failed at once rebuilds both spares. Offline,
//! `eraid replace OLD --with NEW MEMBERS...` copies on the members.

mod support;

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

const MEMBER_BYTES: u64 = 64 * MIB;
const DATA_BYTES: u64 = 100 * MIB;

/// The array's membership and metadata as the server reports it, to show a
/// refused request changed nothing.
fn membership(status: &Value) -> Value {
    // Each member's identity and state; not its live I/O counters and
    // latencies, which move with every request.
    let members: Vec<Value> = status["members"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            serde_json::json!({
                "index": m["index"], "device": m["device"], "path": m["path"],
                "uuid": m["uuid"], "state": m["state"], "failure": m["failure"],
            })
        })
        .collect();
    serde_json::json!({
        "members": members,
        "spare_count": status["spare_count"],
        "device_count": status["device_count"],
        "rebuild": status["rebuild"]["state"],
    })
}

/// Asks the server for something that must be refused naming `words`; the
/// array's membership stays as it was and `untouched` files keep their bytes.
#[track_caller]
fn refused_online(dir: &Path, args: &[&str], words: &str, untouched: &[&str]) {
    let before = membership(&live(dir, "ctl.sock"));
    let files_before = metadata_areas(dir, untouched);
    let out = eraid(dir, args);
    assert_eq!(out.code(), Some(2), "{args:?}: {out}");
    assert!(
        out.stderr.contains(words),
        "{args:?} should say {words:?}: {out}"
    );
    assert_eq!(membership(&live(dir, "ctl.sock")), before, "{args:?}");
    assert!(
        metadata_areas(dir, untouched) == files_before,
        "{args:?} wrote to {untouched:?}"
    );
}

#[test]
fn replace_copies_a_served_raid6_member_while_nbdcopy_writes() {
    let test = "issue 15 acceptance 5 (RAID-6 of 4, replace d0 by d4, 64 MiB)";
    if !require_tools(test, &["nbdcopy", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    create(
        dir,
        &[
            "--level", "6", "--chunk", "64K", "--size", "64M", "d0", "d1", "d2", "d3",
        ],
    );
    create(dir, &["--level", "5", "--size", "64M", "f0", "f1", "f2"]);
    blank(dir, "d4", MEMBER_BYTES);
    blank(dir, "d5", MEMBER_BYTES);
    blank(dir, "small", MEMBER_BYTES / 2);
    write_random(&dir.join("data.bin"), DATA_BYTES, 1505);
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d1", "d2", "d3"]);

    // Refused, changing nothing: a member of another array, a file too
    // small, an OLD that is no member, a NEW that is a member already.
    let replace = |old: &'static str, new: &'static str| {
        [
            "replace",
            old,
            "--with",
            new,
            "--no-wait",
            "--control",
            "ctl.sock",
        ]
    };
    refused_online(
        dir,
        &replace("d0", "f0"),
        "already belongs to eraid array",
        &["f0"],
    );
    refused_online(dir, &replace("d0", "small"), "too small", &["small"]);
    refused_online(
        dir,
        &replace("small", "d4"),
        "not a member",
        &["small", "d4"],
    );
    refused_online(dir, &replace("d0", "d1"), "already a member", &["d1"]);

    // Rate settings that keep the copy running while nbdcopy writes.
    eraid(
        dir,
        &[
            "rebuild",
            "set",
            "--speed-min",
            "8000",
            "--speed-max",
            "16000",
            "--control",
            "ctl.sock",
        ],
    )
    .expect_ok();
    let mut writer = spawn_repeated_writer(dir, &server.uri, 4);
    std::thread::sleep(Duration::from_millis(200));
    let out = eraid(dir, &replace("d0", "d4")).expect_ok();
    assert!(out.stdout.contains("replace running"), "{test}: {out}");
    assert!(
        writer.try_wait().unwrap().is_none(),
        "{test}: nbdcopy finished before the replace; nothing ran during the copy"
    );
    // During the copy: every member serves, d4 is the replacement; a
    // second replace, or a rebuild-only request, is refused.
    let during = live(dir, "ctl.sock");
    let rebuild = &during["rebuild"];
    assert_eq!(rebuild["kind"], "replace", "{test}: {during:#}");
    assert_eq!(rebuild["state"], "running", "{test}: {during:#}");
    assert_eq!(rebuild["source"]["slot"], 0, "{test}: {during:#}");
    assert!(
        rebuild["target"]["path"].as_str().unwrap().ends_with("/d4"),
        "{test}: {during:#}"
    );
    assert_eq!(during["degraded"], false, "{test}: {during:#}");
    let members = member_names_and_states(&during);
    assert!(
        members[..4].iter().all(|(_, s)| s == "active"),
        "{test}: {during:#}"
    );
    assert_eq!(
        members[4],
        ("d4".to_string(), "replacement".to_string()),
        "{test}"
    );
    refused_online(dir, &replace("d1", "d5"), "a replace is running", &["d5"]);

    let status = wait_timeout(&mut writer, Duration::from_secs(120)).expect("nbdcopy finishes");
    assert!(
        status.success(),
        "{test}: nbdcopy failed\n{}",
        server.log_text()
    );
    let wait = rebuild_wait_ok(test, dir, &server);
    assert!(wait.stdout.contains("replace done"), "{test}: {wait}");

    let after = live(dir, "ctl.sock");
    assert_eq!(after["rebuild"]["state"], "done", "{test}: {after:#}");
    assert_eq!(after["spare_count"], 0, "{test}: {after:#}");
    let members = member_names_and_states(&after);
    assert_eq!(members.len(), 4, "{test}: {after:#}");
    assert_eq!(
        members[0],
        ("d4".to_string(), "active".to_string()),
        "{test}"
    );
    assert!(
        members.iter().all(|(_, s)| s == "active"),
        "{test}: {after:#}"
    );

    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{test}: reading back: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        &format!("{test}: data read back after the replace"),
    );
    assert_check_clean(test, dir);
    // The old member's file is released on request.
    eraid(dir, &["remove", "d0", "--control", "ctl.sock"]).expect_ok();
    server.stop();

    // d0 is retired: named with the others it is refused, saying so; the
    // array without it is clean with d4 in slot 0.
    let refused = eraid(dir, &["detail", "d0", "d1", "d2", "d3", "d4"]);
    assert!(
        !refused.ok() && refused.stderr.contains("retired"),
        "{test}: {refused}"
    );
    let refused = eraid(
        dir,
        &["serve", "--socket", "s.sock", "d0", "d1", "d2", "d3", "d4"],
    );
    assert!(
        !refused.ok() && refused.stderr.contains("retired"),
        "{test}: {refused}"
    );
    let detail = detail_json(dir, &["d4", "d1", "d2", "d3"]);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(detail["rebuild"]["kind"], "replace", "{test}: {detail:#}");
    assert_eq!(
        member_names_and_states(&detail)[0].0,
        "d4",
        "{test}: {detail:#}"
    );
    let check = eraid(dir, &["check", "d4", "d1", "d2", "d3"]);
    assert_eq!(check.code(), Some(0), "{test}: {check}");
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

/// RAID-6 with two spares: two members failed one right after the other
/// are both taken over and rebuilt (in one pass), the data reads back and
/// `check` finds 0 mismatches.
#[test]
fn raid6_with_two_members_failed_at_once_rebuilds_both() {
    let test = "RAID-6 of 5, two members failed at once, two spares";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create(
        dir,
        &[
            "--level", "6", "--chunk", "64K", "--size", "16M", "d0", "d1", "d2", "d3", "d4",
        ],
    );
    blank(dir, "s0", 16 * MIB);
    blank(dir, "s1", 16 * MIB);
    write_random(&dir.join("data.bin"), 40 * MIB, 1506);
    let server = Server::start_with(
        dir,
        &["--control", "ctl.sock"],
        &["d0", "d1", "d2", "d3", "d4"],
    );
    let out = run(dir, tool("nbdcopy"), &["--flush", "data.bin", &server.uri]);
    assert!(out.ok(), "{test}: {out}");
    for spare in ["s0", "s1"] {
        eraid(dir, &["add", "--spare", spare, "--control", "ctl.sock"]).expect_ok();
    }
    // Slow enough that the second failure comes early in the first pass.
    eraid(
        dir,
        &[
            "rebuild",
            "set",
            "--speed-min",
            "2000",
            "--speed-max",
            "4000",
            "--control",
            "ctl.sock",
        ],
    )
    .expect_ok();
    eraid(dir, &["fail", "d1", "--control", "ctl.sock"]).expect_ok();
    eraid(dir, &["fail", "d3", "--control", "ctl.sock"]).expect_ok();
    let during = live(dir, "ctl.sock");
    let targets: Vec<u64> = during["rebuild"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slot"].as_u64().unwrap())
        .collect();
    assert_eq!(targets, vec![1, 3], "{test}: both in one pass: {during:#}");
    eraid(
        dir,
        &[
            "rebuild",
            "set",
            "--speed-min",
            "200000",
            "--speed-max",
            "400000",
            "--control",
            "ctl.sock",
        ],
    )
    .expect_ok();
    rebuild_wait_ok(test, dir, &server);
    let after = live(dir, "ctl.sock");
    let members = member_names_and_states(&after);
    assert_eq!(members.len(), 5, "{test}: {after:#}");
    assert!(
        members.iter().all(|(_, s)| s == "active"),
        "{test}: {after:#}"
    );
    assert_eq!(
        (members[1].0.as_str(), members[3].0.as_str()),
        ("s0", "s1"),
        "{test}"
    );
    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{test}: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        40 * MIB,
        test,
    );
    assert_check_clean(test, dir);
    server.stop();
    // Both spares alone carry the data of their slots: serve without two
    // of the original members (RAID-6 survives two) and read back.
    let server = Server::start(dir, &["d0", "s0", "d2", "s1"]);
    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback2.bin"]);
    assert!(out.ok(), "{test}: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback2.bin"),
        40 * MIB,
        test,
    );
    server.stop();
}

/// Offline: `eraid replace OLD --with NEW MEMBERS...` copies on the
/// members; the array then serves without OLD and reads back.
#[test]
fn offline_replace_copies_on_the_members() {
    let test = "offline replace (RAID-5 of 3, 16 MiB)";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create(dir, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    blank(dir, "d3", 16 * MIB);
    write_random(&dir.join("data.bin"), 24 * MIB, 1507);
    let server = Server::start(dir, &["d0", "d1", "d2"]);
    let out = run(dir, tool("nbdcopy"), &["--flush", "data.bin", &server.uri]);
    assert!(out.ok(), "{test}: {out}");
    server.stop();
    // Bad input offline changes nothing on disk.
    rejected(
        dir,
        &["replace", "d3", "--with", "d0", "d0", "d1", "d2"],
        &["d3", "not a member"],
    );
    let out = eraid(dir, &["replace", "d1", "--with", "d3", "d0", "d1", "d2"]);
    assert_eq!(out.code(), Some(0), "{test}: {out}");
    assert!(out.stdout.contains("is retired"), "{test}: {out}");
    let detail = detail_json(dir, &["d0", "d3", "d2"]);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(
        member_names_and_states(&detail)[1].0,
        "d3",
        "{test}: {detail:#}"
    );
    let refused = eraid(dir, &["detail", "d0", "d1", "d2", "d3"]);
    assert!(
        !refused.ok() && refused.stderr.contains("retired"),
        "{test}: {refused}"
    );
    // Without d0, every stripe needs d3's copy.
    let server = Server::start(dir, &["d3", "d2"]);
    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{test}: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        24 * MIB,
        test,
    );
    server.stop();
}

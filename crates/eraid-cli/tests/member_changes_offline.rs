//! `create --spare` and offline `add`, `fail` and `remove` on the members
//! (no server): the superblocks of every member present record the change,
//! events bumped; a replacement added offline is rebuilt by the next
//! `serve`; bad input (failing the last redundancy, adding to a healthy
//! array or a RAID-0, a spare too small, a name that is no member) is
//! refused naming what was wrong, with nothing changed in the directory.

mod support;

use serde_json::Value;
use std::path::Path;
use support::*;

fn members_of(status: &Value) -> Vec<(String, String)> {
    status["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            let path = m["path"].as_str().unwrap_or("");
            let name = Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, m["state"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn pair(name: &str, state: &str) -> (String, String) {
    (name.to_string(), state.to_string())
}

/// Writes `len` random bytes through a server of `members`; returns the
/// file holding them.
fn fill(dir: &Path, members: &[&str], len: u64, seed: u64) {
    write_random(&dir.join("data.bin"), len, seed);
    let server = Server::start(dir, members);
    let out = run(dir, tool("nbdcopy"), &["--flush", "data.bin", &server.uri]);
    assert!(out.ok(), "{out}");
    server.stop();
}

fn read_back(dir: &Path, members: &[&str], len: u64, what: &str) {
    let server = Server::start(dir, members);
    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{what}: {out}");
    assert_same_prefix(&dir.join("data.bin"), &dir.join("readback.bin"), len, what);
    server.stop();
    std::fs::remove_file(dir.join("readback.bin")).unwrap();
}

#[test]
fn create_with_a_spare_records_it_and_it_takes_over() {
    let test = "create --spare";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    // Refused before anything is created: spares on a RAID-0, a spare
    // smaller than the members.
    rejected(
        dir,
        &[
            "create", "--level", "0", "--size", "16M", "e0", "e1", "--spare", "e2",
        ],
        &["RAID-0", "spare"],
    );
    for name in ["e0", "e1", "e2"] {
        blank(dir, name, 16 * MIB);
    }
    blank(dir, "small", 8 * MIB);
    rejected(
        dir,
        &[
            "create", "--level", "5", "e0", "e1", "e2", "--spare", "small",
        ],
        &["small", "too small"],
    );

    let out = eraid(
        dir,
        &[
            "create", "--level", "5", "--size", "16M", "d0", "d1", "d2", "d3", "--spare", "d4",
        ],
    )
    .expect_ok();
    assert!(out.stdout.contains("hot spares: 1"), "{test}: {out}");
    let detail = detail_json(dir, &["d0", "d1", "d2", "d3", "d4"]);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(
        members_of(&detail)[4],
        pair("d4", "spare"),
        "{test}: {detail:#}"
    );
    fill(dir, &["d0", "d1", "d2", "d3", "d4"], 24 * MIB, 1601);
    // The spare is kept across starts and takes over a failed member.
    let server = Server::start_with(
        dir,
        &["--control", "ctl.sock"],
        &["d0", "d1", "d2", "d3", "d4"],
    );
    assert_eq!(live(dir, "ctl.sock")["spare_count"], 1, "{test}");
    let out = eraid(dir, &["fail", "d2", "--control", "ctl.sock"]).expect_ok();
    assert!(out.stdout.contains("a spare took over"), "{test}: {out}");
    rebuild_wait_ok(test, dir, &server);
    let after = live(dir, "ctl.sock");
    assert_eq!(
        members_of(&after)[2],
        pair("d4", "active"),
        "{test}: {after:#}"
    );
    server.stop();
    // Without d0, every stripe needs the rebuilt spare.
    read_back(dir, &["d1", "d4", "d3"], 24 * MIB, test);
}

#[test]
fn offline_fail_add_and_remove_change_the_superblocks_by_the_online_rules() {
    let test = "offline fail/add/remove";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create(
        dir,
        &["--level", "5", "--size", "16M", "d0", "d1", "d2", "d3"],
    );
    create(dir, &["--level", "0", "--size", "16M", "r0", "r1"]);
    for name in ["d4", "d5", "d6", "r2"] {
        blank(dir, name, 16 * MIB);
    }
    blank(dir, "small", 8 * MIB);
    fill(dir, &["d0", "d1", "d2", "d3"], 24 * MIB, 1602);
    let all = ["d0", "d1", "d2", "d3"];
    let events = detail_json(dir, &all)["events"].as_u64().unwrap();

    // Refused, nothing changed: adding to a healthy array (only as a
    // spare), to a healthy RAID-0, a spare too small, a name that is no
    // member, an OLD member file as NEW.
    rejected(
        dir,
        &["add", "d4", "d0", "d1", "d2", "d3"],
        &["d4", "--spare"],
    );
    rejected(dir, &["add", "r2", "r0", "r1"], &["r2", "RAID-0"]);
    rejected(
        dir,
        &["add", "--spare", "small", "d0", "d1", "d2", "d3"],
        &["small", "too small"],
    );
    rejected(
        dir,
        &["fail", "d5", "d0", "d1", "d2", "d3"],
        &["d5", "not a member"],
    );
    rejected(
        dir,
        &["add", "--spare", "d1", "d0", "d1", "d2", "d3"],
        &["d1", "already"],
    );
    rejected(
        dir,
        &["remove", "d1", "d0", "d1", "d2", "d3"],
        &["d1", "fail it first"],
    );

    // Fail d1: every member records it, events bumped once.
    let out = eraid(dir, &["fail", "d1", "d0", "d1", "d2", "d3"]).expect_ok();
    assert!(out.stdout.contains("d1 failed"), "{test}: {out}");
    let detail = detail_json(dir, &all);
    assert_eq!(
        detail["events"].as_u64().unwrap(),
        events + 1,
        "{test}: {detail:#}"
    );
    assert_eq!(
        members_of(&detail)[1],
        pair("d1", "stale"),
        "{test}: {detail:#}"
    );
    assert_eq!(
        detail["members"][1]["failure"], "failed by the operator",
        "{test}: {detail:#}"
    );
    // Failing a second member of the RAID-5 would lose data.
    rejected(
        dir,
        &["fail", "d2", "d0", "d1", "d2", "d3"],
        &["d2", "would lose data"],
    );

    // A rebuild strategy cannot be chosen offline (it would be ignored).
    rejected(
        dir,
        &["add", "--strategy", "dor", "d4", "d0", "d2", "d3"],
        &["--strategy dor", "--control"],
    );

    // Add a replacement offline: recorded as the rebuild target of slot 1.
    let out = eraid(dir, &["add", "d4", "d0", "d2", "d3"]).expect_ok();
    assert!(out.stdout.contains("replaces member 1"), "{test}: {out}");
    let detail = detail_json(dir, &["d0", "d4", "d2", "d3"]);
    assert_eq!(
        members_of(&detail)[1],
        pair("d4", "rebuilding"),
        "{test}: {detail:#}"
    );
    assert_eq!(detail["rebuild"]["state"], "running", "{test}: {detail:#}");
    assert_eq!(detail["rebuild"]["target"]["slot"], 1, "{test}: {detail:#}");
    // d1 is no member any more: naming it is refused.
    rejected(
        dir,
        &["remove", "d1", "d0", "d4", "d2", "d3"],
        &["d1", "not a member"],
    );

    // A spare added and removed offline.
    eraid(dir, &["add", "--spare", "d5", "d0", "d4", "d2", "d3"]).expect_ok();
    let detail = detail_json(dir, &["d0", "d4", "d2", "d3", "d5"]);
    assert_eq!(
        members_of(&detail)[4],
        pair("d5", "spare"),
        "{test}: {detail:#}"
    );
    eraid(dir, &["remove", "d5", "d0", "d4", "d2", "d3", "d5"]).expect_ok();
    let detail = detail_json(dir, &["d0", "d4", "d2", "d3"]);
    assert_eq!(members_of(&detail).len(), 4, "{test}: {detail:#}");

    // The next serve rebuilds d4; the data reads back, parity checks.
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d4", "d2", "d3"]);
    rebuild_wait_ok(test, dir, &server);
    assert_check_clean(test, dir);
    server.stop();
    // Without d0, every stripe needs d4.
    read_back(dir, &["d4", "d2", "d3"], 24 * MIB, test);
}

//! A member left off `serve`'s command line costs nothing until data is
//! written without it: stopped before any write, the array serves again
//! with every member current. Once written without it, it is out of date
//! and re-added from the write-intent bitmap when served again, and the
//! messages say which case the user is in.

mod support;
use std::time::Duration;
use support::*;

fn four_member_raid5(dir: &std::path::Path) {
    create(
        dir,
        &["--level", "5", "--size", "64M", "d0", "d1", "d2", "d3"],
    );
}

#[test]
fn a_member_left_off_serve_stays_current_until_a_write() {
    let dir = scratch();
    four_member_raid5(dir.path());
    let mut server = Server::start(dir.path(), &["d0", "d1", "d2"]);
    server.wait_for_log("was not given", Duration::from_secs(10));
    let log = server.log_text();
    assert!(
        log.contains("stays current until the first write") && log.contains("naming every member"),
        "{log}"
    );
    server.stop();
    let status = detail_json(dir.path(), &["d0", "d1", "d2", "d3"]);
    for member in status["members"].as_array().expect("members") {
        assert_eq!(member["state"], "active", "{status:#}");
    }
    let server = Server::start(dir.path(), &["d0", "d1", "d2", "d3"]);
    assert!(
        !server.log_text().contains("degraded"),
        "{}",
        server.log_text()
    );
    server.stop();
}

#[test]
fn a_member_written_without_is_re_added_and_the_log_says_so() {
    if !require_tools("a_member_written_without", &["nbdcopy"]) {
        return;
    }
    let dir = scratch();
    four_member_raid5(dir.path());
    write_random(&dir.path().join("data"), 4 * MIB, 7);
    let server = Server::start(dir.path(), &["d0", "d1", "d2"]);
    run_tool(dir.path(), "nbdcopy", &["data", &server.uri]).expect_ok();
    server.stop();
    let status = detail_json(dir.path(), &["d0", "d1", "d2", "d3"]);
    assert_eq!(status["members"][3]["state"], "re-addable", "{status:#}");
    // Served with every member: it only left (no write lost on it), so it
    // is re-added from the bitmap; the advice is not to name members the
    // user already named.
    let mut server = Server::start(dir.path(), &["d0", "d1", "d2", "d3"]);
    server.wait_for_log(
        "re-added from the write-intent bitmap",
        Duration::from_secs(10),
    );
    let log = server.log_text();
    assert!(
        !log.contains("was not given") && !log.contains("naming every member"),
        "{log}"
    );
    server.stop();
    let status = detail_json(dir.path(), &["d0", "d1", "d2", "d3"]);
    for member in status["members"].as_array().expect("members") {
        assert_eq!(member["state"], "active", "{status:#}");
    }
}

/// Like MD, `serve` runs degraded without a member whose superblock is
/// damaged, when redundancy allows, naming it and why; the data reads
/// back from the others.
#[test]
fn a_member_with_a_damaged_superblock_is_left_out_and_named() {
    if !require_tools("a_member_with_a_damaged_superblock", &["nbdcopy"]) {
        return;
    }
    let dir = scratch();
    four_member_raid5(dir.path());
    write_random(&dir.path().join("data"), 4 * MIB, 11);
    let server = Server::start(dir.path(), &["d0", "d1", "d2", "d3"]);
    run_tool(dir.path(), "nbdcopy", &["--flush", "data", &server.uri]).expect_ok();
    server.stop();
    // Zero d2's whole metadata area: no superblock copy survives.
    {
        use std::os::unix::fs::FileExt;
        let d2 = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("d2"))
            .unwrap();
        d2.write_all_at(&vec![0u8; MIB as usize], 0).unwrap();
    }
    let mut server = Server::start(dir.path(), &["d0", "d1", "d2", "d3"]);
    server.wait_for_log("left out", Duration::from_secs(10));
    let log = server.log_text();
    assert!(
        log.contains("d2") && log.contains("not an eraid member"),
        "{log}"
    );
    run_tool(dir.path(), "nbdcopy", &[&server.uri, "back"]).expect_ok();
    assert_same_prefix(
        &dir.path().join("data"),
        &dir.path().join("back"),
        4 * MIB,
        "degraded read back",
    );
    server.stop();
}

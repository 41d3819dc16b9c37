//! The foundation issue's acceptance steps, run as written against the built
//! binary: create, serve on a Unix socket, nbdcopy random data in, read it
//! back and compare, SIGTERM (exit 0), `detail --json` (level, 4 members,
//! clean), `check` (0 mismatches, exit 0), then move members away, serve the
//! survivors and compare again.
//!
//! Sizes: every level runs at the exact `--size 256M` with 200 MiB of
//! data (each run takes a few seconds on tmpfs). Members live in /dev/shm
//! when it exists.

mod support;

use std::path::Path;
use support::*;

const DATA_BYTES: u64 = 200 * MIB;

fn nbdcopy(dir: &Path, from: &str, to: &str) {
    run_tool(dir, "nbdcopy", &[from, to]).expect_ok();
}

/// The acceptance steps for one level. `moved`: member indexes to move away
/// before the degraded read.
fn acceptance(level: u32, member_count: usize, moved: &[usize], seed: u64) {
    let test = format!("acceptance RAID-{level}");
    if !require_tools(&test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(member_count);
    let members = strs(&names);
    let level_s = level.to_string();

    // $E create --level L --chunk 64K --size 256M d0 d1 d2 d3
    let mut args = vec![
        "create", "--level", &level_s, "--chunk", "64K", "--size", "256M",
    ];
    args.extend_from_slice(&members);
    eraid(dir, &args).expect_ok();

    // $E serve --socket s.sock d0 d1 d2 d3 &
    let server = Server::start(dir, &members);
    assert!(
        server.printed_uri.starts_with("nbd+unix://")
            && server
                .printed_uri
                .contains(&server.socket.display().to_string()),
        "serve should print the NBD URI of its socket, printed {:?}",
        server.printed_uri
    );
    // nbdcopy 200 MiB of random data in, read it back, cmp.
    write_random(&dir.join("data.bin"), DATA_BYTES, seed);
    nbdcopy(dir, "data.bin", &server.uri);
    nbdcopy(dir, &server.uri, "readback.bin");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        &format!("{test}: read back through NBD"),
    );
    let exported = std::fs::metadata(dir.join("readback.bin")).unwrap().len();

    // Stop the server with SIGTERM: it must exit 0.
    server.stop();

    // detail --json shows the level, every member, clean.
    let detail = detail_json(dir, &members);
    assert_eq!(detail["level"], level, "{test}: level in {detail:#}");
    assert_eq!(detail["chunk_bytes"], 65536, "{test}: chunk in {detail:#}");
    assert_eq!(
        detail["member_count"], member_count,
        "{test}: member_count in {detail:#}"
    );
    let listed = detail["members"].as_array().expect("members array");
    assert_eq!(listed.len(), member_count, "{test}: members in {detail:#}");
    for (i, m) in listed.iter().enumerate() {
        assert_eq!(m["index"], i, "{test}: member index in {detail:#}");
        assert_eq!(
            m["state"], "active",
            "{test}: member {i} state in {detail:#}"
        );
        assert!(
            m["path"].as_str().unwrap_or("").ends_with(&format!("d{i}")),
            "{test}: member {i} path in {detail:#}"
        );
    }
    assert_eq!(detail["state"], "clean", "{test}: state in {detail:#}");
    assert_eq!(
        detail["capacity_bytes"], exported,
        "{test}: capacity_bytes vs the NBD export's size"
    );
    assert!(detail["layout"].is_string(), "{test}: layout in {detail:#}");

    // check: 0 mismatches, exit 0.
    let mut args = vec!["check"];
    args.extend_from_slice(&members);
    let check = eraid(dir, &args);
    assert_eq!(check.code(), Some(0), "{test}: check must exit 0: {check}");
    assert!(
        check.stdout.contains("0 mismatches"),
        "{test}: check must report 0 mismatches: {check}"
    );

    // Move members away, serve the survivors, read back, cmp.
    let away = dir.join("away");
    std::fs::create_dir(&away).unwrap();
    for &i in moved {
        std::fs::rename(dir.join(&names[i]), away.join(&names[i])).unwrap();
    }
    let survivors: Vec<&str> = (0..member_count)
        .filter(|i| !moved.contains(i))
        .map(|i| members[i])
        .collect();
    let server = Server::start(dir, &survivors);
    nbdcopy(dir, &server.uri, "degraded.bin");
    server.stop();
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("degraded.bin"),
        DATA_BYTES,
        &format!("{test}: degraded read with {moved:?} moved away"),
    );
    // The whole export (not only the written prefix) reads the same degraded.
    assert_eq!(
        file_hash(&dir.join("readback.bin")),
        file_hash(&dir.join("degraded.bin")),
        "{test}: the degraded export differs from the healthy one beyond the data"
    );

    // detail on the survivors names the missing members.
    let detail = detail_json(dir, &survivors);
    assert_eq!(detail["degraded"], true, "{test}: degraded in {detail:#}");
    for &i in moved {
        assert_eq!(
            detail["members"][i]["state"], "missing",
            "{test}: member {i} should be missing: {detail:#}"
        );
    }
}

#[test]
fn acceptance_raid5_four_members_d2_moved() {
    acceptance(5, 4, &[2], 5);
}

#[test]
fn acceptance_raid6_four_members_two_moved() {
    // RAID-6 on four members survives any two: move d1 and d2 (a data and a
    // parity chunk of most stripes).
    acceptance(6, 4, &[1, 2], 6);
}

#[test]
fn acceptance_raid10_four_members_one_moved() {
    acceptance(10, 4, &[2], 10);
}

/// `check` must be able to fail: corrupt a parity chunk and a mirror copy
/// and see a mismatch (exit 1), then `check --repair` and a clean check;
/// the data reads back unchanged because only redundancy was damaged.
fn check_detects(level: u32, corrupt_member: usize) {
    let test = format!("check detects corruption RAID-{level}");
    if !require_tools(&test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(4);
    let members = strs(&names);
    let level_s = level.to_string();
    let mut args = vec!["create", "--level", &level_s, "--size", "16M"];
    args.extend_from_slice(&members);
    eraid(dir, &args).expect_ok();
    write_random(&dir.join("data.bin"), 8 * MIB, 99);
    let server = Server::start(dir, &members);
    run_tool(dir, "nbdcopy", &["data.bin", &server.uri]).expect_ok();
    server.stop();

    let mut check = vec!["check"];
    check.extend_from_slice(&members);
    eraid(dir, &check).expect_ok();
    // Stripe 0 lies at the data offset (1 MiB). RAID-5 left-symmetric puts
    // stripe 0's parity on the last member (as Linux MD); RAID-10 near puts
    // the second copy of chunk 0 on member 1.
    flip_bytes(&dir.join(&names[corrupt_member]), MIB + 100, 8);
    let found = eraid(dir, &check);
    assert_eq!(found.code(), Some(1), "{test}: check must exit 1: {found}");
    assert!(
        !found.stdout.starts_with("0 mismatches"),
        "{test}: check must count the mismatch: {found}"
    );
    let mut repair = vec!["check", "--repair"];
    repair.extend_from_slice(&members);
    let repaired = eraid(dir, &repair);
    assert!(
        repaired.code() == Some(0) || repaired.code() == Some(1),
        "{test}: check --repair: {repaired}"
    );
    let again = eraid(dir, &check);
    assert_eq!(again.code(), Some(0), "{test}: after --repair: {again}");
    let server = Server::start(dir, &members);
    run_tool(dir, "nbdcopy", &[&server.uri, "readback.bin"]).expect_ok();
    server.stop();
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        8 * MIB,
        &format!("{test}: data after repair"),
    );
}

#[test]
fn check_detects_and_repairs_raid5_parity() {
    check_detects(5, 3);
}

#[test]
fn check_detects_and_repairs_raid10_copy() {
    check_detects(10, 1);
}

/// `create` on member files that already exist (made with `truncate`, with
/// old bytes in them), then serve, write, read back and stop cleanly, for
/// every level. RAID-0 used to mark such members for a full resync, which
/// has nothing to check without redundancy and stopped the engine at the
/// first start (the server then kept accepting clients it could not serve).
#[test]
fn every_level_serves_when_created_on_used_members() {
    for (level, count) in [(0u32, 4usize), (5, 3), (6, 4), (10, 4)] {
        let test = format!("RAID-{level} on used members");
        if !require_tools(&test, &["nbdcopy"]) {
            return;
        }
        let scratch = scratch();
        let dir = scratch.path();
        let names = member_names(count);
        let members = strs(&names);
        for (i, name) in names.iter().enumerate() {
            // Old contents: a few MiB of junk where the data goes.
            write_random(&dir.join(name), 4 * MIB, 100 + i as u64);
            std::fs::File::options()
                .write(true)
                .open(dir.join(name))
                .unwrap()
                .set_len(64 * MIB)
                .unwrap();
        }
        let level_s = level.to_string();
        let mut args = vec!["create", "--level", &level_s, "--chunk", "64K"];
        args.extend_from_slice(&members);
        eraid(dir, &args).expect_ok();
        let mut server = Server::start(dir, &members);
        write_random(&dir.join("data.bin"), 16 * MIB, 7);
        nbdcopy(dir, "data.bin", &server.uri);
        nbdcopy(dir, &server.uri, "readback.bin");
        assert!(
            server.running(),
            "{test}: the server stopped\n{}",
            server.log_text()
        );
        assert_same_prefix(
            &dir.join("data.bin"),
            &dir.join("readback.bin"),
            16 * MIB,
            &format!("{test}: read back through NBD"),
        );
        server.stop();
        let detail = detail_json(dir, &members);
        assert_eq!(detail["state"], "clean", "{test}: state in {detail:#}");
    }
}

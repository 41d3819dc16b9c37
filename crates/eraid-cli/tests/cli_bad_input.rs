//! Bad command-line input: each case exits non-zero, prints an error naming
//! what was wrong, and leaves every file in the directory byte-identical (no
//! member changed, none created, no socket left behind).

mod support;

use support::*;

#[test]
fn unknown_level() {
    let s = scratch();
    rejected(
        s.path(),
        &["create", "--level", "7", "--size", "8M", "a", "b", "c"],
        &["level", "7"],
    );
    rejected(
        s.path(),
        &["create", "--level", "five", "--size", "8M", "a", "b", "c"],
        &["level", "five"],
    );
    rejected(
        s.path(),
        &["create", "--level", "1", "--size", "8M", "a", "b"],
        &["level", "'1'"],
    );
}

#[test]
fn chunk_not_a_power_of_two_too_small_or_too_big() {
    let s = scratch();
    let d = s.path();
    rejected(
        d,
        &[
            "create", "--level", "5", "--chunk", "48K", "--size", "8M", "a", "b", "c",
        ],
        &["chunk", "49152"],
    );
    rejected(
        d,
        &[
            "create", "--level", "5", "--chunk", "2K", "--size", "8M", "a", "b", "c",
        ],
        &["chunk", "2048"],
    );
    rejected(
        d,
        &[
            "create", "--level", "5", "--chunk", "8M", "--size", "32M", "a", "b", "c",
        ],
        &["chunk", "8388608"],
    );
    rejected(
        d,
        &[
            "create", "--level", "0", "--chunk", "banana", "--size", "8M", "a", "b",
        ],
        &["chunk", "banana"],
    );
    // A legal chunk that does not fit a member's data area (4 MiB member,
    // 1 MiB of metadata, 4 MiB chunk).
    rejected(
        d,
        &[
            "create", "--level", "5", "--chunk", "4M", "--size", "4M", "a", "b", "c",
        ],
        &["size"],
    );
    // A member too small for its metadata.
    rejected(
        d,
        &["create", "--level", "5", "--size", "1M", "a", "b", "c"],
        &["size"],
    );
}

#[test]
fn too_few_members() {
    let s = scratch();
    let d = s.path();
    rejected(
        d,
        &["create", "--level", "0", "--size", "8M", "a"],
        &["RAID-0", "member"],
    );
    rejected(
        d,
        &["create", "--level", "5", "--size", "8M", "a", "b"],
        &["RAID-5", "member"],
    );
    rejected(
        d,
        &["create", "--level", "6", "--size", "8M", "a", "b", "c"],
        &["RAID-6", "member"],
    );
    rejected(
        d,
        &["create", "--level", "10", "--size", "8M", "a"],
        &["RAID-10", "member"],
    );
}

#[test]
fn unknown_layout_and_layout_for_another_level() {
    let s = scratch();
    let d = s.path();
    rejected(
        d,
        &[
            "create", "--level", "5", "--layout", "diagonal", "--size", "8M", "a", "b", "c",
        ],
        &["layout", "diagonal"],
    );
    rejected(
        d,
        &[
            "create",
            "--level",
            "10",
            "--layout",
            "left-asymmetric",
            "--size",
            "8M",
            "a",
            "b",
            "c",
            "d",
        ],
        &["left-asymmetric", "RAID-10"],
    );
    rejected(
        d,
        &[
            "create",
            "--level",
            "0",
            "--layout",
            "left-symmetric",
            "--size",
            "8M",
            "a",
            "b",
            "c",
        ],
        &["left-symmetric", "RAID-0"],
    );
    rejected(
        d,
        &[
            "create", "--level", "5", "--layout", "near2", "--size", "8M", "a", "b", "c",
        ],
        &["near2", "RAID-5"],
    );
}

#[test]
fn bad_size_argument() {
    let s = scratch();
    rejected(
        s.path(),
        &["create", "--level", "5", "--size", "1X", "a", "b", "c"],
        &["--size", "1X"],
    );
    rejected(
        s.path(),
        &["create", "--level", "5", "--size", "-8M", "a", "b", "c"],
        &[],
    );
}

#[test]
fn member_of_another_array_needs_force() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    // d does not exist yet: it must not be created when the command fails.
    rejected(
        d,
        &["create", "--level", "6", "--size", "8M", "a", "b", "c", "d"],
        &["a", "already belongs", "--force"],
    );
    rejected(
        d,
        &["create", "--level", "5", "--size", "8M", "x", "c"],
        &["c", "already belongs"],
    );
    // With --force it works, and the members now hold the new array.
    eraid(
        d,
        &[
            "create", "--level", "6", "--size", "8M", "--force", "a", "b", "c", "d",
        ],
    )
    .expect_ok();
    let detail = detail_json(d, &["a", "b", "c", "d"]);
    assert_eq!(detail["level"], 6, "{detail:#}");
    assert_eq!(detail["member_count"], 4, "{detail:#}");
}

#[test]
fn missing_member_without_size() {
    let s = scratch();
    let d = s.path();
    blank(d, "x", 8 * MIB);
    blank(d, "y", 8 * MIB);
    rejected(
        d,
        &["create", "--level", "5", "x", "y", "nonexistent"],
        &["nonexistent", "--size"],
    );
}

#[test]
fn unequal_sizes_without_size() {
    let s = scratch();
    let d = s.path();
    blank(d, "x", 8 * MIB);
    blank(d, "y", 8 * MIB);
    blank(d, "z", 9 * MIB);
    rejected(
        d,
        &["create", "--level", "5", "x", "y", "z"],
        &["size", "9437184"],
    );
}

#[test]
fn existing_member_smaller_than_size() {
    let s = scratch();
    let d = s.path();
    blank(d, "x", 8 * MIB);
    blank(d, "y", 16 * MIB);
    rejected(
        d,
        &["create", "--level", "5", "--size", "16M", "y", "x", "new"],
        &["x", "--size"],
    );
}

/// A scratch directory on a disk filesystem (ext4 allows files of at most
/// 16 TiB; tmpfs allows far larger sparse files).
fn disk_scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("eraid-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// A size the member files' filesystem cannot hold fails before any file
/// exists (a 0-byte leftover would block the next create), naming the size.
#[test]
fn size_larger_than_the_filesystem_allows_leaves_no_file() {
    let s = disk_scratch();
    let d = s.path();
    let out = rejected(
        d,
        &["create", "--level", "5", "--size", "100T", "a", "b", "c"],
        &["--size 100T", "filesystem"],
    );
    assert!(out.stderr.contains("nothing was created"), "{out}");
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
}

/// A size beyond any file offset is refused with a message about sizes,
/// not an integer conversion.
#[test]
fn absurd_size_is_refused_by_name() {
    let s = scratch();
    let d = s.path();
    let out = rejected(
        d,
        &[
            "create", "--level", "5", "--size", "9999999T", "a", "b", "c",
        ],
        &["--size 9999999T", "larger than the largest supported"],
    );
    assert!(!out.stderr.contains("conversion"), "{out}");
}

/// A create that fails after it made member files (here: an existing
/// member that cannot be opened for writing, being immutable) removes the
/// files it made.
#[test]
fn create_failing_midway_removes_the_files_it_created() {
    let test = "create_failing_midway_removes_the_files_it_created";
    if !require_tools(test, &["chattr"]) || !require(test, is_root(), "root (chattr +i)") {
        return;
    }
    let s = disk_scratch();
    let d = s.path();
    blank(d, "c", 8 * MIB);
    run_tool(d, "chattr", &["+i", "c"]).expect_ok();
    let out = eraid(
        d,
        &["create", "--level", "5", "--size", "8M", "a", "b", "c"],
    );
    run_tool(d, "chattr", &["-i", "c"]).expect_ok();
    assert_eq!(out.code(), Some(2), "{out}");
    assert!(out.stderr.contains('c'), "{out}");
    assert!(
        !d.join("a").exists() && !d.join("b").exists(),
        "the failed create left the files it created behind: {out}"
    );
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
}

#[test]
fn duplicate_member_path() {
    let s = scratch();
    let d = s.path();
    blank(d, "x", 8 * MIB);
    blank(d, "y", 8 * MIB);
    rejected(
        d,
        &["create", "--level", "5", "x", "y", "x"],
        &["x", "twice"],
    );
    rejected(
        d,
        &["create", "--level", "5", "x", "y", "./x"],
        &["x", "twice"],
    );
    // Not yet existing, named twice.
    rejected(
        d,
        &["create", "--level", "5", "--size", "8M", "x", "n", "n"],
        &["n", "twice"],
    );
    create(d, &["--level", "5", "x", "y", "z0", "--size", "8M"]);
    rejected(d, &["detail", "x", "y", "x"], &["x", "twice"]);
    rejected(
        d,
        &["serve", "--socket", "s.sock", "x", "y", "./x"],
        &["x", "twice"],
    );
}

#[test]
fn not_an_eraid_member() {
    let s = scratch();
    let d = s.path();
    write_random(&d.join("random"), 8 * MIB, 1);
    blank(d, "zeros", 8 * MIB);
    blank(d, "tiny", 4096);
    for verb in ["detail", "check"] {
        rejected(d, &[verb, "random"], &["random", "not an eraid member"]);
        rejected(d, &[verb, "zeros"], &["zeros", "not an eraid member"]);
        rejected(d, &[verb, "tiny"], &["tiny"]);
        rejected(d, &[verb, "nonexistent"], &["nonexistent"]);
    }
    rejected(
        d,
        &["serve", "--socket", "s.sock", "random"],
        &["random", "not an eraid member"],
    );
    rejected(
        d,
        &["serve", "--socket", "s.sock", "nonexistent"],
        &["nonexistent"],
    );
    // A blank file among real members.
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    rejected(
        d,
        &["check", "a", "b", "zeros"],
        &["zeros", "not an eraid member"],
    );
    // detail only reads: it shows the array, and what zeros is.
    let before = snapshot(d);
    let detail = detail_json(d, &["a", "b", "zeros"]);
    assert_eq!(snapshot(d), before);
    assert_eq!(detail["state"], "clean, degraded", "{detail:#}");
    let zeros = &detail["members"][3];
    assert!(
        zeros["path"] == "zeros"
            && zeros["state"] == "unreadable"
            && zeros["reason"]
                .as_str()
                .is_some_and(|r| r.contains("unreadable superblock")),
        "{detail:#}"
    );
    // serve runs degraded without it (redundancy allows), naming it and
    // why, and changes nothing on it.
    let zeros_before = file_hash(&d.join("zeros"));
    let mut server = Server::start(d, &["a", "zeros", "c"]);
    server.wait_for_log("left out", std::time::Duration::from_secs(10));
    let log = server.log_text();
    assert!(
        log.contains("zeros") && log.contains("not an eraid member"),
        "{log}"
    );
    server.stop();
    assert_eq!(file_hash(&d.join("zeros")), zeros_before);
}

#[test]
fn member_of_a_different_array_mixed_in() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    create(d, &["--level", "5", "--size", "8M", "p", "q", "r"]);
    // The odd one out is the stray member, whatever its position.
    for members in [["a", "b", "r"], ["r", "a", "b"], ["a", "r", "b"]] {
        for verb in ["detail", "check"] {
            let mut args = vec![verb];
            args.extend_from_slice(&members);
            let out = rejected(d, &args, &["another array"]);
            assert!(
                out.stderr.contains("r belongs to another array")
                    || out.stderr.contains("r is")
                    || out.stderr.contains("/r "),
                "the error must name the stray member r, not one of the majority: {out}"
            );
        }
        // serve leaves the stray member out, naming it, and runs degraded
        // (its own slot, c, is missing); r is not touched.
        let r_before = file_hash(&d.join("r"));
        let mut server = Server::start(d, &members);
        server.wait_for_log("left out", std::time::Duration::from_secs(10));
        let log = server.log_text();
        assert!(
            log.contains("left out r") && log.contains("another array"),
            "{log}"
        );
        server.stop();
        assert_eq!(
            file_hash(&d.join("r")),
            r_before,
            "the stray member was written"
        );
    }
    // All four of one array plus... a full array with a stranger.
    rejected(d, &["detail", "a", "b", "c", "p"], &["p", "another array"]);
}

/// `detail` of `members` shows a failed array (exit 0, nothing changed),
/// its reason naming each of `names`, and still the geometry.
#[track_caller]
fn assert_failed(d: &std::path::Path, members: &[&str], names: &[&str]) {
    let before = snapshot(d);
    let detail = detail_json(d, members);
    assert_eq!(snapshot(d), before);
    assert_eq!(detail["state"], "failed", "{detail:#}");
    assert!(detail["level"].is_number() && detail["chunk_bytes"].is_number());
    let reason = detail["failed_reason"].as_str().unwrap_or("");
    for name in names {
        assert!(reason.contains(name), "{name:?} not in {detail:#}");
    }
}

#[test]
fn raid0_with_a_member_missing_names_it() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "0", "--size", "8M", "z0", "z1", "z2"]);
    rejected(d, &["check", "z0", "z2"], &["RAID-0", "member 1", "z1"]);
    assert_failed(d, &["z0", "z2"], &["RAID-0", "member 1", "z1"]);
    rejected(
        d,
        &["serve", "--socket", "s.sock", "z0", "z2"],
        &["member 1", "z1"],
    );
}

#[test]
fn raid5_with_two_members_missing() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c", "e"]);
    rejected(d, &["check", "a", "e"], &["RAID-5", "/b", "/c"]);
    assert_failed(d, &["a", "e"], &["RAID-5", "/b", "/c"]);
    rejected(d, &["serve", "--socket", "s.sock", "a", "e"], &["/b", "/c"]);
    // RAID-6 with three missing, RAID-10 with both copies of a pair missing.
    create(
        d,
        &["--level", "6", "--size", "8M", "s0", "s1", "s2", "s3", "s4"],
    );
    assert_failed(d, &["s0", "s4"], &["RAID-6", "/s1", "/s2", "/s3"]);
    create(
        d,
        &["--level", "10", "--size", "8M", "t0", "t1", "t2", "t3"],
    );
    assert_failed(d, &["t2", "t3"], &["RAID-10", "0", "1"]);
    rejected(
        d,
        &["serve", "--socket", "s.sock", "t2", "t3"],
        &["RAID-10"],
    );
}

#[test]
fn member_truncated_below_the_array_size() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("b"))
        .unwrap()
        .set_len(4 * MIB)
        .unwrap();
    rejected(d, &["detail", "a", "b", "c"], &["b", "smaller"]);
    // serve runs degraded without it (RAID-5 survives one), naming it and
    // why, and leaves it as it is.
    let b_before = file_hash(&d.join("b"));
    let mut server = Server::start(d, &["a", "b", "c"]);
    server.wait_for_log("left out", std::time::Duration::from_secs(10));
    let log = server.log_text();
    assert!(
        log.contains("left out b") && log.contains("smaller"),
        "{log}"
    );
    server.stop();
    assert_eq!(
        file_hash(&d.join("b")),
        b_before,
        "the truncated member was written"
    );
    // With a second member unusable too, serve refuses, naming both, and
    // writes nothing.
    flip_bytes(&d.join("c"), 100, 16);
    flip_bytes(&d.join("c"), (64 << 10) + 100, 16);
    let before = snapshot(d);
    rejected(
        d,
        &["serve", "--socket", "s.sock", "a", "b", "c"],
        &["left out", "b", "smaller", "c", "not an eraid member"],
    );
    assert_eq!(snapshot(d), before, "a refused serve changed a file");
}

/// Superblock slots are at 0 and 64 KiB of each member; after one serve the
/// two slots hold consecutive event counts. Damaging one slot (the newest or
/// the older one) must still assemble; damaging both makes the member "not
/// an eraid member".
#[test]
fn damaged_superblock_slots() {
    if !require_tools("damaged_superblock_slots", &["nbdcopy"]) {
        return;
    }
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "16M", "a", "b", "c"]);
    write_random(&d.join("data.bin"), 4 * MIB, 7);
    let server = Server::start(d, &["a", "b", "c"]);
    run_tool(d, "nbdcopy", &["data.bin", &server.uri]).expect_ok();
    server.stop();
    let events = detail_json(d, &["a", "b", "c"])["events"].as_u64().unwrap();
    assert!(
        events >= 2,
        "serve then stop should have written both slots (events {events})"
    );

    let read_back = |name: &str, members: &[&str]| {
        let server = Server::start(d, members);
        run_tool(d, "nbdcopy", &[&server.uri, name]).expect_ok();
        server.stop();
        assert_same_prefix(&d.join("data.bin"), &d.join(name), 4 * MIB, name);
    };

    // Slot 0 of b damaged (offset 100): the other slot assembles.
    flip_bytes(&d.join("b"), 100, 16);
    let detail = detail_json(d, &["a", "b", "c"]);
    assert_eq!(
        detail["members"][1]["state"], "active",
        "slot 0 of b damaged: {detail:#}"
    );
    read_back("rb1.bin", &["a", "b", "c"]);

    // Slot 1 (at 64 KiB) of c damaged: the older slot 0 assembles (c may be
    // taken as in sync or stale, but the array runs and the data is there).
    flip_bytes(&d.join("c"), (64 << 10) + 100, 16);
    let out = eraid(d, &["detail", "--json", "a", "b", "c"]);
    assert!(
        out.ok(),
        "one damaged slot on each of two members must still assemble: {out}"
    );
    read_back("rb2.bin", &["a", "b", "c"]);

    // Both slots of a damaged: a is not an eraid member (named in the error).
    flip_bytes(&d.join("a"), 100, 16);
    flip_bytes(&d.join("a"), (64 << 10) + 100, 16);
    rejected(d, &["check", "a", "b", "c"], &["a", "not an eraid member"]);
    // detail shows a in its slot, with why it cannot be used.
    let detail = detail_json(d, &["a", "b", "c"]);
    let a = &detail["members"][0];
    assert!(
        a["path"] == "a"
            && a["state"] == "unreadable"
            && a["reason"]
                .as_str()
                .is_some_and(|r| r.contains("unreadable superblock") && r.contains("checksum")),
        "{detail:#}"
    );
    // serve runs degraded without it (redundancy allows), naming a and why.
    let mut server = Server::start(d, &["a", "b", "c"]);
    server.wait_for_log("left out", std::time::Duration::from_secs(10));
    let log = server.log_text();
    assert!(
        log.contains("not an eraid member") && log.contains("/a"),
        "{log}"
    );
    server.stop();
}

/// A `serve` that cannot listen must fail before it touches the members
/// (the issue: errors change nothing on disk).
#[test]
fn serve_that_cannot_listen_changes_nothing() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    rejected(
        d,
        &[
            "serve",
            "--socket",
            "/nonexistent-dir/x.sock",
            "a",
            "b",
            "c",
        ],
        &["/nonexistent-dir/x.sock"],
    );
    rejected(
        d,
        &["serve", "--listen", "256.0.0.1:10809", "a", "b", "c"],
        &["256.0.0.1"],
    );
    rejected(
        d,
        &[
            "serve",
            "--socket",
            "s.sock",
            "--listen",
            "127.0.0.1:10809",
            "a",
            "b",
            "c",
        ],
        &["--socket", "--listen"],
    );
}

/// A second server (or `check`) on members another `eraid serve` is
/// running must be refused: two engines writing the same members corrupt
/// parity and metadata. The socket of the running server must survive.
#[test]
fn members_in_use_are_refused() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    create(d, &["--level", "5", "--size", "8M", "p", "q", "r"]);
    let mut server = Server::start(d, &["a", "b", "c"]);
    let socket = server.socket.display().to_string();
    // Another array on the same socket path: refused, first server unharmed.
    let out = eraid(d, &["serve", "--socket", &socket, "p", "q", "r"]);
    assert!(
        !out.ok(),
        "a second server on a socket in use must fail: {out}"
    );
    assert!(
        server.running() && server.socket.exists(),
        "the first server lost its socket"
    );
    // The same members again, on another socket.
    let mut second = std::process::Command::new(eraid_bin())
        .args(["serve", "--socket", "other.sock", "a", "b", "c"])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_timeout(&mut second, std::time::Duration::from_secs(5));
    if status.is_none() {
        signal(&second, SIGKILL);
        let _ = second.wait();
    }
    assert!(
        matches!(status, Some(s) if !s.success()),
        "a second `eraid serve` of members already being served must be refused \
         (it was still running after 5 s, or exited 0: {status:?})"
    );
    let check = eraid(d, &["check", "a", "b", "c"]);
    assert!(
        !check.ok(),
        "`check` of members being served must be refused: {check}"
    );
    server.stop();
}

#[test]
fn help_for_each_verb() {
    let s = scratch();
    let d = s.path();
    let top = eraid(d, &["--help"]).expect_ok();
    for verb in [
        "create", "detail", "serve", "check", "demo", "grow", "reshape",
    ] {
        assert!(
            top.stdout.contains(verb),
            "`eraid --help` should list {verb}: {top}"
        );
    }
    let cases: [(&str, &[&str]); 6] = [
        (
            "create",
            &[
                "--level", "--chunk", "--layout", "--size", "--force", "MEMBERS",
            ],
        ),
        ("detail", &["--json", "MEMBERS"]),
        ("serve", &["--socket", "--listen", "MEMBERS", "NBD"]),
        ("check", &["--repair", "mismatch", "MEMBERS"]),
        ("demo", &["RAID-5"]),
        ("reshape", &["pause", "resume", "set", "--control"]),
    ];
    for (verb, words) in cases {
        let out = eraid(d, &[verb, "--help"]).expect_ok();
        assert!(
            out.stdout.len() > 200,
            "`eraid {verb} --help` is too short to explain the verb: {out}"
        );
        for w in words {
            assert!(
                out.stdout.contains(w),
                "`eraid {verb} --help` should mention {w}: {out}"
            );
        }
    }
    // No verb at all, or an unknown one: usage error, non-zero.
    assert!(!eraid(d, &[]).ok());
    assert!(!eraid(d, &["frobnicate"]).ok());
    assert!(snapshot(d).is_empty(), "help created files");
}

#[test]
fn serve_limits_out_of_range_are_refused_naming_the_flag() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "a", "b", "c"]);
    for (flag, value) in [
        ("--handshake-timeout-s", "0"),
        ("--shutdown-timeout-s", "0"),
        ("--send-timeout-s", "zero"),
        ("--max-connections", "0"),
        ("--handshake-reserve", "0"),
        ("--max-in-flight-requests", "0"),
        // Less than one maximal (32 MiB) request.
        ("--max-in-flight-mib", "16"),
    ] {
        rejected(
            d,
            &["serve", "--socket", "s.sock", flag, value, "a", "b", "c"],
            &[flag, value],
        );
    }
    // A reconnect window the member timeout would cut short, when both are
    // given; --member-timeout-s alone shortens the default window instead
    // (tests/fault_injection.rs serves with --member-timeout-s 10 only).
    rejected(
        d,
        &[
            "serve",
            "--socket",
            "s.sock",
            "--member-timeout-s",
            "10",
            "--member-reconnect-s",
            "10",
            "a",
            "b",
            "c",
        ],
        &["--member-reconnect-s 10", "--member-timeout-s 10"],
    );
}

//! Bad input to `eraid grow` (and the control socket): each case exits
//! non-zero with an error naming what was wrong, and leaves every member
//! byte-identical (offline: every file of the directory).

mod support;

use support::*;

#[test]
fn offline_bad_input_changes_nothing() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "0", "--size", "8M", "a", "b"]);
    create(d, &["--level", "5", "--size", "8M", "p", "q", "r"]);
    create(d, &["--level", "6", "--size", "8M", "w", "x", "y", "z"]);
    blank(d, "new", 8 * MIB);
    blank(d, "small", 4 * MIB);

    rejected(
        d,
        &["grow", "a", "b", "--add", "new", "--strategy", "zigzag"],
        &["strategy", "zigzag", "fastscale"],
    );
    // A RAID-5 strategy on RAID-0 and the reverse.
    rejected(
        d,
        &["grow", "a", "b", "--add", "new", "--strategy", "alv"],
        &["alv", "RAID-0"],
    );
    rejected(
        d,
        &["grow", "a", "b", "--add", "new", "--strategy", "md-reshape"],
        &["md-reshape", "RAID-0"],
    );
    rejected(
        d,
        &[
            "grow",
            "p",
            "q",
            "r",
            "--add",
            "new",
            "--strategy",
            "fastscale",
        ],
        &["fastscale", "RAID-5"],
    );
    rejected(
        d,
        &["grow", "w", "x", "y", "z", "--add", "new"],
        &["RAID-6", "not supported"],
    );
    // The added files themselves.
    rejected(
        d,
        &["grow", "a", "b", "--add", "nothere"],
        &["nothere", "does not exist"],
    );
    rejected(
        d,
        &["grow", "a", "b", "--add", "small"],
        &["small", "too small"],
    );
    rejected(
        d,
        &["grow", "a", "b", "--add", "b"],
        &["b", "already a member"],
    );
    rejected(
        d,
        &["grow", "a", "b", "--add", "new", "new"],
        &["new", "named twice"],
    );
    // A member of another array (and of this one, by another name).
    rejected(
        d,
        &["grow", "a", "b", "--add", "p"],
        &["p", "already belongs", "array"],
    );
    std::os::unix::fs::symlink(d.join("a"), d.join("a-link")).unwrap();
    rejected(
        d,
        &["grow", "a", "b", "--add", "a-link"],
        &["a-link", "already a member"],
    );
    std::fs::remove_file(d.join("a-link")).unwrap();
    // Settings no growth can run with.
    rejected(
        d,
        &["grow", "p", "q", "r", "--add", "new", "--slack", "2"],
        &["slack"],
    );
    // The valve's settings do nothing for other strategies: said, not ignored.
    rejected(
        d,
        &[
            "grow",
            "p",
            "q",
            "r",
            "--add",
            "new",
            "--strategy",
            "md-reshape",
            "--latency-bound",
            "30",
        ],
        &["--latency-bound", "md-reshape"],
    );
    rejected(
        d,
        &[
            "grow",
            "p",
            "q",
            "r",
            "--add",
            "new",
            "--strategy",
            "md-reshape",
            "--valve-latency",
            "processing",
        ],
        &["--valve-latency", "md-reshape"],
    );
    rejected(
        d,
        &[
            "grow",
            "p",
            "q",
            "r",
            "--add",
            "new",
            "--valve-latency",
            "wall",
        ],
        &[
            "--valve-latency",
            "wall",
            "response, admission or processing",
        ],
    );
    rejected(
        d,
        &[
            "grow",
            "p",
            "q",
            "r",
            "--add",
            "new",
            "--speed-min",
            "500",
            "--speed-max",
            "100",
        ],
        &["speed"],
    );
    rejected(
        d,
        &[
            "grow",
            "p",
            "q",
            "r",
            "--add",
            "new",
            "--aggregation-kib",
            "0",
        ],
        &["aggregation"],
    );
    rejected(
        d,
        &["grow", "p", "q", "r", "--add", "new", "--io-rate-max", "0"],
        &["--io-rate-max", "at least 1"],
    );
    // Neither members nor --control; --add without a value.
    rejected(d, &["grow", "--add", "new"], &["MEMBERS"]);
    rejected(d, &["grow", "a", "b", "--add"], &["--add"]);
    // No server behind the control socket.
    rejected(
        d,
        &["grow", "--add", "new", "--control", "nobody.sock"],
        &["nobody.sock", "control socket"],
    );
}

/// Through a running server: the same checks, the server keeps serving the
/// array unchanged, and the added files are untouched.
#[test]
fn control_socket_bad_input() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "0", "--size", "8M", "a", "b"]);
    create(d, &["--level", "5", "--size", "8M", "p", "q", "r"]);
    blank(d, "new", 8 * MIB);
    blank(d, "small", 4 * MIB);
    let mut server = Server::start_with(d, &["--control", "ctl.sock"], &["a", "b"]);
    let untouched = |names: &[&str]| -> Vec<(u64, u64)> {
        names.iter().map(|n| file_hash(&d.join(n))).collect()
    };
    let files = ["new", "small", "p", "q", "r"];
    let before = untouched(&files);
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--add", "new", "--strategy", "zigzag"], &["zigzag"]),
        (&["--add", "new", "--strategy", "alv"], &["alv", "RAID-0"]),
        (&["--add", "nothere"], &["nothere", "does not exist"]),
        (&["--add", "small"], &["small", "too small"]),
        (&["--add", "p"], &["p", "already belongs"]),
        (&["--add", "a"], &["a", "already a member"]),
    ];
    for (extra, names) in cases {
        let mut args = vec!["grow", "--control", "ctl.sock"];
        args.extend_from_slice(extra);
        let out = eraid(d, &args);
        assert!(!out.ok(), "expected a failure: {out}");
        let stderr = out.stderr.to_lowercase();
        for name in names {
            assert!(
                stderr.contains(&name.to_lowercase()),
                "the error should name {name:?}: {out}"
            );
        }
    }
    assert_eq!(before, untouched(&files), "a refused growth changed a file");
    assert!(server.running(), "{}", server.log_text());
    let status = eraid(d, &["detail", "--json", "--control", "ctl.sock"])
        .expect_ok()
        .json();
    assert_eq!(status["member_count"], 2, "{status:#}");
    assert!(status["reshape"].is_null(), "{status:#}");
    // The refused files are not held: a growth onto `new` still works.
    eraid(d, &["grow", "--control", "ctl.sock", "--add", "new"]).expect_ok();

    // A second server on the same control socket is refused and the first
    // keeps it.
    let out = eraid(
        d,
        &[
            "serve",
            "--socket",
            "other.sock",
            "--control",
            "ctl.sock",
            "p",
            "q",
            "r",
        ],
    );
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr.contains("ctl.sock") && out.stderr.contains("another server"),
        "{out}"
    );
    eraid(d, &["detail", "--control", "ctl.sock"]).expect_ok();
    server.stop();
    assert!(
        !d.join("ctl.sock").exists(),
        "the control socket file is removed at exit"
    );
}

/// A stale control socket (no server behind it) is replaced; a path that
/// is not a socket is refused before anything is written.
#[test]
fn stale_and_foreign_control_paths() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "8M", "p", "q", "r"]);
    drop(std::os::unix::net::UnixListener::bind(d.join("stale.sock")).unwrap());
    assert!(d.join("stale.sock").exists());
    let server = Server::start_with(d, &["--control", "stale.sock"], &["p", "q", "r"]);
    let status = eraid(d, &["detail", "--json", "--control", "stale.sock"])
        .expect_ok()
        .json();
    assert_eq!(status["level"], 5, "{status:#}");
    server.stop();

    std::fs::write(d.join("notes.txt"), "not a socket").unwrap();
    rejected(
        d,
        &[
            "serve",
            "--socket",
            "s.sock",
            "--control",
            "notes.txt",
            "p",
            "q",
            "r",
        ],
        &["notes.txt", "not a socket"],
    );
}

#[test]
fn grow_help_explains_strategies_and_knobs() {
    let s = scratch();
    let d = s.path();
    let top = eraid(d, &["--help"]).expect_ok();
    assert!(top.stdout.contains("grow"), "{top}");
    let out = eraid(d, &["grow", "--help"]).expect_ok();
    for word in [
        "--add",
        "--strategy",
        "--no-wait",
        "--control",
        "--aggregation-kib",
        "--latency-bound",
        "--slack",
        "--valve-latency",
        "processing",
        "--speed-min",
        "--speed-max",
        "round-robin",
        "semi-rr",
        "fastscale",
        "md-reshape",
        "alv",
        "RAID-0",
        "RAID-5",
    ] {
        assert!(
            out.stdout.contains(word),
            "`grow --help` should explain {word}: {out}"
        );
    }
    let serve = eraid(d, &["serve", "--help"]).expect_ok();
    assert!(
        serve.stdout.contains("--control") && serve.stdout.contains("\"command\""),
        "{serve}"
    );
    for verb in ["detail", "check"] {
        let out = eraid(d, &[verb, "--help"]).expect_ok();
        assert!(out.stdout.contains("--control"), "{out}");
    }
    assert!(snapshot(d).is_empty(), "help created files");
}

/// A growth interrupted (SIGINT closes the array cleanly, the growth stays
/// recorded as running), then `serve` without the new member: refused,
/// naming it, and nothing changed (resuming with every member is covered by
/// the acceptance tests in grow_online.rs).
#[test]
fn serve_refuses_an_unfinished_growth_with_a_member_missing() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "64M", "p", "q", "r"]);
    blank(d, "n", 64 << 20);
    let mut grow = std::process::Command::new(eraid_bin())
        .args(["grow", "p", "q", "r", "--add", "n", "--speed-max", "4000"])
        .current_dir(d)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("eraid grow starts");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    signal(&grow, 2);
    let status = wait_timeout(&mut grow, std::time::Duration::from_secs(30)).expect("grow stops");
    assert!(!status.success(), "interrupted growth exits non-zero");
    let detail = detail_json(d, &["p", "q", "r", "n"]);
    assert_eq!(detail["reshape"]["state"], "running", "{detail:#}");
    let out = rejected(
        d,
        &["serve", "--socket", "x.sock", "p", "q", "r"],
        &["member 3", "growth"],
    );
    assert!(out.stderr.contains("--allow-degraded-growth"), "{out}");
}

/// A RAID-0 grown with fastscale keeps growing with fastscale: another
/// strategy is refused before anything is written.
#[test]
fn a_fastscale_array_refuses_other_strategies() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "0", "--size", "8M", "a", "b"]);
    blank(d, "c", 8 << 20);
    blank(d, "e", 8 << 20);
    eraid(
        d,
        &["grow", "a", "b", "--add", "c", "--strategy", "fastscale"],
    )
    .expect_ok();
    for strategy in ["round-robin", "semi-rr"] {
        rejected(
            d,
            &["grow", "a", "b", "c", "--add", "e", "--strategy", strategy],
            &["grown with fastscale"],
        );
    }
    eraid(d, &["grow", "a", "b", "c", "--add", "e"]).expect_ok();
    assert_eq!(detail_json(d, &["a", "b", "c", "e"])["member_count"], 4);
}

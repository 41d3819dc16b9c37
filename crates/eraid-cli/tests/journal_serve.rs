//! The write-back cache's journal on a real array (issue 17, acceptance 2):
//! a 5-member RAID-5 made with `--journal j.img` serves with MSC-CT; fio
//! writes random 4 KiB blocks with crc32c verify headers, the server is
//! SIGKILLed mid-run, served again (the journal is replayed), and fio's
//! verify pass over what it had written succeeds; `eraid check` finds 0
//! mismatches. Also: bad `--journal`/`--cache` flags are refused, naming
//! what is wrong, and change nothing.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

const MEMBERS: [&str; 5] = ["d0", "d1", "d2", "d3", "d4"];

#[test]
fn sigkill_mid_fio_then_replay_keeps_every_acknowledged_write() {
    if !require_tools("journal_serve", &["fio"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let mut create = vec![
        "create",
        "--level",
        "5",
        "--size",
        "64M",
        "--journal",
        "j.img",
        "--journal-size",
        "64M",
        "--cache",
        "msc-ct",
        "--cache-size",
        "32M",
    ];
    create.extend(MEMBERS);
    eraid(dir, &create).expect_ok();
    let mut detail = vec!["detail", "--json"];
    detail.extend(MEMBERS);
    let recorded = eraid(dir, &detail).expect_ok().json();
    assert_eq!(recorded["cache"]["policy"], "msc-ct", "{recorded}");
    assert_eq!(
        recorded["cache"]["journal"]["state"], "recorded",
        "{recorded}"
    );

    let mut server = Server::start(dir, &MEMBERS);
    let mut fio = Command::new(tool("fio"))
        .args(fio_verify_job("journaled", &server.uri, 32, false))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fio runs");
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        fio.try_wait().unwrap().is_none(),
        "fio ended before the crash"
    );
    server.kill9();
    let _ = wait_timeout(&mut fio, Duration::from_secs(60));
    let state = dir.join("local-journaled-0-verify.state");
    assert!(state.exists(), "fio saved what it wrote");

    let control = dir.join("control.sock");
    let control_arg = control.display().to_string();
    let server = Server::start_with(dir, &["--control", &control_arg], &MEMBERS);
    let log = server.log_text();
    assert!(log.contains("replaying"), "the journal is replayed: {log}");
    let status = eraid(dir, &["detail", "--json", "--control", &control_arg])
        .expect_ok()
        .json();
    let cache = &status["cache"];
    assert_eq!(cache["policy"], "msc-ct", "{status}");
    assert_eq!(cache["journal"]["state"], "active", "{status}");
    for field in [
        "size_bytes",
        "dirty_bytes",
        "destages",
        "transform_reads",
        "transform_writes",
    ] {
        assert!(cache[field].is_u64(), "cache.{field} in {status}");
    }
    let verify = run_tool(
        dir,
        "fio",
        &fio_verify_job("journaled", &server.uri, 32, true)
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    );
    assert!(verify.ok(), "fio's verify pass after the crash: {verify}");
    server.stop();
    let mut check = vec!["check"];
    check.extend(MEMBERS);
    let checked = eraid(dir, &check).expect_ok();
    assert!(
        checked.stdout.contains("0 mismatches"),
        "parity after replay: {checked}"
    );
}

/// Each bad journal or cache flag is refused before anything is written:
/// no member file is created.
#[test]
fn bad_journal_and_cache_flags_are_refused_changing_nothing() {
    let scratch = scratch();
    let dir = scratch.path();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--cache", "msc-ct"], "needs --journal"),
        (
            vec!["--journal", "j.img", "--journal-size", "1M"],
            "too small",
        ),
        (vec!["--journal", "d1"], "also a member"),
        (vec!["--journal", "no/such/dir/j.img"], "no/such/dir/j.img"),
        (
            vec!["--journal", "j.img", "--cache", "lru"],
            "unknown cache policy",
        ),
        (vec!["--journal-size", "64M"], "needs --journal"),
        (
            vec!["--journal", "j.img", "--cache-size", "4K"],
            "cache size",
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["create", "--level", "5", "--size", "64M"];
        args.extend(&flags);
        args.extend(MEMBERS);
        let out = eraid(dir, &args);
        assert!(!out.ok(), "{flags:?} accepted: {out}");
        assert!(out.stderr.contains(expected), "{flags:?}: {out}");
        for name in MEMBERS.iter().chain(&["j.img"]) {
            assert!(!dir.join(name).exists(), "{flags:?} left {name} behind");
        }
    }
    // A journal that is not the array's own is refused at serve.
    let mut create = vec![
        "create",
        "--level",
        "5",
        "--size",
        "64M",
        "--journal",
        "j.img",
    ];
    create.extend(MEMBERS);
    eraid(dir, &create).expect_ok();
    std::fs::write(dir.join("other.img"), vec![0u8; 16 << 20]).unwrap();
    let mut serve = vec!["serve", "--socket", "s.sock", "--journal", "other.img"];
    serve.extend(MEMBERS);
    let out = eraid(dir, &serve);
    assert!(!out.ok() && out.stderr.contains("other.img"), "{out}");
    let recorded = eraid(dir, &["detail", "--json", "d0", "d1", "d2", "d3", "d4"])
        .expect_ok()
        .json();
    assert_eq!(recorded["clean"], true, "serve changed nothing: {recorded}");
}

/// A write longer than the journal takes at once (half its log) is
/// refused with EINVAL at once, and the limit is advertised as the NBD
/// export's maximum block size; before, a 16 MiB write to an array with
/// the smallest journal `create` accepts waited for room for ever, and
/// the server answered no write after it.
#[test]
fn a_write_longer_than_the_journal_takes_is_refused_not_left_waiting() {
    let test = "journal write length";
    if !require_tools(test, &["nbdcopy", "nbdinfo"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let mut create = vec![
        "create",
        "--level",
        "5",
        "--chunk",
        "64K",
        "--size",
        "64M",
        "--journal",
        "j.img",
        "--journal-size",
        "17M",
    ];
    create.extend(&MEMBERS[..4]);
    eraid(dir, &create).expect_ok();
    write_random(&dir.join("big.bin"), 16 * MIB, 77);
    let server = Server::start(dir, &MEMBERS[..4]);
    let info = run_tool(dir, "nbdinfo", &[&server.uri]).expect_ok();
    let maximum: u64 = info
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("block_size_maximum: "))
        .expect("nbdinfo shows the maximum block size")
        .trim()
        .parse()
        .expect("a number");
    assert!(
        (MIB..16 * MIB).contains(&maximum),
        "{test}: advertised maximum {maximum}"
    );
    let long = run_tool(
        dir,
        "nbdcopy",
        &["--request-size=16777216", "big.bin", &server.uri],
    );
    assert!(
        !long.ok() && long.stderr.contains("Invalid argument"),
        "{test}: {long}"
    );
    // Writes within the limit still go through, and read back.
    let request_size = format!("--request-size={}", 1 << 20);
    run_tool(dir, "nbdcopy", &[&request_size, "big.bin", &server.uri]).expect_ok();
    run_tool(dir, "nbdcopy", &[&server.uri, "back.bin"]).expect_ok();
    assert_same_prefix(
        &dir.join("big.bin"),
        &dir.join("back.bin"),
        16 * MIB,
        &format!("{test}: data after the refused write"),
    );
    server.stop();
}

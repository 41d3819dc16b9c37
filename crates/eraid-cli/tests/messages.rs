//! What the user is told, and what the control socket accepts: requests of
//! the wrong type are refused naming the field; growth flag errors name the
//! flag typed and no other; a ceiling of 1 KiB/s holds from the first
//! window; an error is not printed twice; a relative socket path in a deep
//! directory works.

mod support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// Sends one raw request line to a control socket; its answer.
fn control_call(dir: &Path, socket: &str, request: &Value) -> Value {
    let mut stream = UnixStream::connect(dir.join(socket)).expect("connect to the control socket");
    writeln!(stream, "{request}").unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {line}"))
}

#[track_caller]
fn refused_naming(answer: &Value, field: &str) {
    assert_eq!(answer["ok"], false, "expected a refusal: {answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(field),
        "the error should name {field}: {answer}"
    );
}

#[test]
fn control_requests_of_the_wrong_type_are_refused_naming_the_field() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    blank(d, "n0", 16 * MIB);
    let server = Server::start_with(d, &["--control", "ctl.sock"], &["d0", "d1", "d2"]);
    for repair in [json!("yes"), json!(1), json!(null)] {
        let answer = control_call(
            d,
            "ctl.sock",
            &json!({"command": "check", "repair": repair}),
        );
        refused_naming(&answer, "repair");
    }
    let status = live(d, "ctl.sock");
    assert!(status["activity"].is_null(), "a check started: {status:#}");
    let n0 = d.join("n0").display().to_string();
    let answer = control_call(
        d,
        "ctl.sock",
        &json!({"command": "grow", "add": [n0], "config": {"strategy": "alv", "slack": "lots"}}),
    );
    refused_naming(&answer, "slack");
    let answer = control_call(
        d,
        "ctl.sock",
        &json!({"command": "tune-grow", "settings": {"speed_max_kib_s": "fast"}}),
    );
    refused_naming(&answer, "speed_max_kib_s");
    assert!(live(d, "ctl.sock")["reshape"].is_null());
    // A well-formed check still runs.
    let answer = control_call(d, "ctl.sock", &json!({"command": "check", "repair": false}));
    assert_eq!(answer["ok"], true, "{answer}");
    server.stop();
}

const GROWTH_FLAGS: [&str; 5] = [
    "--speed-min",
    "--speed-max",
    "--aggregation-kib",
    "--latency-bound",
    "--slack",
];

/// Runs `eraid ARGS`, expects a refusal naming exactly the flags `named`
/// among the growth flags, and no internal setting name.
#[track_caller]
fn flag_error(dir: &Path, args: &[&str], named: &[&str]) {
    let out = eraid(dir, args);
    assert_eq!(out.code(), Some(2), "expected a refusal: {out}");
    for flag in GROWTH_FLAGS {
        assert_eq!(
            out.stderr.contains(flag),
            named.contains(&flag),
            "the error should name {named:?} and no other flag: {out}"
        );
    }
    for internal in ["_kib_s", "_ms", "aggregation_bytes"] {
        assert!(!out.stderr.contains(internal), "internal name in: {out}");
    }
}

#[test]
fn growth_flag_errors_name_the_flag_typed() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "64M", "d0", "d1", "d2"]);
    blank(d, "n0", 64 * MIB);
    let grow = ["grow", "d0", "d1", "d2", "--add", "n0"];
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--speed-max", "0"], &["--speed-max"]),
        (
            &["--speed-min", "100", "--speed-max", "10"],
            &["--speed-min", "--speed-max"],
        ),
        (&["--latency-bound", "0"], &["--latency-bound"]),
        (&["--slack", "2"], &["--slack"]),
        (&["--aggregation-kib", "0"], &["--aggregation-kib"]),
        (
            &["--strategy", "md-reshape", "--slack", "0.5"],
            &["--slack"],
        ),
    ];
    for (extra, named) in cases {
        let mut args = grow.to_vec();
        args.extend_from_slice(extra);
        flag_error(d, &args, named);
    }
    // On a running growth, `reshape set` too.
    let server = Server::start_with(d, &["--control", "ctl.sock"], &["d0", "d1", "d2"]);
    eraid(
        d,
        &[
            "grow",
            "--control",
            "ctl.sock",
            "--add",
            "n0",
            "--speed-max",
            "1",
            "--no-wait",
        ],
    )
    .expect_ok();
    let set = ["reshape", "set", "--control", "ctl.sock"];
    let cases: [(&[&str], &[&str]); 4] = [
        (&["--speed-max", "0"], &["--speed-max"]),
        (&["--speed-min", "50"], &["--speed-min", "--speed-max"]),
        (&["--slack=-0.5"], &["--slack"]),
        (&["--latency-bound=-3"], &["--latency-bound"]),
    ];
    for (extra, named) in cases {
        let mut args = set.to_vec();
        args.extend_from_slice(extra);
        flag_error(d, &args, named);
    }
    server.stop();
}

/// `--speed-max 1` (KiB/s): after the first window (3 MiB here) the growth
/// waits for that window to be paid for at the ceiling, instead of moving
/// a second one at full speed.
#[test]
fn a_ceiling_of_one_kib_per_second_holds_from_the_first_window() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "64M", "d0", "d1", "d2"]);
    blank(d, "n0", 64 * MIB);
    let server = Server::start_with(d, &["--control", "ctl.sock"], &["d0", "d1", "d2"]);
    eraid(
        d,
        &[
            "grow",
            "--control",
            "ctl.sock",
            "--add",
            "n0",
            "--speed-max",
            "1",
            "--no-wait",
        ],
    )
    .expect_ok();
    std::thread::sleep(Duration::from_secs(3));
    let reshape = live(d, "ctl.sock")["reshape"].clone();
    let processed = reshape["processed_bytes"].as_u64().unwrap();
    assert!(
        processed > 0 && processed <= 4 * MIB,
        "at 1 KiB/s, 3 s after the start, one window at most: {reshape:#}"
    );
    assert_eq!(reshape["config"]["speed_max_kib_s"], 1, "{reshape:#}");
    server.stop();
}

#[test]
fn a_port_in_use_is_reported_once() {
    let s = scratch();
    let d = s.path();
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let out = rejected(
        d,
        &["serve", "--listen", &address, "d0", "d1", "d2"],
        &[&address, "in use"],
    );
    assert_eq!(
        out.stderr.matches("in use").count(),
        1,
        "the error is repeated: {out}"
    );
    assert_eq!(out.stderr.matches("cannot listen").count(), 1, "{out}");
}

/// A working directory deeper than a Unix socket path allows: relative
/// socket paths are bound as given, and the URI printed works from there.
#[test]
fn relative_socket_paths_work_in_a_deep_directory() {
    let s = scratch();
    let deep = s.path().join("a".repeat(60)).join("b".repeat(60));
    std::fs::create_dir_all(&deep).unwrap();
    let d = deep.as_path();
    assert!(d.join("s.sock").as_os_str().len() > 107);
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    let mut child = Command::new(eraid_bin())
        .args([
            "serve",
            "--socket",
            "s.sock",
            "--control",
            "c.sock",
            "d0",
            "d1",
            "d2",
        ])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut uri = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut uri)
        .unwrap();
    let exited = child.try_wait().unwrap();
    if exited.is_some() || uri.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("serve in a deep directory did not start: {exited:?}");
    }
    assert_eq!(uri.trim(), "nbd+unix:///?socket=s.sock");
    let status = eraid(d, &["detail", "--json", "--control", "c.sock"]);
    let client = if have_tool("nbdinfo") {
        Some(run_tool(d, "nbdinfo", &["--size", uri.trim()]))
    } else {
        None
    };
    signal(&child, SIGTERM);
    let stopped = wait_timeout(&mut child, Duration::from_secs(60));
    if stopped.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(status.json()["level"], 5, "{status}");
    if let Some(info) = client {
        let info = info.expect_ok();
        assert_eq!(info.stdout.trim(), (2 * 15 * MIB).to_string(), "{info}");
    }
    assert!(
        matches!(stopped, Some(s) if s.success()),
        "serve: {stopped:?}"
    );
    // A path too long even as given is refused, naming the flag.
    let long = format!("{}.sock", "s".repeat(120));
    rejected(
        d,
        &["serve", "--socket", &long, "d0", "d1", "d2"],
        &["--socket", "107"],
    );
}

//! Issue 18 acceptance 2 through the real binary: a CRS (4 data + 2 parity)
//! array of 256 MiB members is served; while `nbdcopy` writes 200 MiB of
//! random data, `eraid grow --add d6 --strategy epu|scale-crs` completes;
//! the data reads back equal, `check` finds 0 mismatches, and with two
//! members removed (several pairs, the new member among them) the data
//! still reads back equal. Also each strategy with the server SIGKILLed
//! mid-growth and restarted (scale-crs with `--matrix optimized`). Members are on tmpfs when available.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const DATA_BYTES: u64 = 200 * MIB;
const OLD: [&str; 6] = ["d0", "d1", "d2", "d3", "d4", "d5"];
const ALL: [&str; 7] = ["d0", "d1", "d2", "d3", "d4", "d5", "d6"];

fn create_crs(dir: &Path) {
    let mut args = vec![
        "create", "--level", "crs", "--data", "4", "--parity", "2", "--size", "256M",
    ];
    args.extend_from_slice(&OLD);
    eraid(dir, &args).expect_ok();
    blank(dir, "d6", 256 * MIB);
}

fn spawn(dir: &Path, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn finish(test: &str, mut child: Child, what: &str, server: &Server) -> String {
    let status = wait_timeout(&mut child, Duration::from_secs(300));
    if status.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        status.is_some_and(|s| s.success()),
        "{test}: `{what}` failed or hung ({:?})\n{stdout}\n{}\n--- server log ---\n{}",
        status,
        String::from_utf8_lossy(&output.stderr),
        server.log_text()
    );
    stdout
}

/// The first `len` bytes of the export equal `data.bin`'s.
fn assert_reads_back(test: &str, dir: &Path, server: &Server, what: &str) {
    let socket = format!("socket={}", server.socket.display());
    let range = format!("range={DATA_BYTES}");
    let out = run(
        dir,
        tool("nbdcopy"),
        &[
            "--",
            "[",
            "nbdkit",
            "--exit-with-parent",
            "--filter=offset",
            "nbd",
            &socket,
            "offset=0",
            &range,
            "]",
            "readback.bin",
        ],
    );
    assert!(
        out.ok(),
        "{test}: reading back ({what}): {out}\n{}",
        server.log_text()
    );
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        &format!("{test}: {what}"),
    );
    std::fs::remove_file(dir.join("readback.bin")).unwrap();
}

/// `killed`: the server was SIGKILLed mid-growth, so the window recorded
/// at the kill is redone by reconstruct-write from its moved copies (the
/// crash-safe redo), even under Scale-CRS.
fn assert_counters(test: &str, reshape: &Value, strategy: &str, killed: bool) {
    assert_eq!(reshape["strategy"], strategy, "{test}: {reshape:#}");
    assert_eq!(reshape["state"], "done", "{test}: {reshape:#}");
    assert_eq!(reshape["old_member_count"], 6, "{test}: {reshape:#}");
    assert_eq!(reshape["new_member_count"], 7, "{test}: {reshape:#}");
    for counter in [
        "moved_bytes",
        "metadata_writes",
        "redistribution_reads",
        "redistribution_writes",
        "scaling_read_blocks",
        "scaling_write_blocks",
        "zeroed_bytes",
    ] {
        assert!(
            reshape[counter].as_u64().is_some_and(|v| v > 0),
            "{test}: {counter} should be positive: {reshape:#}"
        );
    }
    let units = reshape["rmw_units"].as_u64().unwrap() + reshape["rcw_units"].as_u64().unwrap();
    assert!(units > 0, "{test}: {reshape:#}");
    if strategy == "scale-crs" {
        let (rmw, rcw) = (
            reshape["rmw_units"].as_u64().unwrap(),
            reshape["rcw_units"].as_u64().unwrap(),
        );
        if killed {
            // One redone window is a few units among a thousand.
            assert!(
                rcw * 20 <= rmw,
                "{test}: Scale-CRS is RMW only but for the redone window: {reshape:#}"
            );
        } else {
            assert_eq!(rcw, 0, "{test}: Scale-CRS is RMW only: {reshape:#}");
        }
    }
}

/// Members stopped; with each pair in `pairs` moved away the survivors
/// serve the data unchanged (members restored between rounds).
fn any_two_missing_read_back(test: &str, dir: &Path, pairs: &[[usize; 2]]) {
    let saved = dir.join("saved");
    std::fs::create_dir(&saved).unwrap();
    for name in ALL {
        std::fs::copy(dir.join(name), saved.join(name)).unwrap();
    }
    for pair in pairs {
        for &i in pair {
            std::fs::remove_file(dir.join(ALL[i])).unwrap();
        }
        let survivors: Vec<&str> = (0..7)
            .filter(|i| !pair.contains(i))
            .map(|i| ALL[i])
            .collect();
        let server = Server::start(dir, &survivors);
        assert_reads_back(test, dir, &server, &format!("members {pair:?} missing"));
        server.stop();
        for name in ALL {
            std::fs::copy(saved.join(name), dir.join(name)).unwrap();
        }
    }
}

fn grow_while_writing(test: &str, strategy: &str, seed: u64) {
    if !require_tools(test, &["nbdcopy", "nbdinfo", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    create_crs(dir);
    write_random(&dir.join("data.bin"), DATA_BYTES, seed);
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &OLD);
    let capacity_before = live(dir, "ctl.sock")["capacity_bytes"].as_u64().unwrap();
    let writer = spawn(dir, tool("nbdcopy"), &["--flush", "data.bin", &server.uri]);
    let grow_args = [
        "grow",
        "--add",
        "d6",
        "--strategy",
        strategy,
        "--control",
        "ctl.sock",
    ];
    let grow = spawn(dir, eraid_bin(), &grow_args);
    finish(test, writer, "nbdcopy", &server);
    let stdout = finish(test, grow, &grow_args.join(" "), &server);
    assert!(stdout.contains("growth done"), "{test}: {stdout}");
    assert_reads_back(test, dir, &server, "after the growth");
    let status = live(dir, "ctl.sock");
    assert_eq!(status["member_count"], 7, "{test}: {status:#}");
    assert_counters(test, &status["reshape"], strategy, false);
    assert_eq!(
        status["capacity_bytes"].as_u64().unwrap(),
        capacity_before / 4 * 5,
        "{test}: {status:#}"
    );
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert!(
        check.ok() && check.stdout.contains("0 mismatches"),
        "{test}: {check}"
    );
    server.stop();
    let detail = detail_json(dir, &ALL);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_counters(test, &detail["reshape"], strategy, false);
    // Old data members, parity-holding members (rotated), the new member.
    any_two_missing_read_back(test, dir, &[[0, 1], [4, 5], [2, 6], [3, 6]]);
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn crs_4_plus_2_grows_with_epu_while_nbdcopy_writes() {
    grow_while_writing("issue 18 acceptance 2 (CRS 4+2, epu)", "epu", 1802);
}

#[test]
fn crs_4_plus_2_grows_with_scale_crs_while_nbdcopy_writes() {
    grow_while_writing(
        "issue 18 acceptance 2 (CRS 4+2, scale-crs)",
        "scale-crs",
        1803,
    );
}

/// SIGKILL mid-growth, restart: the growth resumes (redoing the window a
/// kill may have cut between its two write phases) and finishes; the data
/// reads back, check is clean, and two members may be missing.
fn killed_mid_growth(test: &str, strategy: &str, matrix: &str, seed: u64) {
    if !require_tools(test, &["nbdcopy", "nbdinfo", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    create_crs(dir);
    write_random(&dir.join("data.bin"), DATA_BYTES, seed);
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &OLD);
    let writer = spawn(dir, tool("nbdcopy"), &["--flush", "data.bin", &server.uri]);
    let grow_args = [
        "grow",
        "--add",
        "d6",
        "--strategy",
        strategy,
        "--matrix",
        matrix,
        "--speed-max",
        "20000",
        "--no-wait",
        "--control",
        "ctl.sock",
    ];
    let stdout = finish(
        test,
        spawn(dir, eraid_bin(), &grow_args),
        &grow_args.join(" "),
        &server,
    );
    assert!(stdout.contains("growth started"), "{test}: {stdout}");
    finish(test, writer, "nbdcopy", &server);
    let progress = loop {
        let status = live(dir, "ctl.sock");
        let reshape = &status["reshape"];
        assert_eq!(reshape["state"], "running", "{test}: {status:#}");
        let progress = reshape["progress"].as_f64().unwrap();
        if progress >= 0.15 && reshape["checkpoint_bytes"].as_u64().unwrap() > 0 {
            break progress;
        }
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "{test}: the growth made no progress: {status:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    server.kill9();
    eprintln!("{test}: killed at {:.1}% of the growth", 100.0 * progress);
    assert!(
        progress < 0.8,
        "{test}: killed too late ({progress}); lower --speed-max"
    );
    let detail = detail_json(dir, &ALL);
    assert_eq!(detail["reshape"]["state"], "running", "{test}: {detail:#}");
    assert_eq!(detail["crs_matrix"], matrix, "{test}: {detail:#}");
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &ALL);
    server.wait_for_log("resuming", Duration::from_secs(30));
    let status = wait_done(test, dir, "ctl.sock", &mut server);
    assert_counters(test, &status["reshape"], strategy, true);
    assert_reads_back(test, dir, &server, "after the resumed growth");
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert!(
        check.ok() && check.stdout.contains("0 mismatches"),
        "{test}: {check}"
    );
    server.stop();
    any_two_missing_read_back(test, dir, &[[1, 6], [0, 5]]);
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn crs_epu_growth_survives_sigkill() {
    killed_mid_growth(
        "issue 18 acceptance 2 (CRS 4+2, epu, SIGKILL)",
        "epu",
        "jerasure",
        1804,
    );
}

#[test]
fn crs_scale_crs_growth_survives_sigkill() {
    killed_mid_growth(
        "issue 18 acceptance 2 (CRS 4+2, scale-crs, optimized matrix, SIGKILL)",
        "scale-crs",
        "optimized",
        1805,
    );
}

//! Online growth through the real binary (issue 4 acceptance 2 and 3,
//! issue 5 acceptance 2 and 3): a served array with a control socket grows
//! while `nbdcopy` writes random data into it, or is SIGKILLed mid-growth
//! and restarted; the data reads back equal, `detail` shows the new members
//! and the growth's counters, `check` is clean. Also an offline growth.
//!
//! Members are 256 MiB (as the issues say) on tmpfs when available.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const DATA_BYTES: u64 = 300 * MIB;
const CHUNK: u64 = 64 << 10;

fn create(dir: &Path, level: u32, members: &[&str], size: &str) {
    let level = level.to_string();
    let mut args = vec![
        "create", "--level", &level, "--chunk", "64K", "--size", size,
    ];
    args.extend_from_slice(members);
    eraid(dir, &args).expect_ok();
}

/// Starts `nbdcopy --flush data.bin URI` in the background.
fn spawn_writer(dir: &Path, uri: &str) -> Child {
    Command::new(tool("nbdcopy"))
        .args(["--flush", "data.bin", uri])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nbdcopy")
}

fn wait_writer(test: &str, mut writer: Child, server: &Server) {
    let status = wait_timeout(&mut writer, Duration::from_secs(120));
    let Some(status) = status else {
        let _ = writer.kill();
        panic!(
            "{test}: nbdcopy did not finish within 120 s\n{}",
            server.log_text()
        );
    };
    let output = writer.wait_with_output().unwrap();
    assert!(
        status.success(),
        "{test}: nbdcopy failed ({status}): {}\n--- server log ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.log_text()
    );
}

/// Spawns an `eraid` command in the background.
fn spawn_eraid(dir: &Path, args: &[&str]) -> Child {
    Command::new(eraid_bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn eraid")
}

fn finish_eraid(test: &str, child: Child, what: &str) -> (String, String) {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{test}: `{what}` failed ({})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// Reads the first `len` bytes of the export into `out` (through nbdkit's
/// offset filter, so only that range is copied) and compares with `data.bin`.
fn assert_data_reads_back(test: &str, dir: &Path, server: &Server, len: u64) {
    let socket = format!("socket={}", server.socket.display());
    let range = format!("range={len}");
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
        "{test}: reading back: {out}\n{}",
        server.log_text()
    );
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        len,
        &format!("{test}: data read back after the growth"),
    );
    std::fs::remove_file(dir.join("readback.bin")).unwrap();
}

fn export_size(dir: &Path, server: &Server) -> u64 {
    let out = run_tool(dir, "nbdinfo", &["--size", &server.uri]).expect_ok();
    out.stdout
        .trim()
        .parse()
        .expect("nbdinfo --size prints a number")
}

/// Checks the counters a finished growth reports.
fn assert_counters(test: &str, reshape: &Value, strategy: &str, old: usize, new: usize) {
    assert_eq!(reshape["strategy"], strategy, "{test}: {reshape:#}");
    assert_eq!(reshape["state"], "done", "{test}: {reshape:#}");
    assert_eq!(reshape["progress"], 1.0, "{test}: {reshape:#}");
    assert_eq!(reshape["old_member_count"], old, "{test}: {reshape:#}");
    assert_eq!(reshape["new_member_count"], new, "{test}: {reshape:#}");
    for counter in [
        "moved_bytes",
        "metadata_writes",
        "redistribution_reads",
        "redistribution_writes",
    ] {
        assert!(
            reshape[counter].as_u64().is_some_and(|v| v > 0),
            "{test}: {counter} should be positive: {reshape:#}"
        );
    }
}

fn assert_members(test: &str, detail: &Value, count: usize) {
    assert_eq!(detail["member_count"], count, "{test}: {detail:#}");
    let members = detail["members"].as_array().expect("members");
    assert_eq!(members.len(), count, "{test}: {detail:#}");
    assert!(
        members.iter().all(|m| m["state"] == "active"),
        "{test}: every member active: {detail:#}"
    );
}

/// Growth while nbdcopy writes: RAID-0 (fastscale, 4 + 2) or RAID-5.
fn grow_while_writing(
    test: &str,
    level: u32,
    old: usize,
    added: &[&str],
    strategy: &str,
    extra: &[&str],
    seed: u64,
) {
    if !require_tools(test, &["nbdcopy", "nbdinfo", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(old);
    let members = strs(&names);
    create(dir, level, &members, "256M");
    for name in added {
        blank(dir, name, 256 * MIB);
    }
    write_random(&dir.join("data.bin"), DATA_BYTES, seed);
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &members);
    let before = live(dir, "ctl.sock");
    let capacity_before = before["capacity_bytes"].as_u64().unwrap();
    assert!(before["reshape"].is_null(), "{test}: {before:#}");

    // nbdcopy writes while the growth starts and runs.
    let mut writer = spawn_writer(dir, &server.uri);
    let mut grow_args = vec!["grow", "--add"];
    grow_args.extend_from_slice(added);
    grow_args.extend_from_slice(&["--strategy", strategy, "--control", "ctl.sock"]);
    grow_args.extend_from_slice(extra);
    assert!(
        writer.try_wait().unwrap().is_none(),
        "{test}: nbdcopy finished before the growth could start"
    );
    let grow = spawn_eraid(dir, &grow_args);
    wait_writer(test, writer, &server);
    let (stdout, _) = finish_eraid(test, grow, &grow_args.join(" "));
    assert!(stdout.contains("growth done"), "{test}: {stdout}");

    assert_data_reads_back(test, dir, &server, DATA_BYTES);
    let new = old + added.len();
    let status = live(dir, "ctl.sock");
    assert_members(test, &status, new);
    assert_counters(test, &status["reshape"], strategy, old, new);
    let capacity = status["capacity_bytes"].as_u64().unwrap();
    let data_old = if level == 0 { old } else { old - 1 } as u64;
    let data_new = if level == 0 { new } else { new - 1 } as u64;
    assert_eq!(
        capacity,
        capacity_before / data_old * data_new,
        "{test}: capacity after the growth: {status:#}"
    );
    // A client connecting now sees the new capacity.
    assert_eq!(
        export_size(dir, &server),
        capacity,
        "{test}: NBD export size"
    );
    if strategy == "fastscale" {
        // Minimal migration: n/(m+n) of the old capacity, plus one region
        // (m * (m + n) chunks) of rounding.
        let region = (old * new) as u64 * CHUNK;
        let bound = capacity_before * added.len() as u64 / new as u64 + region;
        let moved = status["reshape"]["moved_bytes"].as_u64().unwrap();
        assert!(
            moved <= bound,
            "{test}: fastscale moved {moved} bytes, more than {bound}: {status:#}"
        );
    }

    // check: RAID-0 has nothing to check (exit 0); RAID-5 finds 0 mismatches.
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert_eq!(check.code(), Some(0), "{test}: {check}");
    if level == 0 {
        assert!(check.stdout.contains("nothing to check"), "{test}: {check}");
    } else {
        assert!(check.stdout.contains("0 mismatches"), "{test}: {check}");
    }
    server.stop();

    // What the superblocks record after a clean stop.
    let all_names = [names.clone(), added.iter().map(|s| s.to_string()).collect()].concat();
    let all = strs(&all_names);
    let detail = detail_json(dir, &all);
    assert_members(test, &detail, new);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(detail["capacity_bytes"], capacity, "{test}: {detail:#}");
    assert_counters(test, &detail["reshape"], strategy, old, new);
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn raid0_grows_4_to_6_with_fastscale_while_nbdcopy_writes() {
    grow_while_writing(
        "issue 4 acceptance 2 (RAID-0 fastscale 4+2)",
        0,
        4,
        &["d4", "d5"],
        "fastscale",
        &[],
        4002,
    );
}

#[test]
fn raid5_grows_3_to_4_with_alv_while_nbdcopy_writes() {
    grow_while_writing(
        "issue 5 acceptance 2 (RAID-5 alv 3+1)",
        5,
        3,
        &["d3"],
        "alv",
        &[],
        5002,
    );
}

#[test]
fn raid5_grows_3_to_4_with_md_reshape_while_nbdcopy_writes() {
    // MD yields to busy users down to --speed-min (1000 KiB/s by default);
    // a higher floor keeps the run short.
    grow_while_writing(
        "issue 5 acceptance 3 (RAID-5 md-reshape 3+1)",
        5,
        3,
        &["d3"],
        "md-reshape",
        &["--speed-min", "100000"],
        5003,
    );
}

/// Growth, SIGKILL of the server in the middle of it, restart: the growth
/// resumes from its checkpoint and finishes, and the data reads back.
fn killed_mid_growth(
    test: &str,
    level: u32,
    old: usize,
    strategy: &str,
    speed_max: &str,
    seed: u64,
) {
    if !require_tools(test, &["nbdcopy", "nbdinfo", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(old + 1);
    let all = strs(&names);
    let members = &all[..old];
    let added = all[old];
    create(dir, level, members, "256M");
    blank(dir, added, 256 * MIB);
    write_random(&dir.join("data.bin"), DATA_BYTES, seed);
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], members);

    // The data is written (and flushed) while the growth starts; the rate
    // ceiling keeps the growth slow enough to be caught in the middle.
    let writer = spawn_writer(dir, &server.uri);
    let grow_args = [
        "grow",
        "--add",
        added,
        "--strategy",
        strategy,
        "--speed-max",
        speed_max,
        "--no-wait",
        "--control",
        "ctl.sock",
    ];
    let (stdout, _) = finish_eraid(test, spawn_eraid(dir, &grow_args), &grow_args.join(" "));
    assert!(stdout.contains("growth started"), "{test}: {stdout}");
    wait_writer(test, writer, &server);

    // A check is refused while the growth runs.
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert!(
        !check.ok(),
        "{test}: check during a growth must fail: {check}"
    );
    assert!(check.stderr.contains("growth"), "{test}: {check}");

    // Kill once a good part is done, but well before the end.
    let progress = loop {
        let status = live(dir, "ctl.sock");
        let reshape = &status["reshape"];
        assert_eq!(reshape["state"], "running", "{test}: {status:#}");
        let progress = reshape["progress"].as_f64().unwrap();
        let checkpoint = reshape["checkpoint_bytes"].as_u64().unwrap();
        if progress >= 0.15 && checkpoint > 0 {
            break progress;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{test}: the growth made no progress: {status:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    server.kill9();
    eprintln!("{test}: killed at {:.1}% of the growth", 100.0 * progress);
    assert!(
        progress < 0.8,
        "{test}: the growth was {progress} done when killed; lower --speed-max"
    );
    assert!(
        !dir.join("ctl.sock").exists()
            || std::os::unix::net::UnixStream::connect(dir.join("ctl.sock")).is_err(),
        "{test}: the control socket still answers after SIGKILL"
    );

    // The superblocks record the unfinished growth.
    let detail = detail_json(dir, &all);
    let recorded = &detail["reshape"];
    assert_eq!(recorded["state"], "running", "{test}: {detail:#}");
    assert!(
        recorded["progress"].as_f64().unwrap() < 1.0,
        "{test}: {detail:#}"
    );
    assert_eq!(detail["member_count"], old + 1, "{test}: {detail:#}");
    // Offline check and grow refuse it without touching the members.
    let before = snapshot(dir);
    let mut check_args = vec!["check"];
    check_args.extend_from_slice(&all);
    let check = eraid(dir, &check_args);
    assert!(
        !check.ok() && check.stderr.contains("growth"),
        "{test}: {check}"
    );
    assert_eq!(
        before,
        snapshot(dir),
        "{test}: the refused check changed files"
    );

    // Restart (with a stale control socket file left by the killed server):
    // the growth resumes and finishes.
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &all);
    server.wait_for_log("resuming", Duration::from_secs(30));
    let status = wait_done(test, dir, "ctl.sock", &mut server);
    assert_members(test, &status, old + 1);
    assert_counters(test, &status["reshape"], strategy, old, old + 1);
    assert_data_reads_back(test, dir, &server, DATA_BYTES);
    assert_eq!(
        export_size(dir, &server),
        status["capacity_bytes"].as_u64().unwrap(),
        "{test}: NBD export size after the resumed growth"
    );
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert_eq!(check.code(), Some(0), "{test}: {check}");
    if level == 5 {
        assert!(check.stdout.contains("0 mismatches"), "{test}: {check}");
    }
    server.stop();
    let detail = detail_json(dir, &all);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(detail["reshape"]["state"], "done", "{test}: {detail:#}");
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn raid0_round_robin_growth_survives_sigkill() {
    killed_mid_growth(
        "issue 4 acceptance 3 (RAID-0 round-robin 4+1, SIGKILL)",
        0,
        4,
        "round-robin",
        "80000",
        4003,
    );
}

#[test]
fn raid5_alv_growth_survives_sigkill() {
    killed_mid_growth(
        "issue 5 acceptance 3 (RAID-5 alv 3+1, SIGKILL)",
        5,
        3,
        "alv",
        "50000",
        5004,
    );
}

/// `eraid grow MEMBERS... --add ...` with no server: assembles, grows,
/// waits and closes cleanly; the data is intact and parity right.
#[test]
fn offline_growth_keeps_the_data() {
    let test = "offline grow (RAID-5 3+1 and RAID-0 2+1)";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    for (level, old, seed) in [(5u32, 3usize, 77u64), (0, 2, 78)] {
        for name in member_names(old + 1) {
            let _ = std::fs::remove_file(dir.join(name));
        }
        let names = member_names(old + 1);
        let all = strs(&names);
        let members = &all[..old];
        create(dir, level, members, "64M");
        blank(dir, all[old], 64 * MIB);
        let data = 100 * MIB;
        write_random(&dir.join("data.bin"), data, seed);
        let server = Server::start(dir, members);
        run_tool(dir, "nbdcopy", &["data.bin", &server.uri]).expect_ok();
        server.stop();

        let mut args = vec!["grow"];
        args.extend_from_slice(members);
        args.extend_from_slice(&["--add", all[old]]);
        // RAID-5 with alv-online.toml's ALV settings.
        let alv_online = [
            "--aggregation-kib",
            "512",
            "--latency-bound",
            "120",
            "--valve-latency",
            "processing",
        ];
        if level == 5 {
            args.extend_from_slice(&alv_online);
        }
        let out = eraid(dir, &args).expect_ok();
        assert!(out.stdout.contains("growth done"), "{test}: {out}");
        let detail = detail_json(dir, &all);
        assert_members(test, &detail, old + 1);
        assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
        let default = if level == 0 { "fastscale" } else { "alv" };
        assert_counters(test, &detail["reshape"], default, old, old + 1);
        if level == 5 {
            let config = &detail["reshape"]["config"];
            assert_eq!(config["valve_latency"], "processing", "{test}: {config:#}");
            assert_eq!(
                config["aggregation_bytes"],
                512 * 1024,
                "{test}: {config:#}"
            );
            assert_eq!(config["latency_bound_ms"], 120.0, "{test}: {config:#}");
        }

        let server = Server::start(dir, &all);
        run_tool(dir, "nbdcopy", &[&server.uri, "readback.bin"]).expect_ok();
        server.stop();
        assert_same_prefix(
            &dir.join("data.bin"),
            &dir.join("readback.bin"),
            data,
            &format!("{test}: RAID-{level} data after an offline growth"),
        );
        assert_eq!(
            std::fs::metadata(dir.join("readback.bin")).unwrap().len(),
            detail["capacity_bytes"].as_u64().unwrap(),
            "{test}: export size"
        );
        std::fs::remove_file(dir.join("readback.bin")).unwrap();
        let mut args = vec!["check"];
        args.extend_from_slice(&all);
        let check = eraid(dir, &args);
        assert_eq!(check.code(), Some(0), "{test}: {check}");
    }
}

/// `eraid reshape pause|set|resume` on a served RAID-5 growing 3 -> 4: the
/// paused growth moves nothing, stays paused across a server restart, takes
/// new settings (bad ones refused, naming them), and once resumed finishes
/// with the data intact and parity clean.
#[test]
fn operator_pauses_retunes_and_resumes_a_served_growth() {
    let test = "eraid reshape pause / set / resume";
    if !require_tools(test, &["nbdcopy", "nbdkit"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(4);
    let all = strs(&names);
    create(dir, 5, &all[..3], "64M");
    blank(dir, all[3], 64 * MIB);
    let data = 100 * MIB;
    write_random(&dir.join("data.bin"), data, 4242);
    let server = Server::start_with(dir, &["--control", "ctl.sock"], &all[..3]);
    run_tool(dir, "nbdcopy", &["--flush", "data.bin", &server.uri]).expect_ok();

    let none = eraid(dir, &["reshape", "pause", "--control", "ctl.sock"]);
    assert_eq!(none.code(), Some(2), "{test}: {none}");
    assert!(
        none.stderr.contains("no growth is in progress"),
        "{test}: {none}"
    );

    let grow = [
        "grow",
        "--add",
        all[3],
        "--strategy",
        "alv",
        "--speed-max",
        "10000",
        "--no-wait",
        "--control",
        "ctl.sock",
    ];
    eraid(dir, &grow).expect_ok();
    let started = Instant::now();
    while live(dir, "ctl.sock")["reshape"]["processed_bytes"] == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{test}: nothing moved"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let paused = eraid(dir, &["reshape", "pause", "--control", "ctl.sock"]).expect_ok();
    assert!(paused.stdout.contains("growth paused"), "{test}: {paused}");
    let status = live(dir, "ctl.sock");
    let reshape = &status["reshape"];
    assert_eq!(reshape["state"], "paused", "{test}: {status:#}");
    assert_eq!(reshape["held"], true, "{test}: {status:#}");
    let progress = reshape["progress"].as_f64().unwrap();
    assert!(progress > 0.0 && progress < 1.0, "{test}: {status:#}");
    std::thread::sleep(Duration::from_millis(1500));
    let later = live(dir, "ctl.sock");
    assert_eq!(
        later["reshape"]["progress"], reshape["progress"],
        "{test}: moved while paused"
    );
    assert_eq!(
        later["reshape"]["checkpoint_bytes"], later["reshape"]["processed_bytes"],
        "{test}: copied data checkpointed when paused: {later:#}"
    );

    let nothing = eraid(dir, &["reshape", "set", "--control", "ctl.sock"]);
    assert_eq!(nothing.code(), Some(2), "{test}: {nothing}");
    assert!(
        nothing.stderr.contains("nothing to set"),
        "{test}: {nothing}"
    );
    let bad = eraid(
        dir,
        &[
            "reshape",
            "set",
            "--speed-min",
            "5000",
            "--speed-max",
            "100",
            "--control",
            "ctl.sock",
        ],
    );
    assert_eq!(bad.code(), Some(2), "{test}: {bad}");
    assert!(
        bad.stderr.contains("--speed-min 5000") && bad.stderr.contains("--speed-max 100"),
        "{test}: the error names the flags typed: {bad}"
    );
    assert!(!bad.stderr.contains("_kib_s"), "{test}: {bad}");
    let set = [
        "reshape",
        "set",
        "--speed-max",
        "400000",
        "--control",
        "ctl.sock",
    ];
    eraid(dir, &set).expect_ok();
    assert_eq!(
        live(dir, "ctl.sock")["reshape"]["config"]["speed_max_kib_s"],
        400000,
        "{test}: new ceiling"
    );
    let bad_reading = eraid(
        dir,
        &[
            "reshape",
            "set",
            "--valve-latency",
            "wall",
            "--control",
            "ctl.sock",
        ],
    );
    assert_eq!(bad_reading.code(), Some(2), "{test}: {bad_reading}");
    assert!(
        bad_reading.stderr.contains("--valve-latency") && bad_reading.stderr.contains("wall"),
        "{test}: {bad_reading}"
    );
    let reading = [
        "reshape",
        "set",
        "--valve-latency",
        "processing",
        "--control",
        "ctl.sock",
    ];
    let out = eraid(dir, &reading).expect_ok();
    assert!(out.stdout.contains("processing"), "{test}: {out}");
    assert_eq!(
        live(dir, "ctl.sock")["reshape"]["config"]["valve_latency"],
        "processing",
        "{test}: new valve reading"
    );

    // A restart keeps the growth paused, with its new setting.
    server.stop();
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &all);
    server.wait_for_log("eraid reshape resume", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let status = live(dir, "ctl.sock");
    assert_eq!(status["reshape"]["state"], "paused", "{test}: {status:#}");
    assert_eq!(
        status["reshape"]["config"]["speed_max_kib_s"], 400000,
        "{test}"
    );
    assert_eq!(
        status["reshape"]["progress"], later["reshape"]["progress"],
        "{test}"
    );

    let resume = ["reshape", "resume", "--wait", "--control", "ctl.sock"];
    let resumed = eraid(dir, &resume).expect_ok();
    assert!(
        resumed.stdout.contains("growth running"),
        "{test}: {resumed}"
    );
    assert!(
        resumed.stdout.contains("growth done"),
        "{test}: waited: {resumed}"
    );
    let status = wait_done(test, dir, "ctl.sock", &mut server);
    assert_members(test, &status, 4);
    assert_data_reads_back(test, dir, &server, data);
    assert_check_clean(test, dir);
    server.stop();
}

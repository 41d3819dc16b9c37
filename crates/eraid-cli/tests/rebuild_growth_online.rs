//! A member failing during an online growth, through the real binary: a
//! served 3-member RAID-5 with a hot spare grows onto a fourth member
//! (`eraid grow`, waiting) while `nbdcopy` writes; mid-growth `eraid fail
//! d1 --control ctl.sock`: the growth pauses, the spare is rebuilt beside
//! it (the operator cannot resume the growth meanwhile), then the growth
//! goes on by itself and `eraid grow` ends with "growth done" (exit 0).
//! The data reads back equal, `eraid check` finds 0 mismatches, and the
//! superblocks record four active members, d4 in slot 1.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const MEMBER_BYTES: u64 = 64 * MIB;
const DATA_BYTES: u64 = 96 * MIB;

#[test]
fn a_member_failing_mid_growth_is_rebuilt_onto_the_spare_then_the_growth_finishes() {
    let test = "failure during growth (RAID-5 3 -> 4 + spare, 64 MiB)";
    if !require_tools(test, &["nbdcopy", "nbdkit"]) {
        return;
    }
    let started = Instant::now();
    let scratch = scratch();
    let dir = scratch.path();
    eraid(
        dir,
        &[
            "create", "--level", "5", "--chunk", "64K", "--size", "64M", "d0", "d1", "d2",
        ],
    )
    .expect_ok();
    blank(dir, "d3", MEMBER_BYTES);
    blank(dir, "d4", MEMBER_BYTES);
    write_random(&dir.join("data.bin"), DATA_BYTES, 1515);
    let mut server = Server::start_with(dir, &["--control", "ctl.sock"], &["d0", "d1", "d2"]);
    eraid(dir, &["add", "--spare", "d4", "--control", "ctl.sock"]).expect_ok();
    // The rebuild is held to 16 MB/s so it is seen running.
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
    let out = run(dir, tool("nbdcopy"), &["--flush", "data.bin", &server.uri]);
    assert!(out.ok(), "{test}: writing: {out}");

    // The growth, slowed so the failure lands in its middle; `eraid grow`
    // waits for it.
    let grow = Command::new(eraid_bin())
        .args([
            "grow",
            "--add",
            "d3",
            "--strategy",
            "alv",
            "--speed-min",
            "8000",
            "--speed-max",
            "16000",
            "--control",
            "ctl.sock",
        ])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn eraid grow");
    let mut writer = spawn_repeated_writer(dir, &server.uri, 3);
    let waiting_since = Instant::now();
    loop {
        let status = live(dir, "ctl.sock");
        let progress = status["reshape"]["progress"].as_f64().unwrap_or(0.0);
        if progress >= 0.2 {
            assert!(
                progress < 0.9,
                "{test}: the growth went too fast: {status:#}"
            );
            break;
        }
        assert!(
            waiting_since.elapsed() < Duration::from_secs(60),
            "{test}: the growth does not progress: {status:#}\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = eraid(dir, &["fail", "d1", "--control", "ctl.sock"]).expect_ok();
    assert!(
        out.stdout.contains("a spare took over") || out.stdout.contains("a spare takes over"),
        "{test}: {out}"
    );
    eprintln!("{test}: eraid fail said: {}", out.stdout.trim());

    // The spare is rebuilt beside the paused growth (once the growth has
    // recorded its position); the operator cannot resume the growth
    // meanwhile.
    let during = loop {
        let status = live(dir, "ctl.sock");
        if status["rebuild"]["state"] == "running"
            || waiting_since.elapsed() > Duration::from_secs(90)
        {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(during["rebuild"]["state"], "running", "{test}: {during:#}");
    assert_eq!(during["rebuild"]["target"]["slot"], 1, "{test}: {during:#}");
    assert!(
        during["rebuild"]["growth_checkpoint_bytes"]
            .as_u64()
            .is_some(),
        "{test}: {during:#}"
    );
    assert_eq!(during["reshape"]["state"], "paused", "{test}: {during:#}");
    assert!(
        during["reshape"]["pause_reason"]
            .as_str()
            .is_some_and(|r| r.contains("being rebuilt")),
        "{test}: {during:#}"
    );
    let refused = eraid(dir, &["reshape", "resume", "--control", "ctl.sock"]);
    assert!(
        !refused.ok() && refused.stderr.contains("being rebuilt"),
        "{test}: {refused}"
    );

    // `eraid grow` waits through the rebuild and ends when the growth does.
    let output = grow.wait_with_output().expect("eraid grow ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("growth done"),
        "{test}: eraid grow: {}\n{stdout}\n{stderr}\n{}",
        output.status,
        server.log_text()
    );
    let status = wait_timeout(&mut writer, Duration::from_secs(120)).expect("nbdcopy finishes");
    assert!(
        status.success(),
        "{test}: nbdcopy failed\n{}",
        server.log_text()
    );

    let after = live(dir, "ctl.sock");
    assert_eq!(after["reshape"]["state"], "done", "{test}: {after:#}");
    assert_eq!(after["rebuild"]["state"], "done", "{test}: {after:#}");
    assert_eq!(after["degraded"], false, "{test}: {after:#}");
    assert_eq!(after["spare_count"], 0, "{test}: {after:#}");
    let members = member_names_and_states(&after);
    assert_eq!(
        members,
        ["d0", "d4", "d2", "d3"]
            .iter()
            .map(|n| (n.to_string(), "active".to_string()))
            .collect::<Vec<_>>(),
        "{test}: {after:#}"
    );

    let out = run(dir, tool("nbdcopy"), &[&server.uri, "readback.bin"]);
    assert!(out.ok(), "{test}: reading back: {out}");
    assert_same_prefix(
        &dir.join("data.bin"),
        &dir.join("readback.bin"),
        DATA_BYTES,
        &format!("{test}: data read back after the growth"),
    );
    assert_check_clean(test, dir);
    eraid(dir, &["remove", "d1", "--control", "ctl.sock"]).expect_ok();
    assert!(server.running(), "{test}: {}", server.log_text());
    server.stop();

    let detail = detail_json(dir, &["d0", "d2", "d3", "d4"]);
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
    assert_eq!(detail["reshape"]["state"], "done", "{test}: {detail:#}");
    assert!(
        member_names_and_states(&detail)
            .iter()
            .all(|(_, state)| state == "active"),
        "{test}: {detail:#}"
    );
    eprintln!("{test}: {:.1} s", started.elapsed().as_secs_f64());
}

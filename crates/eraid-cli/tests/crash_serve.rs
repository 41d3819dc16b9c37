//! A crashed server: SIGKILL `eraid serve` while nbdcopy is writing. Then
//! `detail` shows the array dirty; serving again resynchronises the dirty
//! regions; `check` finds 0 mismatches; data written and flushed before the
//! kill reads back identical, also degraded (so its parity is right).
//!
//! Layout of the test data: region A = [0, 64 MiB) written by a complete
//! `nbdcopy --flush` before the crash; region B = [96 MiB, 256 MiB) being
//! written (through nbdkit's offset filter, so nbdcopy addresses only B)
//! when the server is killed. The regions do not overlap.

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const A_BYTES: u64 = 64 * MIB;
const B_OFFSET: u64 = 96 * MIB;
const B_BYTES: u64 = 160 * MIB;

fn crash_during_write(level: u32, member_count: usize, seed: u64) {
    let test = format!("crash_serve RAID-{level}");
    if !require_tools(&test, &["nbdcopy", "nbdkit"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(member_count);
    let members = strs(&names);
    let level_s = level.to_string();
    // 160 MiB members: more than 256 MiB of capacity for every level here.
    let mut args = vec!["create", "--level", &level_s, "--size", "160M"];
    args.extend_from_slice(&members);
    eraid(dir, &args).expect_ok();
    let capacity = detail_json(dir, &members)["capacity_bytes"]
        .as_u64()
        .unwrap();
    assert!(
        capacity >= B_OFFSET + B_BYTES,
        "capacity {capacity} too small"
    );

    write_random(&dir.join("a.bin"), A_BYTES, seed);
    write_random(&dir.join("b.bin"), B_BYTES, seed + 1);

    let mut server = Server::start(dir, &members);
    // Region A: a complete copy, flushed at the end.
    run_tool(dir, "nbdcopy", &["--flush", "a.bin", &server.uri]).expect_ok();

    // Region B: nbdcopy through nbdkit's offset filter, killed midway.
    let member_paths: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let allocated_before = allocated_bytes(&member_paths);
    let socket = server.socket.display().to_string();
    let offset = format!("offset={B_OFFSET}");
    let range = format!("range={B_BYTES}");
    let mut writer = Command::new(tool("nbdcopy"))
        .args([
            "b.bin",
            "--",
            "[",
            "nbdkit",
            "--exit-with-parent",
            "--filter=offset",
            "nbd",
        ])
        .arg(format!("socket={socket}"))
        .args([offset.as_str(), range.as_str(), "]"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nbdcopy");
    // Kill once about a quarter of B's member bytes (data and parity or
    // copies) has landed: the writer is then surely mid-copy.
    let trigger = B_BYTES / 4;
    let started = Instant::now();
    loop {
        if allocated_bytes(&member_paths) >= allocated_before + trigger {
            break;
        }
        if let Some(status) = writer.try_wait().unwrap() {
            panic!(
                "{test}: nbdcopy into region B ended ({status}) before the kill; \
                 cannot test a crash mid-write\n{}",
                server.log_text()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{test}: region B's writes never reached the members"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    server.kill9();
    let writer_status = wait_timeout(&mut writer, Duration::from_secs(30));
    if writer_status.is_none() {
        let _ = writer.kill();
        let _ = writer.wait();
        panic!("{test}: nbdcopy still running 30 s after the server was killed");
    }
    assert!(
        !writer_status.unwrap().success(),
        "{test}: nbdcopy claims success although the server was killed mid-copy"
    );

    // The array was in use when it died: detail says dirty.
    let detail = detail_json(dir, &members);
    assert_eq!(
        detail["state"], "dirty",
        "{test}: after SIGKILL: {detail:#}"
    );
    assert_eq!(detail["clean"], false, "{test}: after SIGKILL: {detail:#}");

    // Dirty and degraded: parity there may not match, so serving without a
    // member is refused (as MD refuses a dirty degraded array), and
    // nothing on disk changes.
    if level != 10 {
        assert!(
            detail["dirty_regions"].as_u64().unwrap_or(0) > 0,
            "{test}: no dirty regions after SIGKILL mid-write: {detail:#}"
        );
        let refused = Server::try_start(dir, &members[1..]);
        let error = match refused {
            Ok(server) => panic!(
                "{test}: served dirty and degraded without --allow-dirty-degraded\n{}",
                server.log_text()
            ),
            Err(error) => error,
        };
        assert!(
            error.contains("not shut down cleanly") && error.contains("--allow-dirty-degraded"),
            "{test}: {error}"
        );
        assert_eq!(
            detail_json(dir, &members),
            detail,
            "{test}: a refused serve changed the members"
        );
    }

    // Serve again: the dirty regions resync. Reads of A are served (and
    // checked) while it runs.
    let mut server = Server::start(dir, &members);
    run_tool(dir, "nbdcopy", &[&server.uri, "after.bin"]).expect_ok();
    assert_same_prefix(
        &dir.join("a.bin"),
        &dir.join("after.bin"),
        A_BYTES,
        &format!("{test}: flushed region A after the crash"),
    );
    server.wait_for_log("ResyncFinished", Duration::from_secs(120));
    // A healthy read once the resync is done (RAID-10's copies of region B
    // may have differed until then).
    run_tool(dir, "nbdcopy", &[&server.uri, "healthy.bin"]).expect_ok();
    server.stop();
    let detail = detail_json(dir, &members);
    assert_eq!(
        detail["state"], "clean",
        "{test}: after resync and SIGTERM: {detail:#}"
    );
    assert_eq!(
        detail["dirty_regions"], 0,
        "{test}: after resync: {detail:#}"
    );

    let mut args = vec!["check"];
    args.extend_from_slice(&members);
    let check = eraid(dir, &args);
    assert_eq!(
        check.code(),
        Some(0),
        "{test}: check after the crash: {check}"
    );
    assert!(check.stdout.contains("0 mismatches"), "{test}: {check}");

    // Redundancy really is consistent: with member 0 gone the whole array
    // reads the same as healthy (A identical, B whatever it became).
    let survivors = &members[1..];
    let server = Server::start(dir, survivors);
    run_tool(dir, "nbdcopy", &[&server.uri, "degraded.bin"]).expect_ok();
    server.stop();
    assert_same_prefix(
        &dir.join("healthy.bin"),
        &dir.join("degraded.bin"),
        capacity,
        &format!("{test}: degraded read (member 0 removed) vs healthy read after the crash"),
    );
}

#[test]
fn sigkill_while_writing_raid5() {
    crash_during_write(5, 4, 500);
}

#[test]
fn sigkill_while_writing_raid6() {
    crash_during_write(6, 5, 600);
}

#[test]
fn sigkill_while_writing_raid10() {
    crash_during_write(10, 4, 1000);
}

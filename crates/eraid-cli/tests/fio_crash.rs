//! Issue 19, acceptance 6: fio writes random 4 KiB blocks with crc32c verify
//! headers to a served RAID-5 (no journal, no cache); `eraid serve` is
//! SIGKILLed mid-run and served again (the dirty regions are resynced);
//! fio's verify pass over every write it saw acknowledged succeeds and
//! `eraid check` finds 0 mismatches.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

const MEMBERS: [&str; 4] = ["d0", "d1", "d2", "d3"];

#[test]
fn sigkill_mid_fio_on_a_raid5_keeps_every_acknowledged_write() {
    if !require_tools("fio_crash", &["fio"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let mut create = vec!["create", "--level", "5", "--size", "64M"];
    create.extend(MEMBERS);
    eraid(dir, &create).expect_ok();

    let mut server = Server::start(dir, &MEMBERS);
    let mut fio = Command::new(tool("fio"))
        .args(fio_verify_job("plain", &server.uri, 16, false))
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
    let state = dir.join("local-plain-0-verify.state");
    assert!(state.exists(), "fio saved what it wrote");

    let server = Server::start(dir, &MEMBERS);
    let verify = run_tool(
        dir,
        "fio",
        &fio_verify_job("plain", &server.uri, 16, true)
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    );
    assert!(verify.ok(), "fio's verify pass after the crash: {verify}");
    assert!(
        verify.stdout.contains("READ:"),
        "the verify pass read what was written: {verify}"
    );
    server.stop();
    let mut check = vec!["check"];
    check.extend(MEMBERS);
    let checked = eraid(dir, &check).expect_ok();
    assert!(
        checked.stdout.contains("0 mismatches"),
        "parity after the crash and resync: {checked}"
    );
}

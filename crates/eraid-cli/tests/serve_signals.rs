//! `serve` survives what a terminal does to a daemon: SIGHUP stops it
//! cleanly like SIGTERM, and a log pipe whose reader went away
//! (`eraid serve 2>&1 | head`) never stops it, not even when a member fails
//! and there is much to log.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

#[test]
fn sighup_stops_serve_cleanly() {
    let s = scratch();
    let d = s.path();
    let members = ["d0", "d1", "d2"];
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    let mut server = Server::start(d, &members);
    // Some writes, so the array is dirty until a clean stop.
    if have_tool("nbdcopy") {
        write_random(&d.join("data.bin"), 4 * MIB, 12);
        run_tool(d, "nbdcopy", &["data.bin", &server.uri]).expect_ok();
    }
    let status = server.terminate_with(SIGHUP);
    assert!(
        status.success(),
        "serve exited with {status} on SIGHUP (expected 0)\n{}",
        server.log_text()
    );
    let detail = detail_json(d, &members);
    assert_eq!(detail["state"], "clean", "after SIGHUP: {detail:#}");
}

#[test]
fn a_closed_log_pipe_does_not_stop_serve() {
    let test = "a_closed_log_pipe_does_not_stop_serve";
    if !require_tools(test, &["nbdcopy"]) {
        return;
    }
    let s = scratch();
    let d = s.path();
    create(
        d,
        &["--level", "5", "--size", "64M", "d0", "d1", "d2", "d3"],
    );
    let socket = d.join("s.sock");
    let uri = nbd_uri(&socket);
    let mut child = Command::new(eraid_bin())
        .args(["serve", "--socket", "s.sock", "d0", "d1", "d2", "d3"])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The log's reader goes away at once: every log line meets EPIPE.
    drop(child.stderr.take());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut uri_line = String::new();
    stdout.read_line(&mut uri_line).unwrap();
    let mut guard = KillOnDrop(child);
    assert!(
        uri_line.contains("nbd+unix"),
        "serve did not print its URI (it exited? {uri_line:?})"
    );
    // Traffic, then a member failure (much to log), then more traffic.
    let data_bytes = 100 * MIB;
    write_random(&d.join("data.bin"), data_bytes, 10);
    run_tool(d, "nbdcopy", &["--flush", "data.bin", &uri]).expect_ok();
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("d1"))
        .unwrap()
        .set_len(8 * MIB)
        .unwrap();
    run_tool(d, "nbdcopy", &[&uri, "back.bin"]).expect_ok();
    assert_same_prefix(
        &d.join("data.bin"),
        &d.join("back.bin"),
        data_bytes,
        "read back degraded with the log pipe closed",
    );
    let child = &mut guard.0;
    assert!(
        child.try_wait().unwrap().is_none(),
        "serve stopped after logging into a closed pipe"
    );
    signal(child, SIGTERM);
    let status = wait_timeout(child, Duration::from_secs(60)).expect("serve did not stop");
    assert!(status.success(), "serve exited with {status} on SIGTERM");
    let detail = detail_json(d, &["d0", "d2", "d3"]);
    assert_eq!(detail["clean"], true, "{detail:#}");
    assert_ne!(detail["members"][1]["state"], "active", "{detail:#}");
}

/// Kills the child if the test fails before stopping it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 20, acceptance 4: a client that sent 64 reads of 1 MiB and stopped
/// reading its socket does not hold `serve` up: SIGTERM makes it exit
/// within 15 s with status 0, and the array is clean.
#[test]
fn sigterm_is_bounded_with_a_client_that_never_reads() {
    let s = scratch();
    let d = s.path();
    let members = ["d0", "d1", "d2"];
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    let mut server = Server::start(d, &members);
    let mut client = eraid_nbd::client::Client::connect_unix(&server.socket, "").unwrap();
    // A write first, so the array is dirty until a clean stop.
    client.write(0, &vec![0x5a; 1 << 20], false).unwrap();
    for _ in 0..64 {
        client
            .send_request(eraid_nbd::protocol::CMD_READ, 0, 0, 1 << 20, &[])
            .unwrap();
    }
    // Let the server answer into the socket until it is full.
    std::thread::sleep(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let status = server.terminate();
    let took = started.elapsed();
    assert!(
        status.success(),
        "serve exited with {status}\n{}",
        server.log_text()
    );
    assert!(
        took <= Duration::from_secs(15),
        "serve took {took:?} to stop\n{}",
        server.log_text()
    );
    drop(client);
    let detail = detail_json(d, &members);
    assert_eq!(detail["state"], "clean", "{detail:#}");
}

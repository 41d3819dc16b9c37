//! An NBD member whose server goes away while the array is served (issue
//! 20): back within `--member-reconnect-s`, the member is reconnected and
//! stays active (data equal, check 0); away longer, it is failed and the
//! array serves degraded (data equal). And when the member's server
//! acknowledged writes it had not flushed and then died (here nbdkit's
//! cache filter in writeback mode, which loses them), the member is never
//! taken back as if nothing happened: it is failed, and the data read back
//! is what was written.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use eraid_nbd::{NbdUri, SharedClient};
use support::*;

const SIGKILL: i32 = 9;
const MEMBER_BYTES: u64 = 16 * MIB;

/// One `nbdkit file` server on a fixed loopback port, so it can be killed
/// and started again where the array expects it.
struct Nbdkit {
    child: Option<Child>,
    port: u16,
    file: String,
    filters: Vec<String>,
}

impl Nbdkit {
    /// Serves `dir/file` on a free port (a few tries).
    fn start(dir: &Path, file: &str, filters: &[&str]) -> Nbdkit {
        let filters: Vec<String> = filters.iter().map(|f| f.to_string()).collect();
        for _attempt in 0..5 {
            let mut kit = Nbdkit {
                child: None,
                port: free_port(),
                file: file.into(),
                filters: filters.clone(),
            };
            if kit.spawn(dir) {
                return kit;
            }
        }
        panic!("nbdkit did not start on a free port (5 tries)");
    }

    /// Starts nbdkit on `self.port`; false if it exited (port taken).
    fn spawn(&mut self, dir: &Path) -> bool {
        let pid_file = dir.join(format!("{}.{}.pid", self.file, self.port));
        let _ = std::fs::remove_file(&pid_file);
        let mut args: Vec<String> = vec![
            "-f".into(),
            "--exit-with-parent".into(),
            "-i".into(),
            "127.0.0.1".into(),
            "-p".into(),
            self.port.to_string(),
            "-P".into(),
            pid_file.display().to_string(),
        ];
        let mut params = Vec::new();
        for filter in &self.filters {
            let (name, param) = filter.split_once(' ').unwrap_or((filter, ""));
            args.push(format!("--filter={name}"));
            if !param.is_empty() {
                params.push(param.to_string());
            }
        }
        args.push("file".into());
        args.push(dir.join(&self.file).display().to_string());
        args.extend(params);
        let mut child = Command::new(tool("nbdkit"))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nbdkit");
        // nbdkit writes its pid file once it listens.
        let started = Instant::now();
        while !pid_file.exists() && started.elapsed() < Duration::from_secs(30) {
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if child.try_wait().unwrap().is_some() || !pid_file.exists() {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        self.child = Some(child);
        true
    }

    /// Starts it again on the same port (the old socket may linger a moment).
    fn restart(&mut self, dir: &Path) {
        let started = Instant::now();
        while !self.spawn(dir) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "nbdkit could not listen on port {} again",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}/", self.port)
    }

    /// SIGKILL: the member's server crashes.
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, SIGKILL);
            let _ = child.wait();
        }
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Four exports (member 1 behind `member1_filters`), a RAID-5 created on
/// them; returns the servers, their URIs and the array's capacity.
fn raid5_on_nbdkit(dir: &Path, member1_filters: &[&str]) -> (Vec<Nbdkit>, Vec<String>, u64) {
    let exports: Vec<Nbdkit> = (0..4)
        .map(|i| {
            let name = format!("m{i}");
            blank(dir, &name, MEMBER_BYTES);
            let filters = if i == 1 { member1_filters } else { &[] };
            Nbdkit::start(dir, &name, filters)
        })
        .collect();
    let uris: Vec<String> = exports.iter().map(Nbdkit::uri).collect();
    let mut args = vec!["create", "--level", "5"];
    args.extend(strs(&uris));
    eraid(dir, &args).expect_ok();
    let capacity = detail_json(dir, &strs(&uris))["capacity_bytes"]
        .as_u64()
        .unwrap();
    (exports, uris, capacity)
}

/// Copies with a flush at the end (nbdcopy does not flush by default).
fn nbdcopy(dir: &Path, from: &str, to: &str) {
    run_tool(dir, "nbdcopy", &["--flush", from, to]).expect_ok();
}

fn read_back_equal(dir: &Path, server: &Server, data: &Path, len: u64, what: &str) {
    let out = dir.join("out.bin");
    let _ = std::fs::remove_file(&out);
    nbdcopy(dir, &server.uri, &out.display().to_string());
    assert_same_prefix(data, &out, len, what);
}

/// Waits until no background activity (the first resync after create
/// on exports) writes to the members, so the test's own flushed writes
/// are the last ones.
fn wait_quiet(dir: &Path, control: &str) {
    let started = Instant::now();
    loop {
        let status = live(dir, control);
        let activity = &status["activity"];
        if activity.is_null() || activity["state"] == "done" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the resync did not finish: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn check_clean(dir: &Path, uris: &[String]) {
    let mut args = vec!["check"];
    args.extend(strs(uris));
    let check = eraid(dir, &args);
    assert_eq!(check.code(), Some(0), "check found mismatches: {check}");
    assert!(check.stdout.contains("0 mismatches"), "{check}");
}

#[test]
fn a_member_server_killed_and_back_within_the_window_is_reconnected_and_stays_active() {
    let test = "a_member_server_killed_and_back_within_the_window_is_reconnected_and_stays_active";
    if !require_tools(test, &["nbdkit", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let (mut exports, uris, capacity) = raid5_on_nbdkit(dir, &[]);
    let members = strs(&uris);
    let control = dir.join("ctl.sock").display().to_string();
    let server = Server::start_with(
        dir,
        &["--control", &control, "--member-reconnect-s", "20"],
        &members,
    );
    wait_quiet(dir, &control);
    let data = dir.join("data.bin");
    write_random(&data, capacity, 40);
    // Flushed at the end: nothing acknowledged is unflushed.
    nbdcopy(dir, &data.display().to_string(), &server.uri);

    exports[1].kill9();
    exports[1].restart(dir);
    read_back_equal(
        dir,
        &server,
        &data,
        capacity,
        "after member 1's server came back",
    );
    let more = dir.join("more.bin");
    write_random(&more, capacity, 41);
    nbdcopy(dir, &more.display().to_string(), &server.uri);
    read_back_equal(dir, &server, &more, capacity, "written after the reconnect");
    let status = live(dir, &control);
    assert_eq!(status["degraded"], false, "{status}");
    for (i, member) in status["members"].as_array().unwrap().iter().enumerate() {
        assert_eq!(member["path"], uris[i], "{status}");
        assert_eq!(member["state"], "active", "{status}");
    }
    let log = server.log_text();
    assert!(log.contains("NBD member reconnected"), "{log}");
    assert!(!log.contains("MemberFailed"), "{log}");
    server.stop();
    check_clean(dir, &uris);
}

#[test]
fn a_member_server_away_longer_than_the_window_is_failed_and_the_array_serves_degraded() {
    let test =
        "a_member_server_away_longer_than_the_window_is_failed_and_the_array_serves_degraded";
    if !require_tools(test, &["nbdkit", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let (mut exports, uris, capacity) = raid5_on_nbdkit(dir, &[]);
    let members = strs(&uris);
    let control = dir.join("ctl.sock").display().to_string();
    let mut server = Server::start_with(
        dir,
        &["--control", &control, "--member-reconnect-s", "2"],
        &members,
    );
    wait_quiet(dir, &control);
    let data = dir.join("data.bin");
    write_random(&data, capacity, 50);
    nbdcopy(dir, &data.display().to_string(), &server.uri);

    exports[2].kill9();
    let started = Instant::now();
    read_back_equal(dir, &server, &data, capacity, "degraded, member 2 away");
    server.wait_for_log("MemberFailed { member: 2", Duration::from_secs(60));
    // Failed at the window (plus the I/O around it), not at some timeout.
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let status = live(dir, &control);
    assert_eq!(status["degraded"], true, "{status}");
    let failure = status["members"][2]["failure"].as_str().unwrap_or_default();
    assert!(failure.contains(&uris[2]), "{status}");
    assert!(
        failure.contains("dropped, not reconnected within 2 s (reconnect-s)"),
        "{status}"
    );
    // Back now, but the member stays failed (it needs a rebuild): writes
    // go on degraded and read back.
    exports[2].restart(dir);
    let more = dir.join("more.bin");
    write_random(&more, capacity, 51);
    nbdcopy(dir, &more.display().to_string(), &server.uri);
    read_back_equal(dir, &server, &more, capacity, "written degraded");
    assert_ne!(live(dir, &control)["members"][2]["state"], "active");
    server.stop();
}

#[test]
fn a_member_server_that_lost_acknowledged_unflushed_writes_is_never_taken_back_active() {
    let test = "a_member_server_that_lost_acknowledged_unflushed_writes_is_never_taken_back_active";
    if !require_tools(test, &["nbdkit", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    // Member 1's server keeps writes in a cache until a flush: killed, it
    // loses every write it acknowledged since (the file keeps the old data).
    let (mut exports, uris, capacity) = raid5_on_nbdkit(dir, &["cache cache=writeback"]);
    let members = strs(&uris);
    let control = dir.join("ctl.sock").display().to_string();
    let server = Server::start_with(
        dir,
        &["--control", &control, "--member-reconnect-s", "20"],
        &members,
    );
    wait_quiet(dir, &control);
    let data = dir.join("data.bin");
    write_random(&data, capacity, 60);
    nbdcopy(dir, &data.display().to_string(), &server.uri);

    // New data over the first 4 MiB, acknowledged by the array, no flush.
    let len_bytes = 4 * MIB as usize;
    let fresh: Vec<u8> = (0..len_bytes).map(|i| (i % 251) as u8 ^ 0x5a).collect();
    let array = SharedClient::connect(&NbdUri::parse(&server.uri).unwrap()).unwrap();
    array.write(0, &fresh, false).unwrap();
    exports[1].kill9();
    exports[1].restart(dir);
    // The array must not read member 1's lost chunks as if they were there.
    let mut expected = std::fs::read(&data).unwrap();
    expected[..len_bytes].copy_from_slice(&fresh);
    let read = array.read(0, capacity as usize).unwrap();
    assert!(
        read == expected[..capacity as usize],
        "the array read back data member 1's server lost"
    );
    drop(array);
    let status = live(dir, &control);
    let member = &status["members"][1];
    assert_ne!(member["state"], "active", "{status}");
    let failure = member["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("acknowledged writes unflushed, not reconnected"),
        "{status}"
    );
    assert_eq!(status["degraded"], true, "{status}");
    server.stop();
}

//! Members that are NBD exports of other servers (issue 20, acceptance 6):
//! a RAID-5 whose four members are `nbdkit file` exports on loopback, two
//! behind nbdkit's `delay` filter, is created, filled by nbdcopy, read back
//! equal and checked clean; stopping one member's nbdkit leaves the array
//! serving degraded with the data equal. And bad member URIs (malformed,
//! unreachable, too small, an export name the server refuses) get an error
//! naming the member, with nothing changed on disk.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// One `nbdkit file` server on 127.0.0.1, killed when dropped.
struct Nbdkit {
    child: Option<Child>,
    port: u16,
}

impl Nbdkit {
    /// Serves `dir/file` on a free loopback port; `extra` goes before the
    /// plugin (filters) and `params` after it.
    fn start(dir: &Path, file: &str, filters: &[&str], params: &[&str]) -> Nbdkit {
        for _attempt in 0..5 {
            let port = free_port();
            let pid_file = dir.join(format!("{file}.{port}.pid"));
            let mut args: Vec<String> = [
                "-f",
                "--exit-with-parent",
                "-i",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-P",
                &pid_file.display().to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(filters.iter().map(|f| format!("--filter={f}")));
            args.push("file".into());
            args.push(dir.join(file).display().to_string());
            args.extend(params.iter().map(|p| p.to_string()));
            let mut child = Command::new(tool("nbdkit"))
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn nbdkit");
            // nbdkit writes its pid file once it listens.
            let started = Instant::now();
            while !pid_file.exists() && started.elapsed() < Duration::from_secs(20) {
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: try another
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = std::fs::remove_file(&pid_file);
            if child.try_wait().unwrap().is_none() {
                return Nbdkit {
                    child: Some(child),
                    port,
                };
            }
        }
        panic!("nbdkit did not start on a free port (5 tries)");
    }

    fn child(&self) -> &Child {
        self.child.as_ref().expect("nbdkit running")
    }

    fn uri(&self, export: &str) -> String {
        format!("nbd://127.0.0.1:{}/{export}", self.port)
    }

    /// SIGTERM, as an operator stopping the member's server would.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, SIGTERM);
            if wait_timeout(&mut child, Duration::from_secs(30)).is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A stopped (SIGSTOP) server must be able to die.
            signal(&child, SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const MEMBER_BYTES: u64 = 32 * MIB;

/// Four member files and their servers: 0 and 1 plain, 2 and 3 behind
/// the delay filter (5 ms per read and write).
fn four_exports(dir: &Path) -> Vec<Nbdkit> {
    (0..4)
        .map(|i| {
            let name = format!("m{i}");
            blank(dir, &name, MEMBER_BYTES);
            if i < 2 {
                Nbdkit::start(dir, &name, &[], &[])
            } else {
                Nbdkit::start(dir, &name, &["delay"], &["rdelay=5ms", "wdelay=5ms"])
            }
        })
        .collect()
}

fn nbdcopy(dir: &Path, from: &str, to: &str) {
    run_tool(dir, "nbdcopy", &[from, to]).expect_ok();
}

fn read_back_equal(dir: &Path, server: &Server, data: &Path, len: u64, what: &str) {
    let out = dir.join("out.bin");
    let _ = std::fs::remove_file(&out);
    nbdcopy(dir, &server.uri, &out.display().to_string());
    assert_same_prefix(data, &out, len, what);
}

#[test]
fn raid5_on_four_nbdkit_exports_serves_checks_and_survives_a_stopped_member() {
    let test = "raid5_on_four_nbdkit_exports_serves_checks_and_survives_a_stopped_member";
    if !require_tools(test, &["nbdkit", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let mut exports = four_exports(dir);
    let uris: Vec<String> = exports.iter().map(|e| e.uri("")).collect();
    let members = strs(&uris);

    let mut create_args = vec!["create", "--level", "5"];
    create_args.extend(&members);
    eraid(dir, &create_args).expect_ok();
    // Each export now holds a superblock, at the start of its file.
    for i in 0..4 {
        let head = std::fs::read(dir.join(format!("m{i}"))).unwrap();
        assert!(
            head[..1 << 20].iter().any(|&b| b != 0),
            "m{i} got no metadata"
        );
    }
    let detail = detail_json(dir, &members);
    for (i, member) in detail["members"].as_array().unwrap().iter().enumerate() {
        assert_eq!(member["path"], uris[i], "{detail}");
        assert_eq!(member["state"], "active", "{detail}");
    }
    let capacity = detail["capacity_bytes"].as_u64().unwrap();

    // Filled by nbdcopy, read back equal, checked clean.
    let data = dir.join("data.bin");
    write_random(&data, capacity, 20);
    let server = Server::start(dir, &members);
    nbdcopy(dir, &data.display().to_string(), &server.uri);
    read_back_equal(dir, &server, &data, capacity, "array on NBD members");
    server.stop();
    let check = {
        let mut args = vec!["check"];
        args.extend(&members);
        eraid(dir, &args)
    };
    assert_eq!(check.code(), Some(0), "check found mismatches: {check}");
    assert!(check.stdout.contains("0 mismatches"), "{check}");

    // One member's server stops while the array is served: the member is
    // failed and the array serves degraded, data equal.
    let control = dir.join("ctl.sock").display().to_string();
    let mut server = Server::start_with(dir, &["--control", &control], &members);
    exports[2].stop();
    read_back_equal(
        dir,
        &server,
        &data,
        capacity,
        "degraded after member 2's server stopped",
    );
    server.wait_for_log("MemberFailed { member: 2", Duration::from_secs(60));
    let status = live(dir, &control);
    let failed = &status["members"][2];
    assert_eq!(failed["path"], uris[2], "{status}");
    assert!(
        failed["failure"]
            .as_str()
            .unwrap_or_default()
            .contains(&uris[2]),
        "the failure should name the export: {status}"
    );
    assert_eq!(status["degraded"], true, "{status}");
    // Writes go on degraded too, and read back.
    let more = dir.join("more.bin");
    write_random(&more, capacity, 21);
    nbdcopy(dir, &more.display().to_string(), &server.uri);
    read_back_equal(dir, &server, &more, capacity, "written degraded");

    // `detail` on the members shows the stopped export with why it cannot
    // be opened.
    let detail = detail_json(dir, &members);
    let missing = &detail["members"][2];
    assert_eq!(missing["path"], uris[2], "{detail}");
    assert_ne!(missing["state"], "active", "{detail}");
    let reason = missing["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("cannot reach"), "{detail}");

    // A new export replaces it: rebuilt while served, then checked clean.
    blank(dir, "m4", MEMBER_BYTES);
    let replacement = Nbdkit::start(dir, "m4", &[], &[]);
    let new_uri = replacement.uri("");
    eraid(dir, &["add", "--wait", &new_uri, "--control", &control]).expect_ok();
    let status = live(dir, &control);
    assert_eq!(status["members"][2]["path"], new_uri, "{status}");
    assert_eq!(status["members"][2]["state"], "active", "{status}");
    assert_eq!(status["degraded"], false, "{status}");
    read_back_equal(
        dir,
        &server,
        &more,
        capacity,
        "after the rebuild onto a new export",
    );
    server.stop();
    let mut now: Vec<&str> = members.clone();
    now[2] = &new_uri;
    let mut args = vec!["check"];
    args.extend(&now);
    let check = eraid(dir, &args);
    assert_eq!(check.code(), Some(0), "check after the rebuild: {check}");
}

const SIGSTOP: i32 = 19;
const SIGCONT: i32 = 18;

#[test]
fn a_member_whose_server_stops_answering_is_failed_at_its_request_timeout() {
    let test = "a_member_whose_server_stops_answering_is_failed_at_its_request_timeout";
    if !require_tools(test, &["nbdkit", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let exports: Vec<Nbdkit> = (0..4)
        .map(|i| {
            let name = format!("m{i}");
            blank(dir, &name, 8 * MIB);
            Nbdkit::start(dir, &name, &[], &[])
        })
        .collect();
    // Member 3 gives its server 2 s per request.
    let mut uris: Vec<String> = exports.iter().map(|e| e.uri("")).collect();
    uris[3] = format!("{}?request-timeout-s=2", uris[3]);
    let members = strs(&uris);
    let mut args = vec!["create", "--level", "5"];
    args.extend(&members);
    eraid(dir, &args).expect_ok();
    let capacity = detail_json(dir, &members)["capacity_bytes"]
        .as_u64()
        .unwrap();
    let data = dir.join("data.bin");
    write_random(&data, capacity, 30);
    let mut server = Server::start(dir, &members);
    nbdcopy(dir, &data.display().to_string(), &server.uri);
    // The server hangs (its host froze, say): connected, never answering.
    signal(exports[3].child(), SIGSTOP);
    let started = Instant::now();
    read_back_equal(
        dir,
        &server,
        &data,
        capacity,
        "with member 3's server frozen",
    );
    nbdcopy(dir, &data.display().to_string(), &server.uri);
    let waited = started.elapsed();
    server.wait_for_log("MemberFailed { member: 3", Duration::from_secs(30));
    let log = server.log_text();
    assert!(log.contains("no reply to the"), "{log}");
    assert!(log.contains("within 2 s (request-timeout-s)"), "{log}");
    // One timeout, not one per request: the member is failed at the first.
    assert!(waited < Duration::from_secs(30), "took {waited:?}\n{log}");
    read_back_equal(dir, &server, &data, capacity, "degraded after the timeout");
    server.stop();
}

#[test]
fn bad_member_uris_are_refused_naming_the_member_and_change_nothing() {
    let test = "bad_member_uris_are_refused_naming_the_member_and_change_nothing";
    if !require_tools(test, &["nbdkit"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let exports: Vec<Nbdkit> = (0..3)
        .map(|i| {
            let name = format!("m{i}");
            blank(dir, &name, MEMBER_BYTES);
            Nbdkit::start(dir, &name, &[], &[])
        })
        .collect();
    let good: Vec<String> = exports.iter().map(|e| e.uri("")).collect();
    blank(dir, "small", 4 * MIB);
    let small = Nbdkit::start(dir, "small", &[], &[]);
    blank(dir, "named", MEMBER_BYTES);
    let named = Nbdkit::start(
        dir,
        "named",
        &["exportname"],
        &["exportname=good", "exportname-strict=true"],
    );
    let unreachable = format!("nbd://127.0.0.1:{}/", free_port());

    let create_with = |fourth: &str| -> Vec<String> {
        let mut args: Vec<String> = ["create", "--level", "5", "--size", "32M"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(good.iter().cloned());
        args.push(fourth.to_string());
        args
    };
    for (fourth, names) in [
        (
            "nbd://127.0.0.1:99999/".to_string(),
            vec!["nbd://127.0.0.1:99999/", "port"],
        ),
        (
            "nbd+unix:///x".to_string(),
            vec!["nbd+unix:///x", "socket=PATH"],
        ),
        (
            format!("{}?request-timeout-s=soon", good[0]),
            vec!["request-timeout-s", "whole seconds"],
        ),
        (
            unreachable.clone(),
            vec![unreachable.as_str(), "cannot reach"],
        ),
        (
            small.uri(""),
            vec![small.uri("").as_str(), "less than --size"],
        ),
        (
            named.uri("bad"),
            vec![named.uri("bad").as_str(), "no export named \"bad\""],
        ),
    ] {
        let args = create_with(&fourth);
        rejected(
            dir,
            &strs(&args),
            &strs(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        );
    }
    // The export name the server takes works.
    let mut args = create_with(&named.uri("good"));
    args.retain(|a| a != "--size" && a != "32M");
    eraid(dir, &strs(&args)).expect_ok();
    let mut members = good.clone();
    members.push(named.uri("good"));

    // An export added offline as a hot spare is recorded by its URI.
    blank(dir, "spare", MEMBER_BYTES);
    let spare = Nbdkit::start(dir, "spare", &[], &[]);
    let mut add: Vec<String> = vec!["add".into(), "--spare".into(), spare.uri("")];
    add.extend(members.iter().cloned());
    eraid(dir, &strs(&add)).expect_ok();
    let mut with_spare = members.clone();
    with_spare.push(spare.uri(""));
    let detail = detail_json(dir, &strs(&with_spare));
    let recorded = &detail["members"][4];
    assert_eq!(recorded["path"], spare.uri(""), "{detail}");
    assert_eq!(recorded["state"], "spare", "{detail}");

    // Growing or serving with a bad export changes nothing either.
    let mut grow: Vec<String> = vec!["grow".into()];
    grow.extend(members.iter().cloned());
    grow.extend(["--add".to_string(), small.uri("")]);
    rejected(dir, &strs(&grow), &[&small.uri(""), "too small"]);
    let mut serve: Vec<String> = vec!["serve".into(), "--socket".into(), "s.sock".into()];
    serve.extend(good.iter().cloned());
    serve.push(named.uri("bad"));
    rejected(dir, &strs(&serve), &[&named.uri("bad"), "no export named"]);
}

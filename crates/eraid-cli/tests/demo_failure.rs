//! A demo that fails half-way says what failed and leaves nothing running:
//! with nbdcopy missing it stops after starting its server, and that server
//! must not outlive it (it kept running, holding the deleted member files,
//! when a full disk failed the demo), and the install hint appears only
//! because nbdcopy is missing.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Processes whose working directory is under `dir` (a server the demo
/// started there keeps it, even once the directory is deleted).
fn processes_under(dir: &Path) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc") {
        let Ok(entry) = entry else { continue };
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            continue;
        };
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if cwd.starts_with(dir) {
            found.push((pid, cwd.display().to_string()));
        }
    }
    found
}

#[test]
fn a_failed_demo_stops_its_server_and_names_the_missing_tool() {
    let scratch = tempfile::tempdir().expect("scratch dir");
    let logs = tempfile::tempdir().expect("log dir");
    // Files, not pipes: a server left running would hold a pipe open and
    // keep the test waiting instead of failing.
    let stdout_path = logs.path().join("stdout");
    let stderr_path = logs.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_eraid"))
        .arg("demo")
        .env("PATH", "/nonexistent")
        .env("TMPDIR", scratch.path())
        .stdout(std::fs::File::create(&stdout_path).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("runs eraid demo");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the demo did not end within 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let left = processes_under(scratch.path());
    for (pid, _) in &left {
        // Do not leave them behind for the next test either.
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(!status.success(), "the demo cannot succeed without nbdcopy");
    assert_eq!(status.code(), Some(2), "an error, not a panic: {stderr}");
    assert!(
        stderr.contains("nbdcopy is not installed"),
        "names what is missing: {stderr}"
    );
    assert!(
        stdout.contains("eraid serve"),
        "the demo got as far as starting its server: {stdout}"
    );
    assert!(left.is_empty(), "the demo left processes running: {left:?}");
}

//! Faults on real members (issue 19, acceptance 3 to 5), through
//! `scripts/fault-injection.sh`: a member whose reads fail on one 64 KiB
//! range (nbdkit's sh plugin through nbdfuse) is repaired and stays; a
//! member whose requests hang (nbdkit's pause filter) is failed at the
//! member timeout while a copy goes on; a member whose superblock is
//! overwritten with random bytes is named and left out, and the array
//! serves degraded. The script asserts each outcome and prints a verdict.

mod support;
use support::*;

fn run_scenario(mode: &str) {
    let test = format!("fault_injection_{mode}");
    let tools: &[&str] = if mode == "superblock" {
        &["nbdcopy", "jq"]
    } else {
        &[
            "nbdkit",
            "nbdfuse",
            "nbdcopy",
            "jq",
            "fusermount3",
            "python3",
        ]
    };
    if !require_tools(&test, tools) {
        return;
    }
    if mode != "superblock"
        && !require(
            &test,
            is_root() && std::path::Path::new("/dev/fuse").exists(),
            "root and /dev/fuse for nbdfuse",
        )
    {
        return;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fault-injection.sh");
    let dir = scratch();
    let started = std::time::Instant::now();
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(mode)
        .env("ERAID", eraid_bin())
        .env("TMPDIR", dir.path())
        .output()
        .expect("run the scenario script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{test}: {} after {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status,
        started.elapsed()
    );
    assert!(
        stdout.lines().any(|l| l.starts_with(&format!("{mode}: "))),
        "{test}: no verdict line\n{stdout}"
    );
}

/// Acceptance 3: reads failing on a 64 KiB range of one member.
#[test]
fn reads_failing_on_a_range_are_repaired_and_the_member_stays() {
    run_scenario("read-range");
}

/// Acceptance 4: a member whose requests hang.
#[test]
fn a_hung_member_is_failed_at_the_timeout_and_the_copy_goes_on() {
    run_scenario("hang");
}

/// Acceptance 5: a superblock overwritten with random bytes.
#[test]
fn a_member_with_a_random_superblock_is_named_and_left_out() {
    run_scenario("superblock");
}

//! A member whose writes start failing (EIO, through nbdkit's error filter
//! and nbdfuse) while nbdcopy writes 100 MiB: once while the first start's
//! resync runs, once while an ALV growth runs, once while `check --repair`
//! runs. The copy completes, the member is failed with its error recorded,
//! the activity says what it did, the data reads back equal, and a restart
//! keeps the member out. The steps and checks are those of
//! `scripts/member-fails-mid-copy.sh`, which also repeats them (the issue's
//! acceptance runs each ten times).

mod support;
use support::*;

fn run_scenario(mode: &str) {
    let test = format!("member_fails_mid_copy_{mode}");
    if !require_tools(
        &test,
        &["nbdkit", "nbdfuse", "nbdcopy", "jq", "fusermount3"],
    ) || !require(
        &test,
        is_root() && std::path::Path::new("/dev/fuse").exists(),
        "root and /dev/fuse for nbdfuse",
    ) {
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/member-fails-mid-copy.sh");
    let dir = scratch();
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(mode)
        .arg("1")
        .env("ERAID", eraid_bin())
        .env("TMPDIR", dir.path())
        .output()
        .expect("run the scenario script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{test}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains(&format!("run 1 ({mode}): copy complete")),
        "{test}: no verdict line\n{stdout}"
    );
}

#[test]
fn a_member_failing_mid_copy_during_the_first_resync() {
    run_scenario("resync");
}

#[test]
fn a_member_failing_mid_copy_during_an_alv_growth() {
    run_scenario("alv");
}

#[test]
fn a_member_failing_mid_copy_during_check_repair() {
    run_scenario("check");
}

/// Issue 19's acceptance 2: nothing else running, the copy completes, the
/// member is failed, the data reads back equal.
#[test]
fn a_member_failing_writes_mid_copy() {
    run_scenario("plain");
}

/// With a hot spare: it takes the failed member's slot, is rebuilt, and
/// `check` finds 0 mismatches.
#[test]
fn a_member_failing_writes_mid_copy_is_replaced_by_a_spare() {
    run_scenario("spare");
}

//! Members in use are refused by what the data is, not by the path named:
//! `create --force` on served members, a second `serve` or `check` through
//! a hard link, a symlink, a loop device over a served file (and the
//! reverse), a `mknod` alias of a served block device; and `mkfs.ext4` on
//! a served block device fails (exclusive open).

mod support;

use std::path::Path;
use support::*;

/// Runs `eraid ARGS`, expects a refusal (exit 2) naming `member` and saying
/// it is in use, and no change to the metadata of `members`. A command that
/// is not refused (a second server that serves) is killed after 10 s, so
/// the test fails instead of waiting for it forever.
#[track_caller]
fn refused_in_use(dir: &Path, args: &[&str], member: &str, members: &[&str]) {
    use std::io::Read;
    let before = metadata_areas(dir, members);
    let mut child = std::process::Command::new(eraid_bin())
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_timeout(&mut child, std::time::Duration::from_secs(10));
    if status.is_none() {
        signal(&child, SIGKILL);
        let _ = child.wait();
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let what = format!("eraid {}", args.join(" "));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(2),
        "`{what}` should be refused (None: still running after 10 s): {stderr}"
    );
    assert!(
        stderr.contains(member) && stderr.contains("in use"),
        "`{what}`: the refusal should name {member} and say it is in use: {stderr}"
    );
    assert!(
        metadata_areas(dir, members) == before,
        "`{what}` was refused but changed a member's metadata"
    );
}

#[test]
fn create_refuses_members_a_server_holds_even_with_force() {
    let s = scratch();
    let d = s.path();
    let members = ["d0", "d1", "d2"];
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    let server = Server::start(d, &members);
    for force in [true, false] {
        let mut args = vec!["create", "--level", "5", "--size", "16M"];
        if force {
            args.push("--force");
        }
        args.extend_from_slice(&members);
        refused_in_use(d, &args, "d0", &members);
    }
    // One served member among new files: refused, and the new files that
    // were to be created are not left behind.
    refused_in_use(
        d,
        &[
            "create", "--level", "5", "--size", "16M", "--force", "n0", "d1", "n2",
        ],
        "d1",
        &members,
    );
    assert!(!d.join("n0").exists() && !d.join("n2").exists());
    server.stop();
    let detail = detail_json(d, &members);
    assert_eq!(detail["state"], "clean", "{detail:#}");
}

#[test]
fn a_second_serve_or_check_through_a_link_is_refused() {
    let s = scratch();
    let d = s.path();
    let members = ["d0", "d1", "d2"];
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    std::fs::hard_link(d.join("d0"), d.join("hard0")).unwrap();
    std::os::unix::fs::symlink(d.join("d1"), d.join("soft1")).unwrap();
    let mut server = Server::start(d, &members);
    refused_in_use(
        d,
        &["serve", "--socket", "t.sock", "hard0", "soft1", "d2"],
        "hard0",
        &members,
    );
    refused_in_use(d, &["check", "d2", "soft1", "hard0"], "d2", &members);
    assert!(server.running());
    server.stop();
    // The same file named twice through two paths is refused too.
    let out = rejected(d, &["check", "d0", "hard0", "d1", "d2"], &["hard0"]);
    assert!(out.stderr.contains("twice"), "{out}");
}

/// Copies of a served array's members (the same array UUID) are refused:
/// eraid cannot tell that another path reaches the same data when the
/// path goes through something it cannot see through (another mount, a
/// network filesystem), so an array runs in one process at a time.
#[test]
fn a_second_copy_of_a_served_array_is_refused_by_its_uuid() {
    let s = scratch();
    let d = s.path();
    let members = ["d0", "d1", "d2"];
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    for (from, to) in [("d0", "c0"), ("d1", "c1"), ("d2", "c2")] {
        std::fs::copy(d.join(from), d.join(to)).unwrap();
    }
    let uuid = detail_json(d, &members)["array_uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let server = Server::start(d, &members);
    refused_in_use(
        d,
        &["serve", "--socket", "t.sock", "c0", "c1", "c2"],
        &uuid,
        &["c0", "c1", "c2"],
    );
    server.stop();
    // Once the first server is gone, the copy serves.
    Server::start(d, &["c0", "c1", "c2"]).stop();
}

/// A loop device attached for the test, detached on drop.
struct Loop {
    device: String,
}

impl Loop {
    fn attach(dir: &Path, file: &str) -> Loop {
        let out = run_tool(dir, "losetup", &["-f", "--show", file]).expect_ok();
        let device = out.stdout.trim().to_string();
        assert!(
            device.starts_with("/dev/loop"),
            "losetup printed {device:?}"
        );
        Loop { device }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = run_tool(Path::new("/"), "losetup", &["-d", &self.device]);
    }
}

/// A device node with the same device number as `device` (another path to
/// the same block device).
fn mknod_alias(device: &str, alias: &Path) {
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(device).unwrap().rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    run_tool(
        Path::new("/"),
        "mknod",
        &[
            &alias.display().to_string(),
            "b",
            &major.to_string(),
            &minor.to_string(),
        ],
    )
    .expect_ok();
}

#[test]
fn a_loop_device_and_its_backing_file_exclude_each_other() {
    let test = "a_loop_device_and_its_backing_file_exclude_each_other";
    if !require_tools(test, &["losetup", "mknod", "mkfs.ext4"])
        || !require(test, is_root(), "root (losetup, mknod)")
    {
        return;
    }
    let s = scratch();
    let d = s.path();
    let files = ["d0", "d1", "d2"];
    create(d, &["--level", "5", "--size", "16M", "d0", "d1", "d2"]);
    let lo = Loop::attach(d, "d0");
    let loop_dev = lo.device.as_str();
    let alias = d.join("alias0");
    mknod_alias(loop_dev, &alias);
    // The file served: its loop device and that device's alias are refused.
    let server = Server::start(d, &files);
    refused_in_use(
        d,
        &["serve", "--socket", "t.sock", loop_dev, "d1", "d2"],
        loop_dev,
        &files,
    );
    refused_in_use(d, &["check", "alias0", "d1", "d2"], "alias0", &files);
    server.stop();
    // The loop device served: the backing file and the alias are refused,
    // and mkfs cannot open the device.
    let server = Server::start(d, &[loop_dev, "d1", "d2"]);
    refused_in_use(
        d,
        &["serve", "--socket", "t.sock", "d0", "d1", "d2"],
        "d0",
        &files,
    );
    refused_in_use(
        d,
        &["serve", "--socket", "t.sock", "alias0", "d1", "d2"],
        "alias0",
        &files,
    );
    let before = metadata_areas(d, &files);
    let mkfs = run_tool(d, "mkfs.ext4", &["-F", "-q", loop_dev]);
    assert!(!mkfs.ok(), "mkfs.ext4 on a served member must fail: {mkfs}");
    assert!(
        metadata_areas(d, &files) == before,
        "mkfs.ext4 changed the served member"
    );
    server.stop();
    let detail = detail_json(d, &files);
    assert_eq!(detail["state"], "clean", "{detail:#}");
    for member in detail["members"].as_array().unwrap() {
        assert_eq!(member["state"], "active", "{detail:#}");
    }
    // Nothing holds it any more: the loop device serves again.
    Server::start(d, &[loop_dev, "d1", "d2"]).stop();
}

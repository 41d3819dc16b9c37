//! `eraid detail` on members (no server): it only reads. Members it may
//! not write (a read-only mount) are read all the same, nothing changes on
//! disk, and every member's state is shown with the reason when it cannot
//! be opened or its superblock is damaged; an array with more members gone
//! than it survives is shown as `failed`, with its geometry.

mod support;

use std::path::Path;
use support::*;

/// Makes `dir` visible read-only at `target` (a bind mount); unmounts on drop.
struct ReadOnlyView {
    target: std::path::PathBuf,
}

impl ReadOnlyView {
    fn new(dir: &Path, target: &Path) -> ReadOnlyView {
        std::fs::create_dir_all(target).expect("mount point");
        let (dir_s, target_s) = (dir.display().to_string(), target.display().to_string());
        run_tool(dir, "mount", &["--bind", &dir_s, &target_s]).expect_ok();
        let view = ReadOnlyView {
            target: target.to_path_buf(),
        };
        run_tool(dir, "mount", &["-o", "remount,bind,ro", &target_s]).expect_ok();
        view
    }
}

impl Drop for ReadOnlyView {
    fn drop(&mut self) {
        let _ = std::process::Command::new(tool("umount"))
            .arg(&self.target)
            .status();
    }
}

#[test]
fn detail_reads_members_it_may_not_write() {
    let test = "detail_reads_members_it_may_not_write";
    if !require(test, is_root(), "root (for a read-only bind mount)")
        || !require_tools(test, &["mount", "umount"])
    {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(4);
    let mut args = vec!["create", "--level", "5", "--size", "16M"];
    args.extend(strs(&names));
    eraid(dir, &args).expect_ok();
    let outside = tempfile::tempdir().unwrap();
    let view = ReadOnlyView::new(dir, &outside.path().join("view"));
    let in_view: Vec<String> = names
        .iter()
        .map(|n| view.target.join(n).display().to_string())
        .collect();
    // Opening read-write would fail here, even as root.
    assert!(std::fs::OpenOptions::new()
        .write(true)
        .open(&in_view[0])
        .is_err());
    let before = snapshot(dir);
    let detail = detail_json(dir, &strs(&in_view));
    assert_eq!(detail["state"], "clean", "{detail:#}");
    assert_eq!(detail["members"].as_array().unwrap().len(), 4);
    for m in detail["members"].as_array().unwrap() {
        assert_eq!(m["state"], "active", "{detail:#}");
    }
    assert_eq!(snapshot(dir), before, "detail changed a member");
}

#[test]
fn detail_shows_every_member_and_a_failed_array() {
    let scratch = scratch();
    let dir = scratch.path();
    let names = member_names(4);
    let members = strs(&names);
    let mut args = vec!["create", "--level", "5", "--chunk", "64K", "--size", "16M"];
    args.extend_from_slice(&members);
    eraid(dir, &args).expect_ok();
    // d3 gone, d2's superblocks overwritten: two of four, RAID-5 survives one.
    std::fs::rename(dir.join("d3"), dir.join("elsewhere")).unwrap();
    {
        use std::os::unix::fs::FileExt;
        let d2 = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("d2"))
            .unwrap();
        d2.write_all_at(&vec![0x5a; 128 << 10], 0).unwrap();
    }
    let before = snapshot(dir);
    let detail = detail_json(dir, &members);
    assert_eq!(snapshot(dir), before, "detail changed a member");
    assert_eq!(detail["state"], "failed", "{detail:#}");
    assert_eq!(detail["level"], 5);
    assert_eq!(detail["chunk_bytes"], 65536);
    assert_eq!(detail["layout"], "left-symmetric");
    assert!(detail["capacity_bytes"].as_u64().unwrap() > 0);
    let listed = detail["members"].as_array().unwrap();
    assert_eq!(listed.len(), 4, "{detail:#}");
    for (i, m) in listed.iter().enumerate() {
        assert_eq!(m["index"], i, "{detail:#}");
        assert!(m.get("failure").is_some(), "{detail:#}");
    }
    assert_eq!(listed[0]["state"], "active");
    assert_eq!(listed[1]["state"], "active");
    assert_eq!(listed[2]["state"], "unreadable", "{detail:#}");
    assert!(
        listed[2]["path"].as_str().unwrap().ends_with("d2")
            && listed[2]["reason"]
                .as_str()
                .unwrap()
                .contains("unreadable superblock"),
        "{detail:#}"
    );
    assert_eq!(listed[3]["state"], "missing", "{detail:#}");
    assert!(
        listed[3]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot open"),
        "{detail:#}"
    );
    // The words say the same.
    let mut args = vec!["detail"];
    args.extend_from_slice(&members);
    let out = eraid(dir, &args).expect_ok();
    for needle in [
        "RAID-5",
        "failed",
        "d2 (unreadable superblock",
        "d3 (cannot open",
    ] {
        assert!(out.stdout.contains(needle), "{needle:?} missing: {out}");
    }
}

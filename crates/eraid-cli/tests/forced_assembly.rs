//! Issue 25's forced-assembly step, with real member failures: a RAID-5 of
//! four whose members d2 and d3 live on small tmpfs mounts that fill up
//! (ENOSPC) one after the other while data is written and flushed. Once
//! the space is freed, `serve` refuses (naming the member `--force` would
//! take back and what it risks, changing nothing), `serve --force` takes
//! back d3 (the later to fail, so the one with the most recent superblock)
//! and every acknowledged, flushed byte reads back, those written while d2
//! was already failed included: writes are whole stripes, so the write
//! hole only touches the write the second failure interrupted, which was
//! never acknowledged.

mod support;

use eraid_nbd::client::Client;
use std::path::{Path, PathBuf};
use support::*;

/// A tmpfs of `size` at `at`, unmounted on drop.
struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).expect("mount point");
        let (at_s, options) = (at.display().to_string(), format!("size={size}"));
        run_tool(
            dir,
            "mount",
            &["-t", "tmpfs", "-o", &options, "tmpfs", &at_s],
        )
        .expect_ok();
        Tmpfs {
            at: at.to_path_buf(),
        }
    }

    /// Grows the filesystem: the space is freed.
    fn resize(&self, dir: &Path, size: &str) {
        let options = format!("remount,size={size}");
        let at = self.at.display().to_string();
        run_tool(dir, "mount", &["-o", &options, &at]).expect_ok();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new(tool("umount"))
            .arg(&self.at)
            .status();
    }
}

/// Deterministic contents of the write at `offset`.
fn pattern(offset: u64, len: usize) -> Vec<u8> {
    let mut rng = rng(offset);
    let mut data = vec![0u8; len];
    rand::RngCore::fill_bytes(&mut rng, &mut data);
    data
}

fn hashes(dir: &Path, members: &[&str]) -> Vec<(u64, u64)> {
    members.iter().map(|m| file_hash(&dir.join(m))).collect()
}

#[test]
fn serve_force_takes_back_the_most_recent_failed_member() {
    let test = "serve_force_takes_back_the_most_recent_failed_member";
    if !require(
        test,
        is_root(),
        "root (for small tmpfs mounts that fill up)",
    ) || !require_tools(test, &["mount", "umount"])
    {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    // d2's filesystem fills after about 40 MiB of array data, d3's after
    // about 85: in between the array runs degraded without d2.
    let fs2 = Tmpfs::mount(dir, &dir.join("fs2"), "14M");
    let fs3 = Tmpfs::mount(dir, &dir.join("fs3"), "29M");
    let members = ["d0", "d1", "fs2/d2", "fs3/d3"];
    let mut args = vec!["create", "--level", "5", "--chunk", "64K", "--size", "64M"];
    args.extend_from_slice(&members);
    eraid(dir, &args).expect_ok();

    let mut server = Server::start(dir, &members);
    let mut client = Client::connect_uri(&server.uri).expect("connect");
    let capacity = client.size_bytes();
    // Five whole stripes (3 data chunks of 64 KiB each) per write.
    let unit = 5 * 3 * (64 << 10);
    let mut acknowledged = 0u64;
    while acknowledged + unit <= capacity {
        let data = pattern(acknowledged, unit as usize);
        let written = client.write(acknowledged, &data, false).is_ok() && client.flush().is_ok();
        if !written {
            break;
        }
        acknowledged += unit;
    }
    assert!(
        acknowledged >= 60 << 20 && acknowledged + unit <= capacity,
        "the second filesystem should fill after d2's did: {acknowledged} of {capacity} \
         bytes acknowledged\n{}",
        server.log_text()
    );
    drop(client);
    server.terminate();
    let log = server.log_text();
    assert!(log.contains("No space left"), "{log}");
    // The failure names the full filesystem (issue 19).
    let fs2_mount = fs2.at.display().to_string();
    assert!(
        log.contains(&format!("the filesystem {fs2_mount} (tmpfs")) && log.contains("is full"),
        "the ENOSPC failure does not name the filesystem {fs2_mount}: {log}"
    );
    drop(server);

    // Space is freed; a plain serve refuses, naming what --force would do.
    fs2.resize(dir, "80M");
    fs3.resize(dir, "80M");
    let before = hashes(dir, &members);
    let mut args = vec!["serve", "--socket", "refused.sock"];
    args.extend_from_slice(&members);
    let refused = eraid(dir, &args);
    assert!(!refused.ok(), "{refused}");
    for needle in ["--force", "fs3/d3", "write hole", "lost"] {
        assert!(refused.stderr.contains(needle), "{needle:?}: {refused}");
    }
    assert_eq!(
        hashes(dir, &members),
        before,
        "a refused serve changed a member"
    );

    let mut server = Server::start_with(dir, &["--force"], &members);
    server.wait_for_log("took back member 3", std::time::Duration::from_secs(10));
    let log = server.log_text();
    assert!(
        log.contains("fs3/d3") && log.contains("the array's"),
        "{log}"
    );
    let mut client = Client::connect_uri(&server.uri).expect("connect");
    let mut offset = 0;
    while offset < acknowledged {
        let read = client.read(offset, unit as u32).expect("read");
        assert!(
            read == pattern(offset, unit as usize),
            "acknowledged and flushed bytes at {offset} differ after the forced assembly"
        );
        offset += unit;
    }
    drop(client);
    server.stop();

    // d3 is a member again, d2 stays out (it missed the degraded writes).
    let detail = detail_json(dir, &members);
    assert_eq!(detail["members"][3]["state"], "active", "{detail:#}");
    assert_eq!(detail["members"][2]["state"], "stale", "{detail:#}");
    assert!(
        detail["members"][2]["failure"]
            .as_str()
            .is_some_and(|f| f.contains("No space left")),
        "{detail:#}"
    );
}

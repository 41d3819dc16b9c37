//! Real NBD clients against `eraid serve`: qemu-img (info, convert -n,
//! compare), nbdinfo, and a real ext4 filesystem through nbdfuse + a loop
//! device, which must survive a RAID-5 member being removed.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const MEMBERS: [&str; 4] = ["d0", "d1", "d2", "d3"];

fn create_raid5(dir: &Path, size: &str) -> u64 {
    let mut args = vec!["create", "--level", "5", "--chunk", "64K", "--size", size];
    args.extend_from_slice(&MEMBERS);
    eraid(dir, &args).expect_ok();
    detail_json(dir, &MEMBERS)["capacity_bytes"]
        .as_u64()
        .unwrap()
}

#[test]
fn qemu_img_and_nbdinfo() {
    let test = "qemu_img_and_nbdinfo";
    if !require_tools(test, &["qemu-img", "nbdinfo", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let capacity = create_raid5(dir, "64M");
    let server = Server::start(dir, &MEMBERS);
    let uri = server.uri.clone();

    // nbdinfo --json: size and block-size constraints.
    let info = run_tool(dir, "nbdinfo", &["--json", &uri])
        .expect_ok()
        .json();
    let export = &info["exports"][0];
    assert_eq!(export["export-size"], capacity, "nbdinfo: {info:#}");
    assert_eq!(export["block_size_minimum"], 512, "nbdinfo: {info:#}");
    assert_eq!(export["block_size_maximum"], 32 << 20, "nbdinfo: {info:#}");
    let preferred = export["block_size_preferred"].as_u64().unwrap_or(0);
    assert!(
        preferred >= 4096 && preferred.is_power_of_two() && preferred <= 32 << 20,
        "nbdinfo: preferred block size {preferred} (should be the chunk or stripe size): {info:#}"
    );
    for flag in ["can_flush", "can_fua", "can_trim", "can_zero"] {
        assert_eq!(export[flag], true, "nbdinfo {flag}: {info:#}");
    }
    assert_eq!(export["is_read_only"], false, "nbdinfo: {info:#}");

    // qemu-img info on the URI.
    let qinfo = run_tool(dir, "qemu-img", &["info", "--output=json", &uri])
        .expect_ok()
        .json();
    assert_eq!(qinfo["virtual-size"], capacity, "qemu-img info: {qinfo:#}");

    // Fill the whole export with garbage first, so the zeroes qemu-img
    // writes for the image's hole must really land.
    write_random(&dir.join("garbage.bin"), capacity, 11);
    run_tool(dir, "nbdcopy", &["garbage.bin", &uri]).expect_ok();

    // A raw image of the export's size: random head and tail, a hole between.
    let image = dir.join("image.raw");
    write_random(&image, 40 * MIB, 12);
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&image)
            .unwrap();
        f.set_len(capacity).unwrap();
        f.seek(SeekFrom::Start(capacity - 3 * MIB - 512)).unwrap();
        let mut tail = vec![0u8; 3 * MIB as usize + 512];
        rand::RngCore::fill_bytes(&mut rng(13), &mut tail);
        f.write_all(&tail).unwrap();
    }
    run_tool(
        dir,
        "qemu-img",
        &["convert", "-n", "-f", "raw", "-O", "raw", "image.raw", &uri],
    )
    .expect_ok();
    let compare = run_tool(
        dir,
        "qemu-img",
        &["compare", "-f", "raw", "-F", "raw", "image.raw", &uri],
    );
    assert_eq!(
        compare.code(),
        Some(0),
        "qemu-img compare after convert: {compare}"
    );

    // The other way: convert the export to a raw file, byte-identical.
    run_tool(
        dir,
        "qemu-img",
        &["convert", "-f", "raw", "-O", "raw", &uri, "back.raw"],
    )
    .expect_ok();
    assert_eq!(
        file_hash(&image),
        file_hash(&dir.join("back.raw")),
        "qemu-img convert export -> file"
    );

    // compare can fail: one byte changed in the middle of the hole.
    std::fs::copy(&image, dir.join("changed.raw")).unwrap();
    flip_bytes(&dir.join("changed.raw"), capacity / 2, 1);
    let differ = run_tool(
        dir,
        "qemu-img",
        &["compare", "-f", "raw", "-F", "raw", "changed.raw", &uri],
    );
    assert_eq!(
        differ.code(),
        Some(1),
        "qemu-img compare must see the changed byte: {differ}"
    );

    server.stop();
    // And degraded: the same bytes without d1.
    std::fs::rename(dir.join("d1"), dir.join("d1.away")).unwrap();
    let server = Server::start(dir, &["d0", "d2", "d3"]);
    let compare = run_tool(
        dir,
        "qemu-img",
        &[
            "compare",
            "-f",
            "raw",
            "-F",
            "raw",
            "image.raw",
            &server.uri,
        ],
    );
    assert_eq!(
        compare.code(),
        Some(0),
        "qemu-img compare degraded: {compare}"
    );
    server.stop();
}

/// nbdfuse mounts, loop devices and mounts, torn down in reverse order on
/// drop whatever happened.
struct BlockStack {
    dir: PathBuf,
    fuse: Vec<(PathBuf, Child)>,
    loops: Vec<String>,
    mounts: Vec<PathBuf>,
}

fn fusermount() -> &'static str {
    if have_tool("fusermount3") {
        "fusermount3"
    } else {
        "fusermount"
    }
}

impl BlockStack {
    fn new(dir: &Path) -> BlockStack {
        BlockStack {
            dir: dir.to_path_buf(),
            fuse: Vec::new(),
            loops: Vec::new(),
            mounts: Vec::new(),
        }
    }

    /// nbdfuse exposes `uri` as DIR/NAME/disk; returns the loop device on it.
    fn expose(&mut self, name: &str, uri: &str, read_only: bool) -> String {
        let mountpoint = self.dir.join(name);
        std::fs::create_dir_all(&mountpoint).unwrap();
        let pidfile = self.dir.join(format!("{name}.pid"));
        let log = self.dir.join(format!("{name}.log"));
        let mut cmd = Command::new(tool("nbdfuse"));
        if read_only {
            cmd.arg("-r");
        }
        let child = cmd
            .arg("-P")
            .arg(&pidfile)
            .arg(mountpoint.join("disk"))
            .arg(uri)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn nbdfuse");
        self.fuse.push((mountpoint.clone(), child));
        let started = Instant::now();
        let disk = mountpoint.join("disk");
        loop {
            let ready = std::fs::metadata(&pidfile)
                .map(|m| m.len() > 0)
                .unwrap_or(false)
                && disk.exists();
            if ready {
                break;
            }
            let child = &mut self.fuse.last_mut().unwrap().1;
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "nbdfuse exited early ({status}): {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "nbdfuse did not mount within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let disk_s = disk.display().to_string();
        let mut args = vec!["-f", "--show"];
        if read_only {
            args.push("-r");
        }
        args.push(&disk_s);
        let out = run_tool(&self.dir, "losetup", &args).expect_ok();
        let dev = out.stdout.trim().to_string();
        assert!(dev.starts_with("/dev/loop"), "losetup printed {dev:?}");
        self.loops.push(dev.clone());
        dev
    }

    fn mount(&mut self, dev: &str, at: &str, options: Option<&str>) -> PathBuf {
        let target = self.dir.join(at);
        std::fs::create_dir_all(&target).unwrap();
        let target_s = target.display().to_string();
        let mut args = vec![];
        if let Some(o) = options {
            args.extend_from_slice(&["-o", o]);
        }
        args.extend_from_slice(&[dev, target_s.as_str()]);
        run_tool(&self.dir, "mount", &args).expect_ok();
        self.mounts.push(target.clone());
        target
    }

    fn umount_all(&mut self, strict: bool) {
        while let Some(m) = self.mounts.pop() {
            let m_s = m.display().to_string();
            let out = run_tool(&self.dir, "umount", &[&m_s]);
            if !out.ok() {
                let lazy = run_tool(&self.dir, "umount", &["-l", &m_s]);
                assert!(!strict, "umount failed: {out} (lazy: {})", lazy.ok());
            }
        }
    }

    fn detach_loops(&mut self, strict: bool) {
        while let Some(dev) = self.loops.pop() {
            let out = run_tool(&self.dir, "losetup", &["-d", &dev]);
            assert!(!strict || out.ok(), "losetup -d failed: {out}");
        }
    }

    /// fsync the FUSE file (a flush to the NBD server), unmount, and wait
    /// for nbdfuse to exit.
    fn unmount_fuse(&mut self, strict: bool) {
        while let Some((mountpoint, mut child)) = self.fuse.pop() {
            if let Ok(f) = std::fs::OpenOptions::new()
                .write(true)
                .open(mountpoint.join("disk"))
            {
                let _ = f.sync_all();
            }
            let m_s = mountpoint.display().to_string();
            let mut unmounted = false;
            for _ in 0..50 {
                // The loop device lets go of the file asynchronously.
                if run_tool(&self.dir, fusermount(), &["-u", &m_s]).ok() {
                    unmounted = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if !unmounted {
                let _ = run_tool(&self.dir, fusermount(), &["-u", "-z", &m_s]);
            }
            let status = wait_timeout(&mut child, Duration::from_secs(30));
            if status.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
            assert!(!strict || unmounted, "cannot unmount nbdfuse at {m_s}");
            assert!(
                !strict || status.is_some(),
                "nbdfuse did not exit after unmount"
            );
        }
    }

    /// Orderly teardown; panics if a step fails.
    fn teardown(&mut self) {
        self.umount_all(true);
        self.detach_loops(true);
        self.unmount_fuse(true);
    }
}

impl Drop for BlockStack {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.umount_all(false);
            self.detach_loops(false);
            self.unmount_fuse(false);
        } else {
            self.teardown();
        }
    }
}

/// A few hundred files of random sizes in nested directories.
fn make_tree(root: &Path, seed: u64) -> u64 {
    use rand::Rng;
    let mut rng = rng(seed);
    let mut total = 0;
    for i in 0..320 {
        let sub = root
            .join(format!("dir{}", i % 7))
            .join(format!("sub{}", i % 3));
        std::fs::create_dir_all(&sub).unwrap();
        let len: usize = match i % 10 {
            0 => 0,
            1 => rng.gen_range(1..512),
            2 => 1 << 20, // a few whole MiB files
            _ => rng.gen_range(512..192 << 10),
        };
        let mut data = vec![0u8; len];
        rng.fill(&mut data[..]);
        std::fs::write(sub.join(format!("file{i:03}.bin")), &data).unwrap();
        total += len as u64;
    }
    std::fs::create_dir_all(root.join("empty/dir")).unwrap();
    std::os::unix::fs::symlink("dir0/sub0/file000.bin", root.join("link")).unwrap();
    total
}

#[test]
fn ext4_through_nbdfuse_and_loop_survives_a_lost_member() {
    let test = "ext4_through_nbdfuse_and_loop";
    if !require_tools(
        test,
        &[
            "nbdfuse",
            "losetup",
            "mkfs.ext4",
            "fsck.ext4",
            "mount",
            "umount",
            "diff",
            "cp",
        ],
    ) || !require_tools(test, &[fusermount()])
        || !require(test, is_root(), "root (losetup and mount)")
        || !require(test, Path::new("/dev/fuse").exists(), "/dev/fuse")
        || !require(
            test,
            Path::new("/dev/loop-control").exists(),
            "loop devices (/dev/loop-control)",
        )
    {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create_raid5(dir, "64M");
    let tree = dir.join("tree");
    let bytes = make_tree(&tree, 42);
    assert!(bytes > 20 * MIB);
    let tree_s = tree.display().to_string();

    let server = Server::start(dir, &MEMBERS);
    {
        let mut stack = BlockStack::new(dir);
        let dev = stack.expose("fuse1", &server.uri, false);
        run_tool(dir, "mkfs.ext4", &["-q", "-F", &dev]).expect_ok();
        let mnt = stack.mount(&dev, "mnt1", None);
        let dest = mnt.join("tree").display().to_string();
        run_tool(dir, "cp", &["-a", &tree_s, &dest]).expect_ok();
        run_tool(dir, "diff", &["-r", &tree_s, &dest]).expect_ok();
        stack.umount_all(true);
        let fsck = run_tool(dir, "fsck.ext4", &["-fn", &dev]);
        assert_eq!(
            fsck.code(),
            Some(0),
            "fsck.ext4 -fn after writing the tree: {fsck}"
        );
        stack.teardown();
    }
    server.stop();
    let check = eraid(dir, &["check", "d0", "d1", "d2", "d3"]);
    assert_eq!(check.code(), Some(0), "check after the filesystem: {check}");

    // One member gone: the filesystem is still all there.
    std::fs::rename(dir.join("d1"), dir.join("d1.away")).unwrap();
    let server = Server::start(dir, &["d0", "d2", "d3"]);
    {
        let mut stack = BlockStack::new(dir);
        let dev = stack.expose("fuse2", &server.uri, true);
        let fsck = run_tool(dir, "fsck.ext4", &["-fn", &dev]);
        assert_eq!(fsck.code(), Some(0), "fsck.ext4 -fn degraded: {fsck}");
        let mnt = stack.mount(&dev, "mnt2", Some("ro,noload"));
        let copied = mnt.join("tree").display().to_string();
        let diff = run_tool(dir, "diff", &["-r", "--no-dereference", &tree_s, &copied]);
        assert!(
            diff.ok(),
            "the tree read from the degraded array differs: {diff}"
        );
        stack.teardown();
    }
    server.stop();
}

/// What an administrator does: a mounted ext4 on the array, files being
/// copied in while `eraid grow` adds a member, then the export reconnected
/// at its new size, `resize2fs`, and everything still there. RAID-5 by ALV
/// and RAID-0 by FastScale.
fn ext4_grows_with_the_array_online(level: u32, members: &[&str], added: &str, strategy: &str) {
    let test = format!("ext4 on RAID-{level} grown by {strategy}");
    if !require_tools(
        &test,
        &[
            "nbdfuse",
            "losetup",
            "mkfs.ext4",
            "fsck.ext4",
            "resize2fs",
            "mount",
            "umount",
            "diff",
            "cp",
            "df",
        ],
    ) || !require_tools(&test, &[fusermount()])
        || !require(&test, is_root(), "root (losetup and mount)")
        || !require(&test, Path::new("/dev/fuse").exists(), "/dev/fuse")
        || !require(
            &test,
            Path::new("/dev/loop-control").exists(),
            "loop devices (/dev/loop-control)",
        )
    {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let level_s = level.to_string();
    let mut args = vec![
        "create", "--level", &level_s, "--chunk", "64K", "--size", "64M",
    ];
    args.extend_from_slice(members);
    eraid(dir, &args).expect_ok();
    blank(dir, added, 64 * MIB);
    let tree = dir.join("tree");
    make_tree(&tree, 7);
    let tree_s = tree.display().to_string();
    let mut all: Vec<&str> = members.to_vec();
    all.push(added);

    let mut server = Server::start_with(dir, &["--control", "c.sock"], members);
    let blocks_before;
    {
        let mut stack = BlockStack::new(dir);
        let dev = stack.expose("fuse1", &server.uri, false);
        run_tool(dir, "mkfs.ext4", &["-q", "-F", &dev]).expect_ok();
        let mnt = stack.mount(&dev, "mnt1", None);
        blocks_before = df_blocks(dir, &mnt);
        // The growth runs (slowed to about 6 s) while the tree is copied in.
        let added_abs = dir.join(added).display().to_string();
        eraid(
            dir,
            &[
                "grow",
                "--add",
                &added_abs,
                "--strategy",
                strategy,
                "--speed-max",
                "20000",
                "--no-wait",
                "--control",
                "c.sock",
            ],
        )
        .expect_ok();
        let dest = mnt.join("tree").display().to_string();
        run_tool(dir, "cp", &["-a", &tree_s, &dest]).expect_ok();
        run_tool(dir, "sync", &[]).expect_ok();
        let status = live(dir, "c.sock");
        assert_eq!(
            status["reshape"]["state"], "running",
            "{test}: the copy should overlap the growth: {status:#}"
        );
        wait_done(&test, dir, "c.sock", &mut server);
        run_tool(dir, "diff", &["-r", &tree_s, &dest]).expect_ok();
        stack.umount_all(true);
        stack.teardown();
    }
    // A new connection sees the new capacity: grow the filesystem into it.
    {
        let mut stack = BlockStack::new(dir);
        let dev = stack.expose("fuse2", &server.uri, false);
        // -fy: resize2fs wants a check newer than the last mount; exit 0
        // means nothing needed fixing.
        let fsck = run_tool(dir, "fsck.ext4", &["-fy", &dev]);
        assert_eq!(
            fsck.code(),
            Some(0),
            "{test}: fsck.ext4 -fy after the growth: {fsck}"
        );
        run_tool(dir, "resize2fs", &[&dev]).expect_ok();
        let mnt = stack.mount(&dev, "mnt2", None);
        let blocks_after = df_blocks(dir, &mnt);
        assert!(
            blocks_after > blocks_before + blocks_before / 4,
            "{test}: the filesystem did not grow: {blocks_before} -> {blocks_after} 1K-blocks"
        );
        let copied = mnt.join("tree").display().to_string();
        run_tool(dir, "diff", &["-r", &tree_s, &copied]).expect_ok();
        stack.umount_all(true);
        let fsck = run_tool(dir, "fsck.ext4", &["-fn", &dev]);
        assert_eq!(
            fsck.code(),
            Some(0),
            "{test}: fsck.ext4 -fn after resize2fs: {fsck}"
        );
        stack.teardown();
    }
    if level != 0 {
        let check = eraid(dir, &["check", "--control", "c.sock"]);
        assert!(check.stdout.contains("0 mismatches"), "{test}: {check}");
    }
    server.stop();
    let detail = detail_json(dir, &all);
    assert_eq!(detail["member_count"], all.len(), "{test}: {detail:#}");
    assert_eq!(detail["state"], "clean", "{test}: {detail:#}");
}

/// `df` 1K-blocks of the filesystem mounted at `mnt`.
fn df_blocks(dir: &Path, mnt: &Path) -> u64 {
    let mnt_s = mnt.display().to_string();
    let out = run_tool(dir, "df", &["-k", "--output=size", &mnt_s]).expect_ok();
    out.stdout
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("df printed {:?}", out.stdout))
}

#[test]
fn ext4_grows_with_a_raid5_grown_online_by_alv() {
    ext4_grows_with_the_array_online(5, &["d0", "d1", "d2"], "d3", "alv");
}

#[test]
fn ext4_grows_with_a_raid0_grown_online_by_fastscale() {
    ext4_grows_with_the_array_online(0, &["d0", "d1", "d2", "d3"], "d4", "fastscale");
}

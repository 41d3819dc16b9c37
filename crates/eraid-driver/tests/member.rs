//! `MemberFile` against real file systems: O_DIRECT when available, buffered
//! fallback otherwise, and positioned I/O at 512-byte (not 4 KiB) alignment.

mod common;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::pattern;
use eraid_driver::{DirectMode, MemberFile, MemberOptions};

const MEMBER_BYTES: u64 = 1 << 20;

/// Whether this file system accepts O_DIRECT for open *and* a 512-byte
/// aligned write, asked directly of the kernel rather than of the code under
/// test.
fn probe_o_direct(dir: &Path) -> bool {
    let path = dir.join("probe");
    File::create(&path).unwrap().set_len(8192).unwrap();
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path);
    std::fs::remove_file(&path).unwrap();
    opened.is_ok()
}

fn sparse_member(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    File::create(&path).unwrap().set_len(MEMBER_BYTES).unwrap();
    path
}

/// Writes at 512-byte aligned offsets that are not 4 KiB aligned (with
/// lengths that are not multiples of 4 KiB either, overlapping each other),
/// then checks every byte against a model.
fn round_trip_unaligned(member: &MemberFile) {
    let mut model = vec![0u8; MEMBER_BYTES as usize];
    let writes: [(u64, usize); 6] = [
        (512, 512),
        (1536, 1024),
        (4096 + 512, 4096 + 512),
        (3 * 4096 - 512, 3 * 4096),
        (0, 4096),
        (65_536 + 3584, 1536),
    ];
    for (seed, &(offset_bytes, len_bytes)) in writes.iter().enumerate() {
        let data = pattern(len_bytes, seed as u64 + 1);
        member.write_at(offset_bytes, &data).unwrap();
        model[offset_bytes as usize..offset_bytes as usize + len_bytes].copy_from_slice(&data);
    }
    for &(offset_bytes, len_bytes) in &writes {
        let got = member.read_at(offset_bytes, len_bytes).unwrap();
        assert!(
            got == model[offset_bytes as usize..][..len_bytes],
            "mismatch at {offset_bytes}+{len_bytes}"
        );
    }
    // One read over the whole written region, at an odd 512 multiple.
    let got = member.read_at(512, 80 * 1024).unwrap();
    assert!(got == model[512..512 + 80 * 1024]);
    member.sync_data().unwrap();
    // The bytes are in the file, not only in some cache of ours.
    let on_disk = std::fs::read(member.path()).unwrap();
    assert!(on_disk == model, "file contents differ from the model");
}

#[test]
fn tmpfs_members_are_buffered_and_served_in_memory() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let member = MemberFile::open(sparse_member(dir.path(), "m0")).unwrap();
    // Before Linux 6.6 tmpfs refuses O_DIRECT, later kernels accept it;
    // either way the page cache is the storage, so the member is opened
    // buffered (an O_DIRECT handle would only add an aligned copy) and is
    // one the engine may serve on its own thread.
    assert!(!member.direct());
    assert!(eraid_driver::MemberIo::memory_backed(&member));
    assert_eq!(member.size_bytes(), MEMBER_BYTES);
    round_trip_unaligned(&member);
}

#[test]
fn regular_file_system_uses_o_direct_when_it_works() {
    for base in ["/tmp", env!("CARGO_TARGET_TMPDIR")] {
        let dir = tempfile::tempdir_in(base).unwrap();
        let expect_direct = probe_o_direct(dir.path());
        let member = MemberFile::open(sparse_member(dir.path(), "m0")).unwrap();
        // (A memory file system here would be served buffered: see above.)
        let in_memory = eraid_driver::MemberIo::memory_backed(&member);
        assert_eq!(
            member.direct(),
            expect_direct && !in_memory,
            "O_DIRECT mode under {base}"
        );
        round_trip_unaligned(&member);
    }
}

#[test]
fn buffered_mode_round_trips_at_512_byte_offsets() {
    for base in ["/tmp", "/dev/shm"] {
        let dir = tempfile::tempdir_in(base).unwrap();
        let options = MemberOptions {
            writable: true,
            direct: DirectMode::Never,
        };
        let member = MemberFile::open_with(sparse_member(dir.path(), "m0"), options).unwrap();
        assert!(!member.direct());
        round_trip_unaligned(&member);
    }
}

#[test]
fn reads_beyond_the_end_are_zero_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m0");
    std::fs::write(&path, pattern(1024, 9)).unwrap();
    for direct in [DirectMode::Prefer, DirectMode::Never] {
        let member = MemberFile::open_with(
            &path,
            MemberOptions {
                writable: true,
                direct,
            },
        )
        .unwrap();
        assert_eq!(member.size_bytes(), 1024);
        let got = member.read_at(512, 4096).unwrap();
        assert_eq!(&got[..512], &pattern(1024, 9)[512..]);
        assert!(got[512..].iter().all(|&b| b == 0));
        assert_eq!(member.read_at(1 << 30, 512).unwrap(), vec![0; 512]);
    }
}

#[test]
fn read_only_member_refuses_writes_with_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = sparse_member(dir.path(), "m0");
    let member = MemberFile::open_with(
        &path,
        MemberOptions {
            writable: false,
            ..Default::default()
        },
    )
    .unwrap();
    let err = member.write_at(512, &[7; 512]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    assert_eq!(member.read_at(512, 512).unwrap(), vec![0; 512]);
}

#[test]
fn missing_member_error_names_the_path() {
    let err = MemberFile::open("/nonexistent/eraid-member").unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/eraid-member"),
        "{err}"
    );
}

/// A loop device over a sparse file, when this machine allows creating one
/// (root and a loop driver); otherwise the test does nothing.
struct LoopDevice {
    device: String,
}

impl LoopDevice {
    fn attach(backing: &Path, sector_bytes: u32) -> Option<LoopDevice> {
        let output = Command::new("losetup")
            .args(["-f", "--show", "--sector-size", &sector_bytes.to_string()])
            .arg(backing)
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let device = String::from_utf8(output.stdout).ok()?.trim().to_string();
        Some(LoopDevice { device })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

#[test]
fn block_device_size_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let backing = sparse_member(dir.path(), "backing");
    let Some(device) = LoopDevice::attach(&backing, 512) else {
        eprintln!("skipped: cannot create a loop device here");
        return;
    };
    let member = MemberFile::open(&device.device).unwrap();
    assert!(member.is_block_device());
    assert_eq!(member.size_bytes(), MEMBER_BYTES);
    // Block devices accept O_DIRECT.
    assert!(member.direct());
    let data = pattern(4096 + 512, 5);
    member.write_at(1536, &data).unwrap();
    member.sync_data().unwrap();
    assert!(
        member.read_at(1536, data.len()).unwrap() == data,
        "read back differs"
    );
}

#[test]
fn direct_io_refused_by_a_4k_sector_device_is_redone_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let backing = sparse_member(dir.path(), "backing");
    let Some(device) = LoopDevice::attach(&backing, 4096) else {
        eprintln!("skipped: cannot create a loop device here");
        return;
    };
    let member = MemberFile::open(&device.device).unwrap();
    assert!(member.direct());
    // 512-byte aligned, not 4 KiB aligned: O_DIRECT gets EINVAL from a
    // device with 4 KiB logical sectors, so both I/Os must fall back.
    let data = pattern(1536, 6);
    member.write_at(4096 + 512, &data).unwrap();
    assert!(
        member.read_at(4096 + 512, data.len()).unwrap() == data,
        "read back differs"
    );
    assert_eq!(member.counters().buffered_fallbacks, 2);
    // Aligned I/O stays direct and sees the buffered write (the kernel
    // keeps the page cache and direct I/O coherent).
    let block = member.read_at(4096, 4096).unwrap();
    assert!(block[512..2048] == data[..]);
    assert_eq!(member.counters().buffered_fallbacks, 2);
    member.sync_data().unwrap();
}

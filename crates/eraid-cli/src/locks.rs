//! Keeping two writers off the same data. Every eraid command that writes
//! members (create, serve, check, grow) holds, for its whole run:
//!
//! - an exclusive `flock` on each member it opened;
//! - for a block device, an exclusive open (`O_EXCL`), which the kernel
//!   refuses while the device is mounted or another program (mkfs, MD,
//!   another eraid) holds it exclusively, and which makes their exclusive
//!   opens fail in turn;
//! - a lock file per identity of the data, so another path to the same data
//!   is refused too: a regular file by (st_dev, st_ino) (hard links,
//!   symlinks), a block device by its device number (`mknod` aliases), a
//!   loop device also by its backing file's identity (the file served
//!   directly on one side and through `losetup` on the other), and the
//!   array by its UUID (members reached through paths eraid cannot see
//!   through, such as another mount of the same files).
//!
//! A member that is an NBD export has no file here to lock: it is locked
//! by a lock file keyed by its server and export name (two eraid processes
//! of this host are kept off one export; other hosts are not seen).
//!
//! Lock files live in /run/eraid (or $XDG_RUNTIME_DIR/eraid, or
//! /tmp/eraid-UID) and name the process holding them; a holder removes its
//! file when it lets go.

use anyhow::{bail, Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Locks held until dropped.
#[derive(Default)]
pub struct MemberLocks {
    /// Opened members, flocked (block devices opened with O_EXCL), each
    /// with the lock files of its identity.
    members: Vec<HeldMember>,
    /// Lock files not tied to one member (the array UUID).
    keys: Vec<KeyLock>,
}

struct HeldMember {
    path: PathBuf,
    /// None for an NBD export: only its lock file is held.
    _file: Option<File>,
    _keys: Vec<KeyLock>,
}

impl MemberLocks {
    /// Keeps more locks (members added by a growth) for as long as these.
    pub fn extend(&mut self, more: MemberLocks) {
        self.members.extend(more.members);
        self.keys.extend(more.keys);
    }

    /// Lets go of `path` (a member the array no longer uses): its file and
    /// its identity's lock files.
    pub fn release(&mut self, path: &Path) {
        self.members
            .retain(|held| !crate::members::same_file(&held.path, path));
    }
}

/// Locks each member (see the module comment), refusing files that are
/// neither regular files nor block devices before opening them, and members
/// another process uses.
pub fn lock_members(paths: &[PathBuf]) -> Result<MemberLocks> {
    crate::members::check_distinct(paths)?;
    let mut locks = MemberLocks::default();
    for path in paths {
        locks.extend(lock_member(path)?);
    }
    Ok(locks)
}

/// Locks one member file or block device.
pub fn lock_member(path: &Path) -> Result<MemberLocks> {
    if eraid_driver::is_nbd_uri(path) {
        return lock_export(path);
    }
    let metadata = std::fs::metadata(path)
        .with_context(|| format!("cannot open member {}", path.display()))?;
    // Before any open: opening a FIFO blocks until a peer appears.
    let file_type = metadata.file_type();
    if !file_type.is_file() && !file_type.is_block_device() {
        bail!(
            "{} is {}, not a regular file or block device",
            path.display(),
            eraid_driver::member::file_type_name(&metadata)
        );
    }
    let mut keys = Vec::new();
    for key in identity_keys(path, &metadata)? {
        keys.push(KeyLock::acquire(&key, path)?);
    }
    let file = OpenOptions::new()
        .read(true)
        // Never block in open(), whatever the path has become meanwhile;
        // O_EXCL: exclusive open of a block device (ignored for files).
        .custom_flags(libc::O_NONBLOCK | libc::O_EXCL)
        .open(path)
        .map_err(|error| {
            if error.raw_os_error() == Some(libc::EBUSY) {
                anyhow::anyhow!(
                    "{} is in use by another program: it is mounted, or held exclusively \
                     (by mkfs, Linux MD, device-mapper, or another eraid); stop that first",
                    path.display()
                )
            } else {
                anyhow::Error::new(error).context(format!("cannot open member {}", path.display()))
            }
        })?;
    let opened = file
        .metadata()
        .with_context(|| format!("cannot examine member {}", path.display()))?;
    if (opened.dev(), opened.ino(), opened.rdev())
        != (metadata.dev(), metadata.ino(), metadata.rdev())
    {
        bail!(
            "{} changed while it was being opened (replaced by another file?); try again",
            path.display()
        );
    }
    flock_member(&file, path)?;
    Ok(MemberLocks {
        members: vec![HeldMember {
            path: path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
            _file: Some(file),
            _keys: keys,
        }],
        keys: Vec::new(),
    })
}

/// Locks an NBD export by its server and export name (a malformed URI is
/// refused here, naming it, before anything is opened).
fn lock_export(path: &Path) -> Result<MemberLocks> {
    let text = path.to_str().unwrap_or_default();
    let mut uri = eraid_nbd::NbdUri::parse(text)?;
    if let eraid_nbd::uri::Endpoint::Unix { socket } = &mut uri.endpoint {
        if let Ok(full) = socket.canonicalize() {
            *socket = full;
        }
    }
    // FNV-1a of the export's identity: any text, made a short file name.
    let identity = uri.to_string();
    let hash = identity
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    let key = KeyLock::acquire(&format!("nbd-{hash:016x}"), path)?;
    Ok(MemberLocks {
        members: vec![HeldMember {
            path: path.to_path_buf(),
            _file: None,
            _keys: vec![key],
        }],
        keys: Vec::new(),
    })
}

/// Locks an array by its UUID (from a superblock: any text, so it is
/// reduced to safe file-name characters).
pub fn lock_array(array_uuid: &str) -> Result<MemberLocks> {
    let safe: String = array_uuid
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect();
    let what = format!("array {array_uuid}");
    let mut locks = MemberLocks::default();
    locks.keys.push(KeyLock::acquire(
        &format!("array-{safe}"),
        Path::new(&what),
    )?);
    Ok(locks)
}

fn flock_member(file: &File, path: &Path) -> Result<()> {
    // SAFETY: flock on a file descriptor we own; no memory is shared.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            bail!(
                "{} is in use by another eraid process (serve, check, grow or create); stop it \
                 first, or reach a server started with --control through --control",
                path.display()
            );
        }
        return Err(error).with_context(|| format!("cannot lock {}", path.display()));
    }
    Ok(())
}

/// The names under which the data at `path` is locked.
fn identity_keys(path: &Path, metadata: &std::fs::Metadata) -> Result<Vec<String>> {
    if !metadata.file_type().is_block_device() {
        return Ok(vec![file_key(metadata.dev(), metadata.ino())]);
    }
    let rdev = metadata.rdev();
    let mut keys = vec![format!("block-{}-{}", libc::major(rdev), libc::minor(rdev))];
    if libc::major(rdev) == LOOP_MAJOR {
        if let Some((dev, ino)) = loop_backing_identity(path)? {
            keys.push(file_key(dev, ino));
        }
    }
    Ok(keys)
}

fn file_key(dev: u64, ino: u64) -> String {
    format!("file-{dev:x}-{ino}")
}

const LOOP_MAJOR: u32 = 7;
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// `struct loop_info64` of <linux/loop.h>.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// The (st_dev, st_ino) of a loop device's backing file, or None when no
/// file is attached.
fn loop_backing_identity(path: &Path) -> Result<Option<(u64, u64)>> {
    // A plain open (not O_EXCL) only to ask; it is closed at once.
    let device = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open member {}", path.display()))?;
    // SAFETY: all-zero bytes are a valid LoopInfo64 (integers and arrays).
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: LOOP_GET_STATUS64 writes one loop_info64 into `info`, which
    // has that layout and lives across the call.
    let rc = unsafe {
        libc::ioctl(
            device.as_raw_fd(),
            LOOP_GET_STATUS64 as _,
            &mut info as *mut LoopInfo64,
        )
    };
    if rc != 0 {
        let error = io::Error::last_os_error();
        // ENXIO: a loop device with nothing attached.
        if error.raw_os_error() == Some(libc::ENXIO) {
            return Ok(None);
        }
        return Err(error)
            .with_context(|| format!("cannot ask loop device {} for its file", path.display()));
    }
    Ok(Some((info.lo_device, info.lo_inode)))
}

/// A lock file in the runtime directory, flocked; removed when dropped.
struct KeyLock {
    path: PathBuf,
    _file: File,
}

impl KeyLock {
    /// Takes the lock named `key` for `member` (named in the refusal).
    fn acquire(key: &str, member: &Path) -> Result<KeyLock> {
        let path = runtime_dir()?.join(format!("{key}.lock"));
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(&path)
                .with_context(|| format!("cannot open the lock file {}", path.display()))?;
            // SAFETY: flock on a file descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(error).with_context(|| format!("cannot lock {}", path.display()));
                }
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                bail!("{}", in_use_message(member, holder.trim()));
            }
            // The holder before us may have removed the file between our
            // open and our lock: then we hold a lock nobody else can see.
            let ours = file.metadata()?;
            match std::fs::metadata(&path) {
                Ok(now) if (now.dev(), now.ino()) == (ours.dev(), ours.ino()) => {}
                _ => continue,
            }
            file.set_len(0)?;
            let verb = std::env::args().nth(1).unwrap_or_default();
            // Best effort: the text only improves another process's message.
            let _ = write!(
                file,
                "{}\neraid {verb} of {}\n",
                std::process::id(),
                member.display()
            );
            return Ok(KeyLock { path, _file: file });
        }
    }
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        // Removed while still locked, so whoever opens the path next gets a
        // fresh file (see `acquire`).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The refusal for a member whose lock `holder` (its lock file's text:
/// pid, then what it does) is held.
fn in_use_message(member: &Path, holder: &str) -> String {
    let mut lines = holder.lines();
    let pid = lines.next().unwrap_or("").trim();
    let doing = lines.next().unwrap_or("").trim();
    if pid == std::process::id().to_string() {
        return format!(
            "{} is named twice: it is the same file, device or array as another member \
             named here (through another path)",
            member.display()
        );
    }
    let who = if pid.is_empty() {
        String::new()
    } else {
        format!(" (pid {pid}: {doing})")
    };
    format!(
        "{} is in use by another eraid process{who}, possibly through another path to the same \
         data; stop it first, or reach a server started with --control through --control",
        member.display()
    )
}

/// Where lock files live: the first of /run/eraid, $XDG_RUNTIME_DIR/eraid
/// and /tmp/eraid-UID that can hold them.
fn runtime_dir() -> Result<PathBuf> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let mut candidates = vec![PathBuf::from("/run/eraid")];
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR") {
        candidates.push(PathBuf::from(dir).join("eraid"));
    }
    // Not $TMPDIR: every eraid process of this user must pick the same.
    candidates.push(PathBuf::from(format!("/tmp/eraid-{uid}")));
    for dir in &candidates {
        if std::fs::create_dir_all(dir).is_ok() && usable(dir, uid) {
            return Ok(dir.clone());
        }
    }
    bail!(
        "no directory for eraid's lock files: none of {} can be created and written",
        candidates
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A directory we may write and that is ours or root's (a directory under
/// /tmp made by another user could be used to spoof or block our locks).
fn usable(dir: &Path, uid: u32) -> bool {
    let Ok(metadata) = std::fs::metadata(dir) else {
        return false;
    };
    if metadata.uid() != uid && metadata.uid() != 0 {
        return false;
    }
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: access(2) with a valid NUL-terminated path.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

//! One array member: a regular file or a block device.
//!
//! O_DIRECT is preferred so the array's own cache is the only cache and a
//! completed write has left the page cache; file systems that refuse it
//! (tmpfs before Linux 6.6, some FUSE mounts) get buffered I/O instead, and
//! the mode in use is recorded.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::member_io::MemberIo;
use eraid_buffers::{AlignedBuf, DIRECT_ALIGN_BYTES};

/// Whether to try O_DIRECT when opening a member.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DirectMode {
    /// Try O_DIRECT and fall back to buffered I/O if the file system refuses
    /// (never on tmpfs or ramfs, where the page cache is the storage).
    #[default]
    Prefer,
    /// Always use buffered I/O.
    Never,
}

/// How to open a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberOptions {
    /// Open read/write (the normal case) or read-only (examining metadata).
    pub writable: bool,
    pub direct: DirectMode,
}

impl Default for MemberOptions {
    fn default() -> Self {
        MemberOptions {
            writable: true,
            direct: DirectMode::Prefer,
        }
    }
}

/// Counters of what a member actually asked of the OS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberCounters {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub written_bytes: u64,
    /// Successful `fdatasync` calls.
    pub syncs: u64,
    /// Direct I/Os the device refused (EINVAL) that were redone buffered.
    pub buffered_fallbacks: u64,
}

#[derive(Default)]
struct AtomicCounters {
    reads: AtomicU64,
    read_bytes: AtomicU64,
    writes: AtomicU64,
    written_bytes: AtomicU64,
    syncs: AtomicU64,
    buffered_fallbacks: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// An open member file or block device. Shareable between threads: every
/// operation is positioned (`pread`/`pwrite`), so there is no file cursor.
pub struct MemberFile {
    path: PathBuf,
    label: String,
    /// The O_DIRECT handle, when the file system accepted one.
    direct_file: Option<File>,
    /// The buffered handle: the only handle in buffered mode, and the one
    /// that redoes direct I/Os the device refuses. Linux keeps the two
    /// coherent: a direct read first writes back dirty cached pages of its
    /// range, and a direct write invalidates them.
    buffered_file: File,
    size_bytes: u64,
    is_block_device: bool,
    /// A buffered file on a memory file system (see
    /// [`MemberIo::memory_backed`]).
    memory_backed: bool,
    counters: AtomicCounters,
}

impl std::fmt::Debug for MemberFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberFile")
            .field("path", &self.path)
            .field("direct", &self.direct())
            .field("size_bytes", &self.size_bytes)
            .field("is_block_device", &self.is_block_device)
            .field("memory_backed", &self.memory_backed)
            .finish()
    }
}

fn with_path(path: &Path, what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

fn is_einval(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::EINVAL)
}

fn open_handle(path: &Path, writable: bool, direct: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(writable);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path)
}

/// Opens `path` without blocking, whatever it is: a FIFO (or a tty) would
/// otherwise block `open()` until a peer appears, deaf to signals. The file
/// type is checked on the open descriptor, so a path swapped meanwhile
/// cannot slip through; regular files and block devices then get blocking
/// I/O back.
fn open_member_handle(path: &Path, writable: bool) -> io::Result<(File, std::fs::Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .write(writable)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| with_path(path, "open", e))?;
    let metadata = file.metadata().map_err(|e| with_path(path, "stat", e))?;
    let file_type = metadata.file_type();
    if !file_type.is_file() && !file_type.is_block_device() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {}, not a regular file or block device",
                path.display(),
                file_type_name(&metadata)
            ),
        ));
    }
    clear_nonblocking(&file).map_err(|e| with_path(path, "fcntl", e))?;
    Ok((file, metadata))
}

/// What kind of file `metadata` describes, for messages.
pub fn file_type_name(metadata: &std::fs::Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "a special file"
    }
}

fn clear_nonblocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl MemberFile {
    /// Opens `path` read/write, preferring O_DIRECT.
    pub fn open(path: impl AsRef<Path>) -> io::Result<MemberFile> {
        MemberFile::open_with(path, MemberOptions::default())
    }

    pub fn open_with(path: impl AsRef<Path>, options: MemberOptions) -> io::Result<MemberFile> {
        MemberFile::open_with_direct_opener(path.as_ref(), options, open_handle)
    }

    /// `open_direct` is a parameter so tests can make O_DIRECT fail on a
    /// file system that in fact supports it.
    fn open_with_direct_opener(
        path: &Path,
        options: MemberOptions,
        open_direct: impl FnOnce(&Path, bool, bool) -> io::Result<File>,
    ) -> io::Result<MemberFile> {
        // Open buffered first: if this fails the error is about the path
        // (missing, permissions, not a file or block device), not about
        // O_DIRECT.
        let (buffered_file, metadata) = open_member_handle(path, options.writable)?;
        let is_block_device = metadata.file_type().is_block_device();
        let size_bytes = if is_block_device {
            // Seeking to the end is the size of a block device and needs no
            // ioctl; the cursor is never used for I/O.
            (&buffered_file)
                .seek(SeekFrom::End(0))
                .map_err(|e| with_path(path, "size of", e))?
        } else {
            metadata.len()
        };
        // On tmpfs or ramfs the page cache is the storage: O_DIRECT (which
        // tmpfs accepts since Linux 6.6) would only add an aligned copy.
        let memory_backed = !is_block_device && on_memory_file_system(&buffered_file);
        let direct_file = match options.direct {
            DirectMode::Never => None,
            DirectMode::Prefer if memory_backed => None,
            DirectMode::Prefer => match open_direct(path, options.writable, true) {
                Ok(file) => Some(file),
                // The same path just opened buffered, so the refusal is
                // about O_DIRECT (EINVAL on tmpfs): use buffered I/O.
                Err(err) => {
                    tracing::info!(
                        path = %path.display(),
                        error = %err,
                        "O_DIRECT refused; using buffered I/O"
                    );
                    None
                }
            },
        };
        Ok(MemberFile {
            label: path.display().to_string(),
            path: path.to_path_buf(),
            direct_file,
            buffered_file,
            size_bytes,
            is_block_device,
            memory_backed,
            counters: AtomicCounters::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when I/O goes through an O_DIRECT handle.
    pub fn direct(&self) -> bool {
        self.direct_file.is_some()
    }

    /// The size when opened: a member that shrinks later fails its I/O.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    pub fn is_block_device(&self) -> bool {
        self.is_block_device
    }

    pub fn counters(&self) -> MemberCounters {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        MemberCounters {
            reads: load(&c.reads),
            read_bytes: load(&c.read_bytes),
            writes: load(&c.writes),
            written_bytes: load(&c.written_bytes),
            syncs: load(&c.syncs),
            buffered_fallbacks: load(&c.buffered_fallbacks),
        }
    }

    /// Reads `len_bytes` at `offset_bytes` into a new vector; see
    /// [`MemberFile::read_into`].
    pub fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        let mut out = vec![0u8; len_bytes];
        self.read_into(offset_bytes, &mut out)?;
        Ok(out)
    }

    /// Fills `buf` from `offset_bytes`. The part beyond the size the
    /// member had when opened reads as zeroes (a metadata read of a small
    /// file); an end of file before that size means the member shrank under
    /// us, and is an error: its data there is gone, not zero. With O_DIRECT
    /// an aligned `buf` (a pooled one) is read into as it is; any other
    /// goes through an aligned bounce buffer.
    pub fn read_into(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()> {
        let len_bytes = buf.len();
        let read_bytes = match &self.direct_file {
            None => read_full(&self.buffered_file, buf, offset_bytes).map_err(|(_, e)| e)?,
            Some(direct_file) if (buf.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN_BYTES) => {
                self.read_direct(direct_file, buf, offset_bytes)?
            }
            Some(direct_file) => {
                let mut bounce = AlignedBuf::zeroed(len_bytes);
                let read_bytes = self.read_direct(direct_file, &mut bounce, offset_bytes)?;
                buf[..read_bytes].copy_from_slice(&bounce[..read_bytes]);
                read_bytes
            }
        };
        let expected_bytes = self
            .size_bytes
            .saturating_sub(offset_bytes)
            .min(len_bytes as u64);
        if (read_bytes as u64) < expected_bytes {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} ends at byte {} but had {} bytes when opened: it shrank, \
                     and the data past its new end is lost",
                    self.path.display(),
                    offset_bytes + read_bytes as u64,
                    self.size_bytes
                ),
            ));
        }
        buf[read_bytes..].fill(0);
        bump(&self.counters.reads, 1);
        bump(&self.counters.read_bytes, len_bytes as u64);
        Ok(())
    }

    /// Reads with O_DIRECT; where the device refuses (EINVAL: a 4 KiB-
    /// sector device, or a short read at an odd end of file), the rest is
    /// read buffered.
    fn read_direct(
        &self,
        direct_file: &File,
        buf: &mut [u8],
        offset_bytes: u64,
    ) -> io::Result<usize> {
        match read_full(direct_file, buf, offset_bytes) {
            Ok(read_bytes) => Ok(read_bytes),
            Err((done_bytes, err)) => {
                if !is_einval(&err) {
                    return Err(err);
                }
                bump(&self.counters.buffered_fallbacks, 1);
                Ok(done_bytes
                    + read_full(
                        &self.buffered_file,
                        &mut buf[done_bytes..],
                        offset_bytes + done_bytes as u64,
                    )
                    .map_err(|(_, e)| e)?)
            }
        }
    }

    /// Refuses to write to a regular file that is now shorter than when it
    /// was opened: a write would extend it again over a hole, and the hole
    /// would then read back as zeroes instead of the data it lost. (A block
    /// device refuses writes past its end by itself.)
    ///
    /// The size comes from seeking to the end (`lseek`), not a `statx`:
    /// this runs before every write, and on tmpfs a `statx` took about 600
    /// ns against 240 ns for the seek, beside 1.4-1.7 us for the 4 KiB
    /// `pwrite` it guards (`cargo run --release -p eraid-driver --example
    /// size_check_cost`). Every I/O is positioned: the cursor is unused.
    fn check_not_shrunk(&self) -> io::Result<()> {
        if self.is_block_device {
            return Ok(());
        }
        let now_bytes = (&self.buffered_file)
            .seek(SeekFrom::End(0))
            .map_err(|e| with_path(&self.path, "size of", e))?;
        if now_bytes < self.size_bytes {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} has {now_bytes} bytes but had {} when opened: it shrank, \
                     and the data past its new end is lost",
                    self.path.display(),
                    self.size_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Writes all of `data` at `offset_bytes`.
    pub fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.check_not_shrunk()?;
        match &self.direct_file {
            None => write_full(&self.buffered_file, data, offset_bytes).map_err(|(_, e)| e)?,
            Some(direct_file) => {
                // A payload read into a pooled buffer is aligned already
                // (a chunk's slice of one, too): no bounce copy.
                let bounce;
                let buf = if (data.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN_BYTES) {
                    data
                } else {
                    bounce = AlignedBuf::copy_of(data);
                    &bounce[..]
                };
                if let Err((done_bytes, err)) = write_full(direct_file, buf, offset_bytes) {
                    if !is_einval(&err) {
                        return Err(err);
                    }
                    bump(&self.counters.buffered_fallbacks, 1);
                    write_full(
                        &self.buffered_file,
                        &data[done_bytes..],
                        offset_bytes + done_bytes as u64,
                    )
                    .map_err(|(_, e)| e)?;
                }
            }
        }
        bump(&self.counters.writes, 1);
        bump(&self.counters.written_bytes, data.len() as u64);
        Ok(())
    }

    /// Writes `pieces` one after another from `offset_bytes` with
    /// `pwritev` (no join); through O_DIRECT, where pieces need not be
    /// aligned, joined into one write instead.
    pub fn write_vectored_at(&self, offset_bytes: u64, pieces: &[&[u8]]) -> io::Result<()> {
        if self.direct_file.is_some() {
            return self.write_at(offset_bytes, &pieces.concat());
        }
        self.check_not_shrunk()?;
        let len_bytes: usize = pieces.iter().map(|p| p.len()).sum();
        write_vectored_full(&self.buffered_file, pieces, offset_bytes)?;
        bump(&self.counters.writes, 1);
        bump(&self.counters.written_bytes, len_bytes as u64);
        Ok(())
    }

    /// `fdatasync`: durability is per inode, so one call on either handle
    /// covers writes made through both (including buffered fallbacks).
    pub fn sync_data(&self) -> io::Result<()> {
        self.buffered_file.sync_data()?;
        bump(&self.counters.syncs, 1);
        Ok(())
    }
}

impl MemberIo for MemberFile {
    fn label(&self) -> &str {
        &self.label
    }
    fn memory_backed(&self) -> bool {
        self.memory_backed
    }
    fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        MemberFile::read_at(self, offset_bytes, len_bytes)
    }
    fn read_into(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        MemberFile::read_into(self, offset_bytes, buf)?;
        Ok(buf.len())
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        MemberFile::write_at(self, offset_bytes, data)
    }
    fn write_vectored_at(&self, offset_bytes: u64, pieces: &[&[u8]]) -> io::Result<()> {
        MemberFile::write_vectored_at(self, offset_bytes, pieces)
    }
    fn sync_data(&self) -> io::Result<()> {
        MemberFile::sync_data(self)
    }
    fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        let end_bytes = offset_bytes.saturating_add(len_bytes);
        if end_bytes > self.size_bytes() {
            // Never let a zero range extend (or hide the shrinking of) a member.
            return Err(io::Error::other(format!(
                "zeroing up to byte {end_bytes}, past the member's {} bytes",
                self.size_bytes()
            )));
        }
        // A hole punched past a shrunk file's end would hide the loss.
        self.check_not_shrunk()?;
        let file = self.direct_file.as_ref().unwrap_or(&self.buffered_file);
        // Files take any range natively; a block device whole sectors only.
        let pieces = if self.is_block_device() {
            crate::zeroing::aligned_pieces(offset_bytes..end_bytes)
        } else {
            std::iter::once(offset_bytes..end_bytes).collect()
        };
        for piece in pieces {
            let len = piece.end - piece.start;
            if !crate::zeroing::zero_natively(file, self.is_block_device(), piece.start, len)? {
                crate::zeroing::write_zeroes_in_pieces(piece.start, len, |at, zeroes| {
                    MemberFile::write_at(self, at, zeroes)
                })?;
            }
        }
        bump(&self.counters.writes, 1);
        bump(&self.counters.written_bytes, len_bytes);
        Ok(())
    }
}

/// True when `file` is on tmpfs or ramfs (`fstatfs`), whose reads and
/// writes copy memory and never wait on a device. False if it cannot tell.
fn on_memory_file_system(file: &File) -> bool {
    // The f_type values of linux/magic.h.
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs writes a whole statfs into `stat` when it returns 0,
    // and the descriptor is open for the call's duration.
    let result = unsafe { libc::fstatfs(std::os::fd::AsRawFd::as_raw_fd(file), stat.as_mut_ptr()) };
    if result != 0 {
        return false;
    }
    // SAFETY: fstatfs returned 0, so `stat` is initialised.
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    let f_type = unsafe { stat.assume_init() }.f_type as i64;
    f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC
}

/// Fills `buf` from `offset_bytes`, retrying short reads and EINTR, and
/// stopping early at end of file (the rest of `buf` is left untouched).
/// Returns how many bytes were read; on error, how many were read before it.
fn read_full(file: &File, buf: &mut [u8], offset_bytes: u64) -> Result<usize, (usize, io::Error)> {
    let mut done_bytes = 0;
    while done_bytes < buf.len() {
        match file.read_at(&mut buf[done_bytes..], offset_bytes + done_bytes as u64) {
            Ok(0) => break,
            Ok(n) => done_bytes += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done_bytes, e)),
        }
    }
    Ok(done_bytes)
}

/// Writes all of `buf`, retrying short writes and EINTR. On error also
/// returns how many bytes were written before it.
fn write_full(file: &File, buf: &[u8], offset_bytes: u64) -> Result<(), (usize, io::Error)> {
    let mut done_bytes = 0;
    while done_bytes < buf.len() {
        match file.write_at(&buf[done_bytes..], offset_bytes + done_bytes as u64) {
            Ok(0) => {
                let err = io::Error::new(io::ErrorKind::WriteZero, "the device accepted no bytes");
                return Err((done_bytes, err));
            }
            Ok(n) => done_bytes += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done_bytes, e)),
        }
    }
    Ok(())
}

/// Writes every byte of `pieces` in order from `offset_bytes` (`pwritev`),
/// retrying short writes and EINTR.
fn write_vectored_full(file: &File, pieces: &[&[u8]], offset_bytes: u64) -> io::Result<()> {
    // At most IOV_MAX (1024 on Linux) pieces per call.
    const PIECES_PER_CALL_MAX: usize = 1024;
    let mut slices: Vec<io::IoSlice<'_>> = pieces
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| io::IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    let mut at_bytes = offset_bytes;
    while !rest.is_empty() {
        let count = rest.len().min(PIECES_PER_CALL_MAX);
        let offset = libc::off_t::try_from(at_bytes)
            .map_err(|_| io::Error::other(format!("offset {at_bytes} is past a file offset")))?;
        // SAFETY: `IoSlice` is ABI-compatible with `iovec` on Unix, `rest`
        // holds at least `count` of them, each borrowing live memory, and
        // the descriptor is open for the call's duration.
        let written = unsafe {
            libc::pwritev(
                std::os::fd::AsRawFd::as_raw_fd(file),
                rest.as_ptr().cast::<libc::iovec>(),
                count as libc::c_int,
                offset,
            )
        };
        if written < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if written == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "the device accepted no bytes",
            ));
        }
        at_bytes += written as u64;
        io::IoSlice::advance_slices(&mut rest, written as usize);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_written_vectored_land_as_one_joined_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
        let member = MemberFile::open(&path).unwrap();
        let a = pattern(5000, 1);
        let b = pattern(70_000, 2);
        let c = pattern(3, 3);
        // More pieces than one pwritev takes, some empty.
        let mut pieces: Vec<&[u8]> = vec![&a, &[], &b];
        pieces.extend(std::iter::repeat_n(&c[..], 1500));
        member.write_vectored_at(4096, &pieces).unwrap();
        let joined = pieces.concat();
        assert_eq!(member.read_at(4096, joined.len()).unwrap(), joined);
        assert_eq!(member.read_at(0, 4096).unwrap(), vec![0u8; 4096]);
    }

    fn pattern(len_bytes: usize, seed: u8) -> Vec<u8> {
        (0..len_bytes)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn refused_o_direct_falls_back_to_buffered_io() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        File::create(&path).unwrap().set_len(1 << 20).unwrap();
        let member =
            MemberFile::open_with_direct_opener(&path, MemberOptions::default(), |_, _, _| {
                Err(io::Error::from_raw_os_error(libc::EINVAL))
            })
            .unwrap();
        assert!(!member.direct());
        let data = pattern(1536, 7);
        member.write_at(512 * 3, &data).unwrap();
        assert_eq!(member.read_at(512 * 3, data.len()).unwrap(), data);
    }

    #[test]
    fn only_buffered_files_in_memory_are_memory_backed() {
        // /dev/shm is tmpfs on Linux; the source tree is on the build
        // machine's disk (ext4 here, where O_DIRECT also works).
        let in_memory = tempfile::tempdir_in("/dev/shm").unwrap();
        let on_disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        for dir in [&in_memory, &on_disk] {
            File::create(dir.path().join("m0"))
                .unwrap()
                .set_len(1 << 20)
                .unwrap();
        }
        let shm = MemberFile::open(in_memory.path().join("m0")).unwrap();
        assert!(!shm.direct(), "O_DIRECT on tmpfs would only add a copy");
        assert!(MemberIo::memory_backed(&shm));
        let disk = MemberFile::open(on_disk.path().join("m0")).unwrap();
        assert!(!MemberIo::memory_backed(&disk));
        // Buffered by choice on a disk: still a disk's file.
        let never = MemberOptions {
            direct: DirectMode::Never,
            ..MemberOptions::default()
        };
        let disk_buffered = MemberFile::open_with(on_disk.path().join("m0"), never).unwrap();
        assert!(
            !MemberIo::memory_backed(&disk_buffered),
            "a buffered file on disk can wait on the disk"
        );
    }

    #[test]
    fn never_mode_is_buffered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        File::create(&path).unwrap().set_len(8192).unwrap();
        let options = MemberOptions {
            writable: true,
            direct: DirectMode::Never,
        };
        assert!(!MemberFile::open_with(&path, options).unwrap().direct());
    }

    #[test]
    fn direct_read_across_an_unaligned_end_of_file_zero_fills() {
        // A file whose size is not a multiple of 512: an O_DIRECT read
        // across its end comes back short and must be completed with zeroes,
        // not fail. (The EINVAL fallback itself is tested against a 4 KiB
        // sector loop device in tests/member.rs.)
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        let data = pattern(4096 + 100, 3);
        std::fs::write(&path, &data).unwrap();
        let member = MemberFile::open(&path).unwrap();
        let got = member.read_at(0, 8192).unwrap();
        assert_eq!(&got[..data.len()], &data[..]);
        assert!(got[data.len()..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_read_into_a_reused_buffer_overwrites_all_of_it_aligned_or_not() {
        // On the build machine's disk O_DIRECT works: an aligned (pooled)
        // buffer is read into as it is, an unaligned one through a bounce
        // buffer; buffered files read into either. A reused buffer's old
        // bytes never show through, past the end of the file included.
        let on_disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = on_disk.path().join("m0");
        let data = pattern(3 * 4096 + 512, 9);
        std::fs::write(&path, &data).unwrap();
        let pool = eraid_buffers::BufferPool::new(1 << 20);
        for direct in [DirectMode::Prefer, DirectMode::Never] {
            let options = MemberOptions {
                writable: false,
                direct,
            };
            let member = MemberFile::open_with(&path, options).unwrap();
            assert_eq!(
                member.direct(),
                direct == DirectMode::Prefer,
                "O_DIRECT here"
            );
            let mut aligned = pool.take(4 * 4096);
            aligned.fill(0xEE);
            member.read_into(0, &mut aligned).unwrap();
            assert_eq!(&aligned[..data.len()], &data[..], "{direct:?}: aligned");
            assert!(aligned[data.len()..].iter().all(|&b| b == 0), "{direct:?}");
            let mut backing = vec![0xEEu8; 4096 + 1];
            let unaligned = &mut backing[1..];
            member.read_into(4096, unaligned).unwrap();
            assert_eq!(unaligned, &data[4096..2 * 4096], "{direct:?}: unaligned");
        }
    }

    #[test]
    fn a_member_that_shrinks_fails_reads_and_writes_instead_of_reading_zeroes() {
        for direct in [DirectMode::Prefer, DirectMode::Never] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m0");
            let data = pattern(64 << 10, 5);
            std::fs::write(&path, &data).unwrap();
            let options = MemberOptions {
                writable: true,
                direct,
            };
            let member = MemberFile::open_with(&path, options).unwrap();
            File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(32 << 10)
                .unwrap();
            // Within the new end: still readable.
            assert_eq!(member.read_at(0, 4096).unwrap(), &data[..4096]);
            // Across or past the new end: an error, not zeroes.
            for (offset_bytes, len_bytes) in [(28 << 10, 8192), (40 << 10, 4096)] {
                let err = member.read_at(offset_bytes, len_bytes).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{direct:?}");
                assert!(err.to_string().contains("shrank"), "{err}");
            }
            // A write anywhere fails, and does not extend the file again
            // over a hole that would read as zeroes.
            let err = member.write_at(40 << 10, &[1; 4096]).unwrap_err();
            assert!(err.to_string().contains("shrank"), "{err}");
            member.write_at(0, &[1; 4096]).unwrap_err();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 32 << 10);
        }
    }

    #[test]
    fn a_fifo_is_refused_at_once_instead_of_blocking_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Without a writer, a blocking read-only open of a FIFO never
        // returns; run it on a thread so a regression fails, not hangs.
        let (tx, rx) = std::sync::mpsc::channel();
        let opener_path = path.clone();
        std::thread::spawn(move || {
            let options = MemberOptions {
                writable: false,
                ..Default::default()
            };
            let _ = tx.send(MemberFile::open_with(&opener_path, options).map(|_| ()));
        });
        let err = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("opening a FIFO blocked")
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn character_devices_are_rejected() {
        let err = MemberFile::open("/dev/null").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}

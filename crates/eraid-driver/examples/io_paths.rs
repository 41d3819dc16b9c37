//! Which positioned-I/O path is fastest for the engine thread on a given
//! file: plain `pread`/`pwrite`, `preadv2`/`pwritev2(RWF_NOWAIT)` (never
//! blocks; refused by file systems that cannot promise that) and io_uring
//! (does an I/O complete inline, at submission, or through the kernel's
//! io-wq workers?). Random blocks over the file, 32 at a time for io_uring.
//!
//! Also `pread`/`pwrite` on `DEPTH` threads at once, the shape of the
//! engine's I/O pool, so the one path and the other meet at the same
//! concurrency.
//!
//!   cargo run --release -p eraid-driver --example io_paths -- FILE [COUNT] [--drop-caches] [--write] [--block BYTES] [--direct]
//!
//! COUNT I/Os per path (default 200,000), of `--block` bytes (default 4096,
//! a multiple of 4096). Reads: the file should be filled (a hole reads
//! without touching any page). `--write` writes instead, over FILE's own
//! blocks (its contents are overwritten with a pattern). `--direct` opens
//! the file with O_DIRECT (buffers are aligned). `--drop-caches` (root
//! only) empties the page cache before each path, so every path reads from
//! the device rather than from the one before it.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::time::Instant;

use eraid_buffers::AlignedBuf;
use io_uring::{opcode, types, IoUring};

const DEPTH: usize = 32;

/// A fixed pseudo-random sequence of block offsets (LCG), so every path
/// touches the same places.
struct Offsets {
    state: u64,
    blocks: u64,
    block_bytes: u64,
}

impl Iterator for Offsets {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        Some((self.state >> 20) % self.blocks * self.block_bytes)
    }
}

struct Settings {
    path: String,
    count: usize,
    drop_caches: bool,
    write: bool,
    block_bytes: usize,
    direct: bool,
}

const USAGE: &str =
    "usage: io_paths FILE [COUNT] [--drop-caches] [--write] [--block BYTES] [--direct]";

fn settings() -> Result<Settings, String> {
    let mut args = std::env::args().skip(1);
    let mut settings = Settings {
        path: String::new(),
        count: 200_000,
        drop_caches: false,
        write: false,
        block_bytes: 4096,
        direct: false,
    };
    let mut positional = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--drop-caches" => settings.drop_caches = true,
            "--write" => settings.write = true,
            "--direct" => settings.direct = true,
            "--block" => {
                let bytes = args.next().ok_or("--block needs a size in bytes")?;
                settings.block_bytes = bytes
                    .parse()
                    .map_err(|e| format!("--block '{bytes}': {e}"))?;
                if settings.block_bytes == 0 || !settings.block_bytes.is_multiple_of(4096) {
                    return Err(format!("--block {bytes}: not a positive multiple of 4096"));
                }
            }
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}; {USAGE}")),
            _ => positional.push(arg),
        }
    }
    match positional.as_slice() {
        [path] => settings.path = path.clone(),
        [path, count] => {
            settings.path = path.clone();
            settings.count = count.parse().map_err(|e| format!("COUNT '{count}': {e}"))?;
        }
        _ => return Err(USAGE.to_string()),
    }
    Ok(settings)
}

/// One positioned read or write of `buf` at `offset`; the bytes moved.
fn positioned(fd: i32, write: bool, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes for the call; pread
    // writes at most that many, pwrite reads at most that many.
    let moved = unsafe {
        if write {
            libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), offset as i64)
        } else {
            libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset as i64)
        }
    };
    if moved < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(moved as usize)
    }
}

fn main() -> Result<(), String> {
    let Settings {
        path,
        count,
        drop_caches,
        write,
        block_bytes,
        direct,
    } = settings()?;
    let cold = || -> Result<(), String> {
        if drop_caches {
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
            std::fs::write("/proc/sys/vm/drop_caches", "3")
                .map_err(|e| format!("--drop-caches: /proc/sys/vm/drop_caches: {e}"))?;
        }
        Ok(())
    };
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(if direct { libc::O_DIRECT } else { 0 })
        .open(&path)
        .map_err(|e| format!("{path}: {e}"))?;
    let blocks = file.metadata().map_err(|e| format!("{path}: {e}"))?.len() / block_bytes as u64;
    if blocks == 0 {
        return Err(format!(
            "{path} is smaller than one block of {block_bytes} bytes"
        ));
    }
    let offsets = || Offsets {
        state: 1,
        blocks,
        block_bytes: block_bytes as u64,
    };
    let fd = file.as_raw_fd();
    let pattern = |seed: usize| {
        let mut buf = AlignedBuf::zeroed(block_bytes);
        buf.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i + seed) as u8);
        buf
    };
    let (verb, io) = if write {
        ("pwrite", "writes")
    } else {
        ("pread", "reads")
    };
    let kib = block_bytes / 1024;
    println!(
        "{path}: {count} random {kib} KiB {io} per path{}{}",
        if direct { ", O_DIRECT" } else { "" },
        if drop_caches {
            ", page cache dropped before each"
        } else {
            ""
        }
    );
    let per_s = |started: Instant| count as f64 / started.elapsed().as_secs_f64();
    let mib_s = |rate: f64| rate * block_bytes as f64 / 1_048_576.0;

    cold()?;
    let mut buf = pattern(0);
    let started = Instant::now();
    for offset in offsets().take(count) {
        positioned(fd, write, &mut buf, offset).map_err(|e| format!("{verb}: {e}"))?;
    }
    let rate = per_s(started);
    println!("{verb}: {rate:.0} {io}/s ({:.0} MiB/s)", mib_s(rate));

    cold()?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let all: Vec<u64> = offsets().take(count).collect();
    let started = Instant::now();
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for thread in 0..DEPTH {
            let (next, all, failed) = (&next, &all, &failed);
            scope.spawn(move || {
                let mut buf = pattern(thread);
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&offset) = all.get(i) else { break };
                    if positioned(fd, write, &mut buf, offset).is_err() {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    if failed.into_inner() {
        return Err(format!("{verb} on {DEPTH} threads: an I/O failed"));
    }
    let rate = per_s(started);
    println!(
        "{verb} on {DEPTH} threads: {rate:.0} {io}/s ({:.0} MiB/s)",
        mib_s(rate)
    );

    cold()?;
    let nowait = |offset: u64, buf: &mut AlignedBuf| {
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: block_bytes,
        };
        // SAFETY: `iov` describes `buf`, alive and unaliased for the call.
        let moved = unsafe {
            if write {
                libc::pwritev2(fd, &iov, 1, offset as i64, libc::RWF_NOWAIT)
            } else {
                libc::preadv2(fd, &iov, 1, offset as i64, libc::RWF_NOWAIT)
            }
        };
        if moved < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    let nowait_name = if write {
        "pwritev2(RWF_NOWAIT)"
    } else {
        "preadv2(RWF_NOWAIT)"
    };
    match nowait(0, &mut buf) {
        // EAGAIN: supported, the I/O would just have to wait.
        Err(e) if e.raw_os_error() != Some(libc::EAGAIN) => {
            println!("{nowait_name}: refused: {e}");
        }
        _ => {
            let started = Instant::now();
            let would_block = offsets()
                .take(count)
                .filter(|&offset| nowait(offset, &mut buf).is_err())
                .count();
            let rate = per_s(started);
            println!("{nowait_name}: {rate:.0} {io}/s, {would_block} would have blocked");
        }
    }

    cold()?;
    let mut ring = IoUring::new(256).map_err(|e| format!("io_uring: {e}"))?;
    let mut buffers: Vec<AlignedBuf> = (0..DEPTH).map(pattern).collect();
    let (mut inline, mut waited) = (0usize, 0usize);
    let mut offsets_iter = offsets().take(count);
    let started = Instant::now();
    // Keeps DEPTH I/Os in flight: a completed one's buffer takes the next
    // offset at once, as the pool's workers each take the next I/O.
    let mut in_flight = 0usize;
    let mut free: Vec<usize> = (0..DEPTH).collect();
    let mut done = 0;
    while done < count {
        while let Some(index) = free.pop() {
            let Some(offset) = offsets_iter.next() else {
                free.push(index);
                break;
            };
            let target = types::Fd(fd);
            let len = block_bytes as u32;
            let entry = if write {
                opcode::Write::new(target, buffers[index].as_ptr(), len)
                    .offset(offset)
                    .build()
            } else {
                opcode::Read::new(target, buffers[index].as_mut_ptr(), len)
                    .offset(offset)
                    .build()
            }
            .user_data(index as u64);
            // SAFETY: the buffer stays alive and untouched until its
            // completion is reaped below.
            unsafe { ring.submission().push(&entry) }.map_err(|e| format!("io_uring push: {e}"))?;
            in_flight += 1;
        }
        ring.submit().map_err(|e| format!("io_uring submit: {e}"))?;
        let mut reaped: Vec<(usize, i32)> = ring
            .completion()
            .map(|c| (c.user_data() as usize, c.result()))
            .collect();
        inline += reaped.len();
        if reaped.is_empty() && in_flight > 0 {
            ring.submit_and_wait(1)
                .map_err(|e| format!("io_uring wait: {e}"))?;
            reaped = ring
                .completion()
                .map(|c| (c.user_data() as usize, c.result()))
                .collect();
            waited += reaped.len();
        }
        if let Some((_, error)) = reaped.iter().find(|(_, result)| *result < 0) {
            return Err(format!(
                "io_uring {io}: {}",
                std::io::Error::from_raw_os_error(-error)
            ));
        }
        in_flight -= reaped.len();
        done += reaped.len();
        free.extend(reaped.into_iter().map(|(index, _)| index));
    }
    let rate = per_s(started);
    println!(
        "io_uring, {DEPTH} in flight: {rate:.0} {io}/s ({:.0} MiB/s); {inline} completed by the \
         time of a submit, {waited} had to be waited for",
        mib_s(rate)
    );
    Ok(())
}

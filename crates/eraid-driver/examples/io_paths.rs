//! Which positioned-I/O path is fastest for the engine thread on a given
//! file: plain `pread`, `preadv2(RWF_NOWAIT)` (never blocks; refused by
//! file systems that cannot promise that) and io_uring (does a read
//! complete inline, at submission, or through the kernel's io-wq workers?).
//! 4 KiB random reads over the file, 32 at a time for io_uring.
//!
//! Also `pread` on `DEPTH` threads at once, the shape of the engine's I/O
//! pool, so the one path and the other meet at the same concurrency.
//!
//!   cargo run --release -p eraid-driver --example io_paths -- FILE [READS] [--drop-caches]
//!
//! The file should be filled (a hole reads without touching any page).
//! `--drop-caches` (root only) empties the page cache before each path, so
//! every path reads from the device rather than from the one before it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{opcode, types, IoUring};

const BLOCK_BYTES: usize = 4096;
const DEPTH: usize = 32;

/// A fixed pseudo-random sequence of block offsets (LCG), so every path
/// reads the same places.
struct Offsets {
    state: u64,
    blocks: u64,
}

impl Iterator for Offsets {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        Some((self.state >> 20) % self.blocks * BLOCK_BYTES as u64)
    }
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: io_paths FILE [READS] (a filled file of at least 4 KiB)")?;
    let rest: Vec<String> = args.collect();
    let drop_caches = rest.iter().any(|a| a == "--drop-caches");
    let reads: usize = match rest.iter().find(|a| *a != "--drop-caches") {
        Some(count) => count.parse().map_err(|e| format!("READS '{count}': {e}"))?,
        None => 200_000,
    };
    let cold = || -> Result<(), String> {
        if drop_caches {
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
            std::fs::write("/proc/sys/vm/drop_caches", "3")
                .map_err(|e| format!("--drop-caches: /proc/sys/vm/drop_caches: {e}"))?;
        }
        Ok(())
    };
    let file = File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let blocks = file.metadata().map_err(|e| format!("{path}: {e}"))?.len() / BLOCK_BYTES as u64;
    if blocks == 0 {
        return Err(format!("{path} is smaller than {BLOCK_BYTES} bytes"));
    }
    let offsets = || Offsets { state: 1, blocks };
    let fd = file.as_raw_fd();
    let mut buf = vec![0u8; BLOCK_BYTES];
    println!(
        "{path}: {reads} random 4 KiB reads per path{}",
        if drop_caches {
            ", page cache dropped before each"
        } else {
            ""
        }
    );

    cold()?;
    let started = Instant::now();
    for offset in offsets().take(reads) {
        // SAFETY: `buf` is BLOCK_BYTES long and pread writes at most that.
        let read = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), BLOCK_BYTES, offset as i64) };
        if read < 0 {
            return Err(format!("pread: {}", std::io::Error::last_os_error()));
        }
    }
    let rate = reads as f64 / started.elapsed().as_secs_f64();
    println!("pread: {rate:.0} reads/s");

    cold()?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let all: Vec<u64> = offsets().take(reads).collect();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..DEPTH {
            scope.spawn(|| {
                let mut buf = vec![0u8; BLOCK_BYTES];
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&offset) = all.get(i) else { break };
                    // SAFETY: `buf` is BLOCK_BYTES long and pread writes at
                    // most that.
                    unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), BLOCK_BYTES, offset as i64) };
                }
            });
        }
    });
    let rate = reads as f64 / started.elapsed().as_secs_f64();
    println!("pread on {DEPTH} threads: {rate:.0} reads/s");

    cold()?;
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: BLOCK_BYTES,
    };
    // SAFETY: `iov` describes `buf`, alive for the call.
    let read = unsafe { libc::preadv2(fd, &iov, 1, 0, libc::RWF_NOWAIT) };
    // EAGAIN: supported, the page is just not cached.
    if read < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN) {
        println!(
            "preadv2(RWF_NOWAIT): refused: {}",
            std::io::Error::last_os_error()
        );
    } else {
        let started = Instant::now();
        let mut would_block = 0;
        for offset in offsets().take(reads) {
            // SAFETY: as above.
            let read = unsafe { libc::preadv2(fd, &iov, 1, offset as i64, libc::RWF_NOWAIT) };
            if read < 0 {
                would_block += 1;
            }
        }
        let rate = reads as f64 / started.elapsed().as_secs_f64();
        println!("preadv2(RWF_NOWAIT): {rate:.0} reads/s, {would_block} would have blocked");
    }

    cold()?;
    let mut ring = IoUring::new(256).map_err(|e| format!("io_uring: {e}"))?;
    let mut buffers = vec![vec![0u8; BLOCK_BYTES]; DEPTH];
    let (mut inline, mut waited) = (0usize, 0usize);
    let mut offsets_iter = offsets().take(reads);
    let started = Instant::now();
    // Keeps DEPTH reads in flight: a completed read's buffer takes the
    // next offset at once, as the pool's workers each take the next I/O.
    let mut in_flight = 0usize;
    let mut free: Vec<usize> = (0..DEPTH).collect();
    let mut done = 0;
    while done < reads {
        while let Some(index) = free.pop() {
            let Some(offset) = offsets_iter.next() else {
                free.push(index);
                break;
            };
            let entry = opcode::Read::new(
                types::Fd(fd),
                buffers[index].as_mut_ptr(),
                BLOCK_BYTES as u32,
            )
            .offset(offset)
            .build()
            .user_data(index as u64);
            // SAFETY: the buffer stays alive and untouched until its
            // completion is reaped below.
            unsafe { ring.submission().push(&entry) }.map_err(|e| format!("io_uring push: {e}"))?;
            in_flight += 1;
        }
        ring.submit().map_err(|e| format!("io_uring submit: {e}"))?;
        let mut reaped: Vec<usize> = ring.completion().map(|c| c.user_data() as usize).collect();
        inline += reaped.len();
        if reaped.is_empty() && in_flight > 0 {
            ring.submit_and_wait(1)
                .map_err(|e| format!("io_uring wait: {e}"))?;
            reaped = ring.completion().map(|c| c.user_data() as usize).collect();
            waited += reaped.len();
        }
        in_flight -= reaped.len();
        done += reaped.len();
        free.extend(reaped);
    }
    let rate = reads as f64 / started.elapsed().as_secs_f64();
    println!(
        "io_uring, {DEPTH} in flight: {rate:.0} reads/s; {inline} completed by the time of a \
         submit, {waited} had to be waited for"
    );
    Ok(())
}

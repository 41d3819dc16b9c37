//! What the shrink check before every member write costs: a member file's
//! size read with `statx` (`File::metadata`) against a seek to its end
//! (`lseek`), each beside the 4 KiB `pwrite` it guards. On tmpfs the three
//! are all syscall and page-cache work, so the ratio is what a served
//! array's small writes pay for the check.
//!
//!   cargo run --release -p eraid-driver --example size_check_cost -- [DIR] [COUNT]
//!
//! Creates a 128 MiB sparse file in DIR (default /dev/shm), runs COUNT
//! (default 1,000,000) of each call, prints nanoseconds per call, and
//! removes the file.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::time::Instant;

const FILE_BYTES: u64 = 128 << 20;

fn per_call_ns(count: u32, mut call: impl FnMut(u32)) -> f64 {
    let start = Instant::now();
    for i in 0..count {
        call(i);
    }
    start.elapsed().as_nanos() as f64 / f64::from(count)
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| "/dev/shm".to_string());
    let count: u32 = match args.next() {
        None => 1_000_000,
        Some(text) => text.parse().map_err(|_| {
            std::io::Error::other(format!("COUNT must be a whole number, not '{text}'"))
        })?,
    };
    let path = std::path::Path::new(&dir).join(format!("size-check-cost.{}", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let result = (|| {
        file.set_len(FILE_BYTES)?;
        let block = vec![0x5au8; 4096];
        let blocks = FILE_BYTES / 4096;
        // Fill first, so the timed writes overwrite pages that exist.
        for i in 0..blocks {
            file.write_all_at(&block, i * 4096)?;
        }
        let statx_ns = per_call_ns(count, |_| {
            std::hint::black_box(file.metadata().map(|m| m.len()).ok());
        });
        let seek_ns = per_call_ns(count, |_| {
            std::hint::black_box((&file).seek(SeekFrom::End(0)).ok());
        });
        let write_ns = per_call_ns(count, |i| {
            let at = (u64::from(i) * 7919 % blocks) * 4096;
            std::hint::black_box(file.write_all_at(&block, at).ok());
        });
        println!("file: {}", path.display());
        println!("statx (File::metadata): {statx_ns:.0} ns per call");
        println!("lseek to the end:       {seek_ns:.0} ns per call");
        println!("pwrite of 4 KiB:        {write_ns:.0} ns per call");
        println!(
            "check per write: statx {:.0}% of the write, lseek {:.0}%",
            100.0 * statx_ns / write_ns,
            100.0 * seek_ns / write_ns
        );
        Ok(())
    })();
    std::fs::remove_file(&path)?;
    result
}

//! The MSC-CT stride benchmark on a real member (the paper's Section
//! III-D, Fig. 8): for every stride S from 1 up, the same span of 4 KiB
//! blocks is read (then written), one block every S, with a fixed number
//! of requests in flight, and each pass's turnaround (first request to
//! last completion) is timed. The core's `stride_choice::choose_rule`
//! turns the timings into S_r_max and S_w_max, as the simulator does with
//! its drive model.
//!
//! Writes are non-destructive: the span is read once before (untimed) and
//! every write puts back the bytes that were there, so the benchmark may
//! run on an array that holds data (`eraid tune`) and a crash during it
//! changes nothing. That first pass also writes the span back whole, so a
//! sparse file's holes are allocated before the reads are timed (reading a
//! hole costs nothing and would hide any penalty).
//!
//! Time is bounded: a direction stops repeating its sweep once
//! `budget` has passed, and gives up (an error, the caller then uses a
//! stated default) if a single sweep is not done within `limit`.

use crate::member_io::MemberIo;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// The benchmark's block: the cache's 4 KiB page.
pub const STRIDE_BENCH_BLOCK_BYTES: u64 = 4096;

/// What to measure and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrideBenchConfig {
    /// Where the span starts on the member (its data area).
    pub offset_bytes: u64,
    /// Blocks every pass covers (the same start and end for every stride).
    pub span_blocks: u64,
    /// Strides 1..=this are measured (a transform never spans more than a
    /// strip, so more would not be used).
    pub stride_max: u32,
    /// Requests in flight (the paper's benchmark kept 32 to 64).
    pub outstanding: usize,
    /// Sweeps per direction at most; each stride keeps its fastest pass
    /// (the least disturbed by anything else on the machine).
    pub sweeps_max: u32,
    /// A direction starts no new sweep after this long.
    pub budget: Duration,
    /// A direction whose first sweep is not done after this long gives up.
    pub limit: Duration,
}

impl StrideBenchConfig {
    /// The defaults for a member whose strips hold `strip_blocks` blocks:
    /// strides up to the strip (at most 64, the paper's Fig. 15 limit),
    /// a 2 MiB span, 32 in flight, up to 3 sweeps, 2 s per direction once
    /// a sweep is done, giving up after 5 s without one.
    pub fn for_strip(offset_bytes: u64, strip_blocks: u64) -> StrideBenchConfig {
        StrideBenchConfig {
            offset_bytes,
            span_blocks: 512,
            stride_max: strip_blocks.clamp(1, 64) as u32,
            outstanding: 32,
            sweeps_max: 3,
            budget: Duration::from_secs(2),
            limit: Duration::from_secs(5),
        }
    }
}

/// One direction's timings: (stride, fastest turnaround in ms) for
/// strides 1, 2, ... in order.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionTimings {
    pub turnaround_ms: Vec<(u32, f64)>,
    pub sweeps: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StrideTimings {
    pub read: DirectionTimings,
    pub write: DirectionTimings,
    pub elapsed: Duration,
}

#[derive(Debug)]
pub enum StrideBenchError {
    /// The member has too little room for the span.
    TooSmall {
        needed_bytes: u64,
        size_bytes: u64,
    },
    /// A direction's first sweep did not finish within the limit.
    TooSlow {
        direction: &'static str,
        stride: u32,
        limit: Duration,
    },
    Io(io::Error),
}

impl std::fmt::Display for StrideBenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StrideBenchError::TooSmall {
                needed_bytes,
                size_bytes,
            } => write!(
                f,
                "the member has {size_bytes} bytes, the stride benchmark needs {needed_bytes}"
            ),
            StrideBenchError::TooSlow {
                direction,
                stride,
                limit,
            } => write!(
                f,
                "the {direction} sweep was still at stride {stride} after {} s",
                limit.as_secs_f64()
            ),
            StrideBenchError::Io(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for StrideBenchError {}

/// Runs the benchmark on `member` (of `size_bytes`), calling `progress`
/// with a line after each sweep.
pub fn measure_member(
    member: &dyn MemberIo,
    size_bytes: u64,
    config: &StrideBenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<StrideTimings, StrideBenchError> {
    assert!(config.stride_max >= 1 && config.outstanding >= 1 && config.sweeps_max >= 1);
    let span_bytes = config.span_blocks * STRIDE_BENCH_BLOCK_BYTES;
    let needed_bytes = config.offset_bytes + span_bytes;
    if size_bytes < needed_bytes || config.span_blocks < config.stride_max as u64 {
        return Err(StrideBenchError::TooSmall {
            needed_bytes,
            size_bytes,
        });
    }
    let started = Instant::now();
    // Untimed: the bytes every write puts back, and holes allocated.
    let original = member
        .read_at(config.offset_bytes, span_bytes as usize)
        .map_err(StrideBenchError::Io)?;
    member
        .write_at(config.offset_bytes, &original)
        .and_then(|()| member.sync_data())
        .map_err(StrideBenchError::Io)?;
    let workers = Workers {
        member,
        original: &original,
        config,
    };
    let (read, write) = workers.run(progress)?;
    member.sync_data().map_err(StrideBenchError::Io)?;
    Ok(StrideTimings {
        read,
        write,
        elapsed: started.elapsed(),
    })
}

/// One timed pass: every `stride`-th block of the span, read or written.
#[derive(Clone, Copy)]
struct Pass {
    is_read: bool,
    stride: u64,
}

struct Workers<'a> {
    member: &'a dyn MemberIo,
    original: &'a [u8],
    config: &'a StrideBenchConfig,
}

impl Workers<'_> {
    /// Both directions on one set of threads kept for the whole run, so a
    /// pass's time holds no thread start-up.
    fn run(
        &self,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(DirectionTimings, DirectionTimings), StrideBenchError> {
        let threads = self.config.outstanding;
        let start = Barrier::new(threads + 1);
        let end = Barrier::new(threads + 1);
        let pass: Mutex<Option<Pass>> = Mutex::new(None);
        let next = AtomicU64::new(0);
        let failed = AtomicBool::new(false);
        let first_error: Mutex<Option<io::Error>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    start.wait();
                    let Some(current) = *pass.lock().expect("pass lock") else {
                        return;
                    };
                    let count = self.config.span_blocks.div_ceil(current.stride);
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= count || failed.load(Ordering::Relaxed) {
                            break;
                        }
                        if let Err(error) = self.one_io(current, index) {
                            failed.store(true, Ordering::Relaxed);
                            first_error.lock().expect("error lock").get_or_insert(error);
                        }
                    }
                    end.wait();
                });
            }
            let mut timed_pass = |current: Pass| -> Result<f64, StrideBenchError> {
                *pass.lock().expect("pass lock") = Some(current);
                next.store(0, Ordering::Relaxed);
                let began = Instant::now();
                start.wait();
                end.wait();
                let ms = began.elapsed().as_secs_f64() * 1e3;
                match first_error.lock().expect("error lock").take() {
                    Some(error) => Err(StrideBenchError::Io(error)),
                    None => Ok(ms),
                }
            };
            let outcome = (|| {
                let read = self.direction(true, &mut timed_pass, progress)?;
                let write = self.direction(false, &mut timed_pass, progress)?;
                Ok((read, write))
            })();
            // Release the workers.
            *pass.lock().expect("pass lock") = None;
            start.wait();
            outcome
        })
    }

    fn direction(
        &self,
        is_read: bool,
        timed_pass: &mut dyn FnMut(Pass) -> Result<f64, StrideBenchError>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<DirectionTimings, StrideBenchError> {
        let name = if is_read { "read" } else { "write" };
        let began = Instant::now();
        let stride_max = self.config.stride_max;
        let mut fastest_ms = vec![f64::INFINITY; stride_max as usize];
        let mut sweeps = 0;
        while sweeps < self.config.sweeps_max
            && (sweeps == 0 || began.elapsed() < self.config.budget)
        {
            for stride in 1..=stride_max {
                if sweeps == 0 && began.elapsed() > self.config.limit {
                    return Err(StrideBenchError::TooSlow {
                        direction: name,
                        stride,
                        limit: self.config.limit,
                    });
                }
                let ms = timed_pass(Pass {
                    is_read,
                    stride: stride as u64,
                })?;
                let slot = &mut fastest_ms[stride as usize - 1];
                *slot = slot.min(ms);
            }
            sweeps += 1;
            progress(&format!(
                "{name} sweep {sweeps} of at most {} (strides 1 to {stride_max}) done after {:.1} s",
                self.config.sweeps_max,
                began.elapsed().as_secs_f64()
            ));
        }
        Ok(DirectionTimings {
            turnaround_ms: (1..=stride_max).zip(fastest_ms).collect(),
            sweeps,
        })
    }

    fn one_io(&self, pass: Pass, index: u64) -> io::Result<()> {
        let block = index * pass.stride;
        let at = (block * STRIDE_BENCH_BLOCK_BYTES) as usize;
        let offset_bytes = self.config.offset_bytes + at as u64;
        if pass.is_read {
            self.member
                .read_at(offset_bytes, STRIDE_BENCH_BLOCK_BYTES as usize)
                .map(|_| ())
        } else {
            let bytes = &self.original[at..at + STRIDE_BENCH_BLOCK_BYTES as usize];
            self.member.write_at(offset_bytes, bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemberFile, MemberOptions};

    fn quick(stride_max: u32) -> StrideBenchConfig {
        StrideBenchConfig {
            offset_bytes: 4096,
            span_blocks: 64,
            stride_max,
            outstanding: 4,
            sweeps_max: 2,
            budget: Duration::from_secs(60),
            limit: Duration::from_secs(60),
        }
    }

    /// Every stride is timed in both directions, and the member's bytes
    /// are the same afterwards (writes put back what was there).
    #[test]
    fn a_run_times_every_stride_and_changes_no_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        let pattern: Vec<u8> = (0..(1u32 << 20)).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &pattern).unwrap();
        let file = MemberFile::open_with(&path, MemberOptions::default()).unwrap();
        let mut lines = Vec::new();
        let timings = measure_member(&file, 1 << 20, &quick(8), &mut |l| {
            lines.push(l.to_string())
        })
        .unwrap();
        for d in [&timings.read, &timings.write] {
            assert_eq!(d.sweeps, 2);
            let strides: Vec<u32> = d.turnaround_ms.iter().map(|t| t.0).collect();
            assert_eq!(strides, (1..=8).collect::<Vec<_>>());
            assert!(d
                .turnaround_ms
                .iter()
                .all(|t| t.1.is_finite() && t.1 >= 0.0));
        }
        assert_eq!(lines.len(), 4, "{lines:?}");
        drop(file);
        assert!(std::fs::read(&path).unwrap() == pattern);
    }

    #[test]
    fn a_member_without_room_for_the_span_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, vec![0u8; 8192]).unwrap();
        let file = MemberFile::open(&path).unwrap();
        let error = measure_member(&file, 8192, &quick(4), &mut |_| {}).unwrap_err();
        assert!(
            matches!(error, StrideBenchError::TooSmall { .. }),
            "{error}"
        );
    }

    /// A sweep that cannot finish within the limit gives up, naming where.
    #[test]
    fn a_sweep_over_the_limit_gives_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
        let file = MemberFile::open(&path).unwrap();
        let mut config = quick(8);
        config.limit = Duration::ZERO;
        let error = measure_member(&file, 1 << 20, &config, &mut |_| {}).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("read sweep was still at stride 1"),
            "{error}"
        );
    }
}

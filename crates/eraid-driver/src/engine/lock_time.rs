//! How long the engine lock is held and waited for.
//!
//! The core's bookkeeping runs one thread at a time under the engine lock
//! (see `drive`). Whether that is what limits a served array is a number
//! the operator can read: the share of the time the lock is held. Near 1
//! under load, the core is the wall (shard it, or spread the array over
//! more servers); well below, the limit is elsewhere (the copies, the
//! transport, the members). `eraid detail --control` shows it
//! (`engine_lock` in the JSON).
//!
//! Timing every acquisition would cost three clock reads per lock taken
//! (a few percent of a core at this machine's request rates), so a random
//! one in [`SAMPLE_ONE_IN`] is timed and the totals are scaled up: an
//! estimate, unbiased whatever pattern the acquisitions follow (a fixed
//! stride could time only one call site's).

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::{json, Value};

/// One acquisition in this many is timed.
pub(crate) const SAMPLE_ONE_IN: u64 = 8;

thread_local! {
    /// Xorshift state for choosing which acquisitions to time; seeded
    /// from the thread's address of it, so threads do not move in step.
    static SAMPLER: Cell<u64> = const { Cell::new(0) };
}

/// Whether to time this acquisition: true one time in `one_in`, at random.
fn sample(one_in: u64) -> bool {
    if one_in <= 1 {
        return true;
    }
    SAMPLER.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = (state as *const Cell<u64> as u64) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x % one_in == 0
    })
}

/// The lock's accounting: kept under the lock itself, so it costs no
/// atomics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockTime {
    /// Every time the lock was taken.
    pub acquisitions: u64,
    /// Of those, the ones timed.
    pub sampled_acquisitions: u64,
    /// Time the timed acquisitions held the lock, in nanoseconds.
    pub sampled_held_ns: u64,
    /// Time the timed acquisitions waited for it, in nanoseconds.
    pub sampled_waited_ns: u64,
}

impl LockTime {
    /// Scales a sampled total up to all acquisitions.
    fn estimate_s(&self, sampled_ns: u64) -> f64 {
        if self.sampled_acquisitions == 0 {
            return 0.0;
        }
        sampled_ns as f64 / 1e9 * self.acquisitions as f64 / self.sampled_acquisitions as f64
    }

    /// Estimated seconds the lock was held, over all acquisitions.
    pub fn held_s(&self) -> f64 {
        self.estimate_s(self.sampled_held_ns)
    }

    /// Estimated seconds threads waited for the lock, summed over them.
    pub fn waited_s(&self) -> f64 {
        self.estimate_s(self.sampled_waited_ns)
    }

    /// The `engine_lock` object of the status: the estimates, the time
    /// since the engine started, and the share of it the lock was held.
    pub fn to_json(self, uptime_s: f64) -> Value {
        let held_s = self.held_s();
        let held_fraction = if uptime_s > 0.0 {
            (held_s / uptime_s).min(1.0)
        } else {
            0.0
        };
        json!({
            "acquisitions": self.acquisitions,
            "sampled_acquisitions": self.sampled_acquisitions,
            "held_s": held_s,
            "waited_s": self.waited_s(),
            "uptime_s": uptime_s,
            "held_fraction": held_fraction,
        })
    }
}

struct Timed<T> {
    value: T,
    time: LockTime,
}

/// A mutex that accounts for how long it is held and waited for.
pub(crate) struct TimedMutex<T> {
    inner: Mutex<Timed<T>>,
    started: Instant,
    sample_one_in: u64,
}

/// The value behind a [`TimedMutex`], held.
pub(crate) struct TimedGuard<'a, T> {
    guard: MutexGuard<'a, Timed<T>>,
    /// When a timed acquisition got the lock.
    held_since: Option<Instant>,
}

impl<T> TimedMutex<T> {
    pub(crate) fn new(value: T) -> TimedMutex<T> {
        TimedMutex::sampling(value, SAMPLE_ONE_IN)
    }

    /// Timing one acquisition in `one_in` (1: every one).
    pub(crate) fn sampling(value: T, one_in: u64) -> TimedMutex<T> {
        TimedMutex {
            inner: Mutex::new(Timed {
                value,
                time: LockTime::default(),
            }),
            started: Instant::now(),
            sample_one_in: one_in.max(1),
        }
    }

    /// The value, or an error if a thread panicked holding it.
    pub(crate) fn lock(&self) -> Result<TimedGuard<'_, T>, PoisonError<TimedGuard<'_, T>>> {
        let asked = sample(self.sample_one_in).then(Instant::now);
        match self.inner.lock() {
            Ok(guard) => Ok(self.taken(guard, asked)),
            Err(poisoned) => Err(PoisonError::new(self.taken(poisoned.into_inner(), asked))),
        }
    }

    /// The value even after a panic.
    pub(crate) fn lock_ignoring_poison(&self) -> TimedGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn taken<'a>(
        &'a self,
        mut guard: MutexGuard<'a, Timed<T>>,
        asked: Option<Instant>,
    ) -> TimedGuard<'a, T> {
        guard.time.acquisitions += 1;
        let held_since = asked.map(|asked| {
            let now = Instant::now();
            guard.time.sampled_acquisitions += 1;
            guard.time.sampled_waited_ns += nanos(now - asked);
            now
        });
        TimedGuard { guard, held_since }
    }

    /// Seconds since the mutex was made (the engine's start).
    pub(crate) fn uptime_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

impl<T> TimedGuard<'_, T> {
    /// The accounting so far (this acquisition counted, its hold not yet).
    pub(crate) fn lock_time(&self) -> LockTime {
        self.guard.time
    }
}

fn nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl<T> Deref for TimedGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard.value
    }
}

impl<T> DerefMut for TimedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard.value
    }
}

impl<T> Drop for TimedGuard<'_, T> {
    fn drop(&mut self) {
        // Runs before the MutexGuard field lets go: still under the lock.
        if let Some(since) = self.held_since {
            let held = nanos(since.elapsed());
            self.guard.time.sampled_held_ns = self.guard.time.sampled_held_ns.saturating_add(held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    #[test]
    fn every_acquisition_is_counted_and_a_hold_is_timed() {
        let mutex = TimedMutex::sampling(0u32, 1);
        {
            let mut guard = mutex.lock().unwrap();
            *guard += 1;
            std::thread::sleep(Duration::from_millis(30));
        }
        let time = mutex.lock().unwrap().lock_time();
        assert_eq!(time.acquisitions, 2);
        assert_eq!(time.sampled_acquisitions, 2);
        assert!(time.held_s() >= 0.030, "held {} s", time.held_s());
        assert!(time.held_s() < 5.0);
        assert_eq!(*mutex.lock().unwrap(), 1);
    }

    #[test]
    fn a_thread_kept_waiting_is_timed() {
        let mutex = Arc::new(TimedMutex::sampling((), 1));
        let barrier = Arc::new(Barrier::new(2));
        let holder = {
            let mutex = Arc::clone(&mutex);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let guard = mutex.lock().unwrap();
                barrier.wait();
                std::thread::sleep(Duration::from_millis(50));
                drop(guard);
            })
        };
        barrier.wait();
        drop(mutex.lock().unwrap());
        holder.join().unwrap();
        let time = mutex.lock().unwrap().lock_time();
        // The waiter asked after the holder had the lock and got it only
        // after the holder's 50 ms sleep.
        assert!(time.waited_s() >= 0.045, "waited {} s", time.waited_s());
    }

    #[test]
    fn sampled_totals_are_scaled_to_all_acquisitions() {
        let time = LockTime {
            acquisitions: 800,
            sampled_acquisitions: 100,
            sampled_held_ns: 1_000_000_000,
            sampled_waited_ns: 500_000_000,
        };
        assert!((time.held_s() - 8.0).abs() < 1e-9);
        assert!((time.waited_s() - 4.0).abs() < 1e-9);
        let report = time.to_json(16.0);
        assert_eq!(report["held_fraction"], 0.5);
        assert_eq!(report["acquisitions"], 800);
        assert_eq!(LockTime::default().held_s(), 0.0);
    }

    #[test]
    fn about_one_acquisition_in_eight_is_timed() {
        let mutex = TimedMutex::new(());
        for _ in 0..80_000 {
            drop(mutex.lock().unwrap());
        }
        let time = mutex.lock().unwrap().lock_time();
        let share = time.sampled_acquisitions as f64 / time.acquisitions as f64;
        // Binomial(80000, 1/8): the standard deviation of the share is
        // about 0.0012; 0.01 either side fails only a broken sampler.
        assert!((share - 0.125).abs() < 0.01, "sampled share {share}");
    }

    #[test]
    fn a_poisoned_lock_still_counts() {
        let mutex = Arc::new(TimedMutex::sampling(0u32, 1));
        let poisoner = Arc::clone(&mutex);
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert!(mutex.lock().is_err());
        let guard = mutex.lock_ignoring_poison();
        assert_eq!(guard.lock_time().acquisitions, 3);
    }
}

//! Per-stripe shared/exclusive locks with FIFO fairness, so parity is never
//! computed from a half-updated stripe and writes to one stripe are ordered.

use rustc_hash::FxHashMap;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    Shared,
    Exclusive,
}

#[derive(Default)]
struct StripeLock {
    readers: usize,
    writer: bool,
    waiters: VecDeque<(u64, LockMode)>,
}

#[derive(Default)]
pub struct StripeLocks {
    stripes: FxHashMap<u64, StripeLock>,
}

impl StripeLocks {
    /// Tries to take the lock for `op`; false means `op` is queued and will be
    /// returned by a later `release`.
    pub fn acquire(&mut self, stripe: u64, op: u64, mode: LockMode) -> bool {
        let lock = self.stripes.entry(stripe).or_default();
        let free = lock.waiters.is_empty()
            && match mode {
                LockMode::Shared => !lock.writer,
                LockMode::Exclusive => !lock.writer && lock.readers == 0,
            };
        if free {
            match mode {
                LockMode::Shared => lock.readers += 1,
                LockMode::Exclusive => lock.writer = true,
            }
        } else {
            lock.waiters.push_back((op, mode));
        }
        free
    }

    /// Releases a held lock; returns the ops that now hold it (in order).
    pub fn release(&mut self, stripe: u64, mode: LockMode) -> Vec<u64> {
        let lock = self
            .stripes
            .get_mut(&stripe)
            .expect("released a stripe that is not locked");
        match mode {
            LockMode::Shared => {
                assert!(lock.readers > 0);
                lock.readers -= 1;
            }
            LockMode::Exclusive => {
                assert!(lock.writer);
                lock.writer = false;
            }
        }
        let mut granted = Vec::new();
        while let Some(&(op, mode)) = lock.waiters.front() {
            let fits = match mode {
                LockMode::Shared => !lock.writer,
                LockMode::Exclusive => !lock.writer && lock.readers == 0,
            };
            if !fits {
                break;
            }
            lock.waiters.pop_front();
            match mode {
                LockMode::Shared => lock.readers += 1,
                LockMode::Exclusive => lock.writer = true,
            }
            granted.push(op);
        }
        if lock.readers == 0 && !lock.writer && lock.waiters.is_empty() {
            self.stripes.remove(&stripe);
        }
        granted
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.stripes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_exclude_and_queue_fairly() {
        let mut locks = StripeLocks::default();
        assert!(locks.acquire(1, 10, LockMode::Shared));
        assert!(locks.acquire(1, 11, LockMode::Shared));
        assert!(!locks.acquire(1, 12, LockMode::Exclusive));
        // A reader behind a waiting writer waits too (no writer starvation).
        assert!(!locks.acquire(1, 13, LockMode::Shared));
        assert!(locks.acquire(2, 14, LockMode::Exclusive));
        assert!(locks.release(1, LockMode::Shared).is_empty());
        assert_eq!(locks.release(1, LockMode::Shared), vec![12]);
        assert_eq!(locks.release(1, LockMode::Exclusive), vec![13]);
        assert!(locks.release(1, LockMode::Shared).is_empty());
        assert!(locks.release(2, LockMode::Exclusive).is_empty());
        assert!(locks.is_empty());
    }
}

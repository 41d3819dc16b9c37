//! Bounds what one connection has submitted but not yet answered, in
//! requests and in bytes, so a fast client cannot queue unbounded work or
//! memory: the reader waits here before taking the next request.

use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct Counts {
    requests: usize,
    bytes: u64,
    peak_requests: usize,
}

#[derive(Debug)]
pub struct InFlight {
    counts: Mutex<Counts>,
    changed: Condvar,
    max_requests: usize,
    max_bytes: u64,
}

impl InFlight {
    pub fn new(max_requests: usize, max_bytes: u64) -> Self {
        assert!(max_requests > 0);
        InFlight {
            counts: Mutex::default(),
            changed: Condvar::new(),
            max_requests,
            max_bytes,
        }
    }

    /// Waits until one more request of `bytes` fits, then counts it. A
    /// request bigger than the byte bound alone is let in when nothing else
    /// is in flight, so it cannot wait forever.
    pub fn acquire(&self, bytes: u64) {
        let mut counts = self.lock();
        while !Self::fits(&counts, bytes, self.max_requests, self.max_bytes) {
            counts = self.changed.wait(counts).unwrap_or_else(|e| e.into_inner());
        }
        counts.requests += 1;
        counts.bytes += bytes;
        counts.peak_requests = counts.peak_requests.max(counts.requests);
    }

    fn fits(counts: &Counts, bytes: u64, max_requests: usize, max_bytes: u64) -> bool {
        counts.requests < max_requests
            && (counts.requests == 0 || counts.bytes + bytes <= max_bytes)
    }

    /// Counts one more request of `bytes` if it fits now (as `acquire`
    /// would let it in without waiting); false, counting nothing, if not.
    pub fn try_acquire(&self, bytes: u64) -> bool {
        let mut counts = self.lock();
        if !Self::fits(&counts, bytes, self.max_requests, self.max_bytes) {
            return false;
        }
        counts.requests += 1;
        counts.bytes += bytes;
        counts.peak_requests = counts.peak_requests.max(counts.requests);
        true
    }

    /// Uncounts a request once its reply is written (or dropped).
    pub fn release(&self, bytes: u64) {
        let mut counts = self.lock();
        assert!(counts.requests > 0, "release without acquire");
        counts.requests -= 1;
        counts.bytes -= bytes;
        drop(counts);
        self.changed.notify_all();
    }

    /// Waits until every counted request has been answered.
    pub fn wait_idle(&self) {
        let mut counts = self.lock();
        while counts.requests > 0 {
            counts = self.changed.wait(counts).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Most requests ever in flight at once (for logs and tests).
    pub fn peak_requests(&self) -> usize {
        self.lock().peak_requests
    }

    // No code panics while holding the lock, so a poisoned lock still
    // holds consistent counts.
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn acquire_blocks_at_the_request_bound() {
        let in_flight = Arc::new(InFlight::new(2, 1 << 20));
        in_flight.acquire(0);
        in_flight.acquire(0);
        let waiter = {
            let in_flight = Arc::clone(&in_flight);
            std::thread::spawn(move || in_flight.acquire(0))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "third acquire must wait");
        in_flight.release(0);
        waiter.join().unwrap();
        assert_eq!(in_flight.peak_requests(), 2);
    }

    #[test]
    fn oversized_request_enters_when_idle() {
        let in_flight = InFlight::new(8, 100);
        in_flight.acquire(1000);
        in_flight.release(1000);
        in_flight.wait_idle();
    }
}

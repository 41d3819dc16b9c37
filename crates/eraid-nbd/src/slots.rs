//! Who holds a connection slot: handshakes and established connections are
//! counted apart, so clients that connect and say nothing cannot take the
//! places of clients doing work. A full handshake reserve displaces its
//! oldest member (a real client finishes its handshake in milliseconds, a
//! silent one is the oldest soon), and at the end of a shutdown every
//! connection still open is cut.

use std::collections::{HashMap, VecDeque};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::stream::Stream;

/// One connection's handles: its cancel flag and a clone of its socket, so
/// the server can wake its threads out of a blocked read or write.
struct Entry {
    cancelled: Arc<AtomicBool>,
    stream: Stream,
    transmitting: bool,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<u64, Entry>,
    /// Ids in the handshake, oldest first.
    handshaking: VecDeque<u64>,
    transmitting: usize,
}

pub struct Slots {
    inner: Mutex<Inner>,
    max_connections: usize,
    handshake_reserve: usize,
}

impl Slots {
    pub fn new(max_connections: usize, handshake_reserve: usize) -> Self {
        assert!(max_connections > 0 && handshake_reserve > 0);
        Slots {
            inner: Mutex::default(),
            max_connections,
            handshake_reserve,
        }
    }

    // Nothing panics while holding the lock, so a poisoned lock is consistent.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new connection in the handshake; when the reserve is
    /// full the oldest handshake is cut. Returns the id cut, if any.
    pub fn admit_handshake(
        &self,
        id: u64,
        cancelled: Arc<AtomicBool>,
        stream: Stream,
    ) -> Option<u64> {
        let mut inner = self.lock();
        inner.entries.insert(
            id,
            Entry {
                cancelled,
                stream,
                transmitting: false,
            },
        );
        inner.handshaking.push_back(id);
        if inner.handshaking.len() <= self.handshake_reserve {
            return None;
        }
        let oldest = inner.handshaking.pop_front()?;
        if let Some(entry) = inner.entries.remove(&oldest) {
            cut(&entry);
        }
        Some(oldest)
    }

    /// Moves a connection from the handshake to transmission; false when
    /// every transmission slot is taken (or the connection was cut).
    pub fn enter_transmission(&self, id: u64) -> bool {
        let mut inner = self.lock();
        if inner.transmitting >= self.max_connections {
            return false;
        }
        let Some(entry) = inner.entries.get_mut(&id) else {
            return false;
        };
        entry.transmitting = true;
        inner.handshaking.retain(|&other| other != id);
        inner.transmitting += 1;
        true
    }

    /// Frees the connection's slot when it ends.
    pub fn leave(&self, id: u64) {
        let mut inner = self.lock();
        if let Some(entry) = inner.entries.remove(&id) {
            if entry.transmitting {
                inner.transmitting -= 1;
            } else {
                inner.handshaking.retain(|&other| other != id);
            }
        }
    }

    /// Cancels every connection and shuts its socket, waking its threads.
    pub fn cut_all(&self) {
        let inner = self.lock();
        for entry in inner.entries.values() {
            cut(entry);
        }
    }

    /// (handshaking, transmitting), for tests.
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.handshaking.len(), inner.transmitting)
    }
}

fn cut(entry: &Entry) {
    entry.cancelled.store(true, Ordering::SeqCst);
    let _ = entry.stream.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    fn stream() -> (Stream, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        (Stream::Unix(a), b)
    }

    #[test]
    fn a_full_reserve_cuts_the_oldest_handshake() {
        let slots = Slots::new(1, 2);
        let flags: Vec<_> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
        let mut peers = Vec::new();
        for (id, flag) in flags.iter().enumerate() {
            let (ours, theirs) = stream();
            peers.push(theirs);
            let cut = slots.admit_handshake(id as u64, Arc::clone(flag), ours);
            assert_eq!(cut, (id == 2).then_some(0));
        }
        assert!(flags[0].load(Ordering::SeqCst));
        assert!(!flags[1].load(Ordering::SeqCst));
        assert_eq!(slots.counts(), (2, 0));
        assert!(!slots.enter_transmission(0), "a cut connection has no slot");
        assert!(slots.enter_transmission(1));
        assert!(!slots.enter_transmission(2), "one transmission slot only");
        slots.leave(1);
        assert!(slots.enter_transmission(2));
        slots.leave(2);
        assert_eq!(slots.counts(), (0, 0));
    }
}

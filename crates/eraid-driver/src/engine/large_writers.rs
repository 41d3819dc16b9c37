//! How many connections are streaming large writes right now, to choose
//! where their copies run.
//!
//! A large write handed to a drive thread lets its connection's reader read
//! the next request while the data is copied: with one or two connections
//! that overlap is what keeps the cores busy. With as many connections as
//! cores, the readers already keep every core busy, and the hand-off only
//! adds two thread wake-ups per request: running the write on the reader
//! itself was 1.1-1.3x faster with four connections on two cores (128 KiB
//! sequential writes, `scripts/ab-fio.sh`), and 0.8-0.9x with one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Slots for submitters, by number (more submitters share slots and are
/// undercounted: they then hand off, as fewer would).
const SLOTS: usize = 64;
/// A submitter counts as streaming for this long after a large write.
const ACTIVE_WINDOW_MS: u64 = 20;

pub(crate) struct LargeWriters {
    started: Instant,
    /// Per slot, 1 + the millisecond of its last large write (0: never).
    last_ms: [AtomicU64; SLOTS],
    /// Up to this many streaming submitters hand their writes off.
    hand_off_submitters_max: usize,
}

impl LargeWriters {
    /// `cores`: the cores the process may use.
    pub(crate) fn new(cores: usize) -> LargeWriters {
        LargeWriters {
            started: Instant::now(),
            last_ms: std::array::from_fn(|_| AtomicU64::new(0)),
            hand_off_submitters_max: cores.saturating_sub(1).max(1),
        }
    }

    /// Records a large write by `submitter` and says whether it should go
    /// to a drive thread (few submitters streaming) or run on the caller.
    pub(crate) fn note_and_choose_hand_off(&self, submitter: usize) -> bool {
        let now_ms = 1 + self.started.elapsed().as_millis() as u64;
        self.last_ms[submitter % SLOTS].store(now_ms, Ordering::Relaxed);
        let streaming = self
            .last_ms
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|&at| at != 0 && now_ms.saturating_sub(at) <= ACTIVE_WINDOW_MS)
            .count();
        streaming <= self.hand_off_submitters_max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_off_while_few_submitters_stream_and_not_when_many_do() {
        let writers = LargeWriters::new(2);
        assert!(
            writers.note_and_choose_hand_off(0),
            "one streaming: hand off"
        );
        assert!(writers.note_and_choose_hand_off(0), "the same one again");
        assert!(
            !writers.note_and_choose_hand_off(1),
            "two on two cores: run here"
        );
        assert!(!writers.note_and_choose_hand_off(0));
    }

    #[test]
    fn a_submitter_that_stopped_streaming_stops_counting() {
        let writers = LargeWriters::new(2);
        assert!(writers.note_and_choose_hand_off(0));
        assert!(!writers.note_and_choose_hand_off(1));
        std::thread::sleep(std::time::Duration::from_millis(3 * ACTIVE_WINDOW_MS));
        assert!(
            writers.note_and_choose_hand_off(1),
            "submitter 0 went quiet"
        );
    }
}

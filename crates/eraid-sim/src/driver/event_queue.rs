//! The simulator's agenda: events ordered by (time, sequence number).
//!
//! Ties at the same instant are broken by insertion order, so a run never
//! depends on how a heap happens to order equal keys.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use eraid_trace::TraceRequest;

/// What can happen at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A user request arrives.
    Arrival(TraceRequest),
    /// Member disk `usize` has something to report or do.
    DeviceWake(usize),
    /// The array's `poll_timeout` deadline.
    Tick,
    /// Start growth step `usize` (an index into the plan's steps).
    GrowthStart(usize),
    /// Take a growth progress sample.
    GrowthSample,
    /// Hand the hot spare to the engine.
    FailureSpare,
    /// Fail the planned member.
    FailureStart,
    /// Take a rebuild progress sample.
    RebuildSample,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time_ns: u64,
    seq: u64,
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Key, EventSlot)>>,
    next_seq: u64,
}

/// `Event` wrapped so the heap orders by key only (the key is unique).
#[derive(Debug, Clone, PartialEq, Eq)]
struct EventSlot(Event);

impl PartialOrd for EventSlot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EventSlot {
    fn cmp(&self, _other: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl EventQueue {
    pub fn push(&mut self, time_ns: u64, event: Event) {
        let key = Key {
            time_ns,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.heap.push(Reverse((key, EventSlot(event))));
    }

    /// The earliest event, first-pushed first among equal times.
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap
            .pop()
            .map(|Reverse((key, slot))| (key.time_ns, slot.0))
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::Tick);
        q.push(3, Event::DeviceWake(1));
        q.push(5, Event::DeviceWake(0));
        let r = TraceRequest {
            arrival_ns: 3,
            device: 0,
            offset_bytes: 0,
            len_bytes: 512,
            is_read: true,
        };
        q.push(3, Event::Arrival(r));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::DeviceWake(1)),
                (3, Event::Arrival(r)),
                (5, Event::Tick),
                (5, Event::DeviceWake(0)),
            ]
        );
    }
}

//! The host's I/O scheduler between the engine and one drive.
//!
//! `noop` (the default) hands every command to the drive at once, so the
//! drive's own queue decides the order. `cfq` shares the drive between user
//! I/O and background I/O (redistribution, rebuild, resync, scrub, destage,
//! metadata) in time slices, the way Linux 2.6's default CFQ elevator
//! shares a disk between the process replaying a workload and MD's kernel
//! thread: the class holding the slice dispatches, at most `QUANTUM`
//! commands of it at the drive; a slice lasts `SLICE_NS` while the other
//! class waits; a user slice whose queue runs dry is kept `IDLE_NS` for the
//! user's next request (CFQ's slice_idle: a synchronous reader issues its
//! next request right after the last completes). Without CFQ a background
//! task that queues a large batch at once keeps a drive's queue full and a
//! one-request-at-a-time user waits behind every batch.
//!
//! Simplified from CFQ: two queues (user and background) instead of one per
//! process plus shared async queues, equal slices, no priorities, and the
//! drive's own scheduler still orders what was dispatched.

use std::collections::VecDeque;

use eraid_core::io::IoCause;

/// CFQ's `quantum`: most commands of the active queue at the drive.
pub const QUANTUM: u32 = 4;
/// CFQ's `slice_sync` (100 ms at HZ=1000).
pub const SLICE_NS: u64 = 100_000_000;
/// CFQ's `slice_idle` (8 ms).
pub const IDLE_NS: u64 = 8_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostSchedulerKind {
    #[default]
    Noop,
    Cfq,
}

impl HostSchedulerKind {
    pub fn parse(name: &str) -> Result<HostSchedulerKind, String> {
        match name {
            "noop" => Ok(HostSchedulerKind::Noop),
            "cfq" => Ok(HostSchedulerKind::Cfq),
            other => Err(format!("'{other}' is not noop or cfq")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoClass {
    User,
    Background,
}

impl IoClass {
    pub fn of(cause: IoCause) -> IoClass {
        match cause {
            IoCause::User => IoClass::User,
            _ => IoClass::Background,
        }
    }

    fn index(self) -> usize {
        match self {
            IoClass::User => 0,
            IoClass::Background => 1,
        }
    }

    fn other(self) -> IoClass {
        match self {
            IoClass::User => IoClass::Background,
            IoClass::Background => IoClass::User,
        }
    }
}

/// CFQ-style slices over items `T` (drive commands) waiting at the host.
#[derive(Debug)]
pub struct Cfq<T> {
    queues: [VecDeque<T>; 2],
    /// Dispatched and not yet completed, per class.
    at_drive: [u32; 2],
    active: Option<IoClass>,
    slice_end_ns: u64,
    idle_until_ns: Option<u64>,
    /// The class that had the last slice (the next goes to the other).
    last: IoClass,
}

impl<T> Default for Cfq<T> {
    fn default() -> Self {
        Cfq {
            queues: [VecDeque::new(), VecDeque::new()],
            at_drive: [0, 0],
            active: None,
            slice_end_ns: 0,
            idle_until_ns: None,
            last: IoClass::Background,
        }
    }
}

impl<T> Cfq<T> {
    pub fn push(&mut self, class: IoClass, item: T) {
        self.queues[class.index()].push_back(item);
    }

    /// Items still waiting at the host.
    pub fn waiting(&self) -> impl Iterator<Item = &T> {
        self.queues.iter().flatten()
    }

    /// A dispatched item of `class` completed at the drive.
    pub fn completed(&mut self, class: IoClass) {
        let n = &mut self.at_drive[class.index()];
        assert!(*n > 0, "a completion of a class with nothing at the drive");
        *n -= 1;
    }

    /// The next item to hand to the drive now, if the slices allow one.
    pub fn next(&mut self, now_ns: u64) -> Option<(IoClass, T)> {
        loop {
            let Some(active) = self.active else {
                let first = self.last.other();
                let class = [first, first.other()]
                    .into_iter()
                    .find(|c| !self.queues[c.index()].is_empty())?;
                self.active = Some(class);
                self.last = class;
                self.slice_end_ns = now_ns + SLICE_NS;
                self.idle_until_ns = None;
                continue;
            };
            let other_waits = !self.queues[active.other().index()].is_empty();
            if now_ns >= self.slice_end_ns {
                if other_waits {
                    self.active = None;
                    continue;
                }
                self.slice_end_ns = now_ns + SLICE_NS;
            }
            let i = active.index();
            if !self.queues[i].is_empty() {
                self.idle_until_ns = None;
                if self.at_drive[i] >= QUANTUM {
                    return None;
                }
                let item = self.queues[i].pop_front().expect("not empty");
                self.at_drive[i] += 1;
                return Some((active, item));
            }
            // The active queue ran dry: wait for its commands at the drive,
            // then (users only) idle briefly for their next request.
            if !other_waits || self.at_drive[i] > 0 {
                return None;
            }
            if active == IoClass::User {
                let until = *self.idle_until_ns.get_or_insert(now_ns + IDLE_NS);
                if now_ns < until {
                    return None;
                }
            }
            self.active = None;
        }
    }

    /// When `next` may give something new without any completion or push:
    /// the end of the slice or of the idle wait, while the other class waits.
    pub fn timer_ns(&self) -> Option<u64> {
        let active = self.active?;
        if self.queues[active.other().index()].is_empty() {
            return None;
        }
        Some(match self.idle_until_ns {
            Some(idle) => idle.min(self.slice_end_ns),
            None => self.slice_end_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn one_class_alone_dispatches_up_to_the_quantum() {
        let mut cfq = Cfq::default();
        for i in 0..6 {
            cfq.push(IoClass::Background, i);
        }
        let got: Vec<_> = std::iter::from_fn(|| cfq.next(0)).map(|(_, i)| i).collect();
        assert_eq!(got, vec![0, 1, 2, 3]);
        cfq.completed(IoClass::Background);
        assert_eq!(cfq.next(1), Some((IoClass::Background, 4)));
        assert_eq!(cfq.timer_ns(), None, "nothing else waits");
    }

    #[test]
    fn slices_alternate_between_users_and_background() {
        let mut cfq = Cfq::default();
        cfq.push(IoClass::Background, "bg1");
        assert_eq!(cfq.next(0), Some((IoClass::Background, "bg1")));
        cfq.push(IoClass::Background, "bg2");
        cfq.push(IoClass::User, "user1");
        // Background holds the slice: the user waits until it ends.
        assert_eq!(cfq.next(MS), Some((IoClass::Background, "bg2")));
        assert_eq!(cfq.next(MS), None);
        assert_eq!(cfq.timer_ns(), Some(SLICE_NS));
        cfq.completed(IoClass::Background);
        cfq.completed(IoClass::Background);
        cfq.push(IoClass::Background, "bg3");
        assert_eq!(cfq.next(SLICE_NS), Some((IoClass::User, "user1")));
        // The user's queue ran dry: the slice idles for its next request.
        cfq.completed(IoClass::User);
        assert_eq!(cfq.next(SLICE_NS + MS), None);
        assert_eq!(cfq.timer_ns(), Some(SLICE_NS + MS + IDLE_NS));
        cfq.push(IoClass::User, "user2");
        assert_eq!(cfq.next(SLICE_NS + 2 * MS), Some((IoClass::User, "user2")));
        cfq.completed(IoClass::User);
        // No next request within the idle time: background gets the drive.
        assert_eq!(cfq.next(SLICE_NS + 2 * MS), None);
        assert_eq!(
            cfq.next(SLICE_NS + 2 * MS + IDLE_NS),
            Some((IoClass::Background, "bg3"))
        );
    }

    #[test]
    fn a_slice_is_renewed_when_nobody_else_waits() {
        let mut cfq = Cfq::default();
        cfq.push(IoClass::User, 1);
        assert_eq!(cfq.next(0), Some((IoClass::User, 1)));
        cfq.completed(IoClass::User);
        cfq.push(IoClass::User, 2);
        assert_eq!(cfq.next(3 * SLICE_NS), Some((IoClass::User, 2)));
    }
}

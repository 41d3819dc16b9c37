//! One simulated member: a drive model, what it holds, the commands at it,
//! flushes waiting for it, and its statistics.
//!
//! Byte offsets become 512-byte LBNs one to one (member byte 0 is LBN 0;
//! the array's metadata area occupies the first MiB like on a real member).
//!
//! Flushes never reach the model, which has no flush command. With the
//! drive's write cache off (`FastWrite::Off`, the Cheetah presets, DiskSim
//! models without fast write, the SSD), a completed write is on the media,
//! so a flush completes at once. With write-back on, a flush completes once
//! the drive's queue has drained of every command submitted before it.
//! Limitation: the model does not say when its buffered (write-back) data
//! has been destaged, so that last step is not waited for; waiting for the
//! drive to go idle instead would starve flushes under sustained load.
//!
//! Low-priority I/O (`IoPriority::Low`: DOR's rebuild) waits at the host
//! while any normal-priority command of this member is at the drive or
//! waiting, and goes to the drive one command at a time, as RAIDframe's
//! disk queues serve users' requests before reconstruction's.

use std::collections::{BTreeMap, VecDeque};

use eraid_core::io::{DeviceOp, IoCause, IoId, IoPriority};

use super::host_sched::{Cfq, HostSchedulerKind, IoClass};
use super::stats::MemberStats;
use super::store::SparseStore;
use crate::disk::{Device, DiskCompletion, DiskRequest};

pub struct DeviceInflight {
    /// The engine I/Os this drive command carries: one, or several merged
    /// by the host block layer (see [`Member::submit_batch`]).
    pub parts: Vec<(IoId, InflightKind)>,
    pub submit_ns: u64,
    class: IoClass,
    low: bool,
}

/// Low-priority commands at the drive at once (one: a user request
/// arriving waits for at most one of them).
pub const LOW_PRIORITY_AT_DRIVE_MAX: usize = 1;

pub enum InflightKind {
    Read {
        offset_bytes: u64,
        len_bytes: usize,
    },
    /// `data` is kept only when the member stores bytes.
    Write {
        offset_bytes: u64,
        data: Option<Vec<u8>>,
    },
}

/// A drive command being assembled from engine I/Os.
struct Command {
    /// Given when the command is complete (merging done), in issue order.
    id: u64,
    class: IoClass,
    low: bool,
    is_read: bool,
    offset_bytes: u64,
    len_bytes: u64,
    parts: Vec<(IoId, InflightKind)>,
}

pub struct Member {
    pub device: Device,
    pub stats: MemberStats,
    pub store: Option<SparseStore>,
    pub write_back: bool,
    /// The instant a `DeviceWake` is queued for, to drop stale wakes.
    pub wake_at: Option<u64>,
    /// Commands at the drive by the id given to the model (ascending).
    pub inflight: BTreeMap<u64, DeviceInflight>,
    next_command: u64,
    /// Flushes waiting: (io, commands with a lower id must finish first).
    flush_waiters: Vec<(IoId, u64)>,
    /// Commands held by a `cfq` host scheduler (`None`: noop).
    host: Option<Cfq<Command>>,
    /// Low-priority commands held until no normal one is waiting.
    low_waiting: VecDeque<Command>,
}

/// A command the model refused (beyond its capacity): fail it.
pub struct Refused {
    pub io: IoId,
    pub reason: String,
}

impl Member {
    pub fn new(
        device: Device,
        store: Option<SparseStore>,
        write_back: bool,
        scheduler: HostSchedulerKind,
    ) -> Member {
        Member {
            device,
            stats: MemberStats::default(),
            store,
            write_back,
            wake_at: None,
            inflight: BTreeMap::new(),
            next_command: 0,
            flush_waiters: Vec::new(),
            host: (scheduler == HostSchedulerKind::Cfq).then(Cfq::default),
            low_waiting: VecDeque::new(),
        }
    }

    /// Hands the engine I/Os issued to this member at one instant to the
    /// drive, in order. With `merge_max_bytes`, the host block layer merges
    /// an I/O into an earlier one of the batch (same direction, exactly
    /// contiguous, at most that many bytes in all) the way Linux's elevator
    /// merges bios queued together; a flush is a barrier (nothing merges
    /// across it). Returns the I/Os the drive refused.
    pub fn submit_batch(
        &mut self,
        now_ns: u64,
        batch: Vec<(IoId, IoCause, IoPriority, DeviceOp)>,
        merge_max_bytes: Option<u64>,
    ) -> Vec<Refused> {
        let mut refused = Vec::new();
        let mut commands: Vec<Command> = Vec::new();
        for (io, cause, priority, op) in batch {
            let (is_read, offset_bytes, len_bytes, kind) = match op {
                DeviceOp::Flush => {
                    refused.extend(self.hand_over_all(now_ns, std::mem::take(&mut commands)));
                    self.stats.count(cause, |c| c.flushes += 1);
                    self.flush_waiters.push((io, self.next_command));
                    continue;
                }
                DeviceOp::Read {
                    offset_bytes,
                    len_bytes,
                } => {
                    self.stats.count(cause, |c| {
                        c.reads += 1;
                        c.read_bytes += len_bytes as u64;
                    });
                    let kind = InflightKind::Read {
                        offset_bytes,
                        len_bytes,
                    };
                    (true, offset_bytes, len_bytes as u64, kind)
                }
                DeviceOp::WriteZeroes {
                    offset_bytes,
                    len_bytes,
                } => {
                    // The drive is modelled writing the range; bytes are
                    // kept (as zeroes) only when the run checks data.
                    self.stats.count(cause, |c| {
                        c.writes += 1;
                        c.written_bytes += len_bytes;
                    });
                    let data = self.store.is_some().then(|| vec![0; len_bytes as usize]);
                    (
                        false,
                        offset_bytes,
                        len_bytes,
                        InflightKind::Write { offset_bytes, data },
                    )
                }
                DeviceOp::Write { offset_bytes, data } => {
                    let len = data.len() as u64;
                    self.stats.count(cause, |c| {
                        c.writes += 1;
                        c.written_bytes += len;
                    });
                    let data = self.store.is_some().then_some(data);
                    (
                        false,
                        offset_bytes,
                        len,
                        InflightKind::Write { offset_bytes, data },
                    )
                }
            };
            let class = IoClass::of(cause);
            let low = priority == IoPriority::Low;
            // CFQ keeps each class's requests apart; noop merges anything.
            let separate = self.host.is_some();
            let merged = merge_max_bytes.and_then(|max| {
                commands.iter_mut().find(|c| {
                    c.is_read == is_read
                        && c.low == low
                        && (!separate || c.class == class)
                        && c.len_bytes + len_bytes <= max
                        && (c.offset_bytes + c.len_bytes == offset_bytes
                            || offset_bytes + len_bytes == c.offset_bytes)
                })
            });
            match merged {
                Some(c) => {
                    c.offset_bytes = c.offset_bytes.min(offset_bytes);
                    c.len_bytes += len_bytes;
                    c.parts.push((io, kind));
                    self.stats.merged += 1;
                }
                None => commands.push(Command {
                    id: 0,
                    class,
                    low,
                    is_read,
                    offset_bytes,
                    len_bytes,
                    parts: vec![(io, kind)],
                }),
            }
        }
        refused.extend(self.hand_over_all(now_ns, commands));
        refused
    }

    /// Hands over the commands of one instant, normal-priority ones first
    /// (so a low one does not reach an idle drive ahead of them).
    fn hand_over_all(&mut self, now_ns: u64, commands: Vec<Command>) -> Vec<Refused> {
        let (low, normal): (Vec<Command>, Vec<Command>) = commands.into_iter().partition(|c| c.low);
        let mut refused = Vec::new();
        for command in normal.into_iter().chain(low) {
            refused.extend(self.hand_over(now_ns, command));
        }
        refused
    }

    /// Numbers a finished command and gives it to the drive, or to the host
    /// scheduler to hand over when its slice comes.
    fn hand_over(&mut self, now_ns: u64, mut command: Command) -> Vec<Refused> {
        command.id = self.next_command;
        self.next_command += 1;
        if command.low {
            self.low_waiting.push_back(command);
            return self.pump_host(now_ns);
        }
        match &mut self.host {
            None => self.dispatch(now_ns, command),
            Some(host) => {
                host.push(command.class, command);
                self.pump_host(now_ns)
            }
        }
    }

    /// Hands the drive what the host scheduler lets through now.
    pub fn pump_host(&mut self, now_ns: u64) -> Vec<Refused> {
        let mut refused = Vec::new();
        while let Some((_, command)) = self.host.as_mut().and_then(|h| h.next(now_ns)) {
            refused.extend(self.dispatch(now_ns, command));
        }
        while self.low_may_go() {
            let command = self.low_waiting.pop_front().expect("checked");
            refused.extend(self.dispatch(now_ns, command));
        }
        refused
    }

    /// A low-priority command may go to the drive: one is waiting, no
    /// normal-priority command is at the drive or the host, and fewer than
    /// `LOW_PRIORITY_AT_DRIVE_MAX` low ones are at the drive.
    fn low_may_go(&self) -> bool {
        let normal_at_host = self
            .host
            .as_ref()
            .is_some_and(|h| h.waiting().next().is_some());
        let normal_at_drive = self.inflight.values().any(|c| !c.low);
        let low_at_drive = self.inflight.values().filter(|c| c.low).count();
        !self.low_waiting.is_empty()
            && !normal_at_host
            && !normal_at_drive
            && low_at_drive < LOW_PRIORITY_AT_DRIVE_MAX
    }

    /// When the host scheduler may let something through by itself.
    pub fn host_timer_ns(&self) -> Option<u64> {
        self.host.as_ref().and_then(Cfq::timer_ns)
    }

    /// Submits one drive command; on refusal every part is failed.
    fn dispatch(&mut self, now_ns: u64, command: Command) -> Vec<Refused> {
        let id = command.id;
        let class = command.class;
        let low = command.low;
        let request = DiskRequest {
            id,
            lbn: command.offset_bytes / 512,
            sectors: u32::try_from(command.len_bytes.div_ceil(512)).unwrap_or(u32::MAX),
            is_read: command.is_read,
        };
        if let Err(e) = self.device.submit(now_ns, request) {
            if let (Some(host), false) = (&mut self.host, low) {
                host.completed(class);
            }
            let reason = e.to_string();
            return command
                .parts
                .into_iter()
                .map(|(io, _)| Refused {
                    io,
                    reason: reason.clone(),
                })
                .collect();
        }
        self.stats.submitted(now_ns);
        self.inflight.insert(
            id,
            DeviceInflight {
                parts: command.parts,
                submit_ns: now_ns,
                class,
                low,
            },
        );
        Vec::new()
    }

    /// Records a finished command and returns what it was.
    pub fn complete(&mut self, now_ns: u64, done: &DiskCompletion) -> Option<DeviceInflight> {
        let inflight = self.inflight.remove(&done.id)?;
        if let (Some(host), false) = (&mut self.host, inflight.low) {
            host.completed(inflight.class);
        }
        let service_ns = now_ns.saturating_sub(inflight.submit_ns);
        self.stats
            .completed(now_ns, service_ns, done.seek_cyls, done.cache_hit);
        Some(inflight)
    }

    /// Flushes whose wait is over (see the module docs).
    pub fn ready_flushes(&mut self) -> Vec<IoId> {
        if self.flush_waiters.is_empty() {
            return Vec::new();
        }
        let at_host = self
            .host
            .iter()
            .flat_map(|h| h.waiting())
            .chain(&self.low_waiting)
            .map(|c| c.id);
        let oldest = self
            .inflight
            .keys()
            .copied()
            .chain(at_host)
            .min()
            .unwrap_or(u64::MAX);
        let mut ready = Vec::new();
        self.flush_waiters.retain(|&(io, watermark)| {
            let done = !self.write_back || oldest >= watermark;
            if done {
                ready.push(io);
            }
            !done
        });
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::presets::simple_ssd;
    use crate::disk::SsdModel;

    fn read(id: u64, priority: IoPriority, lbn: u64) -> (IoId, IoCause, IoPriority, DeviceOp) {
        let cause = match priority {
            IoPriority::Low => IoCause::Rebuild,
            IoPriority::Normal => IoCause::User,
        };
        let op = DeviceOp::Read {
            offset_bytes: lbn * 512,
            len_bytes: 4096,
        };
        (IoId(id), cause, priority, op)
    }

    /// Runs the drive to idle; the engine I/Os in the order they finished.
    fn finish_all(member: &mut Member) -> Vec<u64> {
        let mut order = Vec::new();
        while let Some(at) = member.device.next_event_ns() {
            for done in member.device.advance(at) {
                let inflight = member.complete(at, &done).expect("a command at the drive");
                order.extend(inflight.parts.iter().map(|(io, _)| io.0));
            }
            assert!(member.pump_host(at).is_empty());
        }
        order
    }

    #[test]
    fn low_priority_commands_wait_while_users_have_commands_waiting() {
        let device = Device::Ssd(SsdModel::new(simple_ssd(1 << 20)));
        let mut member = Member::new(device, None, false, HostSchedulerKind::Noop);
        // Three rebuild reads queued, then two user reads at the same instant.
        let batch = vec![
            read(1, IoPriority::Low, 0),
            read(2, IoPriority::Low, 64),
            read(3, IoPriority::Low, 128),
            read(10, IoPriority::Normal, 4096),
            read(11, IoPriority::Normal, 8192),
        ];
        assert!(member.submit_batch(0, batch, None).is_empty());
        assert!(
            member.inflight.values().all(|c| !c.low),
            "no rebuild command reaches the drive while users' wait"
        );
        assert_eq!(finish_all(&mut member), vec![10, 11, 1, 2, 3]);
        // Alone, low-priority commands go one at a time.
        let batch = vec![read(4, IoPriority::Low, 0), read(5, IoPriority::Low, 64)];
        assert!(member.submit_batch(1_000_000_000, batch, None).is_empty());
        assert_eq!(member.inflight.len(), LOW_PRIORITY_AT_DRIVE_MAX);
        assert_eq!(finish_all(&mut member), vec![4, 5]);
    }
}

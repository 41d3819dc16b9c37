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
//! With a request size limit (`request_max_bytes`, Linux's `max_sectors`)
//! the host block layer splits an engine I/O larger than it into drive
//! commands of at most that size, handed over together; the engine I/O
//! completes when its last piece does.
//!
//! Low-priority I/O (`IoPriority::Low`: DOR's rebuild) waits at the host
//! while any normal-priority command of this member is at the drive or
//! waiting, and goes to the drive one command at a time, as RAIDframe's
//! disk queues serve users' requests before reconstruction's.

use std::collections::{BTreeMap, HashMap, VecDeque};

use eraid_core::io::{DeviceOp, IoCause, IoCompletion, IoId, IoPriority};

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
        data: Option<eraid_core::io::Bytes>,
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

/// An engine I/O the host split into several drive commands.
struct SplitIo {
    /// Pieces not yet finished (completed or refused).
    pieces_left: usize,
    /// A read's whole range, read from the store once every piece is in.
    read_range: Option<(u64, usize)>,
    /// A piece was refused: the I/O has been failed once already.
    failed: bool,
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
    /// Engine I/Os split into several commands, by id.
    split: HashMap<IoId, SplitIo>,
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
            split: HashMap::new(),
        }
    }

    /// Hands the engine I/Os issued to this member at one instant to the
    /// drive, in order. With `merge_max_bytes`, the host block layer merges
    /// an I/O into an earlier one of the batch (same direction, exactly
    /// contiguous, at most that many bytes in all) the way Linux's elevator
    /// merges bios queued together; a flush is a barrier (nothing merges
    /// across it). With `request_max_bytes` an I/O larger than that is
    /// first split into pieces of at most that size (each may then merge
    /// like any I/O). Returns the I/Os the drive refused.
    pub fn submit_batch(
        &mut self,
        now_ns: u64,
        batch: Vec<(IoId, IoCause, IoPriority, DeviceOp)>,
        merge_max_bytes: Option<u64>,
        request_max_bytes: Option<u64>,
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
                    let data = self
                        .store
                        .is_some()
                        .then(|| eraid_core::io::Bytes::from(vec![0; len_bytes as usize]));
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
                    let data = self.store.is_some().then(|| data.bytes().clone());
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
            let pieces = split_io(offset_bytes, len_bytes, kind, request_max_bytes);
            if pieces.len() > 1 {
                let read_range = is_read.then_some((offset_bytes, len_bytes as usize));
                let pieces_left = pieces.len();
                let split = SplitIo {
                    pieces_left,
                    read_range,
                    failed: false,
                };
                assert!(self.split.insert(io, split).is_none(), "{io:?} split twice");
            }
            for (offset_bytes, len_bytes, kind) in pieces {
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
                .filter(|(io, _)| self.piece_refused(*io))
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

    /// A finished command's part: its effect on the stored bytes, and the
    /// engine I/O's completion unless pieces of it are still out.
    pub fn finish_part(&mut self, io: IoId, kind: InflightKind) -> Option<IoCompletion> {
        let result = match kind {
            InflightKind::Read {
                offset_bytes,
                len_bytes,
            } => IoCompletion::Read(self.read_stored(offset_bytes, len_bytes).into()),
            InflightKind::Write { offset_bytes, data } => {
                if let (Some(store), Some(data)) = (&mut self.store, data) {
                    store.write(offset_bytes, &data);
                }
                IoCompletion::Done
            }
        };
        let Some(split) = self.split.get_mut(&io) else {
            return Some(result);
        };
        split.pieces_left -= 1;
        if split.pieces_left > 0 {
            return None;
        }
        let split = self.split.remove(&io).expect("looked up above");
        if split.failed {
            return None;
        }
        Some(match split.read_range {
            Some((offset_bytes, len_bytes)) => {
                IoCompletion::Read(self.read_stored(offset_bytes, len_bytes).into())
            }
            None => IoCompletion::Done,
        })
    }

    /// The bytes a read returns: the store's, or zeroes when it keeps none.
    fn read_stored(&self, offset_bytes: u64, len_bytes: usize) -> Vec<u8> {
        match &self.store {
            Some(store) => store.read(offset_bytes, len_bytes),
            None => vec![0; len_bytes],
        }
    }

    /// A part of a refused command: whether to fail its engine I/O now (a
    /// split I/O is failed once, at its first refused piece).
    fn piece_refused(&mut self, io: IoId) -> bool {
        let Some(split) = self.split.get_mut(&io) else {
            return true;
        };
        split.pieces_left -= 1;
        let first = !split.failed;
        split.failed = true;
        if split.pieces_left == 0 {
            self.split.remove(&io);
        }
        first
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

/// An I/O as the host sends it: one piece, or pieces of at most
/// `request_max_bytes` (a multiple of 512) when it is larger.
fn split_io(
    offset_bytes: u64,
    len_bytes: u64,
    kind: InflightKind,
    request_max_bytes: Option<u64>,
) -> Vec<(u64, u64, InflightKind)> {
    let max = match request_max_bytes {
        Some(max) if len_bytes > max => max,
        _ => return vec![(offset_bytes, len_bytes, kind)],
    };
    assert!(max > 0 && max % 512 == 0, "request size limit {max}");
    let mut data = match kind {
        InflightKind::Write { data, .. } => Some(data),
        InflightKind::Read { .. } => None,
    };
    let mut pieces = Vec::new();
    let mut done = 0;
    while done < len_bytes {
        let len = max.min(len_bytes - done);
        let offset = offset_bytes + done;
        let kind = match &mut data {
            None => InflightKind::Read {
                offset_bytes: offset,
                len_bytes: len as usize,
            },
            Some(bytes) => InflightKind::Write {
                offset_bytes: offset,
                data: bytes.as_mut().map(|b| b.split_to(len as usize)),
            },
        };
        pieces.push((offset, len, kind));
        done += len;
    }
    pieces
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
        assert!(member.submit_batch(0, batch, None, None).is_empty());
        assert!(
            member.inflight.values().all(|c| !c.low),
            "no rebuild command reaches the drive while users' wait"
        );
        assert_eq!(finish_all(&mut member), vec![10, 11, 1, 2, 3]);
        // Alone, low-priority commands go one at a time.
        let batch = vec![read(4, IoPriority::Low, 0), read(5, IoPriority::Low, 64)];
        assert!(member
            .submit_batch(1_000_000_000, batch, None, None)
            .is_empty());
        assert_eq!(member.inflight.len(), LOW_PRIORITY_AT_DRIVE_MAX);
        assert_eq!(finish_all(&mut member), vec![4, 5]);
    }

    /// Runs the drive to idle, completing parts as the simulator does:
    /// (engine I/O, completion) in the order they were answered, and how
    /// many drive commands finished.
    fn answer_all(member: &mut Member) -> (Vec<(u64, IoCompletion)>, usize) {
        let (mut answered, mut commands) = (Vec::new(), 0);
        while let Some(at) = member.device.next_event_ns() {
            for done in member.device.advance(at) {
                let inflight = member.complete(at, &done).expect("a command at the drive");
                commands += 1;
                for (io, kind) in inflight.parts {
                    if let Some(result) = member.finish_part(io, kind) {
                        answered.push((io.0, result));
                    }
                }
            }
            assert!(member.pump_host(at).is_empty());
        }
        (answered, commands)
    }

    #[test]
    fn an_io_above_the_request_limit_goes_as_pieces_and_completes_once() {
        const KIB: u64 = 1024;
        let device = Device::Ssd(SsdModel::new(simple_ssd(1 << 20)));
        let mut member = Member::new(
            device,
            Some(SparseStore::default()),
            false,
            HostSchedulerKind::Noop,
        );
        let data: Vec<u8> = (0..2048 * KIB).map(|i| (i % 251) as u8).collect();
        let write = DeviceOp::Write {
            offset_bytes: 64 * KIB,
            data: data.clone().into(),
        };
        let batch = vec![(IoId(1), IoCause::Redistribution, IoPriority::Normal, write)];
        assert!(member
            .submit_batch(0, batch, Some(512 * KIB), Some(512 * KIB))
            .is_empty());
        assert_eq!(member.inflight.len(), 4, "2 MiB in requests of 512 KiB");
        let (answered, commands) = answer_all(&mut member);
        assert_eq!(commands, 4);
        assert!(
            matches!(answered.as_slice(), [(1, IoCompletion::Done)]),
            "one answer"
        );
        // A read of the same range (1 MiB limit): two pieces, the bytes whole.
        let read = DeviceOp::Read {
            offset_bytes: 64 * KIB,
            len_bytes: data.len(),
        };
        let batch = vec![(IoId(2), IoCause::Redistribution, IoPriority::Normal, read)];
        assert!(member
            .submit_batch(1_000_000_000, batch, None, Some(1024 * KIB))
            .is_empty());
        assert_eq!(member.inflight.len(), 2);
        let (answered, commands) = answer_all(&mut member);
        assert_eq!(commands, 2);
        match answered.as_slice() {
            [(2, IoCompletion::Read(bytes))] => assert!(bytes == &data, "read back whole"),
            _ => panic!("one read answer expected"),
        }
        // Without a limit the same read is one command.
        let read = DeviceOp::Read {
            offset_bytes: 64 * KIB,
            len_bytes: data.len(),
        };
        let batch = vec![(IoId(3), IoCause::Redistribution, IoPriority::Normal, read)];
        assert!(member
            .submit_batch(2_000_000_000, batch, Some(512 * KIB), None)
            .is_empty());
        assert_eq!(member.inflight.len(), 1);
        assert_eq!(answer_all(&mut member).1, 1);
    }

    #[test]
    fn a_split_io_refused_by_the_drive_fails_once() {
        // 1 MiB of drive; a 1 MiB write at 512 KiB: its second piece is
        // beyond the end, the first is not.
        let device = Device::Ssd(SsdModel::new(simple_ssd(2048)));
        let mut member = Member::new(device, None, false, HostSchedulerKind::Noop);
        let write = DeviceOp::WriteZeroes {
            offset_bytes: 512 * 1024,
            len_bytes: 1024 * 1024,
        };
        let batch = vec![(IoId(7), IoCause::User, IoPriority::Normal, write)];
        let refused = member.submit_batch(0, batch, None, Some(512 * 1024));
        assert_eq!(refused.len(), 1, "failed once");
        assert_eq!(refused[0].io, IoId(7));
        let (answered, commands) = answer_all(&mut member);
        assert_eq!(commands, 1, "the piece in range ran");
        assert!(answered.is_empty(), "a failed I/O is not answered again");
        assert!(member.split.is_empty());
    }
}

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

use std::collections::BTreeMap;

use eraid_core::io::{DeviceOp, IoCause, IoId};

use super::stats::MemberStats;
use super::store::SparseStore;
use crate::disk::{Device, DiskCompletion, DiskRequest};

pub struct DeviceInflight {
    pub io: IoId,
    pub submit_ns: u64,
    pub kind: InflightKind,
}

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
}

/// A command the model refused (beyond its capacity): fail it.
pub struct Refused {
    pub io: IoId,
    pub reason: String,
}

impl Member {
    pub fn new(device: Device, store: Option<SparseStore>, write_back: bool) -> Member {
        Member {
            device,
            stats: MemberStats::default(),
            store,
            write_back,
            wake_at: None,
            inflight: BTreeMap::new(),
            next_command: 0,
            flush_waiters: Vec::new(),
        }
    }

    /// Hands a device I/O to the drive. Returns `Ok(true)` when it is a
    /// flush that completes at once.
    pub fn submit(
        &mut self,
        now_ns: u64,
        io: IoId,
        cause: IoCause,
        op: DeviceOp,
    ) -> Result<bool, Refused> {
        let (offset_bytes, len_bytes, is_read, kind) = match op {
            DeviceOp::Flush => {
                self.stats.count(cause, |c| c.flushes += 1);
                self.flush_waiters.push((io, self.next_command));
                return Ok(false);
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
                (offset_bytes, len_bytes, true, kind)
            }
            DeviceOp::Write { offset_bytes, data } => {
                let len = data.len();
                self.stats.count(cause, |c| {
                    c.writes += 1;
                    c.written_bytes += len as u64;
                });
                let data = self.store.is_some().then_some(data);
                (
                    offset_bytes,
                    len,
                    false,
                    InflightKind::Write { offset_bytes, data },
                )
            }
        };
        let id = self.next_command;
        self.next_command += 1;
        let request = DiskRequest {
            id,
            lbn: offset_bytes / 512,
            sectors: u32::try_from(len_bytes.div_ceil(512)).unwrap_or(u32::MAX),
            is_read,
        };
        self.device.submit(now_ns, request).map_err(|e| Refused {
            io,
            reason: e.to_string(),
        })?;
        self.stats.submitted(now_ns);
        self.inflight.insert(
            id,
            DeviceInflight {
                io,
                submit_ns: now_ns,
                kind,
            },
        );
        Ok(false)
    }

    /// Records a finished command and returns what it was.
    pub fn complete(&mut self, now_ns: u64, done: &DiskCompletion) -> Option<DeviceInflight> {
        let inflight = self.inflight.remove(&done.id)?;
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
        let oldest = self.inflight.keys().next().copied().unwrap_or(u64::MAX);
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

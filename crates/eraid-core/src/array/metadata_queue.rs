//! Superblock and bitmap writes, one at a time: each is written to every
//! present member (alternating slots) and, when ordering matters, flushed
//! before anyone waiting on it proceeds.

use super::{Array, Owner, Phase, Ready};
use crate::io::{DeviceOp, IoCause};
use crate::metadata::bitmap::IntentBitmap;
use crate::metadata::superblock::Superblock;

#[derive(Clone, Debug)]
enum Job {
    Superblock {
        generation: u64,
    },
    Bitmap {
        flush: bool,
    },
    /// Superblock and bitmap onto members joining in a growth, flushed,
    /// before any old member records them (so a crash in between leaves
    /// either the old array or the new one, never a member list naming a
    /// member without metadata).
    Joining {
        members: Vec<usize>,
        generation: u64,
    },
    /// A replaced member's retired superblock copy (`bytes` at
    /// `offset_bytes` of `device`), then a flush of that device; close
    /// waits for it like any metadata.
    Retire {
        device: usize,
        offset_bytes: u64,
        bytes: Vec<u8>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Writing,
    Flushing,
}

struct Active {
    job: Job,
    stage: Stage,
    pending: usize,
    bitmap_snapshot: Option<IntentBitmap>,
    /// Joining: the same superblock for the old members, written once the
    /// joining members' copies are durable.
    second_writes: Option<Vec<(usize, u64, Vec<u8>)>>,
}

#[derive(Default)]
pub struct MetadataQueue {
    queue: Vec<Job>,
    active: Option<Active>,
    /// Superblock writes asked for / known on disk (generation counters).
    pub superblock_requested: u64,
    pub superblock_durable: u64,
    pub writes_total: u64,
}

impl MetadataQueue {
    pub fn is_idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }
}

impl Array {
    pub(super) fn request_superblock_write(&mut self) {
        self.metadata.superblock_requested += 1;
        let generation = self.metadata.superblock_requested;
        // One queued superblock write covers every request made before it starts.
        if let Some(Job::Superblock { generation: queued }) = self
            .metadata
            .queue
            .iter_mut()
            .find(|j| matches!(j, Job::Superblock { .. }))
        {
            *queued = generation;
        } else {
            self.metadata.queue.push(Job::Superblock { generation });
        }
        self.pump_metadata();
    }

    /// Writes the metadata of joining members first (see `Job::Joining`).
    pub(super) fn request_joining_write(&mut self, members: Vec<usize>) -> u64 {
        self.metadata.superblock_requested += 1;
        let generation = self.metadata.superblock_requested;
        self.metadata.queue.push(Job::Joining {
            members,
            generation,
        });
        self.pump_metadata();
        generation
    }

    pub(super) fn request_retirement_write(
        &mut self,
        device: usize,
        offset_bytes: u64,
        bytes: Vec<u8>,
    ) {
        self.metadata.queue.push(Job::Retire {
            device,
            offset_bytes,
            bytes,
        });
        self.pump_metadata();
    }

    pub(super) fn request_bitmap_write(&mut self, flush: bool) {
        if let Some(Job::Bitmap { flush: queued }) = self
            .metadata
            .queue
            .iter_mut()
            .find(|j| matches!(j, Job::Bitmap { .. }))
        {
            *queued |= flush;
        } else {
            self.metadata.queue.push(Job::Bitmap { flush });
        }
        self.pump_metadata();
    }

    /// Where metadata goes: (device, member number its copy names) for
    /// every present member slot and every spare that is here. Spares
    /// carry the superblock (so they are known at the next start), not
    /// the bitmap.
    fn metadata_devices(&self, with_spares: bool) -> Vec<(usize, usize)> {
        let count = self.geometry.member_count;
        let slots = (0..count)
            .filter(|&m| self.present[m])
            .map(|m| (self.slot_device[m], m));
        let spares = self
            .spare_devices
            .iter()
            .enumerate()
            .filter(|_| with_spares)
            .filter_map(move |(j, d)| d.map(|d| (d, count + j)));
        slots.chain(spares).collect()
    }

    fn pump_metadata(&mut self) {
        if self.metadata.active.is_some() || self.metadata.queue.is_empty() {
            return;
        }
        let job = self.metadata.queue.remove(0);
        let targets: Vec<(usize, usize)> = match &job {
            Job::Joining { members, .. } => {
                members.iter().map(|&m| (self.slot_device[m], m)).collect()
            }
            Job::Superblock { .. } => self.metadata_devices(true),
            Job::Bitmap { .. } => self.metadata_devices(false),
            Job::Retire { device, .. } => vec![(*device, usize::MAX)],
        };
        let mut snapshot = None;
        let mut second_writes = None;
        let writes: Vec<(usize, u64, Vec<u8>)> = match &job {
            Job::Superblock { .. } => {
                self.record_read_error_counts();
                self.superblock.events += 1;
                let offset = Superblock::slot_offset_bytes(self.superblock.events);
                targets
                    .iter()
                    .map(|&(d, m)| (d, offset, self.superblock.encode_for(m)))
                    .collect()
            }
            Job::Joining { members, .. } => {
                self.record_read_error_counts();
                self.superblock.events += 1;
                let offset = Superblock::slot_offset_bytes(self.superblock.events);
                let bitmap_offset = IntentBitmap::slot_offset_bytes(self.intent.sequence);
                let bitmap = self.intent.durable.encode(self.intent.sequence);
                second_writes = Some(
                    self.metadata_devices(true)
                        .into_iter()
                        .filter(|(_, m)| !members.contains(m))
                        .map(|(d, m)| (d, offset, self.superblock.encode_for(m)))
                        .collect(),
                );
                targets
                    .iter()
                    .flat_map(|&(d, m)| {
                        [
                            (d, offset, self.superblock.encode_for(m)),
                            (d, bitmap_offset, bitmap.clone()),
                        ]
                    })
                    .collect()
            }
            Job::Retire {
                device,
                offset_bytes,
                bytes,
            } => vec![(*device, *offset_bytes, bytes.clone())],
            Job::Bitmap { .. } => {
                self.intent.sequence += 1;
                let bitmap = self.intent.desired.clone();
                let bytes = bitmap.encode(self.intent.sequence);
                let offset = IntentBitmap::slot_offset_bytes(self.intent.sequence);
                // From now on any member may hold this copy: a region it
                // clears is no longer known set on disk, and a write there
                // waits for the next bitmap write (which sets it again).
                self.intent.durable.intersect_with(&bitmap);
                snapshot = Some(bitmap);
                targets
                    .iter()
                    .map(|&(d, _)| (d, offset, bytes.clone()))
                    .collect()
            }
        };
        self.metadata.writes_total += writes.len() as u64;
        self.metadata.active = Some(Active {
            job,
            stage: Stage::Writing,
            pending: writes.len(),
            bitmap_snapshot: snapshot,
            second_writes,
        });
        let empty = writes.is_empty();
        for (device, offset_bytes, data) in writes {
            self.issue_metadata(
                device,
                DeviceOp::Write {
                    offset_bytes,
                    data: data.into(),
                },
            );
        }
        if empty {
            self.ready.push(Ready::MetadataStageDone);
        }
    }

    fn issue_metadata(&mut self, device: usize, op: DeviceOp) {
        // The slot (or spare number) only feeds pacing statistics.
        let member = self
            .slot_device
            .iter()
            .position(|&d| d == device)
            .unwrap_or(self.geometry.member_count);
        self.issue_to_device(device, member, op, IoCause::Metadata, Owner::Metadata);
    }

    /// A metadata write or flush finished (a failure was already charged
    /// to its device by `handle_completion`).
    pub(super) fn metadata_io_done(&mut self) {
        let active = self
            .metadata
            .active
            .as_mut()
            .expect("metadata I/O without an active job");
        active.pending -= 1;
        if active.pending == 0 {
            self.metadata_stage_done();
        }
    }

    pub(super) fn metadata_stage_done(&mut self) {
        let active = self.metadata.active.as_mut().expect("active job");
        let needs_flush = match active.job {
            Job::Superblock { .. } | Job::Joining { .. } | Job::Retire { .. } => true,
            Job::Bitmap { flush } => flush,
        };
        if active.stage == Stage::Writing && needs_flush {
            active.stage = Stage::Flushing;
            let devices = match &active.job {
                Job::Retire { device, .. } => vec![(*device, usize::MAX)],
                Job::Bitmap { .. } => self.metadata_devices(false),
                _ => self.metadata_devices(true),
            };
            let active = self.metadata.active.as_mut().expect("active job");
            active.pending = devices.len();
            for &(device, _) in &devices {
                self.issue_metadata(device, DeviceOp::Flush);
            }
            if !devices.is_empty() {
                return;
            }
        }
        let active = self.metadata.active.as_mut().expect("active job");
        if let Some(writes) = active.second_writes.take() {
            active.stage = Stage::Writing;
            active.pending = writes.len();
            self.metadata.writes_total += writes.len() as u64;
            let empty = writes.is_empty();
            for (device, offset_bytes, data) in writes {
                self.issue_metadata(
                    device,
                    DeviceOp::Write {
                        offset_bytes,
                        data: data.into(),
                    },
                );
            }
            if empty {
                self.ready.push(Ready::MetadataStageDone);
            }
            return;
        }
        let active = self.metadata.active.take().expect("active job");
        match active.job {
            Job::Superblock { generation } => {
                self.metadata.superblock_durable = self.metadata.superblock_durable.max(generation);
                if self.phase == Phase::Opening {
                    // Member writes from the journal go first.
                    if !self.journal_replay_members() {
                        self.finish_open();
                    }
                }
                self.wake_record_waiters();
                self.journal_recorded();
                self.reshape_superblock_durable();
                self.rebuild_superblock_durable();
            }
            Job::Bitmap { .. } => {
                self.intent.durable = active.bitmap_snapshot.expect("bitmap snapshot");
                self.wake_intent_waiters();
            }
            Job::Joining { generation, .. } => {
                self.metadata.superblock_durable = self.metadata.superblock_durable.max(generation);
                self.reshape_superblock_durable();
            }
            Job::Retire { .. } => {}
        }
        self.pump_metadata();
        self.advance_close();
    }

    pub(super) fn finish_open(&mut self) {
        self.phase = Phase::Running;
        // Without a bitmap nothing says where writes were in flight: after an
        // unclean shutdown every region is suspect.
        if !self.options.write_intent_bitmap
            && self.opened_unclean
            && self.geometry.parity_per_stripe() > 0
        {
            for region in 0..self.intent.desired.region_count() {
                self.intent.desired.set(region, true);
            }
        }
        let dirty: Vec<u64> = self.intent.desired.dirty_regions().collect();
        if !dirty.is_empty() && self.geometry.parity_per_stripe() == 0 {
            // No redundancy, nothing to resync (earlier versions marked a
            // RAID-0 made on used members dirty): the marks are dropped.
            for &region in &dirty {
                self.intent.desired.set(region, false);
            }
            self.request_bitmap_write(false);
        } else if !dirty.is_empty() && self.options.resync_on_open {
            if !self.opened_unclean && self.keeps_bits_for_re_add() {
                // Shut down cleanly, parity matches: the marks only say
                // what a member being re-added (or away) has to copy.
            } else if self.is_degraded() {
                // Parity cannot be made consistent without all members; the
                // regions stay marked (pinned: the clean cycle must not clear
                // them, or a second crash forgets them) until a rebuild
                // resyncs them.
                self.intent.pinned.extend(dirty.iter().copied());
                self.unresynced_regions = dirty;
            } else if self.reshape_backup_pending() {
                // Rows under a backed-up window are rewritten from the backup
                // first; resyncing them before would mix two layouts.
                self.defer_resync(dirty);
            } else {
                self.start_resync(dirty);
            }
        }
        self.journal_replay_users();
        if !self.journal_replaying() {
            for request in std::mem::take(&mut self.held) {
                self.submit(request);
            }
        }
        // A rebuild to resume, or a spare to take a missing slot over.
        self.ready.push(Ready::Rebuild);
    }
}

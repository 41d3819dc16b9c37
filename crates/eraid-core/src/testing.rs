//! An in-memory, fault-injecting driver for tests (pure: no threads, no
//! clock). Members are byte vectors with a durable image and a list of
//! writes not yet flushed; I/Os complete in a seeded random order, members
//! can fail, and a crash drops, applies or tears every unflushed write,
//! in the spirit of FoundationDB's AsyncFileNonDurable.

use crate::geometry::{Geometry, METADATA_BYTES, SECTOR_BYTES};
use crate::io::*;
use crate::metadata::assemble::{assemble, Assembly, AssemblyError, MemberProbe, SlotState};
use crate::metadata::create::{initial_writes, new_superblock, NewMember};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct MemMember {
    /// What survives a crash for sure.
    pub durable: Vec<u8>,
    /// What reads see now: `durable` with `unflushed` applied in order (a
    /// test that changes one directly changes the other too).
    pub current: Vec<u8>,
    /// Writes completed since the last flush: (offset, bytes).
    pub unflushed: Vec<(u64, Vec<u8>)>,
    /// Every I/O to a failed member fails.
    pub failed: bool,
}

impl MemMember {
    fn write(&mut self, offset: u64, data: &[u8]) {
        let at = offset as usize;
        self.current[at..at + data.len()].copy_from_slice(data);
        self.unflushed.push((offset, data.to_vec()));
    }

    /// Makes what reads see durable. Applies the unflushed writes rather
    /// than copying the whole image: a member is mostly its 1 MiB metadata
    /// area, and the simulation flushes often.
    fn flush(&mut self) {
        for (offset, data) in self.unflushed.drain(..) {
            let at = offset as usize;
            self.durable[at..at + data.len()].copy_from_slice(&data);
        }
    }
}

/// What a latent sector error does when the array writes over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadSectorKind {
    /// The write succeeds and the range reads again (a disk remapping the
    /// sector on write).
    HealsOnWrite,
    /// The write fails (the device cannot remap it).
    WriteFails,
    /// The write succeeds but reads still fail.
    Persists,
}

/// A range of a device whose reads return `IoCompletion::ReadError`.
#[derive(Clone, Debug)]
pub struct BadSectors {
    pub device: usize,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub kind: BadSectorKind,
}

impl BadSectors {
    fn overlaps(&self, device: usize, offset_bytes: u64, len_bytes: u64) -> bool {
        self.device == device
            && offset_bytes < self.offset_bytes + self.len_bytes
            && self.offset_bytes < offset_bytes + len_bytes
    }
}

/// A journal in memory: batches are applied and synced when they
/// complete; a crash applies, drops or tears each write of a batch in
/// flight.
pub struct MemJournal {
    pub image: Vec<u8>,
    /// Every batch fails from now on.
    pub failed: bool,
}

impl MemJournal {
    /// A fresh journal of `size_bytes` for `array_uuid`.
    pub fn fresh(size_bytes: u64, journal_id: u64, array_uuid: &str) -> MemJournal {
        let mut image = vec![0u8; size_bytes as usize];
        let header =
            crate::journal::format::JournalHeader::fresh(size_bytes, journal_id, array_uuid);
        let at = header.slot_offset_bytes() as usize;
        let bytes = header.encode();
        image[at..at + bytes.len()].copy_from_slice(&bytes);
        MemJournal {
            image,
            failed: false,
        }
    }

    /// What a driver hands `ArrayOptions::journal` at start, having zeroed
    /// the log's leftovers as a driver must (`scan::leftover_ranges`).
    pub fn setup(&mut self) -> Result<crate::array::JournalSetup, String> {
        let header = crate::journal::format::JournalHeader::decode_newest(&self.image)?;
        let found = crate::journal::scan::scan(&header, &self.image);
        for range in crate::journal::scan::leftover_ranges(&header, &found) {
            self.image[range.start as usize..range.end as usize].fill(0);
        }
        Ok(crate::array::JournalSetup { header, found })
    }
}

pub struct MemHarness {
    /// None: the member is absent (not given to assembly).
    pub members: Vec<Option<MemMember>>,
    pub rng: ChaCha8Rng,
    pub now: TimeNs,
    inflight: Vec<DeviceIo>,
    pub replies: Vec<UserReply>,
    pub events: Vec<ArrayEvent>,
    pub ios_by_cause: std::collections::HashMap<IoCause, u64>,
    /// Latent sector errors injected into the members.
    pub bad_sectors: Vec<BadSectors>,
    /// Read errors returned to the machine, per device, on reads of more
    /// than one sector: a read repair reads each sector of a failing range
    /// alone to find the bad ones, which is the same error again (the
    /// array counts one per repaired shard).
    pub read_errors_returned: Vec<u64>,
    /// Devices whose I/Os never complete (a hung member): `step` and `run`
    /// leave them in flight; a crash drops them.
    pub hung_devices: Vec<usize>,
    pub journal: Option<MemJournal>,
    journal_inflight: Vec<JournalBatch>,
    /// Reads land in pooled, aligned buffers, as from a real member.
    read_buffers: eraid_buffers::BufferPool,
    /// The address range of every read buffer handed to the machine, so a
    /// test can tell its bytes passed on from a copy of them.
    pub read_buffer_spans: Vec<std::ops::Range<usize>>,
}

impl MemHarness {
    /// Creates the members and writes a new array's metadata onto them.
    pub fn create(geometry: Geometry, seed: u64) -> MemHarness {
        Self::create_with_regions(geometry, seed, None)
    }

    /// `create`, with write-intent bitmap regions of `stripes_per_region`
    /// stripes (default: the real granularity), so small test arrays can
    /// have several regions.
    pub fn create_with_regions(
        geometry: Geometry,
        seed: u64,
        stripes_per_region: Option<u64>,
    ) -> MemHarness {
        let member_bytes = geometry.data_offset_bytes + geometry.member_data_bytes;
        let members = (0..geometry.member_count)
            .map(|_| {
                Some(MemMember {
                    durable: vec![0; member_bytes as usize],
                    current: vec![0; member_bytes as usize],
                    unflushed: Vec::new(),
                    failed: false,
                })
            })
            .collect();
        let mut harness = MemHarness {
            members,
            rng: ChaCha8Rng::seed_from_u64(seed),
            now: TimeNs(0),
            inflight: Vec::new(),
            replies: Vec::new(),
            events: Vec::new(),
            ios_by_cause: Default::default(),
            bad_sectors: Vec::new(),
            read_errors_returned: Vec::new(),
            hung_devices: Vec::new(),
            journal: None,
            journal_inflight: Vec::new(),
            read_buffers: eraid_buffers::BufferPool::new(1 << 20),
            read_buffer_spans: Vec::new(),
        };
        let sb = new_superblock(
            geometry,
            format!("array-{seed}"),
            (0..geometry.member_count)
                .map(|i| NewMember {
                    uuid: format!("member-{seed}-{i}"),
                    path_hint: format!("mem{i}"),
                })
                .collect(),
            0,
        );
        let mut sb = sb;
        if let Some(stripes) = stripes_per_region {
            sb.bitmap_stripes_per_region = stripes;
        }
        for (member, offset, bytes) in initial_writes(&sb, false) {
            let m = harness.members[member].as_mut().expect("member");
            m.write(offset, &bytes);
        }
        harness.flush_all();
        harness
    }

    fn flush_all(&mut self) {
        for m in self.members.iter_mut().flatten() {
            m.flush();
        }
    }

    /// Appends `count` blank members of `size_bytes` (for growth) and
    /// describes them as a driver would to `AdminCommand::StartGrow`.
    pub fn add_blank_members(
        &mut self,
        count: usize,
        size_bytes: u64,
    ) -> Vec<crate::growth::config::NewMember> {
        (0..count)
            .map(|_| {
                let index = self.members.len();
                self.members.push(Some(MemMember {
                    durable: vec![0; size_bytes as usize],
                    current: vec![0; size_bytes as usize],
                    unflushed: Vec::new(),
                    failed: false,
                }));
                crate::growth::config::NewMember {
                    uuid: format!("added-{index}-{}", self.rng.gen::<u32>()),
                    path_hint: format!("mem{index}"),
                    size_bytes,
                }
            })
            .collect()
    }

    /// Reassembles and puts the devices in the order a driver serves an
    /// assembled array: slot i is device i (None if missing), spare j is
    /// device member_count + j. Devices the array no longer knows (a
    /// replaced member) are dropped. Needed before reopening an array
    /// whose slots were taken over by replacements.
    pub fn arrange_for_assembly(&mut self) -> Result<Assembly, AssemblyError> {
        let assembly = loop {
            match self.assemble() {
                Err(
                    AssemblyError::ReplacedMember { path, .. }
                    | AssemblyError::Retired { path, .. }
                    | AssemblyError::SlotBeyondArray { path, .. },
                ) => {
                    let index: usize = path
                        .strip_prefix("mem")
                        .and_then(|i| i.parse().ok())
                        .expect("harness member paths are mem<i>");
                    self.members[index] = None;
                }
                other => break other?,
            }
        };
        let present: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].is_some())
            .collect();
        // The device each new position takes (None: left empty).
        let slots = assembly.slots.iter().map(|state| match state {
            SlotState::Present { probe } | SlotState::Stale { probe, .. } => Some(present[*probe]),
            SlotState::Missing => None,
        });
        let spares = assembly
            .spares
            .iter()
            .map(|spare| spare.map(|p| present[p]));
        let from: Vec<Option<usize>> = slots.chain(spares).collect();
        let unchanged = from.len() == self.members.len()
            && from
                .iter()
                .enumerate()
                .all(|(i, d)| *d == self.members[i].as_ref().map(|_| i));
        if unchanged {
            // Already in that order: the assembly's probe numbers hold.
            return Ok(assembly);
        }
        let mut old: Vec<Option<MemMember>> = std::mem::take(&mut self.members);
        self.members = from.iter().map(|d| d.and_then(|d| old[d].take())).collect();
        self.follow_devices(&from);
        self.assemble()
    }

    /// Device-keyed fault state follows the devices to their new
    /// positions (`from[new] = Some(old)`); that of devices left out goes.
    fn follow_devices(&mut self, from: &[Option<usize>]) {
        let new_index = |old: usize| from.iter().position(|d| *d == Some(old));
        self.bad_sectors = std::mem::take(&mut self.bad_sectors)
            .into_iter()
            .filter_map(|b| new_index(b.device).map(|device| BadSectors { device, ..b }))
            .collect();
        self.hung_devices = self
            .hung_devices
            .iter()
            .filter_map(|&d| new_index(d))
            .collect();
        let returned = std::mem::take(&mut self.read_errors_returned);
        self.read_errors_returned = from
            .iter()
            .map(|d| d.and_then(|d| returned.get(d).copied()).unwrap_or(0))
            .collect();
    }

    /// Drops the devices `keep` rejects (as a driver not given them),
    /// keeping device-keyed fault state on the right devices.
    pub fn retain_devices(&mut self, mut keep: impl FnMut(&Option<MemMember>) -> bool) {
        let from: Vec<Option<usize>> = (0..self.members.len())
            .filter(|&i| keep(&self.members[i]))
            .map(Some)
            .collect();
        let mut old = std::mem::take(&mut self.members);
        self.members = from.iter().map(|d| d.and_then(|d| old[d].take())).collect();
        self.follow_devices(&from);
    }

    pub fn probes(&self) -> Vec<MemberProbe> {
        self.probes_of(|m| &m.current)
    }

    /// Probes of what is durable on each member: what any power loss now
    /// would leave, whatever happens to writes not yet flushed.
    pub fn durable_probes(&self) -> Vec<MemberProbe> {
        self.probes_of(|m| &m.durable)
    }

    fn probes_of(&self, image: impl Fn(&MemMember) -> &Vec<u8>) -> Vec<MemberProbe> {
        self.members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                m.as_ref().map(|m| MemberProbe {
                    path: format!("mem{i}"),
                    metadata: Ok(image(m)[..METADATA_BYTES as usize].to_vec()),
                    size_bytes: image(m).len() as u64,
                })
            })
            .collect()
    }

    pub fn assemble(&self) -> Result<Assembly, AssemblyError> {
        assemble(&self.probes())
    }

    /// Moves every pending output of the machine into the harness.
    pub fn collect(&mut self, machine: &mut dyn Machine) {
        while let Some(io) = machine.poll_io() {
            self.inflight.push(io);
        }
        while let Some(reply) = machine.poll_reply() {
            self.replies.push(reply);
        }
        while let Some(event) = machine.poll_event() {
            self.events.push(event);
        }
        while let Some(batch) = machine.poll_journal() {
            self.journal_inflight.push(batch);
        }
    }

    /// A journal batch is in flight.
    pub fn journal_busy(&self) -> bool {
        !self.journal_inflight.is_empty()
    }

    pub fn inflight(&self) -> usize {
        self.inflight.len()
    }

    /// Completes one in-flight I/O chosen at random (never one of a hung
    /// device); false if none.
    pub fn step(&mut self, machine: &mut dyn Machine) -> bool {
        self.collect(machine);
        if !self.hung_devices.is_empty() {
            return self.step_around_hung(machine);
        }
        let total = self.inflight.len() + self.journal_inflight.len();
        if total == 0 {
            return false;
        }
        let index = self.rng.gen_range(0..total);
        if index >= self.inflight.len() {
            self.complete_journal_batch(machine, index - self.inflight.len());
        } else {
            self.complete_at(machine, index);
        }
        true
    }

    fn step_around_hung(&mut self, machine: &mut dyn Machine) -> bool {
        let answering: Vec<usize> = (0..self.inflight.len())
            .filter(|&i| !self.hung_devices.contains(&self.inflight[i].member))
            .collect();
        let total = answering.len() + self.journal_inflight.len();
        if total == 0 {
            return false;
        }
        let index = self.rng.gen_range(0..total);
        if index >= answering.len() {
            self.complete_journal_batch(machine, index - answering.len());
        } else {
            self.complete_at(machine, answering[index]);
        }
        true
    }

    /// I/Os in flight on hung devices.
    pub fn hung_inflight(&self) -> usize {
        self.inflight
            .iter()
            .filter(|io| self.hung_devices.contains(&io.member))
            .count()
    }

    /// Completes the oldest journal batch in flight; false if none is.
    pub fn step_journal(&mut self, machine: &mut dyn Machine) -> bool {
        self.collect(machine);
        if self.journal_inflight.is_empty() {
            return false;
        }
        self.complete_journal_batch(machine, 0);
        true
    }

    fn complete_journal_batch(&mut self, machine: &mut dyn Machine, index: usize) {
        let batch = self.journal_inflight.swap_remove(index);
        self.now = TimeNs(self.now.0 + self.rng.gen_range(10_000..500_000));
        let journal = self.journal.as_mut().expect("a batch needs the journal");
        let result = if journal.failed {
            Err("journal failed (injected)".to_string())
        } else {
            for (offset, bytes) in &batch.writes {
                let at = *offset as usize;
                journal.image[at..at + bytes.len()].copy_from_slice(bytes);
            }
            Ok(())
        };
        machine.handle_journal_done(self.now, batch.id, result);
        self.collect(machine);
    }

    /// The I/Os issued and not yet completed.
    pub fn inflight_ios(&self) -> &[DeviceIo] {
        &self.inflight
    }

    /// Completes the first in-flight I/O `pick` chooses (others stay in
    /// flight, to hold a chosen I/O back); false if it chose none.
    pub fn step_where(
        &mut self,
        machine: &mut dyn Machine,
        pick: impl Fn(&DeviceIo) -> bool,
    ) -> bool {
        self.collect(machine);
        let Some(index) = self.inflight.iter().position(pick) else {
            return false;
        };
        self.complete_at(machine, index);
        true
    }

    fn complete_at(&mut self, machine: &mut dyn Machine, index: usize) {
        let io = self.inflight.swap_remove(index);
        *self.ios_by_cause.entry(io.cause).or_default() += 1;
        self.now = TimeNs(self.now.0 + self.rng.gen_range(10_000..2_000_000));
        let completion = self.perform(&io);
        machine.handle_completion(self.now, io.id, completion);
        if let Some(deadline) = machine.poll_timeout() {
            if deadline <= self.now {
                machine.handle_tick(self.now);
            }
        }
        self.collect(machine);
    }

    fn perform(&mut self, io: &DeviceIo) -> IoCompletion {
        if let Some(completion) = self.bad_sector_outcome(io) {
            return completion;
        }
        let Some(member) = self.members.get_mut(io.member).and_then(|m| m.as_mut()) else {
            return IoCompletion::Failed(format!("member {} is absent", io.member));
        };
        if member.failed {
            return IoCompletion::Failed(format!("member {} failed (injected)", io.member));
        }
        match &io.op {
            DeviceOp::Read {
                offset_bytes,
                len_bytes,
            } => {
                assert_eq!(offset_bytes % SECTOR_BYTES, 0);
                let at = *offset_bytes as usize;
                let mut buf = self.read_buffers.take(*len_bytes);
                buf.copy_from_slice(&member.current[at..at + len_bytes]);
                let start = buf.as_ptr() as usize;
                self.read_buffer_spans.push(start..start + len_bytes);
                IoCompletion::Read(buf.into())
            }
            DeviceOp::Write { offset_bytes, data } => {
                assert_eq!(offset_bytes % SECTOR_BYTES, 0);
                assert!(
                    *offset_bytes as usize + data.len() <= member.current.len(),
                    "write beyond member end"
                );
                member.write(*offset_bytes, data);
                IoCompletion::Done
            }
            DeviceOp::WriteZeroes {
                offset_bytes,
                len_bytes,
            } => {
                assert_eq!(offset_bytes % SECTOR_BYTES, 0);
                let end = (*offset_bytes + *len_bytes) as usize;
                assert!(end <= member.current.len(), "zeroes beyond member end");
                member.write(*offset_bytes, &vec![0; *len_bytes as usize]);
                IoCompletion::Done
            }
            DeviceOp::Flush => {
                member.flush();
                IoCompletion::Done
            }
        }
    }

    /// What a latent sector error makes of `io`, if it touches one: a
    /// read fails with a read error; a write heals it, fails, or lands
    /// without healing it, as its kind says.
    fn bad_sector_outcome(&mut self, io: &DeviceIo) -> Option<IoCompletion> {
        let (offset_bytes, len_bytes, is_read) = match &io.op {
            DeviceOp::Read {
                offset_bytes,
                len_bytes,
            } => (*offset_bytes, *len_bytes as u64, true),
            DeviceOp::Write { offset_bytes, data } => (*offset_bytes, data.len() as u64, false),
            DeviceOp::WriteZeroes {
                offset_bytes,
                len_bytes,
            } => (*offset_bytes, *len_bytes, false),
            DeviceOp::Flush => return None,
        };
        let hit = self
            .bad_sectors
            .iter()
            .position(|b| b.overlaps(io.member, offset_bytes, len_bytes))?;
        let kind = self.bad_sectors[hit].kind;
        if is_read {
            if self.read_errors_returned.len() <= io.member {
                self.read_errors_returned.resize(io.member + 1, 0);
            }
            if len_bytes > crate::geometry::SECTOR_BYTES {
                self.read_errors_returned[io.member] += 1;
            }
            return Some(IoCompletion::ReadError(format!(
                "member {}: read at {offset_bytes} hit a bad sector (injected)",
                io.member
            )));
        }
        match kind {
            BadSectorKind::HealsOnWrite => {
                self.bad_sectors.remove(hit);
                None
            }
            BadSectorKind::Persists => None,
            BadSectorKind::WriteFails => Some(IoCompletion::Failed(format!(
                "member {}: write at {offset_bytes} hit a bad sector (injected)",
                io.member
            ))),
        }
    }

    /// Runs until the machine has no I/O in flight.
    pub fn run(&mut self, machine: &mut dyn Machine) {
        self.collect(machine);
        while self.step(machine) {}
    }

    /// Advances the clock and ticks the machine, then runs.
    pub fn idle(&mut self, machine: &mut dyn Machine, ms: u64) {
        self.now = self.now.plus_ms(ms);
        machine.handle_tick(self.now);
        self.run(machine);
    }

    pub fn submit(&mut self, machine: &mut dyn Machine, id: u64, op: UserOp) {
        machine.handle_request(
            self.now,
            UserRequest {
                id: RequestId(id),
                op,
            },
        );
        self.collect(machine);
    }

    pub fn take_reply(&mut self, id: u64) -> Option<UserReply> {
        let index = self.replies.iter().position(|r| r.id == RequestId(id))?;
        Some(self.replies.swap_remove(index))
    }

    /// Power loss: every in-flight and unflushed write is dropped, applied
    /// whole, or torn at a random sector boundary, per write.
    pub fn crash(&mut self) {
        for batch in std::mem::take(&mut self.journal_inflight) {
            let journal = self.journal.as_mut().expect("a batch needs the journal");
            for (offset, bytes) in batch.writes {
                let at = offset as usize;
                match self.rng.gen_range(0..3) {
                    0 => {}
                    1 => journal.image[at..at + bytes.len()].copy_from_slice(&bytes),
                    _ => {
                        let cut = self.rng.gen_range(0..bytes.len());
                        journal.image[at..at + cut].copy_from_slice(&bytes[..cut]);
                    }
                }
            }
        }
        let inflight = std::mem::take(&mut self.inflight);
        for io in inflight {
            if let (DeviceOp::Write { offset_bytes, data }, Some(Some(m))) =
                (&io.op, self.members.get_mut(io.member))
            {
                if !m.failed {
                    m.unflushed.push((*offset_bytes, data.to_vec()));
                }
            }
        }
        for m in self.members.iter_mut().flatten() {
            // In place: only the unflushed ranges differ from `durable`
            // (copying whole images dominated the simulation's time).
            let unflushed = std::mem::take(&mut m.unflushed);
            for (offset, data) in &unflushed {
                let sectors = data.len() / SECTOR_BYTES as usize;
                let offset = *offset as usize;
                match self.rng.gen_range(0..3) {
                    0 => {}
                    1 => m.durable[offset..offset + data.len()].copy_from_slice(data),
                    _ => {
                        for s in 0..sectors {
                            if self.rng.gen_bool(0.5) {
                                let at = s * SECTOR_BYTES as usize;
                                let dst = offset + at;
                                m.durable[dst..dst + SECTOR_BYTES as usize]
                                    .copy_from_slice(&data[at..at + SECTOR_BYTES as usize]);
                            }
                        }
                    }
                }
            }
            for (offset, data) in &unflushed {
                let range = *offset as usize..*offset as usize + data.len();
                m.current[range.clone()].copy_from_slice(&m.durable[range]);
            }
        }
        self.replies.clear();
        self.events.clear();
    }
}

/// Engine options for test arrays (shared by the engine's tests and the
/// simulation harness): bitmap bits cleared after 50 ms, small scrub
/// windows, resync on open.
pub fn test_array_options() -> crate::ArrayOptions {
    crate::ArrayOptions {
        bitmap_clean_delay_ms: 50,
        scrub_window_stripes: 4,
        resync_on_open: true,
        write_intent_bitmap: true,
        ..crate::ArrayOptions::default()
    }
}

/// A growth configuration for test arrays of `chunk_bytes` chunks: small
/// windows so a run sees many windows and checkpoints, and never throttled
/// (the floor is above any rate a test reaches).
pub fn test_growth_config(
    strategy: crate::growth::config::ReshapeStrategy,
    chunk_bytes: u64,
    sliding_window_bytes_max: u64,
) -> crate::growth::config::ReshapeConfig {
    crate::growth::config::ReshapeConfig {
        aggregation_bytes: 2 * chunk_bytes,
        md_window_bytes: 6 * chunk_bytes,
        sliding_window_bytes_max,
        md_page_bytes: 1024,
        speed_min_kib_s: u64::MAX / 4096,
        speed_max_kib_s: u64::MAX / 4096,
        ..crate::growth::config::ReshapeConfig::with_strategy(strategy)
    }
}

/// A rebuild configuration for test arrays of `chunk_bytes` chunks: never
/// throttled, a small window and frequent checkpoints (every 4 chunks of
/// the replacement), hot zones of 8 chunks and 2 ms slices (PRO switches
/// zones), so a run sees many of each.
pub fn test_rebuild_config(
    strategy: crate::rebuild::config::RebuildStrategy,
    chunk_bytes: u64,
) -> crate::rebuild::config::RebuildConfig {
    crate::rebuild::config::RebuildConfig {
        strategy,
        speed_min_kib_s: u64::MAX / 4096,
        speed_max_kib_s: u64::MAX / 4096,
        window_stripes: 2,
        checkpoint_bytes: 4 * chunk_bytes,
        hot_zone_bytes: 8 * chunk_bytes,
        time_slice_ms: 2,
        ..crate::rebuild::config::RebuildConfig::default()
    }
}

//! The array engine: a sans-IO state machine implementing [`Machine`] for
//! RAID-0/5/6/10. User requests are split per stripe into `StripeOp`s, which
//! lock their stripe, make sure the write intent is on disk, read what their
//! plan needs, compute, write, and complete their parent request.

mod cached_io;
mod degraded_read;
mod destage_engine;
mod execute;
mod growth_engine;
mod intent;
mod journal_engine;
mod locks;
pub mod member_health;
mod metadata_queue;
mod op;
pub mod plan;
mod read_assembly;
mod read_balance;
mod read_repair;
mod ready;
mod rebuild_engine;
mod rebuilt_row;
mod reconstruct_write;
mod scrub;
mod status;
mod submit;
mod write_gather;

use crate::geometry::{Geometry, Level};
use crate::growth::config as reshape_config;
use crate::io::*;
use crate::layout::{layout_of, Layout};
use crate::metadata::assemble::{Assembly, SlotState};
use crate::metadata::superblock::{ArrayState, MemberState, Superblock};
use crate::stripe_code::StripeCode;
use growth_engine::{Reshape, ReshapeIo};
use intent::Intent;
use locks::StripeLocks;
use metadata_queue::MetadataQueue;
use op::StripeOp;
use ready::{Ready, ReadyQueue};
use rustc_hash::FxHashMap;
use scrub::Scrub;
use std::collections::VecDeque;
use std::sync::Arc;

pub use journal_engine::{JournalCounters, JournalSetup};

/// Tunables with sensible defaults.
#[derive(Clone, Debug)]
pub struct ArrayOptions {
    /// A region's intent bit is cleared once no write touched it for this long.
    pub bitmap_clean_delay_ms: u64,
    /// Stripes a check or resync works on at once.
    pub scrub_window_stripes: usize,
    /// Start resyncing dirty regions as soon as the array opens.
    pub resync_on_open: bool,
    /// Keep a write-intent bitmap (set and flushed before writes land). Off,
    /// writes carry no metadata cost (as Linux MD without an internal
    /// bitmap, the papers' baseline), and an unclean shutdown resyncs the
    /// whole array.
    pub write_intent_bitmap: bool,
    /// Settings of rebuilds started from now on when the array has none
    /// recorded (a rebuild keeps its own in the superblock).
    pub rebuild: crate::rebuild::config::RebuildConfig,
    /// The write-back cache (policy `none`: none). Check it with
    /// `CacheConfig::validate` before `Array::open`.
    pub cache: crate::cache::config::CacheConfig,
    /// A member whose read errors (counted, halved per hour without one)
    /// exceed this is failed instead of repaired (Linux MD's
    /// `max_read_errors`, default 20).
    pub max_read_errors: u32,
    /// A device I/O not completed within this fails its member (None: wait
    /// forever, as the simulator's modelled disks never hang).
    pub member_timeout_ms: Option<u64>,
    /// A deliberate bug for the deterministic simulation harness to find
    /// (proof that it can fail); never set outside tests.
    #[doc(hidden)]
    pub planted_bug: Option<PlantedBug>,
    /// The journal (None: no journal; writes are acknowledged without one,
    /// as before, or from the cache as the paper's NVS in the simulator).
    pub journal: Option<JournalSetup>,
    /// How long the tail of a sequential write may wait, holding its
    /// stripe, for the next request to complete the stripe (0: never; see
    /// `write_gather`). The simulator leaves it off.
    pub write_gather_window_us: u64,
}

/// Bugs the simulation harness must be able to catch (test-only).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    /// A user flush (or FUA write) is acknowledged as soon as the member
    /// flushes are issued, not when they complete.
    FlushReplyBeforeMemberFlushes,
    /// A repaired read error is not counted (`read_errors_corrected`).
    ReadErrorRepairNotCounted,
    /// A member I/O past the member timeout is waited for forever.
    MemberTimeoutIgnored,
}

impl Default for ArrayOptions {
    fn default() -> Self {
        ArrayOptions {
            bitmap_clean_delay_ms: 5_000,
            scrub_window_stripes: 16,
            resync_on_open: true,
            write_intent_bitmap: true,
            rebuild: Default::default(),
            cache: Default::default(),
            planted_bug: None,
            max_read_errors: member_health::DEFAULT_MAX_READ_ERRORS,
            member_timeout_ms: None,
            journal: None,
            write_gather_window_us: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Marking the superblocks dirty; requests wait.
    Opening,
    Running,
    /// No new requests; draining, then flush, bitmap, clean superblock.
    Closing(CloseStage),
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CloseStage {
    Draining,
    Flushing,
    WritingMetadata,
}

/// Who is waiting for a device I/O.
#[derive(Clone, Copy, Debug)]
enum Owner {
    Op {
        op: u64,
        shard: usize,
        is_read: bool,
    },
    Metadata,
    Flush {
        id: u64,
    },
    Reshape(ReshapeIo),
    /// A read-error repair of an op's shard (`read_repair`).
    Repair {
        op: u64,
        shard: usize,
    },
    /// One sector of a repair's bad shard, read alone to learn which
    /// sectors really fail (only those are rewritten).
    RepairProbe {
        op: u64,
        shard: usize,
        sector: usize,
    },
    /// A member write replayed from the journal at start.
    JournalReplay,
}

/// A device I/O ready to issue (a stripe op's write held until its
/// journal record is durable).
struct ParkedIo {
    device: usize,
    member: usize,
    op: DeviceOp,
    cause: IoCause,
    owner: Owner,
}

/// Why a set of member flushes was issued.
#[derive(Clone, Debug)]
enum FlushPurpose {
    /// A user flush (or a FUA write) replies when done.
    Reply(RequestId),
    /// Lazy bitmap clearing: clear these regions if unwritten meanwhile.
    Clean(Vec<(u64, u64)>),
    Close,
    /// A growth window's backup copy must be durable before it is recorded.
    ReshapeBackup,
    /// Copied data must be durable before a checkpoint says so.
    ReshapeCheckpoint,
    /// The planted bug's flush: already answered, nothing to do when done.
    PlantedEarlyReply,
    /// Rebuilt stripes below `position` must be durable on the
    /// replacements before the rebuild record says so (`pass` tells an
    /// earlier pass's flush apart).
    RebuildCheckpoint {
        pass: u64,
        position: u64,
    },
    /// Writes of journal records below `below` must be durable on the
    /// members before a checkpoint retires them.
    JournalCheckpoint {
        below: u64,
    },
}

struct FlushWait {
    purpose: FlushPurpose,
    pending: usize,
    /// A member failed under this flush: what it covered is durable only
    /// once that failure is recorded (else a crash brings the member back
    /// as current).
    member_failed: bool,
}

/// A user request being served.
struct Pending {
    remaining_ops: usize,
    /// A read's result as its ops complete; None for other requests.
    read: Option<read_assembly::ReadAssembly>,
    error: Option<UserError>,
    fua: bool,
    /// Logical chunks the request touches (a growth window waits for these).
    chunks: std::ops::Range<u64>,
    /// Cached bytes laid over a read's result: (offset in it, bytes).
    overlay: Vec<(usize, Bytes)>,
}

/// Idle parity buffers the array keeps for reuse, at most.
const PARITY_BUFFERS_CACHED_BYTES_MAX: u64 = 16 << 20;

pub struct Array {
    geometry: Geometry,
    layout: Box<dyn Layout>,
    code: Option<Arc<StripeCode>>,
    superblock: Superblock,
    /// Whether each member slot can be used now.
    present: Vec<bool>,
    options: ArrayOptions,
    phase: Phase,
    now: TimeNs,
    next_io_id: u64,
    next_op_id: u64,
    gather: write_gather::WriteGather,
    /// Full-stripe parity is encoded into these: aligned (ISA-L's
    /// `xor_gen`, O_DIRECT members without a bounce copy), and neither
    /// allocated nor zeroed per stripe once warm. Pure memory: which
    /// buffer a stripe gets changes no result.
    parity_buffers: eraid_buffers::BufferPool,
    next_flush_id: u64,
    /// Who waits for each I/O, the device it went to, and where it leaves
    /// that device's head (`read_balance`).
    io_owner: FxHashMap<IoId, (Owner, usize, Option<u64>)>,
    /// Each device's head and I/Os in flight, for RAID-10's read balance.
    heads: read_balance::DeviceHeads,
    /// I/Os MD's in-flight idle test counts at completion: member, bytes,
    /// and whether it is the growth's own (see `md_idle_in_flight`).
    idle_counted: FxHashMap<IoId, (usize, u64, bool)>,
    outbox_io: VecDeque<DeviceIo>,
    outbox_reply: VecDeque<UserReply>,
    outbox_event: VecDeque<ArrayEvent>,
    requests: FxHashMap<RequestId, Pending>,
    /// Requests that arrived while opening.
    held: VecDeque<UserRequest>,
    /// Boxed: an op moves out and back in as it goes, a pointer not a copy.
    ops: FxHashMap<u64, Box<StripeOp>>,
    /// Finished ops' boxes, reused by the next (see `create_op`).
    #[expect(
        clippy::vec_box,
        reason = "the boxes are what is reused: `ops` holds boxes"
    )]
    spare_ops: Vec<Box<StripeOp>>,
    locks: StripeLocks,
    intent: Intent,
    metadata: MetadataQueue,
    flushes: FxHashMap<u64, FlushWait>,
    clean_cycle_active: bool,
    scrub: Option<Scrub>,
    /// Dirty regions that could not be resynced (degraded at open).
    unresynced_regions: Vec<u64>,
    /// The superblocks said the last run did not close cleanly.
    opened_unclean: bool,
    /// The growth in progress, if any.
    reshape: Option<Reshape>,
    /// When each user request in flight arrived (for latency-aware pacing).
    arrivals: FxHashMap<RequestId, TimeNs>,
    /// Members absent since the start and still recorded current (no data
    /// written without them yet); the first write records them faulty.
    absent_unrecorded: Vec<usize>,
    /// The superblock write recording them, until it is durable.
    absent_record_generation: Option<u64>,
    /// User flushes that saw a member fail, waiting for the failure to be
    /// on disk before they are acknowledged: (superblock generation, id).
    flush_replies_waiting_record: Vec<(u64, RequestId)>,
    /// The superblock write recording the last member failure. Writes the
    /// failed member completed but never flushed are lost with it, so no
    /// flush is acknowledged before that record is durable: else a crash
    /// brings the member back (its failure unrecorded) without them.
    failure_record_generation: u64,
    /// Work made ready inside a handler, run by `run_ready` (no recursion).
    ready: ReadyQueue,
    /// The device (the driver's index, `DeviceIo::member`) serving each
    /// member slot. The identity at open; a replacement or a spare taking
    /// a slot over is served by a device of its own.
    slot_device: Vec<usize>,
    /// Per spare of `superblock.spares`, its device (None: not given).
    spare_devices: Vec<Option<usize>>,
    /// Devices the driver serves: the next one added gets this index.
    device_count: usize,
    /// The rebuild in progress, if any.
    rebuild: Option<rebuild_engine::Rebuild>,
    /// Rebuild passes started so far (each pass's number is unique).
    rebuild_passes: u64,
    /// When the last user request arrived (the rebuild's idle rule).
    last_user_request: Option<TimeNs>,
    /// The write-back cache and its destage engine (None: policy none).
    cache: Option<destage_engine::DestageEngine>,
    /// Per device: read errors, latency; I/O deadlines.
    health: member_health::Health,
    /// The journal that makes writes durable before they are acknowledged.
    journal: Option<journal_engine::JournalEngine>,
}

impl Array {
    /// Builds the engine from an assembly. It starts by marking the members'
    /// superblocks dirty (and recording missing or stale members as faulty).
    pub fn open(assembly: Assembly, options: ArrayOptions, now: TimeNs) -> Array {
        let geometry = assembly.superblock.geometry;
        let crs_growths = assembly.superblock.crs_growths();
        let layout = layout_of(
            &geometry,
            assembly.superblock.placement.as_ref(),
            &crs_growths,
        );
        // The superblock's validation built this code once already.
        let code = StripeCode::for_array(&geometry, &crs_growths)
            .expect("a validated geometry has a code")
            .map(Arc::new);
        let present: Vec<bool> = assembly
            .slots
            .iter()
            .map(|s| matches!(s, SlotState::Present { .. }))
            .collect();
        let mut superblock = assembly.superblock;
        // A growth cannot wait: its first step writes. Otherwise an absent
        // member stays current until the first data write without it.
        let growth_unfinished = superblock
            .reshape
            .as_ref()
            .is_some_and(|r| r.state != crate::growth::record::ReshapeState::Done);
        let mut absent_unrecorded = Vec::new();
        let events = superblock.events;
        for (slot, &here) in present.iter().enumerate() {
            let record = &mut superblock.members[slot];
            if here {
                record.absent_unwritten_since_events = None;
            } else if record.state == MemberState::Active && !growth_unfinished {
                record.absent_unwritten_since_events.get_or_insert(events);
                absent_unrecorded.push(slot);
            } else if record.state == MemberState::Active {
                record.state = MemberState::Faulty;
                record.absent_unwritten_since_events = None;
                record.failure = Some("missing when the array started during a growth".into());
            } else if record.state == MemberState::Rebuilding {
                // Only partly rebuilt: nothing to keep current. (A member
                // being re-added keeps its mark: what it lacks is still
                // marked in the bitmap.)
                record.state = MemberState::Faulty;
                record.failure =
                    Some("missing or stale when the array started, mid-rebuild".into());
            }
        }
        // Devices: slot i is device i, spare j device member_count + j.
        let spare_devices: Vec<Option<usize>> = assembly
            .spares
            .iter()
            .enumerate()
            .map(|(j, probe)| probe.map(|_| geometry.member_count + j))
            .collect();
        let device_count = geometry.member_count + spare_devices.len();
        if let Err(reason) = options.cache.validate(&geometry) {
            panic!("Array::open with an invalid cache config (validate it first): {reason}");
        }
        let cache = (options.cache.policy != crate::cache::config::CachePolicy::None)
            .then(|| destage_engine::DestageEngine::new(options.cache.clone(), &geometry));
        let mut journal = options
            .journal
            .clone()
            .map(journal_engine::JournalEngine::new);
        let mut cache = cache;
        if let Some(journal) = &mut journal {
            // Destages in flight at once are bounded by the room their
            // records have in the journal.
            let stripe_bytes = geometry.member_count as u64 * geometry.chunk_bytes;
            let window = cache.as_ref().map_or(0, |c| c.config.destage_window_units);
            let fit = journal.reserve_destage_band(stripe_bytes, window);
            if let Some(cache) = &mut cache {
                cache.config.destage_window_units = fit;
            }
        }
        let opened_unclean = superblock.state == ArrayState::Dirty;
        superblock.state = ArrayState::Dirty;
        let intent = Intent::new(
            assembly.bitmap,
            assembly.bitmap_sequence,
            superblock.bitmap_stripes_per_region,
        );
        let (re_add, bitmap_whole) = (assembly.re_add, assembly.bitmap_whole);
        let mut array = Array {
            geometry,
            layout,
            code,
            superblock,
            present,
            options,
            phase: Phase::Opening,
            now,
            next_io_id: 0,
            next_op_id: 0,
            gather: Default::default(),
            parity_buffers: eraid_buffers::BufferPool::new(PARITY_BUFFERS_CACHED_BYTES_MAX),
            next_flush_id: 0,
            io_owner: FxHashMap::default(),
            heads: read_balance::DeviceHeads::default(),
            idle_counted: FxHashMap::default(),
            outbox_io: VecDeque::new(),
            outbox_reply: VecDeque::new(),
            outbox_event: VecDeque::new(),
            requests: FxHashMap::default(),
            held: VecDeque::new(),
            ops: FxHashMap::default(),
            spare_ops: Vec::new(),
            locks: StripeLocks::default(),
            intent,
            metadata: MetadataQueue::default(),
            flushes: FxHashMap::default(),
            clean_cycle_active: false,
            scrub: None,
            unresynced_regions: Vec::new(),
            opened_unclean,
            reshape: None,
            arrivals: FxHashMap::default(),
            absent_unrecorded,
            absent_record_generation: None,
            flush_replies_waiting_record: Vec::new(),
            failure_record_generation: 0,
            ready: ReadyQueue::default(),
            slot_device: (0..geometry.member_count).collect(),
            spare_devices,
            device_count,
            rebuild: None,
            rebuild_passes: 0,
            last_user_request: None,
            cache,
            health: Default::default(),
            journal,
        };
        array.restore_read_error_counts();
        array.resume_reshape();
        array.resume_rebuild(bitmap_whole);
        array.start_re_adds_at_open(&re_add);
        // After a crash the assembled bitmap is the union of the members'
        // copies: a region may be marked on one member only (the crash kept
        // the bitmap write there alone). It goes to every member before
        // anything runs (the metadata queue is FIFO: before the superblock
        // whose durability ends the opening), or losing that member forgets
        // the region and its stale parity is never resynced (DST seed
        // 5378). A clean close wrote the same copy to every member.
        if array.opened_unclean && array.intent.desired.dirty_regions().next().is_some() {
            array.request_bitmap_write(true);
        }
        array.request_superblock_write();
        array.run_ready();
        array
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The capacity users see (the old one while a growth runs).
    pub fn capacity_bytes(&self) -> u64 {
        self.visible_capacity_bytes()
    }

    /// True while a growth is running or paused.
    pub fn reshape_in_progress(&self) -> bool {
        self.reshape.is_some()
    }

    pub fn is_degraded(&self) -> bool {
        self.present.iter().any(|p| !p)
    }

    /// True once `handle_close` has finished.
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// What the write-back cache did (None without a cache).
    pub fn cache_counters(&self) -> Option<destage_engine::CacheCounters> {
        self.cache.as_ref().map(|c| c.counters.clone())
    }

    /// What the journal did (None without a journal).
    pub fn journal_counters(&self) -> Option<JournalCounters> {
        self.journal.as_ref().map(|j| j.counters.clone())
    }

    /// Issues a held device I/O.
    fn issue_parked(&mut self, ios: Vec<ParkedIo>) {
        for io in ios {
            self.issue_to_device(io.device, io.member, io.op, io.cause, io.owner);
        }
    }

    /// True when a check or resync is running.
    pub fn scrub_running(&self) -> bool {
        self.scrub.as_ref().is_some_and(|s| !s.finished())
    }

    /// Issues an I/O to member slot `member` (its current device).
    fn issue(&mut self, member: usize, op: DeviceOp, cause: IoCause, owner: Owner) {
        assert!(member < self.geometry.member_count);
        let device = self.slot_device[member];
        self.issue_to_device(device, member, op, cause, owner);
    }

    /// Issues an I/O to `device`; `member` is the slot it serves (or a
    /// spare's number, for pacing statistics only).
    fn issue_to_device(
        &mut self,
        device: usize,
        member: usize,
        op: DeviceOp,
        cause: IoCause,
        owner: Owner,
    ) {
        assert!(device < self.device_count, "device {device} is not served");
        let id = IoId(self.next_io_id);
        self.next_io_id += 1;
        let in_flight_test = self
            .reshape_record()
            .is_some_and(|r| r.config.md_idle_in_flight);
        if let Some(reshape) = &mut self.reshape {
            let bytes = match &op {
                DeviceOp::Read { len_bytes, .. } => *len_bytes as u64,
                other => other.written_bytes(),
            };
            let user = cause == IoCause::User;
            if user {
                reshape.pacing.user_io_issued(member, bytes);
            }
            if in_flight_test && (user || cause == IoCause::Redistribution) {
                if !user {
                    reshape.pacing.sync_io_issued(member, bytes);
                }
                self.idle_counted.insert(id, (member, bytes, !user));
            }
        }
        // DOR's rebuild reads and writes go below users'; a checkpoint's
        // flush does not (users' writes would starve it).
        let low = cause == IoCause::Rebuild
            && !matches!(op, DeviceOp::Flush)
            && self
                .rebuild_record()
                .is_some_and(|r| r.config.strategy.disk_oriented());
        let head_bytes = self.heads.issued(device, &op);
        self.io_owner.insert(id, (owner, device, head_bytes));
        self.health.issued(id, device, &op, self.now);
        self.outbox_io.push_back(DeviceIo {
            id,
            member: device,
            op,
            cause,
            priority: if low {
                IoPriority::Low
            } else {
                IoPriority::Normal
            },
        });
    }

    fn member_offset_bytes(&self, member_chunk: u64, intra_bytes: u64) -> u64 {
        self.geometry.data_offset_bytes + member_chunk * self.geometry.chunk_bytes + intra_bytes
    }

    /// Marks a member failed: it is no longer read or written, and the
    /// superblocks on the others record it as faulty.
    fn fail_member(&mut self, member: usize, reason: String) {
        self.fail_member_marked(member, reason, None);
    }

    /// `fail_member`, recording that it may come back by a re-add from
    /// `re_add_from` events (None: an I/O failure, a write may be lost on
    /// it, so only a full rebuild brings it back).
    fn fail_member_marked(&mut self, member: usize, reason: String, re_add_from: Option<u64>) {
        if !self.present[member] {
            return;
        }
        self.present[member] = false;
        let record = &mut self.superblock.members[member];
        record.state = MemberState::Faulty;
        record.failure = Some(crate::metadata::superblock::bounded_failure_reason(&reason));
        record.re_add_from_events = re_add_from;
        if let Some(scrub) = &mut self.scrub {
            scrub.member_failed(member);
        }
        self.rebuild_member_failed(member, &reason);
        self.outbox_event
            .push_back(ArrayEvent::MemberFailed { member, reason });
        self.request_superblock_write();
        self.failure_record_generation = self.metadata.superblock_requested;
        // A spare may take the slot over.
        self.ready.push(Ready::Rebuild);
    }

    /// A device reported an I/O error: fail the slot it serves, or drop the
    /// spare it is. A device no longer serving anything (a slot since taken
    /// over by a replacement) changes nothing.
    fn device_failed(&mut self, device: usize, reason: String) {
        if let Some(slot) = self.slot_device.iter().position(|&d| d == device) {
            self.fail_member(slot, reason);
        } else if let Some(spare) = self.spare_devices.iter().position(|&d| d == Some(device)) {
            self.drop_spare(spare, &reason);
        }
    }

    /// Records the members absent since the start as faulty (a data write
    /// is about to go on without them); returns the superblock generation
    /// that must be durable before that write, if there was any to record.
    fn record_absent_members(&mut self) -> Option<u64> {
        if self.absent_unrecorded.is_empty() {
            return None;
        }
        let events = self.superblock.events;
        for slot in std::mem::take(&mut self.absent_unrecorded) {
            let record = &mut self.superblock.members[slot];
            record.state = MemberState::Faulty;
            // Its copy is current up to when it went missing; what is
            // written from now on is marked in the bitmap and kept.
            record.re_add_from_events =
                Some(record.absent_unwritten_since_events.unwrap_or(events));
            record.absent_unwritten_since_events = None;
            record.failure =
                Some("missing when the array started; data was written without it".into());
        }
        self.request_superblock_write();
        Some(self.metadata.superblock_requested)
    }

    /// Issues a flush to every present member; `purpose` runs when all finish.
    fn flush_members(&mut self, purpose: FlushPurpose) {
        let purpose = match purpose {
            FlushPurpose::Reply(request)
                if self.options.planted_bug == Some(PlantedBug::FlushReplyBeforeMemberFlushes) =>
            {
                self.reply_flush(request);
                FlushPurpose::PlantedEarlyReply
            }
            other => other,
        };
        let id = self.next_flush_id;
        self.next_flush_id += 1;
        let members: Vec<usize> = (0..self.geometry.member_count)
            .filter(|&m| self.present[m])
            .collect();
        // Flushes for bitmap clearing and close are metadata work, not the user's.
        let cause = match purpose {
            FlushPurpose::Reply(_) | FlushPurpose::PlantedEarlyReply => IoCause::User,
            FlushPurpose::Clean(_)
            | FlushPurpose::Close
            | FlushPurpose::ReshapeCheckpoint
            | FlushPurpose::RebuildCheckpoint { .. }
            | FlushPurpose::JournalCheckpoint { .. } => IoCause::Metadata,
            FlushPurpose::ReshapeBackup => IoCause::Redistribution,
        };
        // A replace's new member holds what a checkpoint records, and user
        // writes acknowledged by a flush must survive on it too.
        let replace_device = self.replace_device();
        self.flushes.insert(
            id,
            FlushWait {
                purpose,
                pending: members.len() + replace_device.iter().count(),
                member_failed: false,
            },
        );
        for member in &members {
            self.issue(*member, DeviceOp::Flush, cause, Owner::Flush { id });
        }
        if let Some((device, member)) = replace_device {
            self.issue_to_device(device, member, DeviceOp::Flush, cause, Owner::Flush { id });
        }
        if members.is_empty() && replace_device.is_none() {
            self.ready.push(Ready::FlushDone(id));
        }
    }

    fn finish_flush(&mut self, id: u64) {
        let wait = self.flushes.remove(&id).expect("flush tracked");
        match wait.purpose {
            FlushPurpose::Reply(request) => {
                let generation = self.metadata.superblock_requested;
                // A member failed under this flush, or before it with its
                // failure not yet on disk (Linux MD likewise holds write
                // completions while MD_SB_CHANGE_PENDING).
                let failure_unrecorded =
                    self.failure_record_generation > self.metadata.superblock_durable;
                if (wait.member_failed || failure_unrecorded)
                    && self.metadata.superblock_durable < generation
                {
                    self.flush_replies_waiting_record
                        .push((generation, request));
                } else {
                    self.reply_flush(request);
                }
            }
            FlushPurpose::Clean(candidates) => {
                self.clean_cycle_active = false;
                let mut changed = false;
                // A member failed under the flush: leave the regions to the
                // next cycle. (The metadata queue is FIFO, so a bitmap write
                // clearing them could not overtake the failure's record
                // anyway; this keeps the rule local.)
                // Likewise while a member that may be re-added is away: the
                // marks are what it will copy.
                let candidates = if wait.member_failed || self.keeps_bits_for_re_add() {
                    Vec::new()
                } else {
                    candidates
                };
                for (region, count) in candidates {
                    if !self.intent.inflight.contains_key(&region)
                        && self.intent.write_count(region) == count
                        && !self.intent.pinned.contains(&region)
                    {
                        self.intent.desired.set(region, false);
                        changed = true;
                    }
                }
                if changed {
                    self.request_bitmap_write(false);
                }
            }
            FlushPurpose::JournalCheckpoint { below } => {
                self.journal_checkpoint_flushed(below, wait.member_failed);
            }
            FlushPurpose::Close => {
                self.journal_close_flushed();
                // Everything is durable: only regions never resynced stay
                // set, and the marks a member that may be re-added needs.
                let keep_marks = self.keeps_bits_for_re_add();
                for region in 0..self.intent.desired.region_count() {
                    let keep = self.intent.pinned.contains(&region)
                        || self.unresynced_regions.contains(&region)
                        || (keep_marks && self.intent.desired.get(region));
                    self.intent.desired.set(region, keep);
                }
                // Clean means no region awaits a resync: marks on a clean
                // array are only a re-add's.
                self.superblock.state =
                    if self.intent.pinned.is_empty() && self.unresynced_regions.is_empty() {
                        ArrayState::Clean
                    } else {
                        ArrayState::Dirty
                    };
                // Every rebuilt stripe is durable now: record the position.
                self.rebuild_note_durable_at_close();
                self.request_bitmap_write(true);
                self.request_superblock_write();
                self.phase = Phase::Closing(CloseStage::WritingMetadata);
            }
            FlushPurpose::PlantedEarlyReply => {}
            FlushPurpose::ReshapeBackup => self.reshape_backup_flushed(),
            FlushPurpose::ReshapeCheckpoint => self.reshape_checkpoint_flushed(),
            FlushPurpose::RebuildCheckpoint { pass, position } => {
                self.rebuild_checkpoint_flushed(pass, position, wait.member_failed)
            }
        }
        self.advance_close();
    }

    fn reply_flush(&mut self, request: RequestId) {
        let result = if self.survivable() {
            Ok(None)
        } else {
            Err(self.unavailable())
        };
        self.outbox_reply.push_back(UserReply {
            id: request,
            result,
        });
    }

    /// Acknowledges the flushes whose member-failure record is now durable.
    fn wake_flush_replies(&mut self) {
        let durable = self.metadata.superblock_durable;
        let (ready, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.flush_replies_waiting_record)
                .into_iter()
                .partition(|&(generation, _)| generation <= durable);
        self.flush_replies_waiting_record = waiting;
        for (_, request) in ready {
            self.reply_flush(request);
        }
    }

    /// Whether the array still has every byte available.
    fn survivable(&self) -> bool {
        self.survivable_without(None)
    }

    /// Whether every byte would still be available with `also` failed too.
    /// A member being rebuilt counts as absent: it holds only part of its
    /// data.
    fn survivable_without(&self, also: Option<usize>) -> bool {
        let whole = |m: usize| self.member_whole(m) && also != Some(m);
        match self.geometry.level {
            Level::Raid10 => {
                let n = self.geometry.member_count as u64;
                (0..n).all(|s| {
                    let map = self.layout.stripe_map(s);
                    whole(map.data[0].member) || whole(map.parity[0].member)
                })
            }
            level => {
                let absent = (0..self.present.len()).filter(|&m| !whole(m)).count();
                absent <= level.redundancy()
            }
        }
    }

    /// The member is present and holds all its data (not being rebuilt).
    fn member_whole(&self, member: usize) -> bool {
        self.present[member] && !self.is_rebuild_target(member)
    }

    fn unavailable(&self) -> UserError {
        let absent: Vec<String> = (0..self.present.len())
            .filter(|&m| !self.member_whole(m))
            .map(|m| m.to_string())
            .collect();
        UserError::Unavailable(format!(
            "members {} are failed or missing",
            absent.join(", ")
        ))
    }

    fn advance_close(&mut self) {
        match self.phase {
            Phase::Closing(CloseStage::Draining) => {
                let scrub_idle = self.scrub.as_ref().is_none_or(|s| s.inflight == 0);
                let reshape_idle = self
                    .reshape
                    .as_ref()
                    .is_none_or(|r| !r.mover_busy() && r.blocked.is_empty());
                let cache_idle = self
                    .cache
                    .as_ref()
                    .is_none_or(|c| c.drained() || c.failed.is_some() && c.in_flight == 0);
                let journal_idle = self
                    .journal
                    .as_ref()
                    .is_none_or(|j| j.idle() || j.failed.is_some());
                if self.ops.is_empty()
                    && cache_idle
                    && journal_idle
                    && self.requests.is_empty()
                    && scrub_idle
                    && reshape_idle
                    && self.flushes.is_empty()
                {
                    self.phase = Phase::Closing(CloseStage::Flushing);
                    self.flush_members(FlushPurpose::Close);
                }
            }
            Phase::Closing(CloseStage::WritingMetadata)
                if self.metadata.is_idle()
                    && self
                        .journal
                        .as_ref()
                        .is_none_or(|j| j.idle() || j.failed.is_some()) =>
            {
                self.phase = Phase::Closed;
                self.outbox_event.push_back(ArrayEvent::Closed);
            }
            _ => {}
        }
    }
}

impl Array {
    /// Time-driven growth work, the same whichever input brought the time:
    /// close the valve periods that ended, then let the growth go on.
    fn reshape_time_passed(&mut self, now: TimeNs) {
        self.advance_reshape_valve(now);
        self.pump_reshape();
    }

    /// The array starts serving request `id` (the growth no longer holds
    /// it back): with `valve_latency = admission` that ends the time ALV's
    /// valve measures.
    pub(super) fn note_user_admitted(&mut self, id: RequestId) {
        if let Some(arrived) = self.arrivals.get(&id).copied() {
            self.time_user_for_valve(arrived, reshape_config::ValveTimedAt::Admission);
        }
    }

    /// Hands ALV's valve the time since `arrived` of a user request, if the
    /// growth's valve stops the clock at this point. The config is cloned
    /// only then: this runs for every request.
    fn time_user_for_valve(&mut self, arrived: TimeNs, point: reshape_config::ValveTimedAt) {
        let timed = self
            .reshape_record()
            .is_some_and(|r| r.config.valve_latency.timed_at() == point);
        if !timed {
            return;
        }
        let config = self.reshape_config().clone();
        if let Some(reshape) = &mut self.reshape {
            let latency_ns = self.now.0.saturating_sub(arrived.0);
            reshape.pacing.user_finished(latency_ns, &config);
        }
    }

    /// Ends ALV's valve period if it is over (see `Pacing::advance_valve`)
    /// and keeps the record's valve counters current.
    pub(super) fn advance_reshape_valve(&mut self, now: TimeNs) {
        if self.reshape_strategy() != Some(reshape_config::ReshapeStrategy::Alv) {
            return;
        }
        let config = self.reshape_config().clone();
        let Some(reshape) = &mut self.reshape else {
            return;
        };
        let mover_busy = reshape.mover_busy();
        reshape.pacing.advance_valve(now, &config, mover_busy);
        let (periods, closed) = (
            reshape.pacing.valve_periods,
            reshape.pacing.valve_closed_periods,
        );
        if let Some(record) = &mut self.superblock.reshape {
            record.counters.valve_periods = periods;
            record.counters.valve_closed_periods = closed;
        }
    }
}

impl Array {
    /// Hands a device I/O's outcome to whoever waits for it.
    fn complete_io(&mut self, io: IoId, completion: IoCompletion) {
        let (owner, device, head_bytes) = self
            .io_owner
            .remove(&io)
            .expect("completion for an I/O the core did not issue");
        self.heads.completed(device, head_bytes);
        let completion = self.classify_read_error(owner, device, completion);
        // Failures are attributed here, by device, so an I/O that a device
        // since replaced fails never fails its slot's new device.
        if let IoCompletion::Failed(reason) = &completion {
            self.device_failed(device, reason.clone());
        }
        if let Some((member, bytes, own)) = self.idle_counted.remove(&io) {
            if let Some(reshape) = &mut self.reshape {
                if own {
                    reshape.pacing.sync_io_done(member, bytes);
                } else {
                    reshape.pacing.user_io_done(member, bytes);
                }
            }
        }
        match owner {
            Owner::Op { op, shard, is_read } => self.op_io_done(op, shard, is_read, completion),
            Owner::Metadata => self.metadata_io_done(),
            Owner::Flush { id } => {
                let failed = matches!(completion, IoCompletion::Failed(_));
                let wait = self.flushes.get_mut(&id).expect("flush tracked");
                wait.member_failed |= failed;
                wait.pending -= 1;
                if wait.pending == 0 {
                    self.finish_flush(id);
                }
            }
            Owner::Reshape(io) => self.reshape_io_done(io, completion),
            Owner::Repair { op, shard } => self.repair_io_done(op, shard, completion),
            Owner::RepairProbe { op, shard, sector } => {
                self.repair_probe_done(op, shard, sector, completion)
            }
            Owner::JournalReplay => self.journal_replay_io_done(),
        }
    }

    /// A read error on a read that can be repaired is counted and kept as
    /// such, unless the member has had too many; anywhere else it fails
    /// the member like any I/O error.
    fn classify_read_error(
        &mut self,
        owner: Owner,
        device: usize,
        completion: IoCompletion,
    ) -> IoCompletion {
        let IoCompletion::ReadError(reason) = completion else {
            return completion;
        };
        let repairable = match owner {
            Owner::Op {
                op, is_read: true, ..
            } => self
                .ops
                .get(&op)
                .is_some_and(|o| o.kind != op::OpKind::Destage),
            Owner::Repair { .. } => true,
            // The error that started the repair was counted; its sectors
            // probed one by one are the same error.
            Owner::RepairProbe { .. } => return IoCompletion::ReadError(reason),
            _ => false,
        };
        if !repairable {
            return IoCompletion::Failed(reason);
        }
        let count = self.health.count_read_error(device, self.now);
        let allowed = self.options.max_read_errors;
        if count > allowed {
            self.health.note_uncorrected(device);
            return IoCompletion::Failed(format!(
                "{reason}; {count} read errors, more than the {allowed} allowed (max_read_errors)"
            ));
        }
        IoCompletion::ReadError(reason)
    }

    /// Fails the devices with an I/O in flight past the member timeout,
    /// and gives up every I/O in flight on them.
    fn expire_member_timeouts(&mut self) {
        let Some(timeout_ms) = self.options.member_timeout_ms else {
            return;
        };
        if self.options.planted_bug == Some(PlantedBug::MemberTimeoutIgnored) {
            return;
        }
        let timeout_ns = timeout_ms.saturating_mul(1_000_000);
        // One device per pass, the one waited for longest: the others may
        // only have queued behind it (see `Health::restart_clocks`).
        let Some(expired) = self.health.expired(self.now, timeout_ns).into_iter().next() else {
            return;
        };
        let reason = format!(
            "{} did not complete a {} within {} s (member timeout; waited {:.1} s)",
            self.device_name(expired.device),
            expired.what,
            timeout_ms as f64 / 1000.0,
            expired.waited_ns as f64 / 1e9
        );
        self.device_failed(expired.device, reason.clone());
        for io in self.health.in_flight_on(expired.device) {
            self.health.abandon(io);
            self.complete_io(io, IoCompletion::Failed(reason.clone()));
        }
        self.health.restart_clocks(self.now);
    }

    /// How a device is named in messages: the member or spare it serves.
    fn device_name(&self, device: usize) -> String {
        if let Some(slot) = self.slot_device.iter().position(|&d| d == device) {
            return self.slot_name(slot);
        }
        match self.spare_devices.iter().position(|&d| d == Some(device)) {
            Some(spare) => format!("spare {}", self.superblock.spares[spare].path_hint),
            None => format!("device {device}"),
        }
    }
}

impl Machine for Array {
    fn handle_request(&mut self, now: TimeNs, request: UserRequest) {
        self.now = now;
        self.arrivals.insert(request.id, now);
        self.last_user_request = Some(now);
        let buffers_exhausted = self.arrivals.len() > reshape_config::VALVE_USER_BUFFERS
            && self.reshape_record().is_some_and(|r| {
                r.config.valve_latency == reshape_config::ValveLatency::Processing
            });
        if let Some(reshape) = &mut self.reshape {
            reshape.pacing.user_arrived(now);
            // The EPU paper's user I/O rate counts the blocks users ask for.
            if let (Some((_, len_bytes)), Some(record)) =
                (request.op.byte_range(), self.superblock.reshape.as_ref())
            {
                reshape.io_slots.charge(now, len_bytes, &record.config);
            }
            if buffers_exhausted {
                reshape.pacing.user_congested();
            }
        }
        match self.phase {
            // Acknowledged writes the journal replays come before any new
            // request (a read must see them; a new write must land after).
            Phase::Opening => self.held.push_back(request),
            Phase::Running if self.journal_replaying() => self.held.push_back(request),
            // A held write may need a checkpoint started: `run_ready`
            // lets the growth go on.
            Phase::Running => self.submit(request),
            Phase::Closing(_) | Phase::Closed => self.outbox_reply.push_back(UserReply {
                id: request.id,
                result: Err(UserError::ShuttingDown),
            }),
        }
        self.run_ready();
    }

    fn handle_completion(&mut self, now: TimeNs, io: IoId, completion: IoCompletion) {
        self.now = now;
        if !self.health.completed(io, now) {
            // Timed out earlier: the array went on without it.
            return;
        }
        self.complete_io(io, completion);
        self.run_ready();
    }

    fn handle_tick(&mut self, now: TimeNs) {
        self.now = now;
        self.expire_member_timeouts();
        self.reshape_time_passed(now);
        self.release_gathering_due(false);
        if self.rebuild.is_some() {
            self.ready.push(Ready::Rebuild);
        }
        if self.phase == Phase::Running && !self.clean_cycle_active && !self.keeps_bits_for_re_add()
        {
            let delay_ns = self.options.bitmap_clean_delay_ms * 1_000_000;
            let candidates = self.intent.clear_candidates(now, delay_ns);
            if !candidates.is_empty() {
                self.clean_cycle_active = true;
                self.flush_members(FlushPurpose::Clean(candidates));
            }
        }
        self.run_ready();
    }

    fn handle_close(&mut self, now: TimeNs) {
        self.now = now;
        match self.phase {
            Phase::Closing(_) | Phase::Closed => {}
            Phase::Opening | Phase::Running => {
                self.release_gathering_due(true);
                for request in std::mem::take(&mut self.held) {
                    self.outbox_reply.push_back(UserReply {
                        id: request.id,
                        result: Err(UserError::ShuttingDown),
                    });
                }
                self.phase = Phase::Closing(CloseStage::Draining);
                // Everything cached goes to the members before the close.
                self.ready.push(Ready::Destage);
                if let Some(scrub) = &mut self.scrub {
                    scrub.stop();
                }
            }
        }
        self.run_ready();
    }

    fn handle_admin(&mut self, now: TimeNs, command: AdminCommand) -> serde_json::Value {
        self.now = now;
        // Time moved: a growth waiting for it may go on now. (Its deadline
        // is relative to `self.now`; without this, an admin call landing
        // after the deadline would leave nobody to start the next window.)
        self.reshape_time_passed(now);
        let outcome = match command {
            AdminCommand::Status => Ok(()),
            AdminCommand::StartCheck { repair } => self.start_check(repair),
            AdminCommand::StartGrow { members, config } => self.start_grow(members, config),
            AdminCommand::PauseGrow => self.hold_reshape(),
            AdminCommand::ResumeGrow => self.release_reshape(),
            AdminCommand::TuneGrow(tuning) => self.tune_reshape(&tuning),
            AdminCommand::AddMember { member, spare } => self.add_member(member, spare),
            AdminCommand::FailMember { slot } => self.fail_member_by_operator(slot),
            AdminCommand::ReAddMember { slot, copy } => self.re_add_member(slot, &copy),
            AdminCommand::RemoveMember { slot } => self.remove_member(slot),
            AdminCommand::ReplaceMember { slot, member } => self.start_replace(slot, member),
            AdminCommand::PauseRebuild => self.hold_rebuild(),
            AdminCommand::ResumeRebuild => self.release_rebuild(),
            AdminCommand::TuneRebuild(tuning) => self.tune_rebuild(&tuning),
        };
        // The command's consequences run before the answer describes them.
        self.run_ready();
        match outcome {
            Ok(()) => self.status_json(),
            Err(reason) => serde_json::json!({ "error": reason }),
        }
    }

    fn poll_io(&mut self) -> Option<DeviceIo> {
        self.outbox_io.pop_front()
    }

    fn poll_reply(&mut self) -> Option<UserReply> {
        let reply = loop {
            let reply = self.outbox_reply.pop_front()?;
            // A write is answered once its journal record is durable.
            if !self.journal_hold_reply(&reply) {
                break reply;
            }
        };
        if let Some(arrived) = self.arrivals.remove(&reply.id) {
            self.time_user_for_valve(arrived, reshape_config::ValveTimedAt::Reply);
        }
        Some(reply)
    }

    fn poll_journal(&mut self) -> Option<JournalBatch> {
        self.journal_poll()
    }

    fn handle_journal_done(&mut self, now: TimeNs, batch: u64, result: Result<(), String>) {
        self.now = now;
        self.journal_batch_done(batch, result);
        self.run_ready();
    }

    fn poll_event(&mut self) -> Option<ArrayEvent> {
        self.outbox_event.pop_front()
    }

    fn poll_timeout(&self) -> Option<TimeNs> {
        // A hung member must not hang an open or a close either.
        let member_deadline = self
            .options
            .member_timeout_ms
            .filter(|_| self.phase != Phase::Closed)
            .and_then(|ms| self.health.next_deadline(ms.saturating_mul(1_000_000)));
        if self.phase != Phase::Running {
            return member_deadline.map(|t| t.max(self.now));
        }
        let clean = if self.clean_cycle_active || self.keeps_bits_for_re_add() {
            None
        } else {
            self.intent
                .next_clear_at(self.options.bitmap_clean_delay_ms * 1_000_000)
        };
        [
            clean,
            self.gather_deadline(),
            self.reshape_timeout(),
            self.rebuild_timeout(),
            member_deadline,
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.max(self.now))
    }
}

#[cfg(test)]
mod tests;

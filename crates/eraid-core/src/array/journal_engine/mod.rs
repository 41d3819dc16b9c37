//! The journal engine: makes the write-back cache durable (issue 17). Every
//! user write, trim and write of zeroes is appended to the journal as it
//! arrives and acknowledged only once the journal says it is durable;
//! every stripe op's member writes (a destage's data and parity, a write
//! through) are appended and made durable before any reaches a member, so
//! replaying them makes a stripe interrupted by a crash consistent again,
//! even with a member missing (the write hole). Records are retired by a
//! checkpoint: a member flush, then a header naming the oldest record
//! still needed. The driver writes what `poll_journal` hands it and calls
//! `handle_journal_done`; the format lives in `crate::journal`.

mod append;
mod checkpoint;
mod replay;

pub use crate::io::JournalBatch;
use crate::io::{RequestId, UserReply, UserRequest};
use crate::journal::format::{JournalHeader, MemberWrite, Record};
use crate::journal::framed::JournalBytes;
use crate::journal::ring::{Placed, Ring};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// What the driver found in the journal at start: its checkpoint and the
/// records after it, to replay before serving.
#[derive(Clone, Debug)]
pub struct JournalSetup {
    pub header: JournalHeader,
    pub found: Vec<(Placed, Record)>,
}

/// A stripe op's device writes held until their record is durable.
pub(super) struct ParkedWrites {
    pub op_id: u64,
    pub ios: Vec<super::ParkedIo>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalCounters {
    pub records: u64,
    pub bytes: u64,
    pub batches: u64,
    pub checkpoints: u64,
    pub replayed_records: u64,
    pub replay_failures: u64,
    /// Ops written without a record because the log was full and nothing
    /// could free it (see `pump_journal`).
    pub unjournaled_ops: u64,
}

struct BatchInFlight {
    id: u64,
    /// Records up to this sequence number are in it.
    last_seq: Option<u64>,
    /// The checkpoint it records: retire the records below this.
    retires_below: Option<u64>,
}

pub(super) struct JournalEngine {
    header: JournalHeader,
    ring: Ring,
    /// Placed, not yet handed to the driver.
    unsent: Vec<(u64, JournalBytes)>,
    unsent_last_seq: Option<u64>,
    /// A checkpoint's header to write with the next batch, and what it retires.
    header_due: Option<(JournalHeader, u64)>,
    in_flight: Option<BatchInFlight>,
    next_batch_id: u64,
    /// Every record numbered below this is durable.
    durable_below: u64,
    /// Replies waiting for their record (or, for a flush, every record up
    /// to the number) to be durable.
    held_replies: Vec<(u64, UserReply)>,
    /// The record of each user request not yet answered.
    request_seq: HashMap<RequestId, u64>,
    /// The record of each stripe op whose writes are not done.
    op_seq: HashMap<u64, u64>,
    /// Records still needed by requests and ops in flight (a multiset).
    live: BTreeMap<u64, u32>,
    /// Ops whose device writes wait for their record, by its number.
    parked: BTreeMap<u64, ParkedWrites>,
    /// User writes waiting for room in the log, in arrival order.
    waiting_requests: VecDeque<UserRequest>,
    /// Ops whose record waits for room, with the room they must leave.
    waiting_ops: Vec<(Record, ParkedWrites, u64)>,
    /// Room only destages' records may use, so they always find some.
    destage_band_bytes: u64,
    /// A checkpoint's flush or header write is under way.
    checkpoint_running: bool,
    pub failed: Option<String>,
    /// The superblock write recording the failure.
    failure_generation: u64,
    /// Replay: member writes to issue before serving, then user records.
    replay_member_writes: VecDeque<Vec<MemberWrite>>,
    /// User records to replay, with their sequence numbers.
    replay_user: Vec<(u64, Record)>,
    replay_ios_pending: usize,
    replay_ids: HashSet<RequestId>,
    pub counters: JournalCounters,
}

/// The first request id of replayed user records (the driver numbers its
/// own requests from 1 up).
const REPLAY_REQUEST_ID_BASE: u64 = 1 << 62;

impl JournalEngine {
    pub fn new(setup: JournalSetup) -> JournalEngine {
        let placed: Vec<Placed> = setup.found.iter().map(|(p, _)| *p).collect();
        let ring = Ring::resume(&setup.header, &placed);
        let mut replay_member_writes = VecDeque::new();
        let mut replay_user = Vec::new();
        for (placed, record) in setup.found {
            match record {
                Record::MemberWrites(writes) => replay_member_writes.push_back(writes),
                user => replay_user.push((placed.seq, user)),
            }
        }
        let replayed_records = (replay_member_writes.len() + replay_user.len()) as u64;
        JournalEngine {
            durable_below: ring.next_seq(),
            header: setup.header,
            ring,
            unsent: Vec::new(),
            unsent_last_seq: None,
            header_due: None,
            in_flight: None,
            next_batch_id: 1,
            held_replies: Vec::new(),
            request_seq: HashMap::new(),
            op_seq: HashMap::new(),
            live: BTreeMap::new(),
            parked: BTreeMap::new(),
            waiting_requests: VecDeque::new(),
            waiting_ops: Vec::new(),
            destage_band_bytes: 0,
            checkpoint_running: false,
            failed: None,
            failure_generation: 0,
            replay_member_writes,
            replay_user,
            replay_ios_pending: 0,
            replay_ids: HashSet::new(),
            counters: JournalCounters {
                replayed_records,
                ..Default::default()
            },
        }
    }

    /// Keeps room for `destages` destage records of `stripe_bytes` (data
    /// and parity) each; returns how many destages fit in a quarter of
    /// the log (the window the cache may use).
    pub fn reserve_destage_band(&mut self, stripe_bytes: u64, destages: usize) -> usize {
        let record_bytes_max = stripe_bytes + 4096;
        let fit = (self.ring.capacity_bytes() / 4 / record_bytes_max).max(1) as usize;
        let window = destages.min(fit);
        self.destage_band_bytes = window as u64 * record_bytes_max;
        window
    }

    /// Room a user's write leaves free: the destage band and a quarter of
    /// the log for the member writes of writes that go through.
    fn user_reserve_bytes(&self) -> u64 {
        self.destage_band_bytes + self.ring.capacity_bytes() / 4
    }

    /// Room a user op's member writes leave free: the destage band.
    fn user_op_reserve_bytes(&self) -> u64 {
        self.destage_band_bytes
    }

    fn live_add(&mut self, seq: u64) {
        *self.live.entry(seq).or_default() += 1;
    }

    fn live_remove(&mut self, seq: u64) {
        let count = self.live.get_mut(&seq).expect("a live record");
        *count -= 1;
        if *count == 0 {
            self.live.remove(&seq);
        }
    }

    /// The log is filling: destage and checkpoint to make room.
    pub fn under_pressure(&self) -> bool {
        self.failed.is_none()
            && (self.ring.used_bytes() * 2 > self.ring.capacity_bytes()
                || !self.waiting_requests.is_empty()
                || !self.waiting_ops.is_empty())
    }

    /// Nothing to write, nobody waiting.
    pub fn idle(&self) -> bool {
        self.unsent.is_empty()
            && self.in_flight.is_none()
            && self.header_due.is_none()
            && self.held_replies.is_empty()
            && self.parked.is_empty()
            && self.waiting_requests.is_empty()
            && self.waiting_ops.is_empty()
            && !self.checkpoint_running
    }

    pub fn status_json(&self) -> serde_json::Value {
        serde_json::json!({
            "state": if self.failed.is_some() { "failed" } else { "active" },
            "failure": self.failed,
            "size_bytes": self.header.size_bytes,
            "used_bytes": self.ring.used_bytes(),
            "records": self.counters.records,
            "record_bytes": self.counters.bytes,
            "batches": self.counters.batches,
            "checkpoints": self.counters.checkpoints,
            "replayed_records": self.counters.replayed_records,
            "replay_failures": self.counters.replay_failures,
            "unjournaled_ops": self.counters.unjournaled_ops,
            // Waiting for room in the log now: user writes (not yet
            // answered) and stripe ops' member-writes records.
            "waiting_requests": self.waiting_requests.len(),
            "waiting_ops": self.waiting_ops.len(),
            "batches_in_flight": self.in_flight.is_some() as usize,
            "held_replies": self.held_replies.len(),
        })
    }
}

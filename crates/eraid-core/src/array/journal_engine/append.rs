//! Appending records, handing batches to the driver, holding replies and
//! member writes until their records are durable, and falling back to
//! write-through when the journal fails.

use super::{BatchInFlight, JournalBatch, ParkedWrites};
use crate::array::{Array, Ready};
use crate::io::{ArrayEvent, DeviceOp, UserOp, UserReply, UserRequest};
use crate::journal::format::{MemberData, MemberWrite, Record};
use crate::journal::framed::JournalBytes;

impl Array {
    fn journal_active(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| j.failed.is_none())
    }

    /// A user write longer than the journal takes at once is refused (it
    /// would wait for room for ever, and every write behind it).
    pub(in crate::array) fn journal_check_length(
        &self,
        op: &UserOp,
        len_bytes: u64,
    ) -> Result<(), crate::io::UserError> {
        // A failed journal writes through: no record, no limit.
        let Some(journal) = self.journal.as_ref().filter(|j| j.failed.is_none()) else {
            return Ok(());
        };
        let max_bytes = crate::journal::user_write_bytes_max(journal.header.size_bytes);
        if matches!(op, UserOp::Write { .. }) && len_bytes > max_bytes {
            return Err(crate::io::UserError::TooLong {
                len_bytes,
                max_bytes,
            });
        }
        Ok(())
    }

    /// Appends the record of a user write, trim or write of zeroes before
    /// it is served. Returns the request if it must wait for room in the
    /// log (it is queued then), or the request to serve now.
    pub(in crate::array) fn journal_user_request(
        &mut self,
        request: UserRequest,
    ) -> Option<UserRequest> {
        if let Some(journal) = &mut self.journal {
            let unrecorded = journal.failure_generation > self.metadata.superblock_durable;
            if journal.failed.is_some() && unrecorded && user_record(&request.op).is_some() {
                journal.waiting_requests.push_back(request);
                return None;
            }
        }
        if !self.journal_active() {
            return Some(request);
        }
        if self.journal_seq_of(request.id).is_some() {
            // Admitted from the queue: its record is in already.
            return Some(request);
        }
        let Some(record) = user_record(&request.op) else {
            return Some(request);
        };
        let journal = self.journal.as_mut().expect("active journal");
        let reserve = journal.user_reserve_bytes();
        if !journal.waiting_requests.is_empty() {
            journal.waiting_requests.push_back(request);
            return None;
        }
        match journal.append(&record, reserve) {
            Some(seq) => {
                journal.request_seq.insert(request.id, seq);
                journal.live_add(seq);
                Some(request)
            }
            None => {
                journal.waiting_requests.push_back(request);
                self.ready.push(Ready::Destage);
                None
            }
        }
    }

    /// A user flush: every write acknowledged is in the journal, so it is
    /// answered once the records appended so far are durable.
    pub(in crate::array) fn journal_flush(&mut self, id: crate::io::RequestId) -> bool {
        if !self.journal_active() {
            return false;
        }
        let journal = self.journal.as_mut().expect("active journal");
        let last = journal.ring.next_seq() - 1;
        let reply = UserReply {
            id,
            result: Ok(None),
        };
        if last < journal.durable_below {
            self.outbox_reply.push_back(reply);
        } else {
            journal.held_replies.push((last, reply));
        }
        true
    }

    /// The record number a user write's cached blocks are tagged with.
    pub(in crate::array) fn journal_seq_of(&self, id: crate::io::RequestId) -> Option<u64> {
        self.journal.as_ref()?.request_seq.get(&id).copied()
    }

    /// A stripe op is about to write: with the journal on, its writes are
    /// recorded first and held until durable. Returns the ios to issue now.
    pub(in crate::array) fn journal_op_writes(
        &mut self,
        op_id: u64,
        ios: Vec<crate::array::ParkedIo>,
        destage: bool,
    ) -> Vec<crate::array::ParkedIo> {
        if !self.journal_active() || ios.is_empty() {
            return ios;
        }
        let writes = ios
            .iter()
            .filter_map(|io| {
                let data = match &io.op {
                    DeviceOp::Write { data, .. } => MemberData::Bytes(data.clone()),
                    DeviceOp::WriteZeroes { len_bytes, .. } => MemberData::Zeroes {
                        len_bytes: *len_bytes,
                    },
                    DeviceOp::Read { .. } | DeviceOp::Flush => return None,
                };
                let offset_bytes = match &io.op {
                    DeviceOp::Write { offset_bytes, .. }
                    | DeviceOp::WriteZeroes { offset_bytes, .. } => *offset_bytes,
                    _ => unreachable!("filtered above"),
                };
                // A replace's copy to its new member is not needed to
                // make the stripe consistent.
                (io.device == self.slot_device[io.member]).then_some(MemberWrite {
                    slot: io.member as u32,
                    offset_bytes,
                    data,
                })
            })
            .collect();
        let record = Record::MemberWrites(writes);
        let parked = ParkedWrites { op_id, ios };
        let journal = self.journal.as_mut().expect("active journal");
        let reserve = if destage {
            0
        } else {
            journal.user_op_reserve_bytes()
        };
        // Ops on one stripe never wait together (the stripe lock), so
        // records of waiting ops need no order among themselves.
        match journal.append(&record, reserve) {
            Some(seq) => {
                journal.op_seq.insert(op_id, seq);
                journal.live_add(seq);
                journal.parked.insert(seq, parked);
            }
            None => {
                journal.waiting_ops.push((record, parked, reserve));
                self.ready.push(Ready::Destage);
            }
        }
        Vec::new()
    }

    /// A stripe op finished: its record is no longer needed by it.
    pub(in crate::array) fn journal_op_finished(&mut self, op_id: u64) {
        if let Some(journal) = &mut self.journal {
            if let Some(seq) = journal.op_seq.remove(&op_id) {
                journal.live_remove(seq);
            }
        }
    }

    /// Holds a reply until its record is durable; false lets it out now.
    pub(in crate::array) fn journal_hold_reply(&mut self, reply: &UserReply) -> bool {
        let Some(journal) = &mut self.journal else {
            return false;
        };
        if journal.replay_ids.remove(&reply.id) {
            if reply.result.is_err() {
                journal.counters.replay_failures += 1;
            }
            if let Some(seq) = journal.request_seq.remove(&reply.id) {
                journal.live_remove(seq);
            }
            // Replayed requests have no caller; swallowed.
            return true;
        }
        let Some(seq) = journal.request_seq.remove(&reply.id) else {
            return false;
        };
        journal.live_remove(seq);
        if journal.failed.is_none() && seq >= journal.durable_below {
            journal.held_replies.push((seq, reply.clone()));
            return true;
        }
        false
    }

    /// Admits user writes and op records that waited for room, in order.
    pub(in crate::array) fn journal_admit_waiting(&mut self) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        // Destages first: they make room.
        journal.waiting_ops.sort_by_key(|(_, _, reserve)| *reserve);
        let mut still_waiting = Vec::new();
        for (record, parked, reserve) in std::mem::take(&mut journal.waiting_ops) {
            match journal.append(&record, reserve) {
                Some(seq) => {
                    journal.op_seq.insert(parked.op_id, seq);
                    journal.live_add(seq);
                    journal.parked.insert(seq, parked);
                }
                None => still_waiting.push((record, parked, reserve)),
            }
        }
        journal.waiting_ops = still_waiting;
        loop {
            let Some(journal) = &mut self.journal else {
                return;
            };
            let Some(request) = journal.waiting_requests.front() else {
                return;
            };
            let record = user_record(&request.op).expect("only writes wait for room");
            let reserve = journal.user_reserve_bytes();
            let Some(seq) = journal.append(&record, reserve) else {
                return;
            };
            let request = journal.waiting_requests.pop_front().expect("front");
            journal.request_seq.insert(request.id, seq);
            journal.live_add(seq);
            self.submit(request);
        }
    }

    /// The driver's next batch, if any.
    pub(in crate::array) fn journal_poll(&mut self) -> Option<JournalBatch> {
        let journal = self.journal.as_mut()?;
        if journal.in_flight.is_some() || journal.failed.is_some() {
            return None;
        }
        if journal.unsent.is_empty() && journal.header_due.is_none() {
            return None;
        }
        let mut writes = std::mem::take(&mut journal.unsent);
        let mut retires_below = None;
        if let Some((header, below)) = journal.header_due.take() {
            writes.push((header.slot_offset_bytes(), header.encode().into()));
            journal.header = header;
            retires_below = Some(below);
        }
        let id = journal.next_batch_id;
        journal.next_batch_id += 1;
        journal.counters.batches += 1;
        journal.in_flight = Some(BatchInFlight {
            id,
            last_seq: journal.unsent_last_seq.take(),
            retires_below,
        });
        Some(JournalBatch { id, writes })
    }

    /// The driver wrote (and synced) a batch, or failed to.
    pub(in crate::array) fn journal_batch_done(&mut self, id: u64, result: Result<(), String>) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        let Some(batch) = journal.in_flight.take_if(|b| b.id == id) else {
            return;
        };
        if let Err(reason) = result {
            self.journal_failed(reason);
            return;
        }
        if let Some(last) = batch.last_seq {
            journal.durable_below = journal.durable_below.max(last + 1);
        }
        if let Some(below) = batch.retires_below {
            journal.ring.retire_below(below);
            journal.checkpoint_running = false;
            journal.counters.checkpoints += 1;
        }
        let durable = journal.durable_below;
        let (ready, held): (Vec<_>, Vec<_>) = std::mem::take(&mut journal.held_replies)
            .into_iter()
            .partition(|(seq, _)| *seq < durable);
        journal.held_replies = held;
        let later = journal.parked.split_off(&durable);
        let parked = std::mem::replace(&mut journal.parked, later);
        for (_, reply) in ready {
            self.outbox_reply.push_back(reply);
        }
        for (_, writes) in parked {
            self.issue_parked(writes.ios);
        }
        self.journal_admit_waiting();
        self.ready.push(Ready::Destage);
    }

    /// The journal failed: nothing more is written to it. What it was to
    /// make durable goes to the members instead: held writes are answered
    /// once the cache is destaged and the members flushed, held member
    /// writes go out now (the write hole is open again), and the cache
    /// destages everything and takes no more writes.
    fn journal_failed(&mut self, reason: String) {
        // Recorded before any later write reaches a member: a journal
        // replayed after them would bring older data back.
        if let Some(record) = &mut self.superblock.journal {
            record.failed = Some(reason.clone());
        }
        self.request_superblock_write();
        let generation = self.metadata.superblock_requested;
        let journal = self.journal.as_mut().expect("journal");
        journal.failed = Some(reason.clone());
        journal.failure_generation = generation;
        journal.unsent.clear();
        journal.header_due = None;
        journal.checkpoint_running = false;
        let held = std::mem::take(&mut journal.held_replies);
        let parked = std::mem::take(&mut journal.parked);
        let waiting_ops = std::mem::take(&mut journal.waiting_ops);
        let waiting_requests = std::mem::take(&mut journal.waiting_requests);
        self.outbox_event.push_back(ArrayEvent::JournalFailed {
            reason: reason.clone(),
        });
        for (_, reply) in held {
            match (&reply.result, &mut self.cache) {
                (Ok(_), Some(cache)) => cache.flush_waiters.push(reply.id),
                _ => self.outbox_reply.push_back(reply),
            }
        }
        for (_, writes) in parked {
            self.issue_parked(writes.ios);
        }
        for (_, writes, _) in waiting_ops {
            self.issue_parked(writes.ios);
        }
        // Writes wait until the failure is recorded (`journal_recorded`).
        self.journal
            .as_mut()
            .expect("journal")
            .waiting_requests
            .extend(waiting_requests);
        self.ready.push(Ready::Destage);
    }

    /// A superblock write is durable: once it records the journal's
    /// failure, the writes held for it go on (through to the members).
    pub(in crate::array) fn journal_recorded(&mut self) {
        let durable = self.metadata.superblock_durable;
        let Some(journal) = &mut self.journal else {
            return;
        };
        if journal.failed.is_none() || journal.failure_generation > durable {
            return;
        }
        for request in std::mem::take(&mut journal.waiting_requests) {
            self.submit(request);
        }
    }
}

/// The record of a user request that changes data (None for reads and
/// flushes).
fn user_record(op: &UserOp) -> Option<Record> {
    match op {
        UserOp::Write {
            offset_bytes, data, ..
        } => Some(Record::UserWrite {
            offset_bytes: *offset_bytes,
            data: data.clone(),
        }),
        UserOp::Trim {
            offset_bytes,
            len_bytes,
        }
        | UserOp::WriteZeroes {
            offset_bytes,
            len_bytes,
            ..
        } => Some(Record::UserZeroes {
            offset_bytes: *offset_bytes,
            len_bytes: *len_bytes,
        }),
        UserOp::Read { .. } | UserOp::Flush => None,
    }
}

impl super::JournalEngine {
    /// Places a record, keeping `reserve_bytes` free; its number, or None
    /// if the log has no room now.
    fn append(&mut self, record: &Record, reserve_bytes: u64) -> Option<u64> {
        let seq = self.ring.next_seq();
        // Framed later, outside the engine lock, by the batch's writer.
        let bytes = JournalBytes::record(record.clone(), seq, self.header.journal_id);
        if !self.ring.fits(bytes.len() as u64, reserve_bytes) {
            return None;
        }
        let placed = self.ring.append(bytes.len() as u64).expect("fits");
        assert_eq!(placed.seq, seq);
        self.counters.records += 1;
        self.counters.bytes += bytes.len() as u64;
        self.unsent.push((placed.offset_bytes, bytes));
        self.unsent_last_seq = Some(seq);
        Some(seq)
    }
}

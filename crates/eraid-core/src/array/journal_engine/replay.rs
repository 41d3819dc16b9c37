//! Replay at start, before serving: first the member writes of stripe ops
//! that may have been cut short (so every such stripe is consistent again,
//! whatever member is missing), then the users' writes, through the array
//! as if they had just arrived, each keeping its record (live until it
//! is answered, then as a cached block's tag or retired by a checkpoint
//! after a member flush, like any write's). Appending them again needed
//! room the old records held, and a checkpoint could retire an old record
//! whose copy still waited for that room (DST seed 5292).

use crate::array::{Array, Owner};
use crate::io::{DeviceOp, IoCause, RequestId, UserOp, UserRequest};
use crate::journal::format::{MemberData, Record};

impl Array {
    /// Issues the journal's member writes; false if there were none to
    /// wait for. Records go out in waves: a record joins the wave unless
    /// it overlaps a write already in it (then it waits for the wave to
    /// finish), so a later record's bytes always land last.
    pub(in crate::array) fn journal_replay_members(&mut self) -> bool {
        loop {
            let Some(journal) = &mut self.journal else {
                return false;
            };
            if journal.replay_ios_pending > 0 {
                // Another superblock write finished while the replay runs.
                return true;
            }
            let mut wave: Vec<(usize, u64, u64)> = Vec::new();
            let mut ios = Vec::new();
            while let Some(record) = journal.replay_member_writes.front() {
                let span = |w: &crate::journal::format::MemberWrite| {
                    let len = match &w.data {
                        MemberData::Bytes(data) => data.len() as u64,
                        MemberData::Zeroes { len_bytes } => *len_bytes,
                    };
                    (w.slot as usize, w.offset_bytes, w.offset_bytes + len)
                };
                let overlaps = record.iter().map(span).any(|(slot, start, end)| {
                    wave.iter()
                        .any(|&(s, a, b)| s == slot && start < b && a < end)
                });
                if overlaps {
                    break;
                }
                let record = journal.replay_member_writes.pop_front().expect("front");
                wave.extend(record.iter().map(span));
                ios.extend(record);
            }
            let mut issued = 0;
            for write in ios {
                let slot = write.slot as usize;
                // A member missing now is rebuilt from the others later.
                if slot >= self.geometry.member_count || !self.present[slot] {
                    continue;
                }
                let op = match write.data {
                    MemberData::Bytes(data) => DeviceOp::Write {
                        offset_bytes: write.offset_bytes,
                        data,
                    },
                    MemberData::Zeroes { len_bytes } => DeviceOp::WriteZeroes {
                        offset_bytes: write.offset_bytes,
                        len_bytes,
                    },
                };
                self.issue(slot, op, IoCause::Destage, Owner::JournalReplay);
                issued += 1;
            }
            let journal = self.journal.as_mut().expect("journal");
            journal.replay_ios_pending = issued;
            if issued == 0 && !journal.replay_member_writes.is_empty() {
                // A wave with nothing to write (its member is missing): go
                // on with the next one here, not by recursion.
                continue;
            }
            return issued > 0;
        }
    }

    /// One replayed member write finished (a failure fails its member).
    pub(in crate::array) fn journal_replay_io_done(&mut self) {
        let journal = self.journal.as_mut().expect("replay needs the journal");
        journal.replay_ios_pending -= 1;
        if journal.replay_ios_pending == 0 && !self.journal_replay_members() {
            self.finish_open();
        }
    }

    /// Replayed user writes are not all answered yet (an answer waiting in
    /// the outbox counts: the write is in the cache or on the members):
    /// new requests wait.
    pub(in crate::array) fn journal_replaying(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| {
            j.replay_ids
                .iter()
                .any(|id| !self.outbox_reply.iter().any(|r| r.id == *id))
        })
    }

    /// The requests held while the replay ran are served once it is over.
    pub(in crate::array) fn release_held_after_replay(&mut self) {
        if self.phase == crate::array::Phase::Running
            && !self.held.is_empty()
            && !self.journal_replaying()
        {
            for request in std::mem::take(&mut self.held) {
                self.submit(request);
            }
        }
    }

    /// Submits the journal's user writes, oldest first, before any new
    /// request (those wait until all are answered: `handle_request`);
    /// their replies are swallowed.
    pub(in crate::array) fn journal_replay_users(&mut self) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        let records = std::mem::take(&mut journal.replay_user);
        for (n, (record_seq, record)) in records.into_iter().enumerate() {
            let id = RequestId(super::REPLAY_REQUEST_ID_BASE + n as u64);
            let op = match record {
                Record::UserWrite { offset_bytes, data } => UserOp::Write {
                    offset_bytes,
                    data,
                    fua: false,
                },
                Record::UserZeroes {
                    offset_bytes,
                    len_bytes,
                } => UserOp::WriteZeroes {
                    offset_bytes,
                    len_bytes,
                    fua: false,
                },
                Record::MemberWrites(_) => unreachable!("split off at setup"),
            };
            let journal = self.journal.as_mut().expect("journal");
            journal.replay_ids.insert(id);
            // Its record is in the log already (`journal_user_request`
            // admits it as it is).
            journal.request_seq.insert(id, record_seq);
            journal.live_add(record_seq);
            self.submit(UserRequest { id, op });
        }
    }
}

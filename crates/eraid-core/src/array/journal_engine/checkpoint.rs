//! Retiring records: when the log is half full (or something waits for
//! room), the cache destages and a checkpoint runs: the oldest record
//! still needed is found (by a request or op in flight, or by a dirty
//! cached block written since it), the members are flushed, and a header
//! naming it is written; only then is the space before it reused.

use crate::array::{Array, CloseStage, FlushPurpose, Phase, Ready};

impl Array {
    /// Keeps the cache destaging while the log fills (or for good once the
    /// journal failed) and starts a checkpoint when one would free space.
    pub(in crate::array) fn pump_journal(&mut self) {
        let Some(journal) = &self.journal else {
            return;
        };
        let pressure = journal.failed.is_some() || journal.under_pressure();
        if let Some(cache) = &mut self.cache {
            if cache.journal_pressure != pressure {
                cache.journal_pressure = pressure;
                if pressure {
                    self.ready.push(Ready::Destage);
                }
            }
        }
        let journal = self.journal.as_ref().expect("journal");
        if journal.failed.is_some()
            || !journal.under_pressure()
            || journal.checkpoint_running
            || !matches!(
                self.phase,
                Phase::Running | Phase::Closing(CloseStage::Draining)
            )
        {
            return;
        }
        let below = self.journal_retire_point();
        let nothing_in_flight = self.io_owner.is_empty();
        let journal = self.journal.as_mut().expect("journal");
        if below <= journal.ring.tail_seq() {
            if nothing_in_flight && journal.in_flight.is_none() && !journal.waiting_ops.is_empty() {
                // Nothing can retire a record and nothing runs that could:
                // the oldest record needs a destage whose own record finds
                // no room. That op goes out unrecorded (only its stripe is
                // exposed to the write hole until it is written).
                let (_, parked, _) = journal.waiting_ops.remove(0);
                journal.counters.unjournaled_ops += 1;
                self.issue_parked(parked.ios);
            }
            return;
        }
        journal.checkpoint_running = true;
        self.flush_members(FlushPurpose::JournalCheckpoint { below });
    }

    /// The oldest record still needed: every record below it has its
    /// writes on the members (durable after the next member flush).
    fn journal_retire_point(&self) -> u64 {
        let journal = self.journal.as_ref().expect("journal");
        let live = journal.live.keys().next().copied();
        let dirty = self.cache.as_ref().and_then(|c| c.store.oldest_dirty_tag());
        [live, dirty, Some(journal.ring.next_seq())]
            .into_iter()
            .flatten()
            .min()
            .expect("next_seq is always there")
    }

    /// The checkpoint's member flush finished: record the new tail.
    pub(in crate::array) fn journal_checkpoint_flushed(&mut self, below: u64, member_failed: bool) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        if member_failed || journal.failed.is_some() {
            // What the flush covered is durable only once the failure is
            // recorded; a later checkpoint retires these records.
            journal.checkpoint_running = false;
            return;
        }
        journal.queue_header(below);
    }

    /// The close flushed everything: the log is empty from here on.
    pub(in crate::array) fn journal_close_flushed(&mut self) {
        if let Some(journal) = &mut self.journal {
            if journal.failed.is_none() && journal.live.is_empty() {
                let below = journal.ring.next_seq();
                journal.checkpoint_running = true;
                journal.queue_header(below);
            }
        }
    }
}

impl super::JournalEngine {
    fn queue_header(&mut self, below: u64) {
        let (tail_offset_bytes, tail_seq) = self.ring.checkpoint_for(below);
        let mut header = self.header.clone();
        header.generation += 1;
        header.tail_offset_bytes = tail_offset_bytes;
        header.tail_seq = tail_seq;
        self.header_due = Some((header, below));
    }
}

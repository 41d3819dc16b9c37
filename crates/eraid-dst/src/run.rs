//! Runs one scenario: the workload with faults and the activity, then
//! recovery and the checkers. Returns Err with a description of the first
//! violation.

use crate::model::{admits, Model, Seq};
use crate::pattern::{identify, payload, Tag, ZERO_TAG};
use crate::scenario::{failures_tolerated, Activity, LatentError, Scenario, MEMBER_TIMEOUT_MS};
use eraid_core::geometry::{Level, METADATA_BYTES, SECTOR_BYTES};
use eraid_core::growth::config::NewMember;
use eraid_core::io::{AdminCommand, ArrayEvent, Machine, TimeNs, UserOp, UserReply};
use eraid_core::metadata::assemble::Assembly;
use eraid_core::metadata::superblock::Superblock;
use eraid_core::testing::{
    test_array_options, test_growth_config, test_rebuild_config, BadSectors, MemHarness, MemJournal,
};
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// What a seed exercised, summed over runs for the report.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    pub requests: u64,
    pub sectors_checked: u64,
    pub crashes: u64,
    pub member_failures: u64,
    pub growths: u64,
    pub rebuilds: u64,
    pub replaces: u64,
    pub checks: u64,
    pub refused_activities: u64,
    pub hangs: u64,
    pub hung_members_timed_out: u64,
    pub latent_errors: u64,
    pub read_errors_returned: u64,
    /// Crashes of arrays with a journal, and the records replayed after.
    pub journaled_crashes: u64,
    pub journal_records_replayed: u64,
}

impl Coverage {
    pub fn add(&mut self, other: &Coverage) {
        self.requests += other.requests;
        self.sectors_checked += other.sectors_checked;
        self.crashes += other.crashes;
        self.member_failures += other.member_failures;
        self.growths += other.growths;
        self.rebuilds += other.rebuilds;
        self.replaces += other.replaces;
        self.checks += other.checks;
        self.refused_activities += other.refused_activities;
        self.hangs += other.hangs;
        self.hung_members_timed_out += other.hung_members_timed_out;
        self.latent_errors += other.latent_errors;
        self.read_errors_returned += other.read_errors_returned;
        self.journaled_crashes += other.journaled_crashes;
        self.journal_records_replayed += other.journal_records_replayed;
    }
}

enum Pending {
    Read { first: u64, count: u64, from: Seq },
    Write { first: u64, count: u64, fua: bool },
    Flush { submitted: Seq },
}

/// A request in flight, and when it was submitted (simulated time).
struct InFlight {
    what: Pending,
    submitted_at: TimeNs,
}

/// Slack on top of the member timeouts a request may wait through (the
/// acceptance's "timeout plus 10 s").
const REPLY_SLACK_MS: u64 = 10_000;

/// Timeouts the recovery may wait through for hung members' I/Os.
const HUNG_TIMEOUTS_MAX: usize = 100;

/// Liveness: idle periods (50 ms each) the activities get to finish in
/// once faults stop.
const LIVENESS_IDLE_PERIODS: usize = 4000;

struct Sim {
    scenario: Scenario,
    rng: ChaCha8Rng,
    h: MemHarness,
    array: Array,
    options: ArrayOptions,
    model: Model,
    pending: HashMap<u64, InFlight>,
    next_id: u64,
    /// Where the last write ended (sector), for sequential seeds.
    last_write_end: Option<u64>,
    /// Device count before a growth added members (to drop blank ones).
    members_before_growth: Option<usize>,
    flush_replied: bool,
    /// Sectors in parity stripes a crash may have left inconsistent, until
    /// the resync after it is done: a member failing meanwhile loses them
    /// (the write hole, the other way round).
    unsettled_by_crash: Option<Vec<bool>>,
    coverage: Coverage,
    /// Since the array last opened: a member was failed (by the harness or
    /// the array), so a read error's repair may have been cut short.
    member_failed_since_open: bool,
    /// ERAID_DST_TRACE=1: print every request, reply and fault (replays).
    trace: bool,
}

type Outcome<T> = Result<T, String>;

pub fn run(scenario: Scenario) -> Outcome<Coverage> {
    let mut sim = Sim::start(scenario)?;
    sim.workload()?;
    sim.recover_and_check()?;
    sim.count_read_errors();
    Ok(sim.coverage)
}

impl Sim {
    fn start(scenario: Scenario) -> Outcome<Sim> {
        let mut h = MemHarness::create(scenario.geometry, scenario.seed);
        if let Some(journal_bytes) = scenario.journal_bytes {
            let uuid = format!("array-{}", scenario.seed);
            h.journal = Some(MemJournal::fresh(journal_bytes, scenario.seed, &uuid));
        }
        let mut options = ArrayOptions {
            write_intent_bitmap: scenario.bitmap,
            rebuild: test_rebuild_config(scenario.rebuild_strategy, scenario.geometry.chunk_bytes),
            planted_bug: scenario.planted_bug,
            member_timeout_ms: Some(MEMBER_TIMEOUT_MS),
            write_gather_window_us: scenario.write_gather_window_us,
            ..test_array_options()
        };
        if let Some(cache) = &scenario.cache {
            options.cache = cache.clone();
        }
        let assembly = h
            .assemble()
            .map_err(|e| format!("new array does not assemble: {e}"))?;
        let array = Array::open(assembly, with_journal(&options, &mut h)?, h.now);
        let capacity = array.capacity_bytes();
        let mut sim = Sim {
            rng: ChaCha8Rng::seed_from_u64(scenario.seed.wrapping_mul(0x2545_f491_4f6c_dd1d)),
            scenario,
            h,
            array,
            options,
            model: Model::new(capacity / SECTOR_BYTES),
            pending: HashMap::new(),
            next_id: 1,
            last_write_end: None,
            members_before_growth: None,
            flush_replied: false,
            unsettled_by_crash: None,
            coverage: Coverage::default(),
            member_failed_since_open: false,
            trace: std::env::var("ERAID_DST_TRACE").is_ok_and(|v| v == "1"),
        };
        sim.finish_opening()?;
        Ok(sim)
    }

    fn status(&self) -> serde_json::Value {
        self.array.status_json()
    }

    /// Completes I/O until the array has opened (not further: activities
    /// it starts go on alongside the workload).
    fn finish_opening(&mut self) -> Outcome<()> {
        while self.status()["phase"] == "opening" {
            if !self.h.step(&mut self.array) {
                return Err(format!("array stuck opening: {}", self.status()));
            }
        }
        self.take_replies()
    }

    fn workload(&mut self) -> Outcome<()> {
        let scenario = self.scenario.clone();
        let mut crashes = scenario.crashes.iter().peekable();
        for step in 0..scenario.steps {
            for &(at, slot) in &scenario.failures {
                if at == step {
                    self.fail_member(slot);
                }
            }
            for &(at, slot) in &scenario.hangs {
                if at == step {
                    self.hang_member(slot);
                }
            }
            for error in &scenario.latent_errors {
                if error.at_step == step {
                    self.inject_latent_error(error);
                }
            }
            self.start_activity(step)?;
            while let Some(crash) = crashes.peek() {
                let due = crash.at_step <= step && (!crash.after_flush_reply || self.flush_replied);
                if !due {
                    break;
                }
                crashes.next();
                self.crash_and_reopen()?;
            }
            self.flush_replied = false;
            self.one_action()?;
        }
        Ok(())
    }

    fn one_action(&mut self) -> Outcome<()> {
        let roll = self.rng.gen_range(0..100);
        if roll < 3 {
            // Time passes: timers (bitmap clearing, pacing) fire.
            self.h.now = self.h.now.plus_ms(self.rng.gen_range(1..60));
            self.array.handle_tick(self.h.now);
            self.h.collect(&mut self.array);
        } else if (roll < 40 || self.h.inflight() == 0)
            && self.pending.len() < self.scenario.queue_depth
        {
            self.submit_random();
        } else {
            self.complete_one();
        }
        self.take_replies()?;
        self.follow_array();
        Ok(())
    }

    /// Notes the end of the resync after a crash.
    fn follow_array(&mut self) {
        // Cheap tests first: the status is built only when it may be over.
        if self.unsettled_by_crash.is_some()
            && !self.array.scrub_running()
            && !self.array.is_degraded()
        {
            let s = self.status();
            let resyncing = s["activity"]["kind"] == "resync" && s["activity"]["state"] != "done";
            if !resyncing
                && s["unresynced_regions"] == 0
                && s["degraded"] == false
                && s["phase"] == "running"
            {
                if self.trace {
                    eprintln!("resync after the crash over: {}", s["activity"]);
                }
                self.unsettled_by_crash = None;
            }
        }
    }

    /// Completes one device I/O or journal batch, slow members' rarely.
    fn complete_one(&mut self) -> bool {
        self.h.collect(&mut self.array);
        let hung = &self.h.hung_devices;
        let ios: Vec<_> = self
            .h
            .inflight_ios()
            .iter()
            .filter(|io| !hung.contains(&io.member))
            .cloned()
            .collect();
        let journal_busy = self.h.journal_busy();
        if ios.is_empty() && !journal_busy {
            // Only hung members' I/Os are left: time passes to the next
            // deadline (the member timeout, sooner timers first).
            return self.h.hung_inflight() > 0 && self.jump_to_deadline();
        }
        let weight = |member: usize| {
            if self.scenario.slow_members.contains(&member) {
                1
            } else {
                20
            }
        };
        // The journal device answers like a member that is not slow.
        const JOURNAL_WEIGHT: u32 = 20;
        let devices_total: u32 = ios.iter().map(|io| weight(io.member)).sum();
        let journal_weight = if journal_busy { JOURNAL_WEIGHT } else { 0 };
        let mut pick = self.rng.gen_range(0..devices_total + journal_weight);
        if pick >= devices_total {
            return self.h.step_journal(&mut self.array);
        }
        let (mut chosen, mut member) = (ios[0].id, ios[0].member);
        for io in &ios {
            let w = weight(io.member);
            if pick < w {
                (chosen, member) = (io.id, io.member);
                break;
            }
            pick -= w;
        }
        if self.scenario.slow_members.contains(&member) {
            // A slow member's I/O also takes longer in time.
            self.h.now = self.h.now.plus_ms(self.rng.gen_range(0..5));
        }
        self.h.step_where(&mut self.array, |io| io.id == chosen)
    }

    fn submit_random(&mut self) {
        let sectors = self.array.capacity_bytes() / SECTOR_BYTES;
        let id = self.next_id;
        self.next_id += 1;
        let chunk_sectors = self.scenario.geometry.chunk_bytes / SECTOR_BYTES;
        let max_len = if self.rng.gen_bool(0.1) {
            4 * chunk_sectors * self.scenario.geometry.member_count as u64
        } else {
            chunk_sectors.min(16)
        };
        let count = self.rng.gen_range(1..=max_len.min(sectors));
        // Sequential seeds continue the last write most of the time (and
        // only they draw for it: the other seeds keep their draws).
        let continued = self
            .last_write_end
            .filter(|&end| self.scenario.sequential_writes && end + count <= sectors)
            .filter(|_| self.rng.gen_bool(0.7));
        let first = match continued {
            Some(end) => end,
            None => self.rng.gen_range(0..=sectors - count),
        };
        let at = self.model.tick();
        let (offset_bytes, len_bytes) = (first * SECTOR_BYTES, count * SECTOR_BYTES);
        let (op, pending) = match self.rng.gen_range(0..100) {
            0..=39 => (
                UserOp::Read {
                    offset_bytes,
                    len_bytes: len_bytes as usize,
                },
                Pending::Read {
                    first,
                    count,
                    from: at,
                },
            ),
            40..=79 => {
                let fua = self.rng.gen_bool(0.1);
                self.model.write_submitted(first, count, id, id, at);
                self.last_write_end = Some(first + count);
                (
                    UserOp::Write {
                        offset_bytes,
                        data: payload(id, first, count).into(),
                        fua,
                    },
                    Pending::Write { first, count, fua },
                )
            }
            80..=85 => {
                let fua = self.rng.gen_bool(0.2);
                self.model.write_submitted(first, count, id, ZERO_TAG, at);
                (
                    UserOp::WriteZeroes {
                        offset_bytes,
                        len_bytes,
                        fua,
                    },
                    Pending::Write { first, count, fua },
                )
            }
            86..=89 => {
                // eraid answers a trim by writing zeroes (parity stays exact).
                self.model.write_submitted(first, count, id, ZERO_TAG, at);
                (
                    UserOp::Trim {
                        offset_bytes,
                        len_bytes,
                    },
                    Pending::Write {
                        first,
                        count,
                        fua: false,
                    },
                )
            }
            _ => (UserOp::Flush, Pending::Flush { submitted: at }),
        };
        if self.trace {
            let what = match &op {
                UserOp::Read { .. } => "read",
                UserOp::Write { fua: true, .. } => "write fua",
                UserOp::Write { .. } => "write",
                UserOp::WriteZeroes { .. } => "zeroes",
                UserOp::Trim { .. } => "trim",
                UserOp::Flush => "flush",
            };
            eprintln!("[{at}] submit {id}: {what} sectors {first}+{count}");
        }
        self.pending.insert(
            id,
            InFlight {
                what: pending,
                submitted_at: self.h.now,
            },
        );
        self.coverage.requests += 1;
        self.h.submit(&mut self.array, id, op);
    }

    fn take_replies(&mut self) -> Outcome<()> {
        self.follow_events()?;
        self.model.grow(self.array.capacity_bytes() / SECTOR_BYTES);
        let replies: Vec<UserReply> = std::mem::take(&mut self.h.replies);
        for reply in replies {
            self.judge_reply(reply)?;
        }
        if self.pending.is_empty() {
            self.model.collapse();
        }
        Ok(())
    }

    fn judge_reply(&mut self, reply: UserReply) -> Outcome<()> {
        let id = reply.id.0;
        let Some(InFlight {
            what: pending,
            submitted_at,
        }) = self.pending.remove(&id)
        else {
            return Err(format!("reply to request {id}, which is not in flight"));
        };
        // Liveness: hung members are given up on at the member timeout
        // (one after another, each with a fresh timeout), so no request
        // waits longer than that.
        let waited_ms = (self.h.now.0 - submitted_at.0) / 1_000_000;
        let bound_ms = (1 + self.scenario.hangs.len() as u64) * MEMBER_TIMEOUT_MS + REPLY_SLACK_MS;
        if waited_ms > bound_ms {
            return Err(format!(
                "request {id} was answered after {waited_ms} ms, more than the {bound_ms} ms that {} hung member(s) and the {MEMBER_TIMEOUT_MS} ms member timeout allow",
                self.scenario.hangs.len()
            ));
        }
        let result = reply
            .result
            .map_err(|e| format!("request {id} failed though redundancy allows it: {e}"))?;
        let at = self.model.tick();
        if self.trace {
            eprintln!("[{at}] reply {id}");
        }
        match pending {
            Pending::Read { first, count, from } => {
                let data = result
                    .ok_or_else(|| format!("read {id} returned no data"))?
                    .to_vec();
                if data.len() as u64 != count * SECTOR_BYTES {
                    return Err(format!("read {id} returned {} bytes", data.len()));
                }
                self.judge_sectors(first, &data, from, at, &format!("read {id}"))?;
            }
            Pending::Write { first, count, fua } => {
                // The journal acknowledges a write once its record is
                // durable: every acknowledged write survives a crash.
                let durable = fua || self.scenario.journal_bytes.is_some();
                self.model.write_acked(first, count, id, at, durable);
            }
            Pending::Flush { submitted } => {
                self.model.flush_acked(submitted);
                self.flush_replied = true;
            }
        }
        Ok(())
    }

    fn judge_sectors(
        &mut self,
        first: u64,
        data: &[u8],
        from: Seq,
        to: Seq,
        what: &str,
    ) -> Outcome<()> {
        for (i, bytes) in data.chunks(SECTOR_BYTES as usize).enumerate() {
            let sector = first + i as u64;
            let found = identify(sector, bytes);
            let candidates = self.model.read_candidates(sector, from, to);
            if !admits(&candidates, found) {
                return Err(format!(
                    "{what}: sector {sector} (byte {}) holds {} but only {} are admissible",
                    sector * SECTOR_BYTES,
                    describe_tag(found),
                    candidates
                        .iter()
                        .map(|&t| describe_tag(Some(t)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            self.coverage.sectors_checked += 1;
        }
        Ok(())
    }

    fn fail_member(&mut self, slot: usize) {
        // The device now serving the slot (after a reopen, slot i is device i).
        if let Some(Some(m)) = self.h.members.get_mut(slot) {
            if !m.failed {
                if self.trace {
                    eprintln!("member {slot} fails");
                }
                m.failed = true;
                self.member_failed_since_open = true;
                self.coverage.member_failures += 1;
                // Those stripes stay inconsistent until resynced (a write
                // there by read-modify-write keeps them so): every failure
                // meanwhile may lose what they hold.
                if let Some(lost) = &self.unsettled_by_crash {
                    self.model.forget(lost);
                }
            }
        }
    }

    /// Slot `slot`'s device stops answering: its I/Os stay in flight
    /// until the array gives up on them.
    fn hang_member(&mut self, slot: usize) {
        let answering = self
            .h
            .members
            .get(slot)
            .is_some_and(|m| m.as_ref().is_some_and(|m| !m.failed));
        if answering && !self.h.hung_devices.contains(&slot) {
            if self.trace {
                eprintln!("member {slot} hangs");
            }
            self.h.hung_devices.push(slot);
            self.member_failed_since_open = true;
            self.coverage.hangs += 1;
        }
    }

    fn inject_latent_error(&mut self, error: &LatentError) {
        let answering = self
            .h
            .members
            .get(error.slot)
            .is_some_and(|m| m.as_ref().is_some_and(|m| !m.failed));
        if !answering {
            return;
        }
        let g = &self.scenario.geometry;
        // RAID-10 near-2 on an odd member count leaves the last chunk of
        // the last member unused: nothing ever reads it.
        let chunks_used = 2 * self.array.capacity_bytes() / g.chunk_bytes;
        let chunk = error.row * g.member_count as u64 + error.slot as u64;
        if g.level == Level::Raid10 && chunk >= chunks_used {
            return;
        }
        let offset_bytes =
            g.data_offset_bytes + error.row * g.chunk_bytes + error.first_sector * SECTOR_BYTES;
        if self.trace {
            eprintln!(
                "member {} gets a latent error at {offset_bytes} (+{} sectors, {:?})",
                error.slot, error.sectors, error.kind
            );
        }
        self.h.bad_sectors.push(BadSectors {
            device: error.slot,
            offset_bytes,
            len_bytes: error.sectors * SECTOR_BYTES,
            kind: error.kind,
        });
        self.coverage.latent_errors += 1;
        self.forget_unsettled_row(error.row);
    }

    /// The chunk row (= parity stripe) a member byte offset is in.
    fn row_of(&self, offset_bytes: u64) -> u64 {
        let g = &self.scenario.geometry;
        (offset_bytes - g.data_offset_bytes) / g.chunk_bytes
    }

    /// A read error in chunk row `row` is repaired from the rest of its
    /// stripe; if a crash left that stripe's parity unsettled, the repair
    /// writes back garbage (as Linux MD's would): the stripe's content is
    /// lost until written.
    fn forget_unsettled_row(&mut self, row: u64) {
        let Some(unsettled) = &self.unsettled_by_crash else {
            return;
        };
        let g = &self.scenario.geometry;
        let stripe_sectors = g.data_per_stripe() as u64 * g.chunk_bytes / SECTOR_BYTES;
        let range = (row * stripe_sectors) as usize..((row + 1) * stripe_sectors) as usize;
        let mut lost = vec![false; unsettled.len()];
        let end = range.end.min(unsettled.len());
        let start = range.start.min(end);
        if !unsettled[start..end].iter().any(|&u| u) {
            return;
        }
        lost[start..end].copy_from_slice(&unsettled[start..end]);
        if self.trace {
            eprintln!("row {row}'s unsettled stripe is lost to a read error");
        }
        self.model.forget(&lost);
    }

    /// Time jumps to the machine's next deadline and it is told.
    fn jump_to_deadline(&mut self) -> bool {
        let Some(deadline) = self.array.poll_timeout() else {
            return false;
        };
        self.h.now = self.h.now.max(deadline);
        self.array.handle_tick(self.h.now);
        self.h.collect(&mut self.array);
        true
    }

    /// Members the array failed: a hung device it no longer uses is let
    /// go (its late I/Os fail; the array must drop them), a crash-unsettled
    /// stripe is lost, and a failure for a timeout must have let a hung
    /// device go (a slow member must not be failed).
    fn follow_events(&mut self) -> Outcome<()> {
        for event in std::mem::take(&mut self.h.events) {
            let ArrayEvent::MemberFailed { member, reason } = event else {
                continue;
            };
            self.member_failed_since_open = true;
            if self.trace {
                eprintln!("array failed member {member}: {reason}");
            }
            let released = self.release_hung_devices();
            if reason.contains("member timeout") && released == 0 {
                return Err(format!(
                    "member {member} was failed for a timeout but no hung device was let go (hung {:?}, slow members {:?}): {reason}",
                    self.h.hung_devices, self.scenario.slow_members
                ));
            }
            if let Some(lost) = &self.unsettled_by_crash {
                // Harness failures forget at once; this catches the
                // failures only the array saw (a read error that could not
                // be fixed, a hung member).
                let lost = lost.clone();
                self.model.forget(&lost);
            }
        }
        Ok(())
    }

    /// Hung devices the array no longer serves a member or spare with are
    /// let go: failed for good, so their I/Os complete (with an error).
    fn release_hung_devices(&mut self) -> usize {
        if self.h.hung_devices.is_empty() {
            return 0;
        }
        let status = self.status();
        let members = status["members"].as_array().cloned().unwrap_or_default();
        let in_use = |device: usize| {
            members.iter().any(|m| {
                m["device"].as_u64() == Some(device as u64)
                    && !matches!(
                        m["state"].as_str(),
                        Some("faulty" | "missing" | "missing-spare")
                    )
            })
        };
        let (gone, still): (Vec<usize>, Vec<usize>) =
            self.h.hung_devices.iter().partition(|&&d| !in_use(d));
        self.h.hung_devices = still;
        for &device in &gone {
            if self.trace {
                eprintln!("hung device {device} let go");
            }
            if let Some(Some(m)) = self.h.members.get_mut(device) {
                m.failed = true;
            }
        }
        self.coverage.hung_members_timed_out += gone.len() as u64;
        gone.len()
    }

    /// The array (re)opened: counts start again.
    fn opened(&mut self) {
        self.member_failed_since_open = false;
        self.count_read_errors();
    }

    /// Moves the read errors returned since the last open to the coverage.
    fn count_read_errors(&mut self) {
        self.coverage.read_errors_returned += self.h.read_errors_returned.iter().sum::<u64>();
        self.h.read_errors_returned.clear();
    }

    /// Completes every I/O; hung members' I/Os are waited for through
    /// member timeouts (liveness: the array must give up on them).
    fn run_through_hangs(&mut self) -> Outcome<()> {
        for _ in 0..HUNG_TIMEOUTS_MAX {
            self.h.run(&mut self.array);
            self.take_replies()?;
            // A device the array dropped without failing a member (a
            // replaced member's old device) is given up on silently.
            self.release_hung_devices();
            if self.h.hung_inflight() == 0 {
                return Ok(());
            }
            if !self.jump_to_deadline() {
                break;
            }
        }
        Err(format!(
            "liveness: {} I/Os of hung members {:?} never timed out: {}",
            self.h.hung_inflight(),
            self.h.hung_devices,
            self.status()
        ))
    }

    /// After the final check read every shard: no latent error is left on
    /// a member in use (each was rewritten, or failed its member), and the
    /// array counted every read error it got, corrected or not.
    fn judge_read_errors(&mut self) -> Outcome<()> {
        let status = self.status();
        let members = status["members"].as_array().cloned().unwrap_or_default();
        let in_use = |device: usize| {
            members
                .iter()
                .any(|m| m["device"].as_u64() == Some(device as u64) && m["state"] == "active")
        };
        if let Some(left) = self.h.bad_sectors.iter().find(|b| in_use(b.device)) {
            return Err(format!(
                "after the final check a latent error is left on a member in use: {left:?}: {status}"
            ));
        }
        if self.member_failed_since_open {
            // A repair cut short by a member failure counts nothing.
            return Ok(());
        }
        for m in &members {
            let Some(device) = m["device"].as_u64() else {
                continue;
            };
            let returned = self
                .h
                .read_errors_returned
                .get(device as usize)
                .copied()
                .unwrap_or(0);
            let counted = m["read_errors_corrected"].as_u64().unwrap_or(0)
                + m["read_errors_failed"].as_u64().unwrap_or(0);
            if counted < returned {
                return Err(format!(
                    "member {} got {returned} read errors since the array opened but counts {counted}: {m}",
                    m["index"]
                ));
            }
        }
        Ok(())
    }

    /// Each active member's read-error counts, by uuid.
    fn read_error_counts(&self) -> Vec<(String, u64, u64)> {
        let status = self.status();
        let mut counts: Vec<(String, u64, u64)> = status["members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["state"] == "active")
            .map(|m| {
                (
                    m["uuid"].as_str().unwrap_or_default().to_string(),
                    m["read_errors_corrected"].as_u64().unwrap_or(0),
                    m["read_errors_failed"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        counts.sort();
        counts
    }

    fn blank_member(&mut self) -> NewMember {
        let size = self
            .h
            .members
            .iter()
            .flatten()
            .next()
            .expect("a member")
            .current
            .len() as u64;
        self.h.add_blank_members(1, size).remove(0)
    }

    /// Sends an admin command that brought a new device; drops the device
    /// if refused.
    fn admin_with_device(&mut self, command: AdminCommand, devices: usize) -> bool {
        let reply = self.array.handle_admin(self.h.now, command);
        if reply.get("error").is_some() {
            for _ in 0..devices {
                self.h.members.pop();
            }
            self.coverage.refused_activities += 1;
            return false;
        }
        self.h.collect(&mut self.array);
        true
    }

    fn start_activity(&mut self, step: usize) -> Outcome<()> {
        match self.scenario.activity.clone() {
            Activity::Growth {
                strategy,
                add,
                at_step,
            } if at_step == step => {
                let size = self.h.members[0].as_ref().expect("member 0").current.len() as u64;
                let before = self.h.members.len();
                let added = self.h.add_blank_members(add, size);
                let config =
                    test_growth_config(strategy, self.scenario.geometry.chunk_bytes, 1 << 30);
                if self.admin_with_device(
                    AdminCommand::StartGrow {
                        members: added,
                        config,
                    },
                    add,
                ) {
                    self.members_before_growth = Some(before);
                    self.coverage.growths += 1;
                }
            }
            Activity::SpareRebuild { at_step } if at_step == step => {
                let member = self.blank_member();
                if self.admin_with_device(
                    AdminCommand::AddMember {
                        member,
                        spare: true,
                    },
                    1,
                ) {
                    self.coverage.rebuilds += 1;
                }
            }
            Activity::Replace { slot, at_step } if at_step == step => {
                let member = self.blank_member();
                if self.admin_with_device(AdminCommand::ReplaceMember { slot, member }, 1) {
                    self.coverage.replaces += 1;
                }
            }
            Activity::Check { repair, at_step } if at_step == step => {
                let reply = self
                    .array
                    .handle_admin(self.h.now, AdminCommand::StartCheck { repair });
                if reply.get("error").is_some() {
                    self.coverage.refused_activities += 1;
                } else {
                    self.coverage.checks += 1;
                    self.h.collect(&mut self.array);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The sectors of every parity stripe holding a sector whose content
    /// after a crash now is uncertain (empty for RAID-0 and RAID-10).
    fn uncertain_parity_stripes(&self) -> Vec<bool> {
        let sectors = self.model.sector_count();
        let mut marked = vec![false; sectors as usize];
        let g = &self.scenario.geometry;
        if !matches!(g.level, Level::Raid5 | Level::Raid6 | Level::Crs { .. }) {
            return marked;
        }
        let stripe_sectors = g.data_per_stripe() as u64 * g.chunk_bytes / SECTOR_BYTES;
        for stripe_first in (0..sectors).step_by(stripe_sectors as usize) {
            let end = (stripe_first + stripe_sectors).min(sectors);
            if (stripe_first..end).any(|s| self.model.uncertain_after_crash(s)) {
                marked[stripe_first as usize..end as usize].fill(true);
            }
        }
        marked
    }

    fn crash_and_reopen(&mut self) -> Outcome<()> {
        self.take_replies()?;
        if self.trace {
            eprintln!("crash (status {})", self.status());
        }
        // A hung device is still hung at restart: it is left out like a
        // failed one (a driver's probe of it would time out).
        for device in std::mem::take(&mut self.h.hung_devices) {
            if let Some(Some(m)) = self.h.members.get_mut(device) {
                m.failed = true;
            }
        }
        let mut unsettled = self.uncertain_parity_stripes();
        // The journal replays every stripe write a crash interrupted, so
        // no stripe is left inconsistent: no write hole, unless the log was
        // ever so full that an op went out unrecorded (then as without).
        let journal_closes_hole = self
            .array
            .journal_counters()
            .is_some_and(|c| c.unjournaled_ops == 0);
        if journal_closes_hole {
            unsettled.fill(false);
        }
        if let Some(earlier) = self.unsettled_by_crash.take() {
            for (now, before) in unsettled.iter_mut().zip(earlier) {
                *now |= before;
            }
        }
        // Degraded, those stripes are the write hole that eraid documents
        // (the write-back journal closes it); whole, the resync fixes them.
        // A failed device the array has not noticed yet counts: it is gone
        // at the restart.
        let failed_device = self.h.members.iter().flatten().any(|m| m.failed);
        let hole = if failed_device || self.status()["degraded"] == true {
            unsettled.clone()
        } else {
            vec![false; unsettled.len()]
        };
        self.h.crash();
        self.model.crash(&hole);
        self.unsettled_by_crash = Some(unsettled);
        // A latent error on a stripe whose parity the crash may have left
        // wrong is rebuilt from that parity: lost, like a failed member's.
        let rows: Vec<u64> = self
            .h
            .bad_sectors
            .iter()
            .filter(|b| {
                self.h
                    .members
                    .get(b.device)
                    .is_some_and(|m| m.as_ref().is_some_and(|m| !m.failed))
            })
            .map(|b| self.row_of(b.offset_bytes))
            .collect();
        for row in rows {
            self.forget_unsettled_row(row);
        }
        self.pending.clear();
        self.coverage.crashes += 1;
        if self.h.journal.is_some() {
            self.coverage.journaled_crashes += 1;
        }
        // A failed device is still failed at restart: it is not given to assembly.
        for m in self.h.members.iter_mut() {
            if m.as_ref().is_some_and(|m| m.failed) {
                *m = None;
            }
        }
        let assembly = self.reassemble()?;
        self.array = Array::open(
            assembly,
            with_journal(&self.options, &mut self.h)?,
            self.h.now,
        );
        self.opened();
        self.finish_opening()?;
        if let Some(counters) = self.array.journal_counters() {
            if self.trace {
                eprintln!("journal after the reopen: {counters:?}");
            }
            self.coverage.journal_records_replayed += counters.replayed_records;
        }
        Ok(())
    }

    fn reassemble(&mut self) -> Outcome<Assembly> {
        if self.trace {
            for (i, m) in self.h.members.iter().enumerate() {
                let superblock = m.as_ref().map(|m| {
                    Superblock::decode_newest(&m.durable[..METADATA_BYTES as usize]).map(|s| {
                        let states: Vec<_> = s.members.iter().map(|m| m.state).collect();
                        (
                            s.events,
                            s.this_member,
                            s.geometry.member_count,
                            states,
                            s.state,
                        )
                    })
                });
                eprintln!(
                    "device {i} at restart: superblock (events, member, count, member states, state) {superblock:?}"
                );
            }
        }
        match self.h.arrange_for_assembly() {
            Ok(a) => Ok(a),
            Err(first) => {
                // A device whose own superblock never became durable (a
                // growth's new member, a spare or a replacement the crash
                // caught early) is no member: a driver would not be given it.
                let blank = |m: &Option<eraid_core::testing::MemMember>| {
                    m.as_ref().is_some_and(|m| {
                        let area = &m.durable[..METADATA_BYTES as usize];
                        Superblock::decode_newest(area).is_err()
                    })
                };
                let before = self.h.members.len();
                self.h.retain_devices(|m| !blank(m));
                if self.h.members.len() == before {
                    return Err(format!("reassembly after a crash failed: {first}"));
                }
                let second = match self.h.arrange_for_assembly() {
                    Ok(a) => return Ok(a),
                    Err(e) => e,
                };
                // A growth whose new members got their superblocks only in
                // part (the old members never recorded it): assembly names
                // the half-joined member (the growth never started) and the
                // operator starts the old members alone, as growth_crash.rs does.
                match self.members_before_growth.take() {
                    Some(old) if self.h.members.len() > old => {
                        let mut index = 0;
                        self.h.retain_devices(|_| {
                            index += 1;
                            index <= old
                        });
                        self.h.arrange_for_assembly().map_err(|e| {
                            format!("reassembly after a crash failed: {first}; without blank devices: {second}; with the old members only: {e}")
                        })
                    }
                    _ => Err(format!(
                        "reassembly after a crash failed: {first}; without blank devices: {second}"
                    )),
                }
            }
        }
    }

    /// Faults stop: drain the requests, restore redundancy, let every
    /// activity finish, then judge the whole array, parity and a clean
    /// reopen.
    fn recover_and_check(&mut self) -> Outcome<()> {
        self.run_through_hangs()?;
        // Faults stop: a hung member the array never sent I/O answers again.
        self.h.hung_devices.clear();
        self.h.run(&mut self.array);
        // A write gathering the rest of its stripe waits for its window
        // (at most 5 ms here, four times that for a stream whose tails
        // were joined before) to end, not for an I/O.
        self.h.idle(&mut self.array, 10);
        self.take_replies()?;
        for _ in 0..10 {
            if self.pending.is_empty() {
                break;
            }
            self.h.idle(&mut self.array, 10);
            self.take_replies()?;
        }
        if !self.pending.is_empty() {
            return Err(format!(
                "{} requests never answered: {}",
                self.pending.len(),
                self.status()
            ));
        }
        self.await_activities()?;
        self.restore_redundancy()?;
        self.await_activities()?;
        // A device failed just before the faults stopped may not have had
        // an I/O since: the array does not know yet, and a RAID-10 read
        // (one copy) may never touch it; the final check would meet it
        // (seed 8542: 26 stripes skipped as degraded).
        let failed_device = self.h.members.iter().flatten().any(|m| m.failed);
        if (failed_device || !self.h.bad_sectors.is_empty())
            && self.scenario.geometry.level != Level::Raid0
        {
            // A check reads every shard: latent errors not yet met are
            // repaired now, or fail a member a rewrite cannot fix, and a
            // failed device not yet noticed is; that member is replaced
            // too, so the final check sees a whole array.
            self.check()?;
            self.restore_redundancy()?;
            self.await_activities()?;
        }
        let read_from = self.model.tick();
        let whole = self.read_whole()?;
        let read_to = self.model.tick();
        self.judge_sectors(
            0,
            &whole,
            read_from,
            read_to,
            "whole-array read after recovery",
        )?;
        for (i, bytes) in whole.chunks(SECTOR_BYTES as usize).enumerate() {
            // Unrecognised bytes were admitted only in a write hole: it stays one.
            if let Some(tag) = identify(i as u64, bytes) {
                self.model.settle(i as u64, tag);
            }
        }
        if self.scenario.geometry.level != Level::Raid0 {
            let (mismatches, skipped) = self.check()?;
            if mismatches != 0 || skipped != 0 {
                return Err(format!(
                    "after recovery a check found {mismatches} mismatched stripes ({skipped} skipped as degraded): {}",
                    self.status()
                ));
            }
            self.judge_read_errors()?;
        }
        let counts_before_close = self.read_error_counts();
        self.array.handle_close(self.h.now);
        self.h.run(&mut self.array);
        if !self.array.is_closed() {
            return Err(format!("array did not close: {}", self.status()));
        }
        let assembly = self
            .h
            .arrange_for_assembly()
            .map_err(|e| format!("clean reassembly failed: {e}"))?;
        self.array = Array::open(
            assembly,
            with_journal(&self.options, &mut self.h)?,
            self.h.now,
        );
        self.opened();
        self.h.run(&mut self.array);
        // A clean stop records the read-error counts: they come back.
        let counts_after_reopen = self.read_error_counts();
        if counts_after_reopen != counts_before_close {
            return Err(format!(
                "read-error counts (member uuid, corrected, failed) changed over a clean close and reopen: {counts_before_close:?} became {counts_after_reopen:?}"
            ));
        }
        let again = self.read_whole()?;
        if again != whole {
            let sector = again
                .chunks(512)
                .zip(whole.chunks(512))
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(format!(
                "after a clean close and reopen sector {sector} changed from {} to {}",
                describe_tag(identify(
                    sector as u64,
                    &whole[sector * 512..(sector + 1) * 512]
                )),
                describe_tag(identify(
                    sector as u64,
                    &again[sector * 512..(sector + 1) * 512]
                ))
            ));
        }
        Ok(())
    }

    fn activities_done(&self) -> bool {
        let s = self.status();
        let finished = |v: &serde_json::Value| v.is_null() || v["state"] == "done";
        // A rebuild or replace whose new member a crash lost stops for good
        // (the array serves on without it): that is an end too.
        let rebuild_over = finished(&s["rebuild"]) || s["rebuild"]["state"] == "stopped";
        // A resync needs redundancy: on a degraded array it waits for the
        // rebuild that `restore_redundancy` starts.
        let resynced = s["unresynced_regions"] == 0 || s["degraded"] == true;
        finished(&s["reshape"]) && rebuild_over && finished(&s["activity"]) && resynced
    }

    /// Liveness: idle until every growth, rebuild, resync and check is done.
    fn await_activities(&mut self) -> Outcome<()> {
        for _ in 0..LIVENESS_IDLE_PERIODS {
            if self.activities_done() {
                return Ok(());
            }
            self.h.idle(&mut self.array, 50);
            self.take_replies()?;
        }
        Err(format!(
            "liveness: activities unfinished after {} s of idle time once faults stopped: {}",
            LIVENESS_IDLE_PERIODS / 20,
            self.status()
        ))
    }

    /// Adds a blank member for each failed or missing slot (one rebuild at
    /// a time), so the final check sees a whole array.
    fn restore_redundancy(&mut self) -> Outcome<()> {
        let tolerated = failures_tolerated(self.scenario.geometry.level);
        for _ in 0..tolerated {
            if self.status()["degraded"] != true {
                return Ok(());
            }
            let member = self.blank_member();
            if !self.admin_with_device(
                AdminCommand::AddMember {
                    member,
                    spare: false,
                },
                1,
            ) {
                return Err(format!(
                    "a replacement for a failed member was refused: {}",
                    self.status()
                ));
            }
            self.coverage.rebuilds += 1;
            self.await_activities()?;
        }
        if self.status()["degraded"] == true {
            return Err(format!(
                "still degraded after replacing the failed members: {}",
                self.status()
            ));
        }
        Ok(())
    }

    fn read_whole(&mut self) -> Outcome<Vec<u8>> {
        let id = self.next_id;
        self.next_id += 1;
        let len_bytes = self.array.capacity_bytes() as usize;
        self.h.submit(
            &mut self.array,
            id,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes,
            },
        );
        self.h.run(&mut self.array);
        let reply = self
            .h
            .take_reply(id)
            .ok_or_else(|| format!("whole-array read unanswered: {}", self.status()))?;
        reply
            .result
            .map_err(|e| format!("whole-array read failed: {e}"))?
            .map(|data| data.to_vec())
            .ok_or_else(|| "whole-array read returned no data".to_string())
    }

    fn check(&mut self) -> Outcome<(u64, u64)> {
        let reply = self
            .array
            .handle_admin(self.h.now, AdminCommand::StartCheck { repair: false });
        if let Some(e) = reply.get("error") {
            return Err(format!("final check refused: {e}"));
        }
        self.h.run(&mut self.array);
        let status = self.status();
        let activity = &status["activity"];
        if activity["state"] != "done" {
            return Err(format!("final check did not finish: {status}"));
        }
        Ok((
            activity["mismatches"].as_u64().unwrap_or(u64::MAX),
            activity["skipped_degraded_stripes"]
                .as_u64()
                .unwrap_or(u64::MAX),
        ))
    }
}

/// The options to open with: a journaled array gets what its journal
/// device holds now (the records to replay), as a driver reads it at start.
fn with_journal(options: &ArrayOptions, h: &mut MemHarness) -> Outcome<ArrayOptions> {
    let mut options = options.clone();
    if let Some(journal) = &mut h.journal {
        let setup = journal
            .setup()
            .map_err(|e| format!("the journal device does not open: {e}"))?;
        options.journal = Some(setup);
    }
    Ok(options)
}

fn describe_tag(tag: Option<Tag>) -> String {
    match tag {
        None => "unrecognised bytes".into(),
        Some(crate::model::ANY) => "anything (write hole)".into(),
        Some(ZERO_TAG) => "zeroes".into(),
        Some(t) => format!("request {t}'s data"),
    }
}

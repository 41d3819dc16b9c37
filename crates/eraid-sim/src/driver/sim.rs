//! The discrete-event loop: a virtual clock in nanoseconds, one agenda of
//! arrivals, drive wake-ups and engine ticks, and the sans-IO engine in the
//! middle. No wall clock is read and every random number comes from the
//! seed, so the same configuration, feed and seed give the same report.

use std::collections::{BTreeMap, VecDeque};

use eraid_core::growth::config::{NewMember, ReshapeStrategy};
use eraid_core::io::*;
use eraid_trace::metrics::{LatencyRecorder, MetricsRecorder};
use eraid_trace::TraceRequest;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::event_queue::{Event, EventQueue};
use super::feed::{Feed, FeedSpec};
use super::growth::{GrowthLoad, GrowthPlan, GrowthReport, GrowthSample, GrowthStepReport};
use super::member::Member;
use super::oracle::Oracle;
use super::report::SimReport;
use super::store::{DataMode, SparseStore};
use super::target::{self, TargetInfo};
use super::SimConfig;

mod failure_run;
use failure_run::FailureRun;

/// Ticks that keep asking for "now" are spaced by this much, so an engine
/// whose deadline does not move cannot stall the clock.
const TICK_RETRY_NS: u64 = 1_000_000;

/// A growth due while the array is still opening is retried this much later.
pub(super) const OPENING_RETRY_NS: u64 = 1_000_000;

/// The growth(s) of a run as they happen.
struct GrowthRun {
    plan: GrowthPlan,
    /// Members the array has now (grows at each start).
    member_count: usize,
    /// The step running, if any.
    active: Option<usize>,
    steps: Vec<GrowthStepReport>,
    first_start_ns: Option<u64>,
    last_finish_ns: Option<u64>,
    /// Response times of requests that arrived while a growth ran.
    during: LatencyRecorder,
    samples: Vec<GrowthSample>,
    sample_scheduled: bool,
    /// Responses since the last sample: count, sum and max (ns), and how
    /// many exceeded the running step's latency bound.
    since_sample: (u64, u128, u64),
    over_bound: u64,
    /// The valve counters of the running step as last seen (the engine
    /// drops them when the step ends): periods, closed periods.
    valve_seen: (u64, u64),
}

impl GrowthRun {
    fn all_done(&self) -> bool {
        self.steps.len() == self.plan.steps.len() && self.steps.iter().all(|s| s.finish_s.is_some())
    }
}

struct UserInflight {
    request: TraceRequest,
    /// Write data kept for the oracle (`DataMode::Store` only).
    data: Option<Vec<u8>>,
}

pub(super) struct Simulation {
    config: SimConfig,
    info: TargetInfo,
    machine: Box<dyn Machine>,
    members: Vec<Member>,
    queue: EventQueue,
    now_ns: u64,
    /// `None` until the workload starts (after the growth, for
    /// `GrowthLoad::After`).
    feed: Option<Feed>,
    feed_spec: FeedSpec,
    /// Added to the feed's arrival times (the instant it started).
    feed_offset_ns: u64,
    feed_done: bool,
    /// The workload was cut (the growth finished): later arrivals are dropped.
    cut: bool,
    /// Arrivals waiting for the host's queue depth, in arrival order.
    host_waiting: VecDeque<TraceRequest>,
    /// Arrivals that had to wait at the host, and the longest wait queue.
    host_waited_requests: u64,
    host_queue_max: u64,
    member_bytes: u64,
    growth: Option<GrowthRun>,
    failure: Option<FailureRun>,
    /// The run stopped at `max_time_ns` with work left.
    timed_out: bool,
    /// `final_flush`: sent, and answered at this time.
    final_flush_sent: bool,
    final_flush_done_ns: Option<u64>,
    /// First arrival and bytes written by successful writes (for the
    /// throughput up to the final flush).
    first_arrival_ns: Option<u64>,
    written_bytes: u64,
    issued: u64,
    next_request_id: u64,
    users: BTreeMap<u64, UserInflight>,
    immediate: VecDeque<(IoId, IoCompletion)>,
    tick_at: Option<u64>,
    last_tick_ns: Option<u64>,
    metrics: MetricsRecorder,
    failed_requests: u64,
    device_requests: u64,
    data_rng: ChaCha8Rng,
    oracle: Option<Oracle>,
}

impl Simulation {
    pub(super) fn new(config: &SimConfig, feed: &FeedSpec) -> Result<Simulation, String> {
        let member_count = config.target.member_count(config.members);
        let added = config.growth.as_ref().map_or(0, GrowthPlan::added_disks);
        if added > 0 && !matches!(config.target, target::Target::Array { .. }) {
            return Err("a growth needs an array, not a bare disk".into());
        }
        if config.failure.is_some() && added > 0 {
            return Err("a failure and a growth in one run are not supported yet".into());
        }
        let spares = usize::from(config.failure.as_ref().is_some_and(|f| f.spare));
        let mut devices = Vec::with_capacity(member_count + added + spares);
        for _ in 0..member_count + added + spares {
            devices.push(config.disk.build()?);
        }
        let device_bytes = devices
            .iter()
            .map(|d| d.capacity_sectors() * 512)
            .min()
            .unwrap_or(0);
        let member_bytes = config
            .member_bytes_max
            .map_or(device_bytes, |cap| cap.min(device_bytes));
        let built = target::build(&config.target, member_count, member_bytes, config.seed)?;
        let store = config.data_mode == DataMode::Store;
        let write_back = config.disk.write_back();
        // Drives that join later start blank.
        let contents = built
            .initial_contents
            .into_iter()
            .chain(std::iter::repeat_with(SparseStore::default));
        let members = devices
            .into_iter()
            .zip(contents)
            .map(|(device, contents)| {
                Member::new(
                    device,
                    store.then_some(contents),
                    write_back,
                    config.host_scheduler,
                )
            })
            .collect();
        let feed_later = config
            .growth
            .as_ref()
            .is_some_and(|g| g.load == GrowthLoad::After);
        let feed_spec = feed.clone();
        let feed = if feed_later {
            None
        } else {
            Some(feed.open(built.info.capacity_bytes, config.seed)?)
        };
        let growth = config.growth.clone().map(|plan| GrowthRun {
            plan,
            member_count,
            active: None,
            steps: Vec::new(),
            first_start_ns: None,
            last_finish_ns: None,
            during: LatencyRecorder::new(),
            samples: Vec::new(),
            sample_scheduled: false,
            since_sample: (0, 0, 0),
            over_bound: 0,
            valve_seen: (0, 0),
        });
        Ok(Simulation {
            config: config.clone(),
            info: built.info,
            machine: built.machine,
            members,
            queue: EventQueue::default(),
            now_ns: 0,
            feed,
            feed_spec,
            feed_offset_ns: 0,
            feed_done: false,
            cut: false,
            host_waiting: VecDeque::new(),
            host_waited_requests: 0,
            host_queue_max: 0,
            member_bytes,
            growth,
            failure: config.failure.clone().map(FailureRun::new),
            timed_out: false,
            final_flush_sent: false,
            final_flush_done_ns: None,
            first_arrival_ns: None,
            written_bytes: 0,
            issued: 0,
            next_request_id: 0,
            users: BTreeMap::new(),
            immediate: VecDeque::new(),
            tick_at: None,
            last_tick_ns: None,
            metrics: MetricsRecorder::with_windows(config.window),
            failed_requests: 0,
            device_requests: 0,
            // A stream apart from the workload's, for write contents.
            data_rng: ChaCha8Rng::seed_from_u64(config.seed ^ 0x5eed_da7a),
            oracle: store.then(Oracle::default),
        })
    }

    pub(super) fn run(mut self) -> Result<SimReport, String> {
        if let Some(g) = &self.growth {
            self.queue.push(g.plan.start_ns, Event::GrowthStart(0));
        }
        if let Some(f) = &self.failure {
            if f.plan.spare {
                self.queue.push(0, Event::FailureSpare);
            }
            self.queue.push(f.plan.at_ns, Event::FailureStart);
        }
        if self.feed.is_some() {
            self.start_feed()?;
        }
        self.pump()?;
        loop {
            let growth_settled = self.growth.as_ref().is_none_or(GrowthRun::all_done);
            let failure_settled = self.failure.as_ref().is_none_or(FailureRun::settled);
            if self.feed_done
                && self.users.is_empty()
                && self.host_waiting.is_empty()
                && growth_settled
                && failure_settled
            {
                if !self.config.final_flush || self.final_flush_done_ns.is_some() {
                    break;
                }
                if !self.final_flush_sent {
                    self.final_flush_sent = true;
                    let request = UserRequest {
                        id: RequestId(FINAL_FLUSH_ID),
                        op: UserOp::Flush,
                    };
                    self.machine.handle_request(TimeNs(self.now_ns), request);
                    self.pump()?;
                    continue;
                }
            }
            let Some((time_ns, event)) = self.queue.pop() else {
                let growth = match &self.growth {
                    Some(g) if !g.all_done() => format!(
                        ", growth step {} of {} unfinished",
                        g.steps.len(),
                        g.plan.steps.len()
                    ),
                    _ => String::new(),
                };
                return Err(format!(
                    "the simulation stalled at {} ns with {} requests unanswered{growth} (an engine or driver bug)",
                    self.now_ns,
                    self.users.len()
                ));
            };
            if self.config.max_time_ns.is_some_and(|max| time_ns > max) {
                self.timed_out = true;
                self.now_ns = self.now_ns.max(self.config.max_time_ns.unwrap_or(0));
                break;
            }
            self.now_ns = self.now_ns.max(time_ns);
            match event {
                Event::Arrival(request) => self.arrive(request)?,
                Event::DeviceWake(member) => self.wake(member, time_ns),
                Event::Tick => {
                    if self.tick_at == Some(time_ns) {
                        self.tick_at = None;
                        self.last_tick_ns = Some(self.now_ns);
                        self.machine.handle_tick(TimeNs(self.now_ns));
                        self.observe_valve();
                    }
                }
                Event::GrowthStart(step) => self.start_growth(step)?,
                Event::GrowthSample => self.sample_growth(),
                Event::FailureSpare => self.add_spare()?,
                Event::FailureStart => self.fail_planned_member()?,
                Event::RebuildSample => self.sample_rebuild(),
            }
            self.pump()?;
        }
        self.report()
    }

    fn limit_reached(&self) -> bool {
        self.config
            .max_requests
            .is_some_and(|max| self.issued >= max)
    }

    fn start_feed(&mut self) -> Result<(), String> {
        match &mut self.feed {
            None => {}
            Some(Feed::Open(_)) => self.pull_open()?,
            Some(Feed::Closed { outstanding, .. }) => {
                for _ in 0..*outstanding {
                    self.pull_closed();
                }
            }
        }
        Ok(())
    }

    /// Schedules the next open-loop arrival. Arrivals earlier than the
    /// clock (an unsorted trace) are issued now.
    fn pull_open(&mut self) -> Result<(), String> {
        if self.limit_reached() {
            self.feed_done = true;
            return Ok(());
        }
        if self.cut {
            self.feed_done = true;
            return Ok(());
        }
        let Some(Feed::Open(stream)) = &mut self.feed else {
            return Ok(());
        };
        match stream.next() {
            None => self.feed_done = true,
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(mut request)) => {
                request.arrival_ns = request
                    .arrival_ns
                    .saturating_add(self.feed_offset_ns)
                    .max(self.now_ns);
                self.issued += 1;
                self.queue.push(request.arrival_ns, Event::Arrival(request));
            }
        }
        Ok(())
    }

    fn pull_closed(&mut self) {
        if self.limit_reached() || self.cut {
            self.feed_done = true;
            return;
        }
        let now_ns = self.now_ns;
        let Some(Feed::Closed { next, .. }) = &mut self.feed else {
            return;
        };
        match next(now_ns) {
            None => self.feed_done = true,
            Some(mut request) => {
                request.arrival_ns = now_ns;
                self.issued += 1;
                self.queue.push(now_ns, Event::Arrival(request));
            }
        }
    }

    /// Makes a trace request something the engine accepts: whole sectors,
    /// inside the capacity (traces may hold odd byte counts).
    fn normalise(&self, mut request: TraceRequest) -> TraceRequest {
        let capacity = self.info.capacity_bytes / 512 * 512;
        let len = request.len_bytes.div_ceil(512).max(1) * 512;
        request.len_bytes = len.min(capacity);
        request.offset_bytes = (request.offset_bytes / 512 * 512).min(capacity - request.len_bytes);
        request
    }

    fn arrive(&mut self, request: TraceRequest) -> Result<(), String> {
        if self.cut {
            self.feed_done = true;
            return Ok(());
        }
        if self.users.len() >= self.config.admission_limit() {
            self.host_waiting.push_back(request);
            self.host_waited_requests += 1;
            self.host_queue_max = self.host_queue_max.max(self.host_waiting.len() as u64);
        } else {
            self.admit(request);
        }
        if matches!(self.feed, Some(Feed::Open(_))) {
            self.pull_open()?;
        }
        Ok(())
    }

    /// Hands a request to the engine; its response time still counts from
    /// its arrival.
    fn admit(&mut self, request: TraceRequest) {
        let request = self.normalise(request);
        let id = self.next_request_id;
        self.next_request_id += 1;
        let (op, data) = if request.is_read {
            let op = UserOp::Read {
                offset_bytes: request.offset_bytes,
                len_bytes: request.len_bytes as usize,
            };
            (op, None)
        } else {
            let mut bytes = vec![0u8; request.len_bytes as usize];
            if self.oracle.is_some() {
                self.data_rng.fill_bytes(&mut bytes);
            }
            let kept = self.oracle.is_some().then(|| bytes.clone());
            let op = UserOp::Write {
                offset_bytes: request.offset_bytes,
                data: bytes.into(),
                fua: false,
            };
            (op, kept)
        };
        if let Some(oracle) = &mut self.oracle {
            oracle.submitted(
                id,
                request.offset_bytes,
                request.len_bytes,
                !request.is_read,
            );
        }
        self.users.insert(id, UserInflight { request, data });
        self.machine.handle_request(
            TimeNs(self.now_ns),
            UserRequest {
                id: RequestId(id),
                op,
            },
        );
    }

    fn wake(&mut self, member: usize, time_ns: u64) {
        if self.members[member].wake_at != Some(time_ns) {
            return;
        }
        self.members[member].wake_at = None;
        let now_ns = self.now_ns;
        loop {
            let done = self.members[member].device.advance(now_ns);
            if done.is_empty() {
                break;
            }
            for completion in done {
                let m = &mut self.members[member];
                let Some(inflight) = m.complete(now_ns, &completion) else {
                    continue;
                };
                for (io, kind) in inflight.parts {
                    if let Some(result) = m.finish_part(io, kind) {
                        self.immediate.push_back((io, result));
                    }
                }
            }
        }
        for refused in self.members[member].pump_host(now_ns) {
            self.immediate
                .push_back((refused.io, IoCompletion::Failed(refused.reason)));
        }
        self.settle_member(member);
    }

    /// Completes flushes that may finish and schedules the member's next wake.
    fn settle_member(&mut self, member: usize) {
        let now_ns = self.now_ns;
        let m = &mut self.members[member];
        for io in m.ready_flushes() {
            self.immediate.push_back((io, IoCompletion::Done));
        }
        let next = match (m.device.next_event_ns(), m.host_timer_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = next {
            // The model has done everything up to now, so a wake at or
            // before now can only come from rounding: nudge it forward.
            let t = if t <= now_ns { now_ns + 1 } else { t };
            if m.wake_at.is_none_or(|at| t < at) {
                m.wake_at = Some(t);
                self.queue.push(t, Event::DeviceWake(member));
            }
        }
    }

    /// Moves everything the engine wants done into the world until it is
    /// quiet, then schedules its next tick.
    fn pump(&mut self) -> Result<(), String> {
        let now = TimeNs(self.now_ns);
        loop {
            let mut progressed = false;
            // The engine's I/Os of this instant, per member, in order.
            let mut batches: BTreeMap<usize, Vec<(IoId, IoCause, IoPriority, DeviceOp)>> =
                BTreeMap::new();
            while let Some(io) = self.machine.poll_io() {
                progressed = true;
                let member = io.member;
                if member >= self.members.len() {
                    return Err(format!(
                        "the engine addressed member {member}, which does not exist"
                    ));
                }
                if !matches!(io.op, DeviceOp::Flush) {
                    self.device_requests += 1;
                }
                batches
                    .entry(member)
                    .or_default()
                    .push((io.id, io.cause, io.priority, io.op));
            }
            for (member, batch) in batches {
                let m = &mut self.members[member];
                for refused in m.submit_batch(
                    self.now_ns,
                    batch,
                    self.config.merge_max_bytes,
                    self.config.request_max_bytes,
                ) {
                    self.immediate
                        .push_back((refused.io, IoCompletion::Failed(refused.reason)));
                }
                self.settle_member(member);
            }
            while let Some(reply) = self.machine.poll_reply() {
                progressed = true;
                self.answer(reply);
            }
            while let Some(event) = self.machine.poll_event() {
                progressed = true;
                match event {
                    ArrayEvent::ReshapeFinished {
                        member_count,
                        capacity_bytes,
                    } => self.growth_finished(member_count, capacity_bytes)?,
                    ArrayEvent::ReshapePaused { reason } => {
                        return Err(format!(
                            "the growth paused at {:.3} s: {reason}",
                            self.now_ns as f64 / 1e9
                        ))
                    }
                    other => self.rebuild_event(&other)?,
                }
            }
            while let Some((io, completion)) = self.immediate.pop_front() {
                progressed = true;
                self.machine.handle_completion(now, io, completion);
            }
            if !progressed {
                break;
            }
        }
        self.schedule_tick();
        Ok(())
    }

    fn answer(&mut self, reply: UserReply) {
        let id = reply.id.0;
        if id == FINAL_FLUSH_ID {
            self.final_flush_done_ns = Some(self.now_ns);
            return;
        }
        let Some(user) = self.users.remove(&id) else {
            return;
        };
        match reply.result {
            Ok(bytes) => {
                self.metrics.record(&user.request, self.now_ns);
                let arrival = user.request.arrival_ns;
                self.first_arrival_ns =
                    Some(self.first_arrival_ns.map_or(arrival, |f| f.min(arrival)));
                if !user.request.is_read {
                    self.written_bytes += user.request.len_bytes;
                }
                let latency_ns = self.now_ns.saturating_sub(user.request.arrival_ns);
                if let Some(f) = &mut self.failure {
                    f.record(user.request.arrival_ns, latency_ns, user.request.is_read);
                }
                if let Some(g) = &mut self.growth {
                    let arrival = user.request.arrival_ns;
                    let after_start = g.first_start_ns.is_some_and(|s| arrival >= s);
                    let before_end = g.last_finish_ns.is_none_or(|f| arrival < f);
                    if after_start && before_end {
                        g.during.record(latency_ns);
                    }
                    let (n, sum, max) = &mut g.since_sample;
                    *n += 1;
                    *sum += u128::from(latency_ns);
                    *max = (*max).max(latency_ns);
                    if let Some(step) = g.active.map(|i| &g.plan.steps[i]) {
                        if latency_ns as f64 > step.config.latency_bound_ms * 1e6 {
                            g.over_bound += 1;
                        }
                    }
                }
                if let Some(oracle) = &mut self.oracle {
                    match (user.request.is_read, &user.data) {
                        (true, _) => oracle.read_done(id, bytes.map(|b| b.to_vec()).as_deref()),
                        (false, Some(data)) => oracle.write_done(id, data),
                        (false, None) => oracle.forget(id),
                    }
                }
            }
            Err(_) => {
                self.failed_requests += 1;
                if let Some(oracle) = &mut self.oracle {
                    oracle.forget(id);
                }
            }
        }
        // Waiting requests arrived before any cut: they still run.
        while self.users.len() < self.config.admission_limit() {
            let Some(next) = self.host_waiting.pop_front() else {
                break;
            };
            self.admit(next);
        }
        if matches!(self.feed, Some(Feed::Closed { .. })) {
            self.pull_closed();
        }
    }

    /// Sends `StartGrow` for step `index`, naming the next drives.
    fn start_growth(&mut self, index: usize) -> Result<(), String> {
        let now = self.now_ns;
        let seed = self.config.seed;
        let member_bytes = self.member_bytes;
        let capacity_bytes = self.info.capacity_bytes;
        let Some(g) = &mut self.growth else {
            return Ok(());
        };
        let Some(step) = g.plan.steps.get(index).cloned() else {
            return Ok(());
        };
        // The array opens first (its superblocks are written at time 0):
        // a growth starts once it runs.
        let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
        if status.get("phase").and_then(serde_json::Value::as_str) == Some("opening") {
            self.queue
                .push(now + OPENING_RETRY_NS, Event::GrowthStart(index));
            return Ok(());
        }
        let first = g.member_count;
        let members: Vec<NewMember> = (first..first + step.add)
            .map(|i| NewMember {
                uuid: format!("sim-member-{seed}-{i}"),
                path_hint: format!("sim{i}"),
                size_bytes: member_bytes,
            })
            .collect();
        let answer = self.machine.handle_admin(
            TimeNs(now),
            AdminCommand::StartGrow {
                members,
                config: step.config.clone(),
            },
        );
        if let Some(error) = answer.get("error") {
            let error = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(format!(
                "growth {} ({} + {} disks, {}): the engine refused it: {error}",
                index + 1,
                first,
                step.add,
                step.config.strategy.name()
            ));
        }
        g.member_count = first + step.add;
        g.active = Some(index);
        g.first_start_ns.get_or_insert(now);
        g.steps.push(GrowthStepReport {
            strategy: step.config.strategy.name().to_string(),
            old_member_count: first,
            new_member_count: first + step.add,
            start_s: now as f64 / 1e9,
            finish_s: None,
            redistribution_time_s: None,
            old_capacity_bytes: capacity_bytes,
            new_capacity_bytes: None,
            status: serde_json::Value::Null,
        });
        if !g.sample_scheduled {
            g.sample_scheduled = true;
            let at = now + g.plan.sample_ns;
            self.queue.push(at, Event::GrowthSample);
        }
        Ok(())
    }

    /// `ReshapeFinished`: records the step, then starts the next one, or
    /// ends the workload (`until_done`) or starts it (`GrowthLoad::After`).
    fn growth_finished(&mut self, member_count: usize, capacity_bytes: u64) -> Result<(), String> {
        let now = self.now_ns;
        self.take_sample();
        let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
        let Some(g) = &mut self.growth else {
            return Ok(());
        };
        let Some(index) = g.active.take() else {
            return Err("the engine finished a growth the simulator did not start".into());
        };
        let step = &mut g.steps[index];
        if step.new_member_count != member_count {
            return Err(format!(
                "growth {} finished with {member_count} members, expected {}",
                index + 1,
                step.new_member_count
            ));
        }
        step.finish_s = Some(now as f64 / 1e9);
        step.redistribution_time_s = Some(now as f64 / 1e9 - step.start_s);
        step.new_capacity_bytes = Some(capacity_bytes);
        step.status = status
            .get("reshape")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let (periods, closed) = std::mem::take(&mut g.valve_seen);
        if let Some(o) = step.status.as_object_mut() {
            let seen = |k: &str, v: u64| {
                o.get(k)
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
                    .max(v)
            };
            let (p, c) = (
                seen("valve_periods", periods),
                seen("valve_closed_periods", closed),
            );
            o.insert("valve_periods".into(), p.into());
            o.insert("valve_closed_periods".into(), c.into());
        }
        self.info.capacity_bytes = capacity_bytes;
        self.info.members = member_count;
        if index + 1 < g.plan.steps.len() {
            self.queue.push(now, Event::GrowthStart(index + 1));
            return Ok(());
        }
        g.last_finish_ns = Some(now);
        if g.plan.until_done {
            self.cut = true;
            self.feed_done = true;
        }
        if g.plan.load == GrowthLoad::After && self.feed.is_none() {
            self.feed = Some(self.feed_spec.open(capacity_bytes, self.config.seed)?);
            self.feed_offset_ns = now;
            self.start_feed()?;
        }
        Ok(())
    }

    /// Notes the valve counters of a running alv step (they change at
    /// ticks only: the valve is judged at period boundaries).
    fn observe_valve(&mut self) {
        let alv = self.growth.as_ref().is_some_and(|g| {
            g.active
                .is_some_and(|i| g.plan.steps[i].config.strategy == ReshapeStrategy::Alv)
        });
        if !alv {
            return;
        }
        let status = self
            .machine
            .handle_admin(TimeNs(self.now_ns), AdminCommand::Status);
        let r = &status["reshape"];
        let int = |k: &str| r.get(k).and_then(serde_json::Value::as_u64);
        if let (Some(periods), Some(closed), Some(g)) = (
            int("valve_periods"),
            int("valve_closed_periods"),
            &mut self.growth,
        ) {
            if r.get("state").and_then(serde_json::Value::as_str) != Some("done") {
                g.valve_seen = (periods, closed);
            }
        }
    }

    fn sample_growth(&mut self) {
        let Some(g) = &mut self.growth else {
            return;
        };
        g.sample_scheduled = false;
        if g.active.is_none() {
            return;
        }
        g.sample_scheduled = true;
        let at = self.now_ns + g.plan.sample_ns;
        self.queue.push(at, Event::GrowthSample);
        self.take_sample();
    }

    /// Appends a progress sample of the running growth step.
    fn take_sample(&mut self) {
        let now = self.now_ns;
        let Some(step) = self.growth.as_ref().and_then(|g| g.active) else {
            return;
        };
        let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
        let r = &status["reshape"];
        let int = |k: &str| r.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let Some(g) = &mut self.growth else {
            return;
        };
        let (n, sum, max) = std::mem::take(&mut g.since_sample);
        let over_bound = std::mem::take(&mut g.over_bound);
        g.samples.push(GrowthSample {
            time_s: now as f64 / 1e9,
            step,
            progress: r
                .get("progress")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0),
            processed_bytes: int("processed_bytes"),
            moved_bytes: int("moved_bytes"),
            redistribution_reads: int("redistribution_reads"),
            redistribution_writes: int("redistribution_writes"),
            metadata_writes: int("metadata_writes"),
            valve_closed_periods: int("valve_closed_periods"),
            blocked_requests: int("blocked_requests"),
            user_requests: n,
            user_mean_ms: if n == 0 {
                0.0
            } else {
                sum as f64 / n as f64 / 1e6
            },
            user_max_ms: max as f64 / 1e6,
            user_over_bound: over_bound,
        });
    }

    fn schedule_tick(&mut self) {
        let Some(deadline) = self.machine.poll_timeout() else {
            return;
        };
        let mut t = deadline.0.max(self.now_ns);
        if t == self.now_ns && self.last_tick_ns == Some(self.now_ns) {
            t = self.now_ns + TICK_RETRY_NS;
        }
        if self.tick_at != Some(t) {
            self.tick_at = Some(t);
            self.queue.push(t, Event::Tick);
        }
    }

    fn report(mut self) -> Result<SimReport, String> {
        let end_ns = self.now_ns;
        let growth = self.growth_report()?;
        let failure = self.failure_report();
        let status = self
            .machine
            .handle_admin(TimeNs(end_ns), AdminCommand::Status);
        let engine = engine_counters(&status);
        let mut by_cause: BTreeMap<String, super::stats::CauseCount> = BTreeMap::new();
        let mut disks = Vec::with_capacity(self.members.len());
        for (i, m) in self.members.iter_mut().enumerate() {
            for (cause, count) in &m.stats.by_cause {
                by_cause.entry(cause.to_string()).or_default().add(count);
            }
            let mut disk = m.stats.report(i, end_ns);
            if let crate::disk::Device::Hdd(model) = &m.device {
                disk.read_waits = super::stats::ReadWaitReport::from_model(&model.read_waits());
            }
            disks.push(disk);
        }
        let summary = self.metrics.summary();
        let (checked, mismatches) = self
            .oracle
            .as_ref()
            .map_or((0, 0), |o| (o.checked_reads, o.mismatches));
        Ok(SimReport {
            target: self.info.clone(),
            disk_model: self.config.disk.name(),
            seed: self.config.seed,
            turnaround_ms: summary.elapsed_s * 1e3,
            summary,
            failed_requests: self.failed_requests,
            simulated_end_s: end_ns as f64 / 1e9,
            device_requests: self.device_requests,
            device_ios_by_cause: by_cause,
            engine,
            disks,
            windows: self
                .metrics
                .windows()
                .map(|w| w.windows())
                .unwrap_or_default(),
            cdf: self.metrics.latency().cdf(self.config.cdf_points),
            data_checked_reads: checked,
            data_mismatches: mismatches,
            data_first_mismatch: self.oracle.as_ref().and_then(|o| o.first_mismatch.clone()),
            growth,
            failure,
            merged_ios: self.members.iter().map(|m| m.stats.merged).sum(),
            host_waited_requests: self.host_waited_requests,
            host_queue_max: self.host_queue_max,
            admission_limit: self.config.admission_limit() as u64,
            timed_out: self.timed_out,
            flushed_throughput_mb_per_s: self.final_flush_done_ns.map(|done| {
                let elapsed_s = (done - self.first_arrival_ns.unwrap_or(0)) as f64 / 1e9;
                self.written_bytes as f64 / 1e6 / elapsed_s.max(1e-9)
            }),
        })
    }

    /// The growth part of the report, with the lower bound.
    fn growth_report(&mut self) -> Result<Option<GrowthReport>, String> {
        let now = self.now_ns;
        let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
        let Some(g) = &mut self.growth else {
            return Ok(None);
        };
        // A step cut short by the end of the run: its status as it stands.
        if let Some(index) = g.active {
            g.steps[index].status = status
                .get("reshape")
                .cloned()
                .unwrap_or(serde_json::Value::Null);
        }
        let done = g.all_done();
        let redistribution_time_s = match (g.first_start_ns, g.last_finish_ns) {
            (Some(s), Some(f)) if done => Some((f - s) as f64 / 1e9),
            _ => None,
        };
        let per_disk: Vec<(u64, u64)> = self
            .members
            .iter()
            .map(|m| {
                m.stats
                    .by_cause
                    .get("redistribution")
                    .map_or((0, 0), |c| (c.read_bytes, c.written_bytes))
            })
            .collect();
        let read_bytes: u64 = per_disk.iter().map(|d| d.0).sum();
        let written_bytes: u64 = per_disk.iter().map(|d| d.1).sum();
        let start = eraid_core::geometry::METADATA_BYTES;
        let sequential = super::seq_rate::measure(&self.config.disk, start, self.member_bytes)?;
        let disk_time = |(r, w): (u64, u64)| {
            r as f64 / sequential.read_bytes_s + w as f64 / sequential.write_bytes_s
        };
        let involved = per_disk.iter().filter(|d| d.0 + d.1 > 0).count().max(1);
        let lower_bound_s = per_disk.iter().map(|&d| disk_time(d)).sum::<f64>() / involved as f64;
        let lower_bound_busiest_disk_s = per_disk.iter().map(|&d| disk_time(d)).fold(0.0, f64::max);
        Ok(Some(GrowthReport {
            load: g.plan.load,
            steps: g.steps.clone(),
            done,
            redistribution_time_s,
            requests_during: g.during.count(),
            mean_response_ms_during: g.during.mean_ns() / 1e6,
            p99_response_ms_during: g.during.p99_ns() as f64 / 1e6,
            max_response_ms_during: g.during.max_ns() as f64 / 1e6,
            redistribution_read_bytes: read_bytes,
            redistribution_written_bytes: written_bytes,
            sequential,
            lower_bound_s,
            lower_bound_busiest_disk_s,
            samples: std::mem::take(&mut g.samples),
        }))
    }
}

/// The engine's counters: every non-negative integer at the top level of
/// its status, except the fields describing its shape.
/// The id of the flush `final_flush` sends (no workload request has it).
const FINAL_FLUSH_ID: u64 = u64::MAX;

fn engine_counters(status: &serde_json::Value) -> BTreeMap<String, u64> {
    const SHAPE: [&str; 4] = ["level", "chunk_bytes", "member_count", "capacity_bytes"];
    let mut counters: BTreeMap<String, u64> = status
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !SHAPE.contains(&k.as_str()))
                .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                .collect()
        })
        .unwrap_or_default();
    // The write-back cache's counters, as `cache_destages`, ...
    if let Some(cache) = status.get("cache").and_then(|c| c.as_object()) {
        for (k, v) in cache {
            if let Some(n) = v.as_u64() {
                counters.insert(format!("cache_{k}"), n);
            }
        }
    }
    counters
}

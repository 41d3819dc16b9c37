//! The discrete-event loop: a virtual clock in nanoseconds, one agenda of
//! arrivals, drive wake-ups and engine ticks, and the sans-IO engine in the
//! middle. No wall clock is read and every random number comes from the
//! seed, so the same configuration, feed and seed give the same report.

use std::collections::{BTreeMap, VecDeque};

use eraid_core::io::*;
use eraid_trace::metrics::MetricsRecorder;
use eraid_trace::TraceRequest;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::event_queue::{Event, EventQueue};
use super::feed::{Feed, FeedSpec};
use super::member::{InflightKind, Member};
use super::oracle::Oracle;
use super::report::SimReport;
use super::store::DataMode;
use super::target::{self, TargetInfo};
use super::SimConfig;

/// Ticks that keep asking for "now" are spaced by this much, so an engine
/// whose deadline does not move cannot stall the clock.
const TICK_RETRY_NS: u64 = 1_000_000;

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
    feed: Feed,
    feed_done: bool,
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
        let mut devices = Vec::with_capacity(member_count);
        for _ in 0..member_count {
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
        let members = devices
            .into_iter()
            .zip(built.initial_contents)
            .map(|(device, contents)| Member::new(device, store.then_some(contents), write_back))
            .collect();
        let feed = feed.open(built.info.capacity_bytes, config.seed)?;
        Ok(Simulation {
            config: config.clone(),
            info: built.info,
            machine: built.machine,
            members,
            queue: EventQueue::default(),
            now_ns: 0,
            feed,
            feed_done: false,
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
        self.start_feed()?;
        self.pump()?;
        loop {
            if self.feed_done && self.users.is_empty() {
                break;
            }
            let Some((time_ns, event)) = self.queue.pop() else {
                return Err(format!(
                    "the simulation stalled at {} ns with {} requests unanswered (an engine or driver bug)",
                    self.now_ns,
                    self.users.len()
                ));
            };
            self.now_ns = self.now_ns.max(time_ns);
            match event {
                Event::Arrival(request) => self.arrive(request)?,
                Event::DeviceWake(member) => self.wake(member, time_ns),
                Event::Tick => {
                    if self.tick_at == Some(time_ns) {
                        self.tick_at = None;
                        self.last_tick_ns = Some(self.now_ns);
                        self.machine.handle_tick(TimeNs(self.now_ns));
                    }
                }
            }
            self.pump()?;
        }
        Ok(self.report())
    }

    fn limit_reached(&self) -> bool {
        self.config
            .max_requests
            .is_some_and(|max| self.issued >= max)
    }

    fn start_feed(&mut self) -> Result<(), String> {
        match &mut self.feed {
            Feed::Open(_) => self.pull_open()?,
            Feed::Closed { outstanding, .. } => {
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
        let Feed::Open(stream) = &mut self.feed else {
            return Ok(());
        };
        match stream.next() {
            None => self.feed_done = true,
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(mut request)) => {
                request.arrival_ns = request.arrival_ns.max(self.now_ns);
                self.issued += 1;
                self.queue.push(request.arrival_ns, Event::Arrival(request));
            }
        }
        Ok(())
    }

    fn pull_closed(&mut self) {
        if self.limit_reached() {
            self.feed_done = true;
            return;
        }
        let now_ns = self.now_ns;
        let Feed::Closed { next, .. } = &mut self.feed else {
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
                data: bytes,
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
        if matches!(self.feed, Feed::Open(_)) {
            self.pull_open()?;
        }
        Ok(())
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
                let result = match inflight.kind {
                    InflightKind::Read {
                        offset_bytes,
                        len_bytes,
                    } => IoCompletion::Read(match &m.store {
                        Some(store) => store.read(offset_bytes, len_bytes),
                        None => vec![0; len_bytes],
                    }),
                    InflightKind::Write { offset_bytes, data } => {
                        if let (Some(store), Some(data)) = (&mut m.store, data) {
                            store.write(offset_bytes, &data);
                        }
                        IoCompletion::Done
                    }
                };
                self.immediate.push_back((inflight.io, result));
            }
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
        if let Some(t) = m.device.next_event_ns() {
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
            let mut touched = Vec::new();
            while let Some(io) = self.machine.poll_io() {
                progressed = true;
                let member = io.member;
                let Some(m) = self.members.get_mut(member) else {
                    return Err(format!(
                        "the engine addressed member {member}, which does not exist"
                    ));
                };
                if !matches!(io.op, DeviceOp::Flush) {
                    self.device_requests += 1;
                }
                if let Err(refused) = m.submit(self.now_ns, io.id, io.cause, io.op) {
                    self.immediate
                        .push_back((refused.io, IoCompletion::Failed(refused.reason)));
                }
                touched.push(member);
            }
            touched.sort_unstable();
            touched.dedup();
            for member in touched {
                self.settle_member(member);
            }
            while let Some(reply) = self.machine.poll_reply() {
                progressed = true;
                self.answer(reply);
            }
            while self.machine.poll_event().is_some() {
                progressed = true;
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
        let Some(user) = self.users.remove(&id) else {
            return;
        };
        match reply.result {
            Ok(bytes) => {
                self.metrics.record(&user.request, self.now_ns);
                if let Some(oracle) = &mut self.oracle {
                    match (user.request.is_read, &user.data) {
                        (true, _) => oracle.read_done(id, bytes.as_deref()),
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
        if matches!(self.feed, Feed::Closed { .. }) {
            self.pull_closed();
        }
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

    fn report(mut self) -> SimReport {
        let end_ns = self.now_ns;
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
            disks.push(m.stats.report(i, end_ns));
        }
        let summary = self.metrics.summary();
        let (checked, mismatches) = self
            .oracle
            .as_ref()
            .map_or((0, 0), |o| (o.checked_reads, o.mismatches));
        SimReport {
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
        }
    }
}

/// The engine's counters: every non-negative integer at the top level of
/// its status, except the fields describing its shape.
fn engine_counters(status: &serde_json::Value) -> BTreeMap<String, u64> {
    const SHAPE: [&str; 4] = ["level", "chunk_bytes", "member_count", "capacity_bytes"];
    status
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !SHAPE.contains(&k.as_str()))
                .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                .collect()
        })
        .unwrap_or_default()
}

//! The simulation's side of a member failure (see `driver::failure`): the
//! spare handed to the engine, the failure sent at its instant, the
//! rebuild's events and samples, and the response times while it ran.

use eraid_core::growth::config::NewMember;
use eraid_core::io::{AdminCommand, ArrayEvent, TimeNs};
use eraid_trace::metrics::LatencyRecorder;
use serde_json::Value;

use super::super::event_queue::Event;
use super::super::failure::{FailurePlan, FailureReport, RebuildSample};
use super::{Simulation, OPENING_RETRY_NS};

/// The failure of a run as it happens.
pub(super) struct FailureRun {
    pub plan: FailurePlan,
    spare_added: bool,
    failed_ns: Option<u64>,
    started_ns: Option<u64>,
    finished_ns: Option<u64>,
    /// Response times of requests that arrived after the failure and
    /// before the rebuild finished.
    during: LatencyRecorder,
    /// The same, reads alone (writes are `during` less these).
    reads_during: LatencyRecorder,
    samples: Vec<RebuildSample>,
    /// Responses since the last sample: count, sum and max (ns).
    since_sample: (u64, u128, u64),
    /// The engine's `rebuild` status when it finished.
    status: Value,
}

impl FailureRun {
    pub fn new(plan: FailurePlan) -> FailureRun {
        FailureRun {
            plan,
            spare_added: false,
            failed_ns: None,
            started_ns: None,
            finished_ns: None,
            during: LatencyRecorder::new(),
            reads_during: LatencyRecorder::new(),
            samples: Vec::new(),
            since_sample: (0, 0, 0),
            status: Value::Null,
        }
    }

    /// Nothing more to wait for before the run may end.
    pub fn settled(&self) -> bool {
        !self.plan.until_done || self.finished_ns.is_some()
    }

    /// Notes one answered user request.
    pub fn record(&mut self, arrival_ns: u64, latency_ns: u64, is_read: bool) {
        let after_failure = self.failed_ns.is_some_and(|f| arrival_ns >= f);
        let before_end = self.finished_ns.is_none_or(|f| arrival_ns < f);
        if after_failure && before_end {
            self.during.record(latency_ns);
            if is_read {
                self.reads_during.record(latency_ns);
            }
        }
        if self.failed_ns.is_some() {
            let (n, sum, max) = &mut self.since_sample;
            *n += 1;
            *sum += u128::from(latency_ns);
            *max = (*max).max(latency_ns);
        }
    }
}

impl Simulation {
    fn engine_phase_opening(&mut self) -> bool {
        let status = self
            .machine
            .handle_admin(TimeNs(self.now_ns), AdminCommand::Status);
        status.get("phase").and_then(Value::as_str) == Some("opening")
    }

    fn refused(answer: &Value) -> Option<String> {
        answer
            .get("error")
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
    }

    /// Hands the extra drive to the engine as a hot spare (device
    /// `member_count`), once the array runs.
    pub(super) fn add_spare(&mut self) -> Result<(), String> {
        let now = self.now_ns;
        if self.engine_phase_opening() {
            self.queue.push(now + OPENING_RETRY_NS, Event::FailureSpare);
            return Ok(());
        }
        let device = self.info.members;
        let member = NewMember {
            uuid: format!("sim-spare-{}-{device}", self.config.seed),
            path_hint: format!("sim{device}"),
            size_bytes: self.member_bytes,
        };
        let answer = self.machine.handle_admin(
            TimeNs(now),
            AdminCommand::AddMember {
                member,
                spare: true,
            },
        );
        if let Some(error) = Self::refused(&answer) {
            return Err(format!("the engine refused the hot spare: {error}"));
        }
        if let Some(f) = &mut self.failure {
            f.spare_added = true;
        }
        Ok(())
    }

    /// Fails the planned member, as `eraid fail` does.
    pub(super) fn fail_planned_member(&mut self) -> Result<(), String> {
        let now = self.now_ns;
        let Some(f) = &self.failure else {
            return Ok(());
        };
        let (slot, waits_for_spare) = (f.plan.member, f.plan.spare && !f.spare_added);
        if waits_for_spare || self.engine_phase_opening() {
            self.queue.push(now + OPENING_RETRY_NS, Event::FailureStart);
            return Ok(());
        }
        let answer = self
            .machine
            .handle_admin(TimeNs(now), AdminCommand::FailMember { slot });
        if let Some(error) = Self::refused(&answer) {
            return Err(format!("the engine refused to fail member {slot}: {error}"));
        }
        let Some(f) = &mut self.failure else {
            return Ok(());
        };
        f.failed_ns = Some(now);
        let at = now + f.plan.sample_ns;
        self.queue.push(at, Event::RebuildSample);
        Ok(())
    }

    /// A rebuild event from the engine.
    pub(super) fn rebuild_event(&mut self, event: &ArrayEvent) -> Result<(), String> {
        let now = self.now_ns;
        match event {
            ArrayEvent::RebuildStarted { .. } => {
                if let Some(f) = &mut self.failure {
                    f.started_ns.get_or_insert(now);
                }
            }
            ArrayEvent::RebuildFinished { .. } => {
                self.take_rebuild_sample();
                let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
                let Some(f) = &mut self.failure else {
                    return Ok(());
                };
                f.finished_ns = Some(now);
                f.status = status.get("rebuild").cloned().unwrap_or(Value::Null);
                if f.plan.until_done {
                    self.cut = true;
                    self.feed_done = true;
                }
            }
            ArrayEvent::RebuildStopped { reason } => {
                return Err(format!(
                    "the rebuild stopped at {:.3} s: {reason}",
                    now as f64 / 1e9
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// The periodic rebuild sample; schedules the next while it runs.
    pub(super) fn sample_rebuild(&mut self) {
        let running = self
            .failure
            .as_ref()
            .is_some_and(|f| f.finished_ns.is_none());
        if !running {
            return;
        }
        self.take_rebuild_sample();
        if let Some(f) = &self.failure {
            let at = self.now_ns + f.plan.sample_ns;
            self.queue.push(at, Event::RebuildSample);
        }
    }

    fn take_rebuild_sample(&mut self) {
        let now = self.now_ns;
        let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
        let r = &status["rebuild"];
        let Some(f) = &mut self.failure else {
            return;
        };
        let (n, sum, max) = std::mem::take(&mut f.since_sample);
        f.samples.push(RebuildSample {
            time_s: now as f64 / 1e9,
            progress: r.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
            rebuilt_bytes: r.get("rebuilt_bytes").and_then(Value::as_u64).unwrap_or(0),
            rate_bytes_per_s: r
                .get("rate_bytes_per_s")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            user_requests: n,
            user_mean_ms: if n == 0 {
                0.0
            } else {
                sum as f64 / n as f64 / 1e6
            },
            user_max_ms: max as f64 / 1e6,
        });
    }

    /// The failure part of the report.
    pub(super) fn failure_report(&mut self) -> Option<FailureReport> {
        let now = self.now_ns;
        let status = self.machine.handle_admin(TimeNs(now), AdminCommand::Status);
        let f = self.failure.as_mut()?;
        let seconds = |ns: Option<u64>| ns.map(|t| t as f64 / 1e9);
        let reconstruction_time_s = match (f.started_ns, f.finished_ns) {
            (Some(s), Some(e)) => Some((e - s) as f64 / 1e9),
            _ => None,
        };
        let status = if f.finished_ns.is_some() {
            f.status.clone()
        } else {
            status.get("rebuild").cloned().unwrap_or(Value::Null)
        };
        Some(FailureReport {
            member: f.plan.member,
            strategy: f.plan.config.strategy.name().to_string(),
            spare: f.plan.spare,
            failed_s: seconds(f.failed_ns),
            rebuild_started_s: seconds(f.started_ns),
            rebuild_finished_s: seconds(f.finished_ns),
            reconstruction_time_s,
            requests_during: f.during.count(),
            mean_response_ms_during: f.during.mean_ns() / 1e6,
            p99_response_ms_during: f.during.p99_ns() as f64 / 1e6,
            max_response_ms_during: f.during.max_ns() as f64 / 1e6,
            reads_during: f.reads_during.count(),
            mean_read_response_ms_during: f.reads_during.mean_ns() / 1e6,
            status,
            samples: std::mem::take(&mut f.samples),
        })
    }
}

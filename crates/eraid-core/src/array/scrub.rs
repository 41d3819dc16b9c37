//! Check and resync: one resumable activity that walks stripes, verifying
//! (and, for resync or `check --repair`, rewriting) their redundancy.

use super::locks::LockMode;
use super::op::{OpKind, Parent};
use super::{Array, Phase, Ready};
use crate::io::ArrayEvent;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScrubMode {
    /// After an unclean shutdown: rewrite parity of the dirty regions.
    Resync,
    Check {
        repair: bool,
    },
}

pub struct Scrub {
    pub mode: ScrubMode,
    /// Stripe ranges still to visit, in order.
    ranges: VecDeque<std::ops::Range<u64>>,
    pub inflight: usize,
    pub stripes_total: u64,
    pub stripes_done: u64,
    pub mismatches: u64,
    pub skipped_degraded: u64,
    stopped: bool,
    /// Resync: regions still to finish, with their outstanding stripe count.
    region_remaining: std::collections::HashMap<u64, u64>,
    /// Resync: regions with a stripe skipped for want of a member; they
    /// stay marked (and pinned) for a rebuild instead of being cleared.
    skipped_regions: std::collections::HashSet<u64>,
    /// What the activity did when a member failed under it, for status.
    pub on_member_failure: Option<String>,
}

impl Scrub {
    pub fn is_resync(&self) -> bool {
        self.mode == ScrubMode::Resync
    }

    pub fn finished(&self) -> bool {
        (self.ranges.is_empty() || self.stopped) && self.inflight == 0
    }

    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Counts one visited stripe's outcome; `region` is its intent region.
    pub fn record(&mut self, region: u64, mismatch: bool, skipped: bool) {
        self.mismatches += mismatch as u64;
        self.skipped_degraded += skipped as u64;
        if skipped && self.is_resync() {
            self.skipped_regions.insert(region);
        }
    }

    /// A member failed while this ran: it goes on degraded, saying so.
    pub fn member_failed(&mut self, member: usize) {
        if self.finished() || self.on_member_failure.is_some() {
            return;
        }
        let left = if self.is_resync() {
            "; regions it could not resync stay marked for a rebuild"
        } else {
            ""
        };
        self.on_member_failure = Some(format!(
            "member {member} failed at stripe {} of {}: continued degraded, skipping the \
             stripes that need every member{left}",
            self.stripes_done, self.stripes_total
        ));
    }

    fn next_stripe(&mut self) -> Option<u64> {
        if self.stopped {
            return None;
        }
        let range = self.ranges.front_mut()?;
        let stripe = range.start;
        range.start += 1;
        if range.is_empty() {
            self.ranges.pop_front();
        }
        Some(stripe)
    }

    pub fn progress(&self) -> f64 {
        if self.stripes_total == 0 {
            1.0
        } else {
            self.stripes_done as f64 / self.stripes_total as f64
        }
    }
}

impl Array {
    pub(super) fn start_check(&mut self, repair: bool) -> Result<(), String> {
        if self.phase != Phase::Running {
            return Err("the array is not running (opening or closing)".into());
        }
        if self.scrub_running() {
            return Err("a check or resync is already running".into());
        }
        if self.geometry.parity_per_stripe() == 0 {
            return Err("RAID-0 has no redundancy to check".into());
        }
        if self.reshape_active() {
            return Err("a growth is running; check the array when it is done".into());
        }
        if self.rebuild_active() {
            return Err("a rebuild is running; check the array when it is done".into());
        }
        let stripes = self.geometry.stripe_count();
        self.scrub = Some(Scrub {
            mode: ScrubMode::Check { repair },
            ranges: std::iter::once(0..stripes).collect(),
            inflight: 0,
            stripes_total: stripes,
            stripes_done: 0,
            mismatches: 0,
            skipped_degraded: 0,
            stopped: false,
            region_remaining: Default::default(),
            skipped_regions: Default::default(),
            on_member_failure: None,
        });
        self.ready.push(Ready::Scrub);
        Ok(())
    }

    pub(super) fn start_resync(&mut self, regions: Vec<u64>) {
        let per_region = self.intent.stripes_per_region;
        let stripe_count = self.geometry.stripe_count();
        let mut ranges = VecDeque::new();
        let mut region_remaining = std::collections::HashMap::new();
        let mut total = 0;
        for &region in &regions {
            let start = region * per_region;
            let end = (start + per_region).min(stripe_count);
            self.intent.pinned.insert(region);
            region_remaining.insert(region, end - start);
            total += end - start;
            ranges.push_back(start..end);
        }
        self.outbox_event.push_back(ArrayEvent::ResyncStarted {
            regions: regions.len() as u64,
        });
        self.scrub = Some(Scrub {
            mode: ScrubMode::Resync,
            ranges,
            inflight: 0,
            stripes_total: total,
            stripes_done: 0,
            mismatches: 0,
            skipped_degraded: 0,
            stopped: false,
            region_remaining,
            skipped_regions: Default::default(),
            on_member_failure: None,
        });
        self.ready.push(Ready::Scrub);
    }

    pub(super) fn pump_scrub(&mut self) {
        loop {
            let window = self.options.scrub_window_stripes.max(1);
            let Some(scrub) = &mut self.scrub else { return };
            if scrub.inflight >= window {
                return;
            }
            let Some(stripe) = scrub.next_stripe() else {
                break;
            };
            let repair = match scrub.mode {
                ScrubMode::Resync => true,
                ScrubMode::Check { repair } => repair,
            };
            // Mid-growth, a row holds an old stripe, a new one, or neither
            // (rows already vacated): only real stripes are visited.
            let Some(target) = self.scrub_target(stripe) else {
                self.account_scrub_stripe(stripe);
                continue;
            };
            self.scrub.as_mut().expect("scrub").inflight += 1;
            self.create_op(
                Parent::Scrub,
                target,
                OpKind::Scrub { repair },
                LockMode::Exclusive,
                Default::default(),
            );
        }
        self.maybe_finish_scrub();
    }

    pub(super) fn scrub_op_done(&mut self, stripe: u64) {
        self.scrub
            .as_mut()
            .expect("scrub op without a scrub")
            .inflight -= 1;
        self.account_scrub_stripe(stripe);
        self.ready.push(Ready::Scrub);
    }

    /// Counts a visited (or skipped) stripe and unpins its region when done.
    fn account_scrub_stripe(&mut self, stripe: u64) {
        let region = self.intent.region_of(stripe);
        // A stripe is skipped while a member of it is missing or not yet
        // rebuilt; every member whole again with no rebuild left means a
        // rebuild has since rewritten the skipped stripes, parity included
        // (the region is pinned, so suspect). The rebuild's own end
        // (`finish_rebuild`) released the regions skipped before it; this
        // releases those whose last stripe came after it (DST seeds 4678,
        // 16048, 20967). Mirrors still need a resync of the copies.
        let rebuilt_since = self.rebuild.is_none()
            && !self.is_degraded()
            && self.geometry.level != crate::geometry::Level::Raid10;
        let scrub = self.scrub.as_mut().expect("scrub op without a scrub");
        scrub.stripes_done += 1;
        if let Some(remaining) = scrub.region_remaining.get_mut(&region) {
            *remaining -= 1;
            if *remaining == 0 {
                scrub.region_remaining.remove(&region);
                if scrub.skipped_regions.remove(&region) && !rebuilt_since {
                    // Not resynced: it stays set until a rebuild does it.
                    if !self.unresynced_regions.contains(&region) {
                        self.unresynced_regions.push(region);
                    }
                } else {
                    // Resynced: the region may now be cleared once idle and flushed.
                    self.intent.pinned.remove(&region);
                }
            }
        }
    }

    fn maybe_finish_scrub(&mut self) {
        let Some(scrub) = &self.scrub else { return };
        if scrub.finished()
            && scrub.is_resync()
            && !scrub.stopped
            && scrub.region_remaining.is_empty()
        {
            let regions = scrub.stripes_total.div_ceil(self.intent.stripes_per_region);
            if !self
                .outbox_event
                .iter()
                .any(|e| matches!(e, ArrayEvent::ResyncFinished { .. }))
            {
                self.outbox_event
                    .push_back(ArrayEvent::ResyncFinished { regions });
            }
        }
        self.resync_mirror_regions_left_by_a_rebuild();
    }

    /// A RAID-10 rebuild that ended while a check ran left its regions to
    /// resync (`finish_rebuild`): start once the check is over.
    fn resync_mirror_regions_left_by_a_rebuild(&mut self) {
        if self.geometry.level == crate::geometry::Level::Raid10
            && !self.scrub_running()
            && self.rebuild.is_none()
            && !self.is_degraded()
            && self.phase == Phase::Running
            && !self.unresynced_regions.is_empty()
        {
            let regions = std::mem::take(&mut self.unresynced_regions);
            self.start_resync(regions);
        }
    }
}

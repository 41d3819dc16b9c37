//! The operator's hand on a running growth: pause it (it stays paused
//! across restarts until resumed), let it go on, change its rate settings.

use super::super::Array;
use crate::growth::config::GrowthTuning;
use crate::growth::record::ReshapeState;

impl Array {
    fn growth_in_progress(&self) -> Result<(), String> {
        match (&self.reshape, self.reshape_record()) {
            (Some(_), Some(record)) if record.state != ReshapeState::Done => Ok(()),
            _ => Err("no growth is in progress".into()),
        }
    }

    pub(in crate::array) fn hold_reshape(&mut self) -> Result<(), String> {
        self.growth_in_progress()?;
        let record = self.reshape_record_mut();
        if record.held {
            return Err("the growth is already paused by the operator".into());
        }
        record.held = true;
        if record.state == ReshapeState::Running {
            record.state = ReshapeState::Paused;
            record.pause_reason = Some("paused by the operator".into());
        }
        // Record what was copied, so a restart need not copy it again.
        let reshape = self.reshape.as_mut().expect("growth");
        if reshape.copied_end > reshape.checkpoint {
            reshape.checkpoint_wanted = true;
        }
        // The handler's `run_ready` lets the growth go on.
        self.request_superblock_write();
        Ok(())
    }

    pub(in crate::array) fn release_reshape(&mut self) -> Result<(), String> {
        self.growth_in_progress()?;
        if self.reshape_record().expect("record").state != ReshapeState::Paused {
            return Err("the growth is not paused".into());
        }
        if let Some(rebuild) = self.rebuild.as_ref().filter(|r| !r.targets.is_empty()) {
            return Err(format!(
                "member {:?} is being rebuilt; the growth goes on by itself when that is done",
                rebuild.targets
            ));
        }
        if self.is_degraded() {
            let missing: Vec<String> = (0..self.present.len())
                .filter(|&m| !self.present[m])
                .map(|m| m.to_string())
                .collect();
            return Err(format!(
                "the array is degraded (member {} missing or failed); the growth stays paused until every member is back",
                missing.join(", ")
            ));
        }
        let record = self.reshape_record_mut();
        record.held = false;
        record.state = ReshapeState::Running;
        record.pause_reason = None;
        // The handler's `run_ready` lets the growth go on.
        self.request_superblock_write();
        Ok(())
    }

    pub(in crate::array) fn tune_reshape(&mut self, tuning: &GrowthTuning) -> Result<(), String> {
        self.growth_in_progress()?;
        if tuning.is_empty() {
            return Err("no setting to change".into());
        }
        let tuned = tuning.applied_to(&self.reshape_record().expect("record").config)?;
        self.reshape_record_mut().config = tuned;
        // The handler's `run_ready` lets the growth go on.
        self.request_superblock_write();
        Ok(())
    }
}

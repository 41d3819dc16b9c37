//! The EPU paper's rate control (Sec. V-C): time is cut into slots, and in
//! each the array may take at most `io_rate_max_blocks_s` blocks per
//! second of the slot: the blocks users ask for (the paper's user I/O
//! rate, not the device I/O their parity updates cause) and the growth's
//! device I/O. Users go first: the growth starts a window only while the
//! slot's total is below that budget; when users alone exceed it, nothing
//! is moved in that slot. A window that overruns
//! the budget is charged to the slots after it, so over time the device
//! I/O rate stays within the setting.

use crate::growth::config::ReshapeConfig;
use crate::io::TimeNs;

#[derive(Debug, Default)]
pub struct IoSlots {
    slot_start: TimeNs,
    /// Bytes (asked for by users, or the growth's device I/O) charged to the current slot.
    used_bytes: u64,
}

fn budget_bytes(config: &ReshapeConfig) -> u64 {
    config
        .io_rate_max_blocks_s
        .saturating_mul(config.io_block_bytes)
        .saturating_mul(config.io_slot_ms)
        / 1000
}

impl IoSlots {
    /// Moves to the slot holding `now`; each slot passed pays its budget.
    fn roll(&mut self, now: TimeNs, config: &ReshapeConfig) {
        let slot_ns = config.io_slot_ms * 1_000_000;
        if now.0 < self.slot_start.0 + slot_ns {
            return;
        }
        let passed = (now.0 - self.slot_start.0) / slot_ns;
        self.used_bytes = self
            .used_bytes
            .saturating_sub(passed.saturating_mul(budget_bytes(config)));
        self.slot_start = TimeNs(self.slot_start.0 + passed * slot_ns);
    }

    /// `bytes` were asked for by a user, or issued by the growth, at `now`.
    pub fn charge(&mut self, now: TimeNs, bytes: u64, config: &ReshapeConfig) {
        if config.io_rate_max_blocks_s == 0 {
            return;
        }
        self.roll(now, config);
        self.used_bytes = self.used_bytes.saturating_add(bytes);
    }

    /// When the growth may start its next window, if not now.
    pub fn gate(&mut self, now: TimeNs, config: &ReshapeConfig) -> Option<TimeNs> {
        if config.io_rate_max_blocks_s == 0 {
            return None;
        }
        self.roll(now, config);
        (self.used_bytes >= budget_bytes(config))
            .then(|| TimeNs(self.slot_start.0 + config.io_slot_ms * 1_000_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::config::ReshapeStrategy;

    const MS: u64 = 1_000_000;

    fn rate(blocks_s: u64) -> ReshapeConfig {
        ReshapeConfig {
            io_rate_max_blocks_s: blocks_s,
            ..ReshapeConfig::with_strategy(ReshapeStrategy::Epu)
        }
    }

    /// 1200 blocks/s of 4 KiB in 1 s slots: a slot whose users took the
    /// whole budget moves nothing until the next slot; a window that
    /// overran it delays the growth by as many slots as it overran.
    #[test]
    fn users_first_then_the_growth_up_to_the_budget() {
        let config = rate(1200);
        let budget = 1200 * 4096;
        let mut slots = IoSlots::default();
        assert_eq!(slots.gate(TimeNs(0), &config), None, "an empty slot");
        slots.charge(TimeNs(100 * MS), budget - 1, &config);
        assert_eq!(slots.gate(TimeNs(200 * MS), &config), None, "budget left");
        slots.charge(TimeNs(300 * MS), 1, &config);
        assert_eq!(
            slots.gate(TimeNs(400 * MS), &config),
            Some(TimeNs(1000 * MS))
        );
        assert_eq!(slots.gate(TimeNs(1000 * MS), &config), None, "next slot");
        // A window of 2.5 budgets: the next two slots are paid by it.
        slots.charge(TimeNs(1100 * MS), budget * 5 / 2, &config);
        assert_eq!(
            slots.gate(TimeNs(1200 * MS), &config),
            Some(TimeNs(2000 * MS))
        );
        assert_eq!(
            slots.gate(TimeNs(2500 * MS), &config),
            Some(TimeNs(3000 * MS))
        );
        assert_eq!(slots.gate(TimeNs(3000 * MS), &config), None);
        // Off: never waits.
        let off = rate(0);
        let mut slots = IoSlots::default();
        slots.charge(TimeNs(0), u64::MAX, &off);
        assert_eq!(slots.gate(TimeNs(1), &off), None);
    }
}

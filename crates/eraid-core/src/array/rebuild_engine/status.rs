//! The rebuild part of the status JSON.

use super::super::Array;
use crate::rebuild::record::{RebuildKind, RebuildState};
use serde_json::json;

impl Array {
    pub(in crate::array) fn rebuild_status_json(&self) -> Option<serde_json::Value> {
        let record = self.rebuild_record()?;
        let total_bytes = self.geometry.member_data_bytes;
        let total_stripes = record.total_stripes;
        let recorded_stripes = record.recorded_stripes();
        let (position, done_stripes) = match &self.rebuild {
            Some(r) => (r.position(), r.done_stripes()),
            None if record.state == RebuildState::Done => (total_stripes, total_stripes),
            None => (record.checkpoint_stripe, recorded_stripes),
        };
        let copied_bytes = self
            .rebuild
            .as_ref()
            .map_or(record.counters.copied_bytes, |r| r.copied_bytes);
        // A re-add counts only what it copies; a full rebuild, every
        // rebuilt stripe.
        let re_add = record.kind == RebuildKind::ReAdd;
        let rebuilt_bytes = if re_add {
            copied_bytes
        } else {
            self.rebuilt_bytes_at(done_stripes)
        };
        let checkpoint_bytes = if re_add {
            record.counters.copied_bytes
        } else {
            self.rebuilt_bytes_at(recorded_stripes)
        };
        let rate = self
            .rebuild
            .as_ref()
            .map_or(0.0, |r| r.pacing.rate_bytes_s(self.now, rebuilt_bytes));
        let eta_s = (rate > 0.0 && record.state.unfinished() && !re_add)
            .then(|| total_bytes.saturating_sub(rebuilt_bytes) as f64 / rate);
        let progress = if total_stripes == 0 {
            1.0
        } else {
            done_stripes as f64 / total_stripes as f64
        };
        let zones = self.rebuild.as_ref().and_then(|r| r.order.zones_ref());
        let active_zone = zones.and_then(|z| match z.active() {
            Some(super::zone_scheduler::Thread::Zone(zone)) => Some(json!(zone)),
            Some(super::zone_scheduler::Thread::Cold) => Some(json!("cold")),
            None => None,
        });
        let hot_threads = zones.map(|z| z.hot_threads());
        let targets: Vec<serde_json::Value> = record
            .targets
            .iter()
            .map(|&slot| {
                json!({
                    "slot": slot,
                    "path": self.superblock.members.get(slot).map(|m| m.path_hint.clone()),
                })
            })
            .collect();
        let (kind, source, targets) = match &record.replace {
            Some(replace) => {
                let (source, target) = self.replace_status_members(replace);
                ("replace", source, vec![target])
            }
            None => (record.kind.name(), serde_json::Value::Null, targets),
        };
        Some(json!({
            "kind": kind,
            "source": source,
            "strategy": record.config.strategy.name(),
            "copied_bytes": copied_bytes,
            "marked_regions": self.rebuild.as_ref().and_then(|r| r.marked_regions),
            "state": record.state.name(),
            "held": record.held,
            "reason": record.reason,
            "progress": progress,
            "position_stripes": position,
            "rebuilt_stripes": done_stripes,
            "inflight_stripes": self.rebuild.as_ref().map(|r| r.inflight.len()),
            "active_zone": active_zone,
            "hot_threads": hot_threads,
            "total_stripes": record.total_stripes,
            "rebuilt_bytes": rebuilt_bytes,
            "checkpoint_bytes": checkpoint_bytes,
            "total_bytes": total_bytes,
            "rate_bytes_per_s": rate,
            "eta_s": eta_s,
            "target": targets.first(),
            "targets": targets,
            "checkpoints": record.counters.checkpoints,
            "restarts": record.counters.restarts,
            // Beside a paused growth: where its rows change layout.
            "growth_checkpoint_bytes": record
                .growth_checkpoint_chunk
                .map(|c| c * self.geometry.chunk_bytes),
            "elapsed_s": self.rebuild.as_ref().map(|r| self.now.0.saturating_sub(r.started_at.0) as f64 / 1e9),
            "waiting": self.rebuild.as_ref().map(|r| {
                if r.checkpoint.is_some() {
                    "checkpoint".to_string()
                } else if r.pacing.not_before > self.now {
                    format!(
                        "rate control for {} ms",
                        (r.pacing.not_before.0 - self.now.0) / 1_000_000
                    )
                } else {
                    "nothing".to_string()
                }
            }),
            "config": record.config,
        }))
    }
}

impl Array {
    /// A replace's source (slot, path, uuid) and target (slot, the new
    /// member's path), before and after the new member took the slot.
    fn replace_status_members(
        &self,
        replace: &crate::rebuild::record::ReplaceRecord,
    ) -> (serde_json::Value, serde_json::Value) {
        let slot = replace.source;
        let in_slot = self.superblock.members.get(slot);
        let new_path = self
            .superblock
            .spares
            .iter()
            .chain(in_slot)
            .find(|m| m.uuid == replace.replacement)
            .map(|m| m.path_hint.clone());
        let old_path = in_slot
            .filter(|m| m.uuid == replace.source_uuid)
            .map(|m| m.path_hint.clone());
        (
            json!({"slot": slot, "path": old_path, "uuid": replace.source_uuid}),
            json!({"slot": slot, "path": new_path, "uuid": replace.replacement}),
        )
    }
}

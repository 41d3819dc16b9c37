//! `[failure]` of an experiment file as a [`FailurePlan`], every setting
//! checked against the array; errors name the setting.

use eraid_core::geometry::Level;
use eraid_core::rebuild::config::{RebuildConfig, RebuildStrategy};

use super::file::{FailureTable, IntOrText};
use super::rates::rate_kib_s;
use crate::driver::{FailurePlan, Target};
use crate::units::parse_size_bytes;

/// The plan, or `None` without a `[failure]` (or with `enabled = false`).
pub fn resolve_failure(
    table: Option<&FailureTable>,
    target: &Target,
    members: usize,
) -> Result<Option<FailurePlan>, String> {
    let Some(f) = table else {
        return Ok(None);
    };
    if f.enabled == Some(false) {
        return Ok(None);
    }
    let level = match target {
        Target::Array { level, .. } => *level,
        Target::Disk => {
            return Err(
                "[failure]: a bare disk has nothing to rebuild from; set [array] level".into(),
            )
        }
    };
    if level == Level::Raid0 {
        return Err(
            "[failure]: RAID-0 has no redundancy, a failed member loses data (use level 5, 6 or 10)"
                .into(),
        );
    }
    let member = match f.member {
        None => {
            return Err("[failure] member: missing (the member slot that fails, 0-based)".into())
        }
        Some(m) if m < 0 || m as u64 >= members as u64 => {
            return Err(format!(
                "[failure] member: {m} is not a member of this {members}-disk array (0..={})",
                members - 1
            ))
        }
        Some(m) => m as usize,
    };
    let at_ns = match f.at_s {
        None => 0,
        Some(s) if s.is_finite() && s >= 0.0 => (s * 1e9) as u64,
        Some(s) => return Err(format!("[failure] at_s: must be 0 or more, got {s}")),
    };
    let mut config = RebuildConfig::default();
    if let Some(name) = &f.strategy {
        config.strategy =
            RebuildStrategy::parse(name).map_err(|e| format!("[failure] strategy: {e}"))?;
    }
    if let Some(v) = &f.speed_min {
        config.speed_min_kib_s = rate_kib_s(v).map_err(|e| format!("[failure] speed_min: {e}"))?;
    }
    if let Some(v) = &f.speed_max {
        config.speed_max_kib_s = rate_kib_s(v).map_err(|e| format!("[failure] speed_max: {e}"))?;
    }
    if config.speed_max_kib_s == 0 {
        return Err("[failure] speed_max: must be at least 1 KiB/s".into());
    }
    if config.speed_min_kib_s > config.speed_max_kib_s {
        return Err(format!(
            "[failure] speed_min ({} KiB/s) is above speed_max ({} KiB/s)",
            config.speed_min_kib_s, config.speed_max_kib_s
        ));
    }
    if let Some(ms) = f.idle_check_ms {
        config.idle_check_ms = ms;
    }
    if let Some(n) = f.window_stripes {
        config.window_stripes = n;
    }
    if let Some(v) = &f.hot_zone {
        config.hot_zone_bytes = match v {
            IntOrText::Int(n) => *n,
            IntOrText::Text(t) => {
                parse_size_bytes(t).map_err(|e| format!("[failure] hot_zone: {e}"))?
            }
        };
    }
    if let Some(ms) = f.time_slice_ms {
        config.time_slice_ms = ms;
    }
    if let Some(ms) = f.popularity_half_life_ms {
        config.popularity_half_life_ms = ms;
    }
    if let Some(n) = f.dor_reads_ahead {
        config.dor_reads_ahead = n;
    }
    if let Some(redirect) = f.redirect_reads {
        config.redirect_reads = redirect;
    }
    config.validate().map_err(|e| format!("[failure]: {e}"))?;
    let sample_ns = match f.sample_ms {
        None => 1_000_000_000,
        Some(0) => return Err("[failure] sample_ms: must be positive".into()),
        Some(ms) => ms * 1_000_000,
    };
    Ok(Some(FailurePlan {
        member,
        at_ns,
        spare: f.spare.unwrap_or(true),
        config,
        until_done: false,
        sample_ns,
    }))
}

//! What an operator chooses for a rebuild: the strategy and its rate
//! settings. Recorded in the superblock so a resumed rebuild (and the next
//! one a spare starts by itself) behaves the same.

use serde::{Deserialize, Serialize};

/// How a failed member's contents are reconstructed onto its replacement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RebuildStrategy {
    /// Linux MD's pipelined rebuild: stripes in address order through the
    /// same stripe pipeline as users, rate between a floor and a ceiling,
    /// above the floor only while users are idle.
    #[default]
    Pr,
}

impl RebuildStrategy {
    pub fn name(self) -> &'static str {
        match self {
            RebuildStrategy::Pr => "pr",
        }
    }

    pub fn parse(name: &str) -> Result<RebuildStrategy, String> {
        match name {
            "pr" => Ok(RebuildStrategy::Pr),
            "dor" | "pro" | "pro-dor" => Err(format!(
                "the {name} rebuild strategy is not implemented yet; only pr is"
            )),
            other => Err(format!("unknown rebuild strategy {other:?}: expected pr")),
        }
    }
}

/// Largest number of stripes a rebuild reconstructs at once.
pub const WINDOW_STRIPES_MAX: u64 = 1024;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RebuildConfig {
    pub strategy: RebuildStrategy,
    /// Rate floor, KiB/s of replacement data written: below it the rebuild
    /// does not yield to users (MD's sync_speed_min).
    pub speed_min_kib_s: u64,
    /// Rate ceiling, KiB/s (MD's sync_speed_max).
    pub speed_max_kib_s: u64,
    /// Above the floor, the rebuild waits this long whenever a user request
    /// arrived within the last `idle_check_ms` (MD's idle rule, simplified).
    pub idle_check_ms: u64,
    /// Stripes reconstructed at once.
    pub window_stripes: u64,
    /// The position is recorded in the superblocks (after a flush of the
    /// replacement) every time this many bytes of each replacement have
    /// been rebuilt since the last record, and when the array closes.
    pub checkpoint_bytes: u64,
}

impl Default for RebuildConfig {
    fn default() -> Self {
        RebuildConfig {
            strategy: RebuildStrategy::Pr,
            speed_min_kib_s: 1_000,
            speed_max_kib_s: 200_000,
            idle_check_ms: 500,
            window_stripes: 16,
            checkpoint_bytes: 64 << 20,
        }
    }
}

impl RebuildConfig {
    /// Rejects settings no rebuild can run with, naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.speed_max_kib_s == 0 {
            return Err("speed_max_kib_s must be positive".into());
        }
        if self.speed_min_kib_s > self.speed_max_kib_s {
            return Err(format!(
                "speed_min_kib_s ({}) is above speed_max_kib_s ({})",
                self.speed_min_kib_s, self.speed_max_kib_s
            ));
        }
        if self.idle_check_ms == 0 {
            return Err("idle_check_ms must be positive".into());
        }
        if self.window_stripes == 0 || self.window_stripes > WINDOW_STRIPES_MAX {
            return Err(format!(
                "window_stripes must be within 1..={WINDOW_STRIPES_MAX}, got {}",
                self.window_stripes
            ));
        }
        if self.checkpoint_bytes == 0 {
            return Err("checkpoint_bytes must be positive".into());
        }
        Ok(())
    }
}

/// Rate settings an operator may change while a rebuild runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RebuildTuning {
    pub speed_min_kib_s: Option<u64>,
    pub speed_max_kib_s: Option<u64>,
}

impl RebuildTuning {
    pub fn is_empty(&self) -> bool {
        self.speed_min_kib_s.is_none() && self.speed_max_kib_s.is_none()
    }

    /// `config` with these settings, or why they cannot apply.
    pub fn applied_to(&self, config: &RebuildConfig) -> Result<RebuildConfig, String> {
        let mut tuned = config.clone();
        if let Some(min) = self.speed_min_kib_s {
            tuned.speed_min_kib_s = min;
        }
        if let Some(max) = self.speed_max_kib_s {
            tuned.speed_max_kib_s = max;
        }
        tuned.validate()?;
        Ok(tuned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_named() {
        let bad = RebuildConfig {
            speed_min_kib_s: 10,
            speed_max_kib_s: 5,
            ..RebuildConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("speed_min_kib_s"));
        let bad = RebuildConfig {
            window_stripes: 0,
            ..RebuildConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("window_stripes"));
        let tuning = RebuildTuning {
            speed_max_kib_s: Some(0),
            ..Default::default()
        };
        assert!(tuning.applied_to(&RebuildConfig::default()).is_err());
        assert!(RebuildStrategy::parse("pro")
            .unwrap_err()
            .contains("not implemented"));
        assert_eq!(RebuildStrategy::parse("pr"), Ok(RebuildStrategy::Pr));
    }
}

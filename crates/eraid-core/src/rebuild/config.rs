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
    Pr,
    /// RAIDframe's disk-oriented reconstruction: each surviving disk reads
    /// its units in address order ahead of the others (up to
    /// `dor_reads_ahead`), at a lower priority than users' I/O, with no
    /// rate floor or ceiling (the bandwidth users leave goes to it).
    Dor,
    /// PRO on top of PR: hot zones rebuilt first, most popular first, each
    /// for a time slice; PR's rate control and equal priority.
    #[default]
    Pro,
    /// PRO on top of DOR: PRO's order, DOR's priority and bandwidth.
    ProDor,
}

impl RebuildStrategy {
    pub const NAMES: &'static str = "pr, dor, pro, pro-dor";

    pub fn name(self) -> &'static str {
        match self {
            RebuildStrategy::Pr => "pr",
            RebuildStrategy::Dor => "dor",
            RebuildStrategy::Pro => "pro",
            RebuildStrategy::ProDor => "pro-dor",
        }
    }

    pub fn parse(name: &str) -> Result<RebuildStrategy, String> {
        match name {
            "pr" => Ok(RebuildStrategy::Pr),
            "dor" => Ok(RebuildStrategy::Dor),
            "pro" => Ok(RebuildStrategy::Pro),
            "pro-dor" => Ok(RebuildStrategy::ProDor),
            other => Err(format!(
                "unknown rebuild strategy {other:?}: expected one of {}",
                RebuildStrategy::NAMES
            )),
        }
    }

    /// Hot zones first, by popularity (PRO), rather than address order.
    pub fn by_popularity(self) -> bool {
        matches!(self, RebuildStrategy::Pro | RebuildStrategy::ProDor)
    }

    /// DOR's I/O discipline: rebuild I/O below users' priority, no rate
    /// floor or ceiling, per-disk read-ahead.
    pub fn disk_oriented(self) -> bool {
        matches!(self, RebuildStrategy::Dor | RebuildStrategy::ProDor)
    }
}

/// Largest number of stripes a rebuild reconstructs at once.
pub const WINDOW_STRIPES_MAX: u64 = 1024;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RebuildConfig {
    pub strategy: RebuildStrategy,
    /// Rate floor, KiB/s of replacement data written: below it the rebuild
    /// does not yield to users (MD's sync_speed_min). PR and PRO only.
    pub speed_min_kib_s: u64,
    /// Rate ceiling, KiB/s (MD's sync_speed_max). PR and PRO only.
    pub speed_max_kib_s: u64,
    /// Above the floor, the rebuild waits this long whenever a user request
    /// arrived within the last `idle_check_ms` (MD's idle rule, simplified).
    pub idle_check_ms: u64,
    /// Stripes reconstructed at once.
    pub window_stripes: u64,
    /// The rebuilt-units map and position are recorded in the superblocks
    /// (after a flush of the replacement) every time this many bytes of
    /// each replacement have been rebuilt since the last record, and when
    /// the array closes.
    pub checkpoint_bytes: u64,
    /// PRO: bytes of each replacement in one hot zone (one reconstruction
    /// thread each).
    pub hot_zone_bytes: u64,
    /// PRO: how long the most popular zone's thread runs before the
    /// scheduler picks again.
    pub time_slice_ms: u64,
    /// PRO: a zone's popularity (its count of user accesses) halves every
    /// this long without accesses.
    pub popularity_half_life_ms: u64,
    /// DOR: units each surviving disk's reconstruction process reads ahead
    /// (its reconstruction buffers).
    pub dor_reads_ahead: u64,
    /// Users read a replacement's rebuilt units from it (redirection of
    /// reads), and their writes may read them for parity. false: until the
    /// rebuild is done, users never read a replacement, rebuilt or not:
    /// their reads of its chunks are served from the other members
    /// (reconstructed, or the mirror copy), and their writes compute parity
    /// without it (reconstruct-write where it holds the parity or the data
    /// written, read-modify-write of the others where it holds neither),
    /// while still writing their data and parity to it. That is Linux MD
    /// 2.6.11, the PR baseline of the PRO paper ("PR performs on-the-fly
    /// reconstruction", no RBT): `handle_stripe` set `R5_Insync` from the
    /// member's `in_sync` alone, which a recovering member gets only when
    /// the whole recovery is done; the per-stripe `recovery_offset` test
    /// came in later kernels. For simulating that baseline.
    pub redirect_reads: bool,
}

/// Defaults. The PRO papers (FAST'07, and its MD port in
/// `pro-reconstruction.md`) give no values for the zone size, the time
/// slice or the decay; these are eraid's choices, stated where they come
/// from:
/// - `hot_zone_bytes` 64 MiB: the paper's 5 GB disks then have 80 zones,
///   enough for a skewed trace's hot spots to stand apart, few enough that
///   the scheduler's scan is cheap.
/// - `time_slice_ms` 100: one slice of Linux 2.6 CFQ (`slice_sync`), the
///   time-sharing scheduler of the kernel the paper ran (2.6.11); about 2 MB
///   rebuilt at the paper's 10..30 MB/s rate, so a zone is not left after a
///   few stripes.
/// - `popularity_half_life_ms` 10 000: a zone keeps its rank over a few
///   seconds of a trace yet follows a change of hot spots within the
///   paper's rebuild times (about 250..500 s).
/// - `dor_reads_ahead` 4: RAIDframe's reconstruction buffers per disk are
///   few; 4 keeps each disk busy without holding much memory.
/// - `speed_min_kib_s`, `speed_max_kib_s` 1000 and 200000, `idle_check_ms`
///   500: Linux MD's defaults (`sync_speed_min/max`, the idle rule).
impl Default for RebuildConfig {
    fn default() -> Self {
        RebuildConfig {
            strategy: RebuildStrategy::default(),
            speed_min_kib_s: 1_000,
            speed_max_kib_s: 200_000,
            idle_check_ms: 500,
            window_stripes: 16,
            checkpoint_bytes: 64 << 20,
            hot_zone_bytes: 64 << 20,
            time_slice_ms: 100,
            popularity_half_life_ms: 10_000,
            dor_reads_ahead: 4,
            redirect_reads: true,
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
        if self.hot_zone_bytes == 0 {
            return Err("hot_zone_bytes must be positive (the size of a PRO hot zone)".into());
        }
        if self.time_slice_ms == 0 || self.time_slice_ms > TIME_MS_MAX {
            return Err(format!(
                "time_slice_ms must be within 1..={TIME_MS_MAX}, got {}",
                self.time_slice_ms
            ));
        }
        if self.popularity_half_life_ms == 0 || self.popularity_half_life_ms > TIME_MS_MAX {
            return Err(format!(
                "popularity_half_life_ms must be within 1..={TIME_MS_MAX}, got {}",
                self.popularity_half_life_ms
            ));
        }
        if self.dor_reads_ahead == 0 || self.dor_reads_ahead > WINDOW_STRIPES_MAX {
            return Err(format!(
                "dor_reads_ahead must be within 1..={WINDOW_STRIPES_MAX}, got {}",
                self.dor_reads_ahead
            ));
        }
        Ok(())
    }
}

/// Longest time slice or half-life (a day): larger ones are typos, and
/// nanosecond arithmetic on them stays far from overflow.
pub const TIME_MS_MAX: u64 = 86_400_000;

/// Settings an operator may change while a rebuild runs (or before one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RebuildTuning {
    pub strategy: Option<RebuildStrategy>,
    pub speed_min_kib_s: Option<u64>,
    pub speed_max_kib_s: Option<u64>,
    pub hot_zone_bytes: Option<u64>,
    pub time_slice_ms: Option<u64>,
    pub popularity_half_life_ms: Option<u64>,
}

impl RebuildTuning {
    pub fn is_empty(&self) -> bool {
        *self == RebuildTuning::default()
    }

    /// `config` with these settings, or why they cannot apply.
    pub fn applied_to(&self, config: &RebuildConfig) -> Result<RebuildConfig, String> {
        let mut tuned = config.clone();
        if let Some(strategy) = self.strategy {
            tuned.strategy = strategy;
        }
        if let Some(min) = self.speed_min_kib_s {
            tuned.speed_min_kib_s = min;
        }
        if let Some(max) = self.speed_max_kib_s {
            tuned.speed_max_kib_s = max;
        }
        if let Some(bytes) = self.hot_zone_bytes {
            tuned.hot_zone_bytes = bytes;
        }
        if let Some(ms) = self.time_slice_ms {
            tuned.time_slice_ms = ms;
        }
        if let Some(ms) = self.popularity_half_life_ms {
            tuned.popularity_half_life_ms = ms;
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
        for strategy in [
            RebuildStrategy::Pr,
            RebuildStrategy::Dor,
            RebuildStrategy::Pro,
            RebuildStrategy::ProDor,
        ] {
            assert_eq!(RebuildStrategy::parse(strategy.name()), Ok(strategy));
        }
        assert!(RebuildStrategy::parse("fast")
            .unwrap_err()
            .contains("pr, dor, pro, pro-dor"));
        for (bad, name) in [
            (
                RebuildConfig {
                    hot_zone_bytes: 0,
                    ..RebuildConfig::default()
                },
                "hot_zone_bytes",
            ),
            (
                RebuildConfig {
                    time_slice_ms: 0,
                    ..RebuildConfig::default()
                },
                "time_slice_ms",
            ),
            (
                RebuildConfig {
                    popularity_half_life_ms: 0,
                    ..RebuildConfig::default()
                },
                "popularity_half_life_ms",
            ),
            (
                RebuildConfig {
                    dor_reads_ahead: 0,
                    ..RebuildConfig::default()
                },
                "dor_reads_ahead",
            ),
        ] {
            assert!(bad.validate().unwrap_err().contains(name), "{name}");
        }
        let zero_zone = RebuildTuning {
            hot_zone_bytes: Some(0),
            ..Default::default()
        };
        assert!(zero_zone
            .applied_to(&RebuildConfig::default())
            .unwrap_err()
            .contains("hot_zone_bytes"));
    }
}

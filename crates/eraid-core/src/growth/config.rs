//! What an operator chooses when growing an array: the strategy and its
//! tunables. Recorded in the superblock so a resumed growth behaves the same.

use super::fastscale::GrowthStrategy;
use super::scale_crs::CrsMatrix;
use serde::{Deserialize, Serialize};

/// md-reshape: which user requests wait while a window is moved, i.e. how
/// much of MD's stripe cache the window holds. Users need free stripe heads;
/// once the cache is exhausted they wait until fewer than 3/4 of it are
/// active (get_active_stripe).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MdUsersWait {
    /// Every user request, for the whole window: its destination stripes
    /// alone fill MD's default cache (256 pages per member, a 3 MiB window
    /// over 3 data members).
    Window,
    /// Every user request while the window reads: destination and source
    /// stripes together exceed a 512-page cache (the ALV paper's setting)
    /// until the sources are released, after which fewer than 3/4 are active.
    Reads,
    /// Only requests touching the window's chunks (a cache users never lack).
    Touching,
}

impl MdUsersWait {
    pub fn name(self) -> &'static str {
        match self {
            MdUsersWait::Window => "window",
            MdUsersWait::Reads => "reads",
            MdUsersWait::Touching => "touching",
        }
    }

    pub fn parse(name: &str) -> Option<MdUsersWait> {
        [
            MdUsersWait::Window,
            MdUsersWait::Reads,
            MdUsersWait::Touching,
        ]
        .into_iter()
        .find(|w| w.name() == name)
    }
}

/// What ALV's valve measures as a user I/O's latency, and what makes a
/// period congested. The paper (Sec. 3.4, footnote 5) says the latency is
/// "not the latency perceived by applications, but rather the time that
/// RAID-5 controller processes an I/O request", and congestion is a user
/// I/O that "cannot enter the volume for service immediately", mostly
/// because "the volume buffers are exhausted". Whether a request blocked at
/// the window being moved "entered" is the readings' difference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValveLatency {
    /// Arrival at the array to completion; a request the growth holds back
    /// (its window is being moved, or a checkpoint must come first) also
    /// makes the period congested.
    #[default]
    Response,
    /// Arrival at the array until the array starts serving it: only the
    /// time the growth held it back. No congestion from held requests (it
    /// is measured instead); time at the drives is not counted.
    Admission,
    /// Arrival at the array to completion, the time held back included
    /// (the controller's processing of the request: blocked at the window
    /// being moved or behind a checkpoint is part of it). Congestion is
    /// what the paper names its dominating reason, the volume's buffers
    /// exhausted: a request arrives while [`VALVE_USER_BUFFERS`] or more
    /// are already in the array.
    Processing,
}

/// `ValveLatency::Processing`: the user requests an array holds before its
/// buffers count as exhausted (the period congested). MD's default stripe
/// cache has 256 stripe heads, and every request needs at least one.
pub const VALVE_USER_BUFFERS: usize = 256;

/// Where a user request's time ends for ALV's valve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValveTimedAt {
    /// When the growth no longer holds it back.
    Admission,
    /// When its reply leaves the array.
    Reply,
}

impl ValveLatency {
    pub fn name(self) -> &'static str {
        match self {
            ValveLatency::Response => "response",
            ValveLatency::Admission => "admission",
            ValveLatency::Processing => "processing",
        }
    }

    /// Where this reading stops a request's clock.
    pub fn timed_at(self) -> ValveTimedAt {
        match self {
            ValveLatency::Admission => ValveTimedAt::Admission,
            ValveLatency::Response | ValveLatency::Processing => ValveTimedAt::Reply,
        }
    }

    pub fn parse(name: &str) -> Option<ValveLatency> {
        [
            ValveLatency::Response,
            ValveLatency::Admission,
            ValveLatency::Processing,
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }
}

/// How data is redistributed when members are added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReshapeStrategy {
    /// RAID-0: keep round-robin order (every chunk may move), moved in
    /// reordering-window order with aggregated I/O and lazy checkpoints (SLAS).
    RoundRobin,
    /// RAID-0: move a chunk only if its round-robin place is on a new disk.
    SemiRr,
    /// RAID-0: FastScale's minimal, uniform migration.
    #[serde(rename = "fastscale")]
    FastScale,
    /// RAID-5: Linux MD 2.6.18's reshape: page-sized I/O through a stripe
    /// cache, a fixed window that blocks users, its position recorded every
    /// 3000 KiB per member (or sooner when the next window needs it).
    MdReshape,
    /// RAID-5: ALV: reordering window, aligned aggregate I/O, lazy
    /// checkpoints and the on/off valve.
    Alv,
    /// CRS: Scale-CRS's minimum data migration; parity updated by
    /// read-modify-write only.
    ScaleCrs,
    /// CRS: the same migration, each unit's parity updated by whichever of
    /// read-modify-write and reconstruct-write reads fewer blocks (EPU's
    /// Algorithm 1), with aggregated reads.
    Epu,
}

impl ReshapeStrategy {
    pub const ALL: [ReshapeStrategy; 7] = [
        Self::RoundRobin,
        Self::SemiRr,
        Self::FastScale,
        Self::MdReshape,
        Self::Alv,
        Self::ScaleCrs,
        Self::Epu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::RoundRobin => "round-robin",
            Self::SemiRr => "semi-rr",
            Self::FastScale => "fastscale",
            Self::MdReshape => "md-reshape",
            Self::Alv => "alv",
            Self::ScaleCrs => "scale-crs",
            Self::Epu => "epu",
        }
    }

    pub fn parse(text: &str) -> Result<ReshapeStrategy, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == text)
            .ok_or_else(|| {
                format!(
                    "unknown growth strategy {text:?}: expected one of {}",
                    Self::ALL.map(|s| s.name()).join(", ")
                )
            })
    }

    /// The RAID-0 placement this strategy produces, if it is a RAID-0 one.
    pub fn raid0_placement(self) -> Option<GrowthStrategy> {
        match self {
            Self::RoundRobin => Some(GrowthStrategy::RoundRobin),
            Self::SemiRr => Some(GrowthStrategy::SemiRr),
            Self::FastScale => Some(GrowthStrategy::FastScale),
            Self::MdReshape | Self::Alv | Self::ScaleCrs | Self::Epu => None,
        }
    }

    /// Whether this strategy grows CRS arrays (Scale-CRS's migration).
    pub fn grows_crs(self) -> bool {
        matches!(self, Self::ScaleCrs | Self::Epu)
    }

    /// Every strategy checkpoints lazily: when the reordering window or a
    /// user write forces it, or the copied-not-checkpointed data reaches its
    /// limit (md-reshape: `md_checkpoint_bytes` per member, as MD's 3 MB).
    pub fn lazy_checkpoints(self) -> bool {
        true
    }
}

/// Largest aggregation (per-member I/O) a growth accepts.
pub const AGGREGATION_BYTES_MAX: u64 = 256 << 20;
/// EPU's I/O overlap buffer by default (the paper gives no size): 16 MiB.
pub const OVERLAP_BUFFER_BYTES_DEFAULT: u64 = 16 << 20;
/// Largest I/O overlap buffer a growth accepts.
pub const OVERLAP_BUFFER_BYTES_MAX: u64 = 1 << 30;
/// Largest md-reshape window a growth accepts.
pub const MD_WINDOW_BYTES_MAX: u64 = 1 << 30;

/// Tunables of one growth. Defaults follow the papers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReshapeConfig {
    pub strategy: ReshapeStrategy,
    /// Largest redistribution I/O per member (aggregation window height);
    /// windows are whole multiples of a new-geometry stripe.
    pub aggregation_bytes: u64,
    /// md-reshape: the page size of its stripe-cache I/O.
    pub md_page_bytes: u64,
    /// md-reshape: the array data moved at once, MD's stripe cache (256
    /// stripes of one page per new data member: 3 MiB over 3).
    pub md_window_bytes: u64,
    /// md-reshape: a checkpoint once this much per member has been copied
    /// since the last one (MD 2.6.18: 3000 KiB), or sooner when the next
    /// window would overwrite data not yet checkpointed.
    pub md_checkpoint_bytes: u64,
    /// md-reshape: which user requests wait while a window is moved.
    pub md_users_wait: MdUsersWait,
    /// Lazy strategies: most array data copied but not yet checkpointed
    /// (the sliding window never exceeds the reordering window either).
    pub sliding_window_bytes_max: u64,
    /// Redistribution rate floor (KiB/s of array data processed): below it
    /// the growth does not yield to user I/O. MD's sync_speed_min.
    pub speed_min_kib_s: u64,
    /// Redistribution rate ceiling (KiB/s). MD's sync_speed_max.
    pub speed_max_kib_s: u64,
    /// ALV valve: the period over which load is judged.
    pub valve_period_ms: u64,
    /// ALV valve: a user I/O slower than this counts as slow (B).
    pub latency_bound_ms: f64,
    /// ALV valve: load is high when more than this fraction of user I/Os in
    /// a period were slow (theta).
    pub slack: f64,
    /// ALV valve: which time of a user I/O is compared with the bound.
    pub valve_latency: ValveLatency,
    /// MD-style throttling (every strategy but alv): with user I/O seen
    /// within this long and the rate above the floor, wait this long.
    pub idle_check_ms: u64,
    /// MD-style throttling: users count as busy once they have moved more
    /// than this (KiB) on one member since the growth last yielded, as in
    /// Linux 2.6.18 (4096 sectors). 0: any user I/O within
    /// `idle_check_ms` counts.
    pub idle_user_kib: u64,
    /// MD-style throttling with Linux 2.6.18's in-flight term: a member's
    /// count is the user data completed on it minus the redistribution data
    /// in flight to it (disk statistics count at completion, MD counts its
    /// own I/O at submission), judged when windows start and when their
    /// reads have been issued; busy once it moved more than `idle_user_kib`
    /// either way since the member's last busy verdict. Off: user data
    /// issued since the last verdict, judged between windows.
    pub md_idle_in_flight: bool,
    /// The EPU paper's rate control: at most this many blocks per second
    /// (those users ask for and the growth's device I/O) in each slot,
    /// users first; the
    /// growth starts no window in a slot whose budget is spent. 0: off (the
    /// paper varies 1200 to 1500).
    pub io_rate_max_blocks_s: u64,
    /// The rate control's time slot.
    pub io_slot_ms: u64,
    /// The rate control's block (the paper's 4 KiB).
    pub io_block_bytes: u64,
    /// scale-crs, epu: the post-scaling coding matrix.
    pub crs_matrix: CrsMatrix,
    /// epu: I/O overlap. Up to this many bytes of data blocks user reads
    /// brought in are kept for the scaling to take instead of reading them
    /// again (0: off; Scale-CRS never overlaps).
    pub overlap_buffer_bytes: u64,
}

impl Default for ReshapeConfig {
    fn default() -> Self {
        ReshapeConfig {
            strategy: ReshapeStrategy::Alv,
            aggregation_bytes: 1 << 20,
            md_page_bytes: 4096,
            md_window_bytes: 3 << 20,
            md_checkpoint_bytes: 3000 << 10,
            md_users_wait: MdUsersWait::Window,
            sliding_window_bytes_max: 256 << 20,
            speed_min_kib_s: 1_000,
            speed_max_kib_s: 200_000,
            valve_period_ms: 1_000,
            latency_bound_ms: 15.0,
            slack: 0.1,
            valve_latency: ValveLatency::Response,
            idle_check_ms: 500,
            idle_user_kib: 2048,
            md_idle_in_flight: false,
            io_rate_max_blocks_s: 0,
            io_slot_ms: 1_000,
            io_block_bytes: 4096,
            crs_matrix: CrsMatrix::Jerasure,
            overlap_buffer_bytes: OVERLAP_BUFFER_BYTES_DEFAULT,
        }
    }
}

impl ReshapeConfig {
    pub fn with_strategy(strategy: ReshapeStrategy) -> ReshapeConfig {
        ReshapeConfig {
            strategy,
            ..ReshapeConfig::default()
        }
    }

    /// Rejects settings no growth can run with, naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        // Window buffers are this big per member: keep them reasonable.
        if self.aggregation_bytes == 0 || self.aggregation_bytes > AGGREGATION_BYTES_MAX {
            return Err(format!(
                "aggregation_bytes must be within 1..={AGGREGATION_BYTES_MAX}, got {}",
                self.aggregation_bytes
            ));
        }
        if self.overlap_buffer_bytes > OVERLAP_BUFFER_BYTES_MAX {
            return Err(format!(
                "overlap_buffer_bytes must be at most {OVERLAP_BUFFER_BYTES_MAX}, got {}",
                self.overlap_buffer_bytes
            ));
        }
        if self.md_window_bytes > MD_WINDOW_BYTES_MAX || self.md_page_bytes > MD_WINDOW_BYTES_MAX {
            return Err(format!(
                "md_window_bytes and md_page_bytes must be at most {MD_WINDOW_BYTES_MAX}, got {} and {}",
                self.md_window_bytes, self.md_page_bytes
            ));
        }
        if self.md_page_bytes == 0 || !self.md_page_bytes.is_multiple_of(512) {
            return Err(format!(
                "md_page_bytes must be a positive multiple of 512, got {}",
                self.md_page_bytes
            ));
        }
        if self.md_window_bytes == 0
            || self.sliding_window_bytes_max == 0
            || self.md_checkpoint_bytes == 0
        {
            return Err(
                "md_window_bytes, md_checkpoint_bytes and sliding_window_bytes_max must be positive"
                    .into(),
            );
        }
        if self.speed_max_kib_s == 0 {
            return Err("speed_max_kib_s must be positive".into());
        }
        if self.speed_min_kib_s > self.speed_max_kib_s {
            return Err(format!(
                "speed_min_kib_s ({}) is above speed_max_kib_s ({})",
                self.speed_min_kib_s, self.speed_max_kib_s
            ));
        }
        if self.valve_period_ms == 0 || self.idle_check_ms == 0 {
            return Err("valve_period_ms and idle_check_ms must be positive".into());
        }
        if !(self.latency_bound_ms.is_finite() && self.latency_bound_ms > 0.0) {
            return Err(format!(
                "latency_bound_ms must be positive, got {}",
                self.latency_bound_ms
            ));
        }
        if self.io_slot_ms == 0 || self.io_slot_ms > 3_600_000 {
            return Err(format!(
                "io_slot_ms must be within 1..=3600000, got {}",
                self.io_slot_ms
            ));
        }
        if self.io_block_bytes == 0
            || !self.io_block_bytes.is_multiple_of(512)
            || self.io_block_bytes > 1 << 30
        {
            return Err(format!(
                "io_block_bytes must be a positive multiple of 512 up to 1 GiB, got {}",
                self.io_block_bytes
            ));
        }
        if !(0.0..=1.0).contains(&self.slack) {
            return Err(format!("slack must be within 0..1, got {}", self.slack));
        }
        Ok(())
    }
}

/// A member joining the array in a growth, as the driver opened it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewMember {
    pub uuid: String,
    pub path_hint: String,
    pub size_bytes: u64,
}

/// Rate settings an operator may change while a growth runs (the others
/// shape windows already planned and stay as they were).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrowthTuning {
    pub speed_min_kib_s: Option<u64>,
    pub speed_max_kib_s: Option<u64>,
    pub latency_bound_ms: Option<f64>,
    pub slack: Option<f64>,
    pub valve_latency: Option<ValveLatency>,
}

impl GrowthTuning {
    pub fn is_empty(&self) -> bool {
        *self == GrowthTuning::default()
    }

    /// `config` with these settings applied, or why they cannot be.
    pub fn applied_to(&self, config: &ReshapeConfig) -> Result<ReshapeConfig, String> {
        if config.strategy != ReshapeStrategy::Alv
            && (self.latency_bound_ms.is_some()
                || self.slack.is_some()
                || self.valve_latency.is_some())
        {
            return Err(format!(
                "the latency bound, slack and valve reading steer ALV's valve; this growth is {}, \
                 paced by its speed floor and ceiling only",
                config.strategy.name()
            ));
        }
        let mut tuned = config.clone();
        if let Some(v) = self.speed_min_kib_s {
            tuned.speed_min_kib_s = v;
        }
        if let Some(v) = self.speed_max_kib_s {
            tuned.speed_max_kib_s = v;
        }
        if let Some(v) = self.latency_bound_ms {
            tuned.latency_bound_ms = v;
        }
        if let Some(v) = self.slack {
            tuned.slack = v;
        }
        if let Some(v) = self.valve_latency {
            tuned.valve_latency = v;
        }
        tuned.validate()?;
        Ok(tuned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The valve's settings tune ALV only; other growths say so instead of
    /// accepting settings that would change nothing.
    #[test]
    fn the_latency_bound_and_slack_tune_alv_only() {
        let latency = GrowthTuning {
            latency_bound_ms: Some(30.0),
            ..Default::default()
        };
        let alv = ReshapeConfig::with_strategy(ReshapeStrategy::Alv);
        assert_eq!(
            latency.applied_to(&alv).expect("alv").latency_bound_ms,
            30.0
        );
        let reading = GrowthTuning {
            valve_latency: Some(ValveLatency::Processing),
            ..Default::default()
        };
        assert_eq!(
            reading.applied_to(&alv).expect("alv").valve_latency,
            ValveLatency::Processing
        );
        for strategy in [
            ReshapeStrategy::RoundRobin,
            ReshapeStrategy::FastScale,
            ReshapeStrategy::MdReshape,
        ] {
            let config = ReshapeConfig::with_strategy(strategy);
            let error = latency.applied_to(&config).expect_err("not alv");
            assert!(error.contains(strategy.name()), "{error}");
            let slack = GrowthTuning {
                slack: Some(0.2),
                ..Default::default()
            };
            assert!(slack.applied_to(&config).is_err());
            let reading = GrowthTuning {
                valve_latency: Some(ValveLatency::Processing),
                ..Default::default()
            };
            assert!(reading.applied_to(&config).is_err());
            let speed = GrowthTuning {
                speed_max_kib_s: Some(9000),
                ..Default::default()
            };
            assert_eq!(
                speed.applied_to(&config).expect("speed").speed_max_kib_s,
                9000
            );
        }
    }
}

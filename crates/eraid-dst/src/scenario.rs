//! What one seed runs: the array, the workload's shape, the fault schedule
//! and the long activity. Everything is drawn from the seed alone.

use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES, SECTOR_BYTES};
use eraid_core::growth::config::ReshapeStrategy;
use eraid_core::rebuild::config::RebuildStrategy;
use eraid_core::testing::BadSectorKind;
use eraid_core::PlantedBug;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The long activity a seed runs alongside its workload.
#[derive(Clone, Debug)]
pub enum Activity {
    None,
    /// Grow onto `add` blank members, started at `at_step`.
    Growth {
        strategy: ReshapeStrategy,
        add: usize,
        at_step: usize,
    },
    /// A hot spare added at `at_step`; the scheduled member failure makes
    /// it take over and be rebuilt.
    SpareRebuild {
        at_step: usize,
    },
    /// Replace `slot` by a blank member, copied while serving.
    Replace {
        slot: usize,
        at_step: usize,
    },
    /// A parity/mirror check (with or without repair) started at `at_step`.
    Check {
        repair: bool,
        at_step: usize,
    },
}

#[derive(Clone, Debug)]
pub struct Crash {
    pub at_step: usize,
    /// Wait for the next flush reply after `at_step` and crash right then
    /// (where a flush acknowledged too early would lose data).
    pub after_flush_reply: bool,
}

/// A latent sector error: from `at_step`, reads of `sectors` sectors
/// from `first_sector` of chunk row `row` on slot `slot`'s device fail;
/// a write over them does what `kind` says.
#[derive(Clone, Debug)]
pub struct LatentError {
    pub at_step: usize,
    pub slot: usize,
    pub row: u64,
    pub first_sector: u64,
    pub sectors: u64,
    pub kind: BadSectorKind,
}

/// The simulated member timeout (the CLI's default): a hung member's I/O
/// is given up on after it; a slow member's never wait that long.
pub const MEMBER_TIMEOUT_MS: u64 = 30_000;

#[derive(Clone, Debug)]
pub struct Scenario {
    pub seed: u64,
    pub geometry: Geometry,
    pub bitmap: bool,
    /// `ArrayOptions::write_gather_window_us` (0: off).
    pub write_gather_window_us: u64,
    /// Writes mostly continue the previous one (streams whose partial
    /// stripes the array may gather).
    pub sequential_writes: bool,
    pub cache: Option<CacheConfig>,
    /// The journal device's size, for a write-back cache (as `create
    /// --journal` requires, and at least the size it accepts): it makes
    /// the cache durable across crashes.
    pub journal_bytes: Option<u64>,
    pub rebuild_strategy: RebuildStrategy,
    pub activity: Activity,
    /// (step, member slot) pairs: the member's device fails then.
    pub failures: Vec<(usize, usize)>,
    pub crashes: Vec<Crash>,
    /// Members whose I/Os complete rarely (picked 1 time in 20).
    pub slow_members: Vec<usize>,
    /// (step, member slot) pairs: the member's device stops answering then
    /// (its I/Os never complete); the member timeout must fail it.
    pub hangs: Vec<(usize, usize)>,
    pub latent_errors: Vec<LatentError>,
    /// Workload steps before the faults stop.
    pub steps: usize,
    /// User requests in flight at most.
    pub queue_depth: usize,
    pub planted_bug: Option<PlantedBug>,
}

fn crs(parity_members: usize, w: usize) -> Level {
    Level::Crs { parity_members, w }
}

const PARITY_LAYOUTS: [ParityLayout; 4] = [
    ParityLayout::LeftAsymmetric,
    ParityLayout::LeftSymmetric,
    ParityLayout::RightAsymmetric,
    ParityLayout::RightSymmetric,
];

fn draw_geometry(rng: &mut ChaCha8Rng) -> Geometry {
    loop {
        let (level, layout, members) = match rng.gen_range(0..5) {
            0 => (Level::Raid0, ParityLayout::None, rng.gen_range(2..=5)),
            1 => (
                Level::Raid5,
                *PARITY_LAYOUTS.choose(rng).unwrap(),
                rng.gen_range(3..=6),
            ),
            2 => (
                Level::Raid6,
                *PARITY_LAYOUTS.choose(rng).unwrap(),
                rng.gen_range(4..=7),
            ),
            3 => (Level::Raid10, ParityLayout::Near2, rng.gen_range(2..=5)),
            _ => {
                let (level, members) = *[
                    (crs(2, 3), 6),
                    (crs(3, 3), 7),
                    (crs(3, 4), 8),
                    (crs(1, 2), 3),
                ]
                .choose(rng)
                .unwrap();
                (level, ParityLayout::LeftSymmetric, members)
            }
        };
        let chunk_bytes = match level {
            // A CRS chunk is w packets of a power of two bytes.
            Level::Crs { w, .. } => (w as u64 * 1024) << rng.gen_range(0..=2),
            _ => 4096 << rng.gen_range(0..=2),
        };
        let member_chunks = rng.gen_range(8..=40);
        if let Ok(g) = Geometry::new(
            level,
            layout,
            members,
            chunk_bytes,
            METADATA_BYTES + member_chunks * chunk_bytes,
        ) {
            return g;
        }
    }
}

/// Members that may fail together without data loss (RAID-10: one, so no
/// pair loses both copies).
pub fn failures_tolerated(level: Level) -> usize {
    match level {
        Level::Raid10 => 1,
        other => other.redundancy(),
    }
}

fn growth_strategies(level: Level) -> &'static [ReshapeStrategy] {
    match level {
        Level::Raid0 => &[
            ReshapeStrategy::RoundRobin,
            ReshapeStrategy::SemiRr,
            ReshapeStrategy::FastScale,
        ],
        Level::Raid5 => &[ReshapeStrategy::Alv, ReshapeStrategy::MdReshape],
        _ => &[],
    }
}

impl Scenario {
    pub fn from_seed(seed: u64, planted_bug: Option<PlantedBug>) -> Scenario {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xd57_5eed);
        let geometry = draw_geometry(&mut rng);
        let level = geometry.level;
        let members = geometry.member_count;
        let steps = rng.gen_range(200..=900);
        let cache = (matches!(level, Level::Raid5 | Level::Raid6) && rng.gen_bool(0.2))
            .then(|| {
                let policy = *[CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt]
                    .choose(&mut rng)
                    .unwrap();
                CacheConfig {
                    policy,
                    size_bytes: 2 * members as u64 * geometry.chunk_bytes + 256 * 1024,
                    destage_window_units: 4,
                    ..CacheConfig::default()
                }
            })
            .filter(|c| c.validate(&geometry).is_ok());
        let tolerated = failures_tolerated(level);
        let strategies = growth_strategies(level);
        let mut geometry = geometry;
        let activity = match rng.gen_range(0..5) {
            0 if !strategies.is_empty() => {
                // A growth on members of a dozen chunks can stall for want
                // of room for its backup window (reported; see README):
                // growth seeds use members of 24 chunks or more.
                let member_chunks = rng.gen_range(24..=40);
                geometry = Geometry::new(
                    level,
                    geometry.layout,
                    members,
                    geometry.chunk_bytes,
                    METADATA_BYTES + member_chunks * geometry.chunk_bytes,
                )
                .expect("a larger member of a valid geometry is valid");
                Activity::Growth {
                    strategy: *strategies.choose(&mut rng).unwrap(),
                    add: rng.gen_range(1..=2),
                    at_step: rng.gen_range(0..steps / 2),
                }
            }
            1 if tolerated > 0 => Activity::SpareRebuild {
                at_step: rng.gen_range(0..steps / 2),
            },
            2 if tolerated > 0 => Activity::Replace {
                slot: rng.gen_range(0..members),
                at_step: rng.gen_range(0..steps / 2),
            },
            3 if tolerated > 0 => Activity::Check {
                repair: rng.gen_bool(0.5),
                at_step: rng.gen_range(0..steps),
            },
            _ => Activity::None,
        };
        // A growth does not run degraded: its seeds fail no member.
        let failure_count = match activity {
            Activity::Growth { .. } => 0,
            Activity::SpareRebuild { .. } => rng.gen_range(1..=tolerated),
            _ if tolerated > 0 && rng.gen_bool(0.4) => rng.gen_range(1..=tolerated),
            _ => 0,
        };
        let mut slots: Vec<usize> = (0..members).collect();
        slots.shuffle(&mut rng);
        let failures = slots[..failure_count]
            .iter()
            .map(|&slot| (rng.gen_range(0..steps), slot))
            .collect();
        // A write-back cache runs with a journal (as the product requires),
        // so cached seeds crash like the others.
        let crash_count = *[0, 0, 1, 1, 1, 2, 3].choose(&mut rng).unwrap();
        let mut crashes: Vec<Crash> = (0..crash_count)
            .map(|_| Crash {
                at_step: rng.gen_range(0..steps),
                after_flush_reply: rng.gen_bool(0.4),
            })
            .collect();
        crashes.sort_by_key(|c| c.at_step);
        let slow_members = (0..members).filter(|_| rng.gen_bool(0.15)).collect();
        let mut scenario = Scenario {
            seed,
            geometry,
            bitmap: rng.gen_bool(0.8),
            write_gather_window_us: 0,
            sequential_writes: false,
            cache,
            journal_bytes: None,
            rebuild_strategy: *[
                RebuildStrategy::Pr,
                RebuildStrategy::Dor,
                RebuildStrategy::Pro,
                RebuildStrategy::ProDor,
            ]
            .choose(&mut rng)
            .unwrap(),
            activity,
            failures,
            crashes,
            slow_members,
            steps,
            queue_depth: rng.gen_range(1..=12),
            planted_bug,
            hangs: Vec::new(),
            latent_errors: Vec::new(),
        };
        // Drawn last, so the seeds' earlier draws keep their meaning.
        scenario.draw_hangs_and_latent_errors(&mut rng, &slots[failure_count..]);
        if scenario.cache.is_some() {
            // The smallest journal `create --journal` accepts, or twice it
            // (smaller ones, 1 to 4 MiB, left requests unanswered in 5 of
            // 100,000 seeds: see the README).
            let stripe_bytes = members as u64 * scenario.geometry.chunk_bytes;
            let min_bytes = eraid_core::journal::journal_bytes_min(stripe_bytes);
            scenario.journal_bytes = Some(min_bytes * *[1u64, 2].choose(&mut rng).unwrap());
        }
        // Drawn after everything else, so earlier seeds keep their draws.
        if rng.gen_bool(0.5) {
            scenario.write_gather_window_us = rng.gen_range(200..=5_000);
            scenario.sequential_writes = rng.gen_bool(0.6);
        }
        scenario
    }

    /// Hanging members and latent sector errors, within what the level
    /// survives: the slots failed, hung or given errors that a rewrite may
    /// not heal (each of which fails its member) number at most the
    /// failures tolerated, and so do those with any latent error (a read
    /// error on one member while another is gone has nothing to be rebuilt
    /// from). `healthy` are the slots with no failure scheduled, in random
    /// order. A growth runs on a whole array: its seeds get neither.
    fn draw_hangs_and_latent_errors(&mut self, rng: &mut ChaCha8Rng, healthy: &[usize]) {
        let level = self.geometry.level;
        if matches!(self.activity, Activity::Growth { .. }) || level == Level::Raid0 {
            return;
        }
        let tolerated = failures_tolerated(level);
        let mut spare = tolerated - self.failures.len();
        let mut healthy = healthy.iter().copied();
        if spare > 0 && rng.gen_bool(0.2) {
            let slot = healthy.next().expect("a healthy slot per spare failure");
            self.hangs.push((rng.gen_range(0..self.steps), slot));
            spare -= 1;
        }
        if !rng.gen_bool(0.35) {
            return;
        }
        // Members already failing or hanging, and one more if the level
        // survives it.
        let mut slots: Vec<usize> = self.failures.iter().map(|&(_, s)| s).collect();
        slots.extend(self.hangs.iter().map(|&(_, s)| s));
        if spare > 0 {
            slots.extend(healthy.next());
        }
        let g = &self.geometry;
        let rows = g.member_data_bytes / g.chunk_bytes;
        let chunk_sectors = g.chunk_bytes / SECTOR_BYTES;
        for _ in 0..rng.gen_range(1..=4) {
            let first_sector = rng.gen_range(0..chunk_sectors);
            self.latent_errors.push(LatentError {
                at_step: rng.gen_range(0..self.steps),
                slot: *slots.choose(rng).expect("a slot"),
                row: rng.gen_range(0..rows),
                first_sector,
                sectors: rng.gen_range(1..=(chunk_sectors - first_sector).min(16)),
                kind: match rng.gen_range(0..10) {
                    0 => BadSectorKind::Persists,
                    1 => BadSectorKind::WriteFails,
                    _ => BadSectorKind::HealsOnWrite,
                },
            });
        }
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        let g = &self.geometry;
        format!(
            "{} {} x{} chunk {} B, {} chunks/member, bitmap {}, cache {}, journal {}, rebuild {:?}, activity {:?}, failures {:?}, hangs {:?}, latent errors {:?}, crashes {:?}, slow {:?}, {} steps, depth {}, write gather {} us, sequential writes {}",
            g.level.name(),
            g.layout.name(),
            g.member_count,
            g.chunk_bytes,
            (g.member_data_bytes) / g.chunk_bytes,
            self.bitmap,
            self.cache.as_ref().map_or("none", |c| c.policy.name()),
            self.journal_bytes.map_or("none".to_string(), |b| format!("{} KiB", b >> 10)),
            self.rebuild_strategy,
            self.activity,
            self.failures,
            self.hangs,
            self.latent_errors
                .iter()
                .map(|e| format!(
                    "step {} slot {} row {} sectors {}+{} {:?}",
                    e.at_step, e.slot, e.row, e.first_sector, e.sectors, e.kind
                ))
                .collect::<Vec<_>>(),
            self.crashes.iter().map(|c| (c.at_step, c.after_flush_reply)).collect::<Vec<_>>(),
            self.slow_members,
            self.steps,
            self.queue_depth,
            self.write_gather_window_us,
            self.sequential_writes,
        )
    }
}

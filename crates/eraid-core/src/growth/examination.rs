//! The FastScale paper's property examination ("from a 4-disk array, add
//! one disk repeatedly for 10 times"): per addition, the fraction of data
//! each strategy moves and the coefficient of variation of per-disk data.
//! Pure arithmetic over the addressing functions; `eraid experiment` runs it
//! from `experiments/fastscale-migration.toml` and `fastscale-uniformity.toml`.

use super::fastscale::{ChunkLocation, ChunkMove, GrowthStrategy, ScalingHistory};
use serde::Serialize;

/// Coefficient of variation (population standard deviation over the mean)
/// of per-disk chunk counts, in percent.
pub fn cv_percent(counts: &[u64]) -> f64 {
    let len = counts.len() as f64;
    let mean = counts.iter().sum::<u64>() as f64 / len;
    let variance = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / len;
    100.0 * variance.sqrt() / mean
}

#[derive(Clone, Debug, Serialize)]
pub struct Examination {
    /// Per addition: fraction of the data present before it that moved.
    pub moved_fraction: Vec<f64>,
    /// Per addition: CV of the per-disk data right after it.
    pub cv_percent: Vec<f64>,
}

/// Model "full": the array is full when each addition starts (B = m * s
/// chunks, new data having filled the previous addition's free space), and
/// we look at those B chunks right after the redistribution.
pub fn examine_full(strategy: GrowthStrategy, history: &ScalingHistory) -> Examination {
    let mut moved_fraction = Vec::new();
    let mut cvs = Vec::new();
    for t in 1..=history.addition_count() {
        let (m, _) = history.addition(t);
        let moves: Vec<ChunkMove> = strategy.moves(history, t).collect();
        moved_fraction.push(moves.len() as f64 / (f64::from(m) * history.chunks_per_disk() as f64));
        cvs.push(cv_percent(&old_data_per_disk(&moves, history, t)));
    }
    Examination {
        moved_fraction,
        cv_percent: cvs,
    }
}

/// Model "fixed": only the original `m0 * s` chunks ever hold data (no new
/// data is written between additions); per addition, the fraction of them
/// that moves and the CV of their per-disk counts.
pub fn examine_fixed(strategy: GrowthStrategy, history: &ScalingHistory) -> Examination {
    let data = history.capacity_chunks_after(0);
    let mut place: Vec<ChunkLocation> = (0..data)
        .map(|x| strategy.locate_at(history, 0, x))
        .collect();
    let mut moved_fraction = Vec::new();
    let mut cvs = Vec::new();
    for t in 1..=history.addition_count() {
        let mut counts = vec![0u64; history.disks_after(t) as usize];
        let mut moved = 0u64;
        for (x, at) in place.iter_mut().enumerate() {
            let now = strategy.locate_at(history, t, x as u64);
            moved += u64::from(now != *at);
            *at = now;
            counts[now.disk as usize] += 1;
        }
        moved_fraction.push(moved as f64 / data as f64);
        cvs.push(cv_percent(&counts));
    }
    Examination {
        moved_fraction,
        cv_percent: cvs,
    }
}

/// Per-disk counts of the old data (`x < m * s`) right after addition `t`,
/// the array having been full before it.
pub fn old_data_per_disk(moves: &[ChunkMove], history: &ScalingHistory, t: usize) -> Vec<u64> {
    let (m, n) = history.addition(t);
    let mut counts = vec![history.chunks_per_disk(); m as usize];
    counts.resize((m + n) as usize, 0);
    for mv in moves {
        counts[mv.from.disk as usize] -= 1;
        counts[mv.to.disk as usize] += 1;
    }
    counts
}

//! The paper's grid of scaling cases (Section IV) and its summaries:
//! Table I/II counts (w = 3, 4) and the range of savings (w = 3..6).

use super::matrices::{post_scaling_matrix, pre_scaling_matrix, MatrixChoice};
use super::parity_update::{count_reads, ParityUpdateReads};
use super::unit::ScalingUnit;
use crate::crs::matrix_to_bitmatrix;

/// The paper's ranges: 2 <= k <= 17, 1 <= t <= k, 2 <= m <= 5; tables over
/// 3 <= w <= 4, the savings range over 3 <= w <= 6.
pub const K_RANGE: std::ops::RangeInclusive<usize> = 2..=17;
pub const M_RANGE: std::ops::RangeInclusive<usize> = 2..=5;
pub const TABLE_W_RANGE: std::ops::RangeInclusive<usize> = 3..=4;
pub const SAVINGS_W_RANGE: std::ops::RangeInclusive<usize> = 3..=6;

/// The paper's Table I and II rows, per m = 2..5: (total, EPU fewer, same).
pub const PAPER_TABLE_I: [(usize, usize, usize); 4] = [
    (324, 16, 308),
    (304, 285, 19),
    (284, 269, 15),
    (263, 255, 8),
];
pub const PAPER_TABLE_II: [(usize, usize, usize); 4] = [
    (324, 16, 308),
    (304, 25, 279),
    (284, 36, 248),
    (263, 48, 215),
];

/// One (k, m, t, w) case under one matrix choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StudyCase {
    pub matrix: MatrixChoice,
    pub k: usize,
    pub m: usize,
    pub t: usize,
    pub w: usize,
    pub stripes_per_unit: usize,
    pub moved_blocks: usize,
    pub reads: ParityUpdateReads,
}

impl StudyCase {
    pub fn scale_crs_reads(&self) -> usize {
        self.reads.scale_crs_reads()
    }

    pub fn epu_reads(&self) -> usize {
        self.reads.epu_reads()
    }

    /// Parity-update I/Os: `reads` plus one write per changed parity block.
    pub fn parity_update_ios(&self, reads: usize) -> usize {
        reads + self.reads.parity_blocks_changed
    }

    /// Every block I/O of the unit's scaling: the migration reads and
    /// writes each moved block once, parity update reads, and each changed
    /// parity block is written once (by either method).
    pub fn scaling_ios(&self, reads: usize) -> usize {
        2 * self.moved_blocks + reads + self.reads.parity_blocks_changed
    }
}

/// Runs Algorithm 1 for one case; None when no (k + t, m, w) Cauchy
/// matrix exists (k + t + m > 2^w).
pub fn study_case(
    matrix: MatrixChoice,
    k: usize,
    m: usize,
    t: usize,
    w: usize,
) -> Option<StudyCase> {
    let before = pre_scaling_matrix(k, m, w)?;
    let after = post_scaling_matrix(matrix, k, t, m, w)?;
    let unit = ScalingUnit::new(k, t, w);
    let reads = count_reads(
        &unit,
        &matrix_to_bitmatrix(k, m, w, &before),
        &matrix_to_bitmatrix(k + t, m, w, &after),
    );
    Some(StudyCase {
        matrix,
        k,
        m,
        t,
        w,
        stripes_per_unit: unit.stripes,
        moved_blocks: unit.moved_count(),
        reads,
    })
}

/// Table I/II's row for one matrix choice and one m (w in 3..=4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StudySummary {
    pub matrix: MatrixChoice,
    pub m: usize,
    /// Cases of the grid for which Jerasure builds the matrices.
    pub cases: usize,
    /// Cases of the grid skipped because k + t + m > 2^w.
    pub cases_without_matrix: usize,
    pub epu_fewer: usize,
    pub same: usize,
    pub paper_total: usize,
    pub paper_epu_fewer: usize,
    pub paper_same: usize,
}

/// The least and greatest saving, over the cases where EPU reads fewer
/// (w in 3..=6), as a fraction of Scale-CRS's parity-update reads, of its
/// parity-update reads and writes, and of all its scaling I/Os; None when
/// EPU never reads fewer. (The paper's "read/write" range does not say
/// which; the README compares all three.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SavingsRange {
    pub reads_min: f64,
    pub reads_max: f64,
    pub parity_update_ios_min: f64,
    pub parity_update_ios_max: f64,
    pub scaling_ios_min: f64,
    pub scaling_ios_max: f64,
}

#[derive(Clone, Debug)]
pub struct StudyReport {
    /// Every case with a matrix, w in 3..=6, both matrix choices.
    pub cases: Vec<StudyCase>,
    pub summaries: Vec<StudySummary>,
    pub savings: Vec<(MatrixChoice, Option<SavingsRange>)>,
}

/// The (k, t) pairs of the paper's grid.
fn grid_pairs() -> impl Iterator<Item = (usize, usize)> {
    K_RANGE.flat_map(|k| (1..=k).map(move |t| (k, t)))
}

pub fn run_study() -> StudyReport {
    let mut cases = Vec::new();
    for matrix in MatrixChoice::ALL {
        for m in M_RANGE {
            for w in SAVINGS_W_RANGE {
                for (k, t) in grid_pairs() {
                    cases.extend(study_case(matrix, k, m, t, w));
                }
            }
        }
    }
    let mut summaries = Vec::new();
    for matrix in MatrixChoice::ALL {
        let paper = match matrix {
            MatrixChoice::Jerasure => PAPER_TABLE_I,
            MatrixChoice::Optimized => PAPER_TABLE_II,
        };
        for (m, &(paper_total, paper_epu_fewer, paper_same)) in M_RANGE.zip(paper.iter()) {
            let in_table =
                |c: &&StudyCase| c.matrix == matrix && c.m == m && TABLE_W_RANGE.contains(&c.w);
            let table: Vec<&StudyCase> = cases.iter().filter(in_table).collect();
            let grid_size = grid_pairs().count() * TABLE_W_RANGE.count();
            let epu_fewer = table
                .iter()
                .filter(|c| c.epu_reads() < c.scale_crs_reads())
                .count();
            summaries.push(StudySummary {
                matrix,
                m,
                cases: table.len(),
                cases_without_matrix: grid_size - table.len(),
                epu_fewer,
                same: table.len() - epu_fewer,
                paper_total,
                paper_epu_fewer,
                paper_same,
            });
        }
    }
    let savings = MatrixChoice::ALL
        .iter()
        .map(|&matrix| (matrix, savings_range(&cases, matrix)))
        .collect();
    StudyReport {
        cases,
        summaries,
        savings,
    }
}

fn savings_range(cases: &[StudyCase], matrix: MatrixChoice) -> Option<SavingsRange> {
    let fractions: Vec<[f64; 3]> = cases
        .iter()
        .filter(|c| c.matrix == matrix && c.epu_reads() < c.scale_crs_reads())
        .map(|c| {
            let (scale, epu) = (c.scale_crs_reads(), c.epu_reads());
            let saved = (scale - epu) as f64;
            [
                saved / scale as f64,
                saved / c.parity_update_ios(scale) as f64,
                saved / c.scaling_ios(scale) as f64,
            ]
        })
        .collect();
    if fractions.is_empty() {
        return None;
    }
    let min_max = |index: usize| {
        fractions
            .iter()
            .map(|f| f[index])
            .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)))
    };
    let (reads_min, reads_max) = min_max(0);
    let (parity_update_ios_min, parity_update_ios_max) = min_max(1);
    let (scaling_ios_min, scaling_ios_max) = min_max(2);
    Some(SavingsRange {
        reads_min,
        reads_max,
        parity_update_ios_min,
        parity_update_ios_max,
        scaling_ios_min,
        scaling_ios_max,
    })
}

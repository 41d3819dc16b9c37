//! Turns an rxw-matrix into device I/O runs: per column, each maximal
//! stretch of consecutive rows that read (r or t) is one device read, and
//! each stretch that writes (w) one device write. The contiguity transform
//! shows up here as fewer, longer runs.

use super::matrix::{Ops, RxwMatrix};
use std::ops::Range;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub col: usize,
    pub rows: Range<usize>,
}

fn runs_where(m: &RxwMatrix, wanted: impl Fn(Ops) -> bool) -> Vec<Run> {
    let mut runs = Vec::new();
    for col in 0..m.cols() {
        let mut start: Option<usize> = None;
        for row in 0..=m.rows {
            let hit = row < m.rows && wanted(m.get(row, col));
            match (hit, start) {
                (true, None) => start = Some(row),
                (false, Some(s)) => {
                    runs.push(Run { col, rows: s..row });
                    start = None;
                }
                _ => {}
            }
        }
    }
    runs
}

pub fn read_runs(m: &RxwMatrix) -> Vec<Run> {
    runs_where(m, Ops::reads)
}

pub fn write_runs(m: &RxwMatrix) -> Vec<Run> {
    runs_where(m, |ops| ops.has(Ops::W))
}

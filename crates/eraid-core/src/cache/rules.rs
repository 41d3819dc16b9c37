//! Checks an rxw-matrix against the rules a destage must keep (Section
//! II-A and III-C). The destage engine checks every plan before it runs
//! it, so a transform that broke a rule stops at the check, not on disk.

use super::matrix::{BlockState, Ops, RxwMatrix, StatusMatrix};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Rule (6): r on a dirty block would overwrite the newest data.
    ReadOverDirty { row: usize, col: usize },
    /// Rule (7): w on a block whose data is not in the cache (empty
    /// without r, or read only into temporary memory).
    WriteWithoutCachedData { row: usize, col: usize },
    /// A dirty block the plan does not write.
    DirtyNotWritten { row: usize, col: usize },
    /// A parity block written that is neither computed nor read.
    ParityWithoutSource { row: usize, col: usize },
    /// A row with new data whose parity is not recomputed and written.
    ParityNotUpdated { row: usize, col: usize },
    /// The new parity's inputs are not all planned (neither every dirty
    /// block's old data and the old parity, nor every data block).
    ParityInputsMissing { row: usize },
}

/// Ok if `m` destages `z` keeping every rule.
pub fn check_rules(z: &StatusMatrix, m: &RxwMatrix) -> Result<(), Violation> {
    assert_eq!(
        (m.rows, m.data_cols),
        (z.rows, z.cols),
        "Z and M differ in shape"
    );
    for row in 0..m.rows {
        for col in 0..m.data_cols {
            let (state, ops) = (z.get(row, col), m.get(row, col));
            if state == BlockState::Dirty && ops.has(Ops::R) {
                return Err(Violation::ReadOverDirty { row, col });
            }
            if ops.has(Ops::W) && state == BlockState::Empty && !ops.has(Ops::R) {
                return Err(Violation::WriteWithoutCachedData { row, col });
            }
            if state == BlockState::Dirty && !ops.has(Ops::W) {
                return Err(Violation::DirtyNotWritten { row, col });
            }
        }
        let dirty = z.row_has_dirty(row);
        for col in m.data_cols..m.cols() {
            let ops = m.get(row, col);
            if ops.has(Ops::W) && !ops.has(Ops::DEST) && !ops.has(Ops::R) {
                return Err(Violation::ParityWithoutSource { row, col });
            }
            if dirty && !(ops.has(Ops::DEST) && ops.has(Ops::W)) {
                return Err(Violation::ParityNotUpdated { row, col });
            }
        }
        if dirty {
            let rmw = (0..m.data_cols)
                .filter(|&j| z.get(row, j) == BlockState::Dirty)
                .all(|j| m.get(row, j).has(Ops::T))
                && (m.data_cols..m.cols()).all(|p| m.get(row, p).has(Ops::R));
            let rcw = (0..m.data_cols)
                .all(|j| z.get(row, j) != BlockState::Empty || m.get(row, j).has(Ops::R));
            if !(rmw || rcw) {
                return Err(Violation::ParityInputsMissing { row });
            }
        }
    }
    Ok(())
}

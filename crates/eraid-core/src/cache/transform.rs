//! The contiguity transform (Section III-B..E, the procedures of Fig. 10):
//! between two reads of one column that are S rows apart, add reads to the
//! rows between when the performance rule permits S; then the same for
//! writes, where the consistency rule also demands that every block written
//! holds data the disk may get (dirty, clean, or read into the cache by r).
//! The read transform runs first: its r's make writes possible.

use super::config::StrideRule;
use super::matrix::{BlockState, Ops, RxwMatrix, StatusMatrix};

/// What a transform added, in blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Added {
    pub read_blocks: u64,
    pub write_blocks: u64,
}

/// Lines 1-14 of Fig. 10. Rule (6): a dirty block is read into temporary
/// memory (t), never into the cache (r), so its new data survives; a
/// parity block is read with r (parity is not cached, line 8).
pub fn read_contiguity_transform(m: &mut RxwMatrix, z: &StatusMatrix, rule: &StrideRule) -> u64 {
    assert_eq!(
        (m.rows, m.data_cols),
        (z.rows, z.cols),
        "Z and M differ in shape"
    );
    let mut added = 0;
    for j in 0..m.cols() {
        let mut previous: Option<usize> = None;
        for i in 0..m.rows {
            if !m.get(i, j).reads() {
                continue;
            }
            if let Some(p) = previous {
                if rule.permits((i - p) as u32) {
                    for h in p + 1..i {
                        let op = if m.is_parity(j) || z.get(h, j) != BlockState::Dirty {
                            Ops::R
                        } else {
                            Ops::T
                        };
                        m.add(h, j, op);
                        added += 1;
                    }
                }
            }
            previous = Some(i);
        }
    }
    added
}

/// Lines 15-31 of Fig. 10. Rule (7): no block between the two writes may
/// be empty without an r (its disk data would not be in the cache); on the
/// parity column every block between must have been read (r).
pub fn write_contiguity_transform(m: &mut RxwMatrix, z: &StatusMatrix, rule: &StrideRule) -> u64 {
    assert_eq!(
        (m.rows, m.data_cols),
        (z.rows, z.cols),
        "Z and M differ in shape"
    );
    let mut added = 0;
    for j in 0..m.cols() {
        let mut previous: Option<usize> = None;
        for i in 0..m.rows {
            if !m.get(i, j).has(Ops::W) {
                continue;
            }
            if let Some(p) = previous {
                let consistent = (p + 1..i).all(|h| {
                    let ops = m.get(h, j);
                    if m.is_parity(j) {
                        ops.has(Ops::R)
                    } else {
                        ops.has(Ops::R) || z.get(h, j) != BlockState::Empty
                    }
                });
                if rule.permits((i - p) as u32) && consistent {
                    for h in p + 1..i {
                        m.add(h, j, Ops::W);
                        added += 1;
                    }
                }
            }
            previous = Some(i);
        }
    }
    added
}

/// Both transforms in the paper's order.
pub fn contiguity_transform(
    m: &mut RxwMatrix,
    z: &StatusMatrix,
    read_rule: &StrideRule,
    write_rule: &StrideRule,
) -> Added {
    let read_blocks = read_contiguity_transform(m, z, read_rule);
    let write_blocks = write_contiguity_transform(m, z, write_rule);
    Added {
        read_blocks,
        write_blocks,
    }
}

//! Pure planning of one stripe's write: which parity-update method, which
//! shards to read. Decide here; `stripe_op` turns the plan into device I/O.

use crate::layout::ShardVec;
use std::ops::Range;

/// How a partial or full stripe write keeps parity right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMethod {
    /// No parity (RAID-0): write the data, nothing else.
    DataOnly,
    /// Read old data of the touched chunks and old parity, add the delta
    /// (the MSC-CT paper's read-modify-write cycle): 2(t + m) I/Os.
    ReadModifyWrite,
    /// Read the data the write does not cover, compute parity afresh
    /// (reconstruct-write): u + t + m I/Os; a full-stripe write reads nothing.
    ReconstructWrite,
    /// Degraded: read every surviving shard, rebuild what is missing, then
    /// re-encode. Used when neither cycle above has the shards it needs.
    ReadAllRebuild,
}

/// The inputs the choice depends on.
pub struct WriteShape<'a> {
    /// The stripe's row range R (intra-chunk bytes) the write spans.
    pub row: Range<u64>,
    /// Per data shard, the part of R the write covers (empty if untouched).
    pub covered: &'a [Range<u64>],
    pub parity_count: usize,
    /// Per shard (data then parity), whether its member can be used.
    pub present: &'a [bool],
}

/// Shards to read, each over an intra-chunk range: inline for stripes of
/// up to 16 shards (a plan is made per stripe op, under the engine lock).
pub type PlanReads = smallvec::SmallVec<[(usize, Range<u64>); 16]>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritePlan {
    pub method: WriteMethod,
    /// Shards to read, each over the given intra-chunk range.
    pub reads: PlanReads,
}

/// Chooses by device I/O count, as MSC-CT Section II-A: read-modify-write
/// when it needs fewer I/Os than reconstruct-write, when both are possible.
/// Returns None when too few shards survive to write at all.
pub fn plan_write(shape: &WriteShape) -> Option<WritePlan> {
    let k = shape.covered.len();
    let m = shape.parity_count;
    assert_eq!(shape.present.len(), k + m);
    let touched: ShardVec<usize> = (0..k).filter(|&j| !shape.covered[j].is_empty()).collect();
    assert!(
        !touched.is_empty(),
        "a write plan needs at least one touched shard"
    );
    if m == 0 {
        let ok = touched.iter().all(|&j| shape.present[j]);
        return ok.then(|| WritePlan {
            method: WriteMethod::DataOnly,
            reads: PlanReads::new(),
        });
    }
    let uncovered: ShardVec<usize> = (0..k).filter(|&j| shape.covered[j] != shape.row).collect();
    let parity_present = (k..k + m).all(|i| shape.present[i]);
    let rmw_ok = parity_present && touched.iter().all(|&j| shape.present[j]);
    let rcw_ok = uncovered.iter().all(|&j| shape.present[j]);
    let rmw = || WritePlan {
        method: WriteMethod::ReadModifyWrite,
        reads: touched
            .iter()
            .map(|&j| (j, shape.covered[j].clone()))
            .chain((k..k + m).map(|i| (i, shape.row.clone())))
            .collect(),
    };
    let rcw = || WritePlan {
        method: WriteMethod::ReconstructWrite,
        reads: uncovered.iter().map(|&j| (j, shape.row.clone())).collect(),
    };
    match (rmw_ok, rcw_ok) {
        (true, true) => Some(if touched.len() + m < uncovered.len() {
            rmw()
        } else {
            rcw()
        }),
        (true, false) => Some(rmw()),
        (false, true) => Some(rcw()),
        (false, false) => {
            let survivors = shape.present.iter().filter(|&&p| p).count();
            (survivors >= k).then(|| WritePlan {
                method: WriteMethod::ReadAllRebuild,
                reads: (0..k + m)
                    .filter(|&i| shape.present[i])
                    .map(|i| (i, shape.row.clone()))
                    .collect(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(covered: &[Range<u64>], m: usize, present: &[bool]) -> Option<WritePlan> {
        let lo = covered
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| r.start)
            .min()
            .unwrap();
        let hi = covered
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| r.end)
            .max()
            .unwrap();
        plan_write(&WriteShape {
            row: lo..hi,
            covered,
            parity_count: m,
            present,
        })
    }

    #[test]
    fn full_stripe_reads_nothing() {
        let p = plan(&[0..8, 0..8, 0..8], 1, &[true; 4]).unwrap();
        assert_eq!(
            (p.method, p.reads.len()),
            (WriteMethod::ReconstructWrite, 0)
        );
    }

    #[test]
    fn small_write_on_wide_stripe_uses_read_modify_write() {
        // 7 data + P, one chunk touched: RMW reads 2, RCW would read 6.
        let mut covered = vec![0..0; 7];
        covered[3] = 0..8;
        let p = plan(&covered, 1, &[true; 8]).unwrap();
        assert_eq!(p.method, WriteMethod::ReadModifyWrite);
        assert_eq!(p.reads[..], [(3, 0..8), (7, 0..8)]);
    }

    #[test]
    fn most_of_a_stripe_uses_reconstruct_write() {
        // 4 data + P, three touched: RMW reads 4, RCW reads 1.
        let p = plan(&[0..8, 0..8, 0..8, 0..0], 1, &[true; 5]).unwrap();
        assert_eq!(p.method, WriteMethod::ReconstructWrite);
        assert_eq!(p.reads[..], [(3, 0..8)]);
    }

    #[test]
    fn degraded_choices() {
        let mut covered = vec![0..0; 4];
        covered[0] = 0..8;
        // Parity missing: RMW impossible, RCW reads the other three.
        let p = plan(&covered, 1, &[true, true, true, true, false]).unwrap();
        assert_eq!(p.method, WriteMethod::ReconstructWrite);
        // An untouched data member missing: RMW still fine.
        let p = plan(&covered, 1, &[true, false, true, true, true]).unwrap();
        assert_eq!(p.method, WriteMethod::ReadModifyWrite);
        // The touched member and another one missing on RAID-6: rebuild.
        let p = plan(&covered, 2, &[false, false, true, true, true, true]).unwrap();
        assert_eq!(p.method, WriteMethod::ReadAllRebuild);
        assert_eq!(p.reads.len(), 4);
        // Two missing on RAID-5: impossible.
        assert!(plan(&covered, 1, &[false, false, true, true, true]).is_none());
        // RAID-0 with a missing member cannot write there.
        assert!(plan(&[0..8, 0..0], 0, &[false, true]).is_none());
    }
}

//! Algorithm 1 of the EPU paper on one scaling unit: the blocks read to
//! update parity by read-modify-write (RMW, Scale-CRS's only method) and
//! by reconstruct-write (RCW), given that the migration already holds
//! every moved block in memory.
//!
//! For each parity block P of the unit: E = data blocks encoding P before,
//! F = data blocks encoding P' after, G = E xor F. RMW reads P when G is
//! not empty plus every unmoved block of some G; RCW reads every unmoved
//! block of some F. EPU picks RMW when it reads strictly fewer (line 14),
//! RCW otherwise, for the whole unit.

use super::unit::ScalingUnit;
use crate::crs::BitMatrix;

/// The method EPU chose for a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateMethod {
    ReadModifyWrite,
    ReconstructWrite,
}

impl UpdateMethod {
    pub fn name(self) -> &'static str {
        match self {
            UpdateMethod::ReadModifyWrite => "rmw",
            UpdateMethod::ReconstructWrite => "rcw",
        }
    }
}

/// Block counts of one unit's parity update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParityUpdateReads {
    /// |A|: parity blocks in the unit (stripes * m * w).
    pub parity_blocks: usize,
    /// Parity blocks whose G is not empty: RMW reads and both methods
    /// write these.
    pub parity_blocks_changed: usize,
    /// |C - B|: unmoved data blocks RMW reads.
    pub rmw_data_reads: usize,
    /// |D - B|: unmoved data blocks RCW reads.
    pub rcw_data_reads: usize,
}

impl ParityUpdateReads {
    /// Scale-CRS: RMW always (Algorithm 1's m).
    pub fn scale_crs_reads(&self) -> usize {
        self.parity_blocks_changed + self.rmw_data_reads
    }

    /// Algorithm 1's choice (m < n: RMW, else RCW).
    pub fn epu_method(&self) -> UpdateMethod {
        if self.scale_crs_reads() < self.rcw_data_reads {
            UpdateMethod::ReadModifyWrite
        } else {
            UpdateMethod::ReconstructWrite
        }
    }

    pub fn epu_reads(&self) -> usize {
        match self.epu_method() {
            UpdateMethod::ReadModifyWrite => self.scale_crs_reads(),
            UpdateMethod::ReconstructWrite => self.rcw_data_reads,
        }
    }
}

/// Which block sits in each (stripe, disk, packet) slot, if any.
struct SlotMap {
    disks: usize,
    w: usize,
    blocks: Vec<Option<usize>>,
}

impl SlotMap {
    fn new(unit: &ScalingUnit, disks: usize, after: bool) -> Self {
        let w = unit.w;
        let mut blocks = vec![None; unit.stripes * disks * w];
        let places = if after { &unit.after } else { &unit.before };
        for (block, place) in places.iter().enumerate() {
            let slot = (place.stripe * disks + place.disk) * w + place.packet;
            assert!(blocks[slot].is_none(), "two blocks in one slot");
            blocks[slot] = Some(block);
        }
        Self { disks, w, blocks }
    }

    /// The blocks encoded by a bit-matrix row in `stripe` (empty slots
    /// hold zeros and add nothing).
    fn encoded_by<'a>(
        &'a self,
        bits: &'a BitMatrix,
        row: usize,
        stripe: usize,
    ) -> impl Iterator<Item = usize> + 'a {
        bits.ones_in_row(row).filter_map(move |col| {
            let (disk, packet) = (col / self.w, col % self.w);
            assert!(disk < self.disks, "bit-matrix column past the unit's disks");
            self.blocks[(stripe * self.disks + disk) * self.w + packet]
        })
    }
}

/// Algorithm 1's counts for `unit` with the pre-scaling bit-matrix
/// `before` ((m*w) x (k*w)) and post-scaling `after` ((m*w) x ((k+t)*w)).
pub fn count_reads(unit: &ScalingUnit, before: &BitMatrix, after: &BitMatrix) -> ParityUpdateReads {
    let (k, t, w) = (unit.old_data_disks, unit.added_disks, unit.w);
    assert_eq!(before.cols, k * w, "pre-scaling bit-matrix width");
    assert_eq!(after.cols, (k + t) * w, "post-scaling bit-matrix width");
    assert_eq!(before.rows, after.rows, "the parity count does not change");
    let old_slots = SlotMap::new(unit, k, false);
    let new_slots = SlotMap::new(unit, k + t, true);
    let blocks = unit.block_count();
    let moved: Vec<bool> = (0..blocks).map(|b| unit.is_moved(b)).collect();
    let mut in_c = vec![false; blocks];
    let mut in_d = vec![false; blocks];
    // parity[b] flips once per appearance: odd after E and F means b in G.
    let mut parity = vec![false; blocks];
    let mut changed = 0;
    for stripe in 0..unit.stripes {
        for row in 0..before.rows {
            let old: Vec<usize> = old_slots.encoded_by(before, row, stripe).collect();
            let new: Vec<usize> = new_slots.encoded_by(after, row, stripe).collect();
            for &b in old.iter().chain(&new) {
                parity[b] = !parity[b];
            }
            let mut g_empty = true;
            for &b in old.iter().chain(&new) {
                if parity[b] {
                    g_empty = false;
                    in_c[b] |= !moved[b];
                    parity[b] = false;
                }
            }
            changed += usize::from(!g_empty);
            for &b in &new {
                in_d[b] |= !moved[b];
            }
        }
    }
    ParityUpdateReads {
        parity_blocks: unit.stripes * before.rows,
        parity_blocks_changed: changed,
        rmw_data_reads: in_c.iter().filter(|&&x| x).count(),
        rcw_data_reads: in_d.iter().filter(|&&x| x).count(),
    }
}

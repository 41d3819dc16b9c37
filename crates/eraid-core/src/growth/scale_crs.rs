//! Scale-CRS's minimum data migration for a CRS array growing from k to
//! k + t data members (m parity members stay), at the array's whole-chunk
//! grain, and the parity update of one scaling unit (the EPU paper's
//! Algorithm 1, counted by `eraid_codes::crs_scaling`).
//!
//! Rows (stripes) group into units of U = (k+t) / gcd(k+t, t) rows. In each
//! unit every old data column (data index j) hands its last q = U*t/(k+t)
//! chunks to the new columns, column by column in row order, each new
//! column filling from the unit's first row: the paper's Figure 2 pattern
//! (the moved blocks of D0, then D1, fill D2, then D3). Afterwards every
//! column, old and new, holds U - q chunks of old data and q free chunks at
//! the unit's end; free chunks hold zeros and encode into nothing. Parity
//! stays where it was (the old rotation over the old members), data index
//! j < k stays on its old member, data index k + i is new member n + i.
//! Rows past the last whole unit (a tail shorter than U) move nothing:
//! their new columns are free.
//!
//! The paper's unit is in packets (blocks) and may move part of a chunk;
//! the array addresses whole chunks, so its unit is the smallest one whose
//! moves are whole chunks. The two coincide when w*t/(k+t) packets make
//! whole chunks, e.g. (6,3,1,4), (10,3,1,5), (12,3,1,5); for (9,3,1,4) the
//! array moves one chunk of every 10 rows where the paper moves two packets
//! of every 5.

use eraid_codes::crs::BitMatrix;
use eraid_codes::crs_scaling::{
    count_reads, BlockPlace, MatrixChoice, ParityUpdateReads, ScalingUnit,
};
use serde::{Deserialize, Serialize};

/// The post-scaling coding matrix a growth chooses (the EPU paper's
/// Section IV compares both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrsMatrix {
    /// Jerasure's own matrix for (k + t, m, w) (the paper's Table I, and
    /// the matrix of its Fig. 4 and its experiments).
    #[default]
    Jerasure,
    /// Scale-CRS's optimised matrix (ref. [25], Table II): the old columns
    /// kept, t columns appended (`crs_scaling::matrices::extend_optimized`).
    Optimized,
}

impl CrsMatrix {
    pub const ALL: [CrsMatrix; 2] = [CrsMatrix::Jerasure, CrsMatrix::Optimized];

    pub fn name(self) -> &'static str {
        self.choice().name()
    }

    pub fn choice(self) -> MatrixChoice {
        match self {
            CrsMatrix::Jerasure => MatrixChoice::Jerasure,
            CrsMatrix::Optimized => MatrixChoice::Optimized,
        }
    }

    pub fn parse(text: &str) -> Result<CrsMatrix, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == text)
            .ok_or_else(|| {
                format!("unknown post-scaling matrix {text:?}: expected jerasure or optimized")
            })
    }
}

/// The shape of a CRS array grown by Scale-CRS or EPU (recorded in the
/// superblock: the layout is a function of it and the geometry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrsScaledShape {
    /// k: data members before the growth.
    pub old_data_members: usize,
    /// m: parity members (the same before and after).
    pub parity_members: usize,
    /// t: data members added.
    pub added_members: usize,
    /// The coding matrix after the growth (superblocks written before the
    /// choice existed have none: Jerasure's, the only one then).
    #[serde(default)]
    pub matrix: CrsMatrix,
}

/// The m x k coding matrix (row-major, GF(2^w) elements) of a CRS array
/// created with `created_data_members` data members and grown by
/// `growths`, oldest first: Jerasure's at creation, then each growth's
/// choice (Jerasure's for the new width, or the last matrix extended).
pub fn crs_coding_matrix(
    created_data_members: usize,
    m: usize,
    w: usize,
    growths: &[CrsScaledShape],
) -> Result<Vec<u32>, String> {
    let no_matrix = |k: usize| format!("no Cauchy matrix for k = {k}, m = {m} over GF(2^{w})");
    let mut k = created_data_members;
    let mut matrix = eraid_codes::jerasure::cauchy_good_general_coding_matrix(k, m, w)
        .ok_or_else(|| no_matrix(k))?;
    for growth in growths {
        if growth.old_data_members != k || growth.parity_members != m {
            return Err(format!(
                "a growth from k = {}, m = {} follows an array of k = {k}, m = {m}",
                growth.old_data_members, growth.parity_members
            ));
        }
        let t = growth.added_members;
        matrix = match growth.matrix {
            CrsMatrix::Jerasure => {
                eraid_codes::jerasure::cauchy_good_general_coding_matrix(k + t, m, w)
            }
            CrsMatrix::Optimized => {
                eraid_codes::crs_scaling::matrices::extend_optimized(&matrix, k, t, m, w)
            }
        }
        .ok_or_else(|| no_matrix(k + t))?;
        k += t;
    }
    Ok(matrix)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Where one scaling unit lies and how much each column hands over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitSpan {
    pub first_row: u64,
    pub rows: usize,
    /// Chunks each old column hands over (0 in the tail).
    pub moved_per_column: usize,
}

impl UnitSpan {
    /// Chunks each new column receives.
    fn received_per_new_column(&self, k: usize, t: usize) -> usize {
        self.moved_per_column * k / t
    }
}

impl CrsScaledShape {
    pub fn old_member_count(&self) -> usize {
        self.old_data_members + self.parity_members
    }

    pub fn new_data_members(&self) -> usize {
        self.old_data_members + self.added_members
    }

    /// U: rows per whole scaling unit.
    pub fn unit_rows(&self) -> usize {
        let (k, t) = (self.old_data_members, self.added_members);
        (k + t) / gcd(k + t, t)
    }

    /// The unit holding `row`, for members of `member_rows` rows.
    pub fn unit_of_row(&self, row: u64, member_rows: u64) -> UnitSpan {
        let u = self.unit_rows() as u64;
        let whole_end = member_rows / u * u;
        if row < whole_end {
            let (k, t) = (self.old_data_members, self.added_members);
            UnitSpan {
                first_row: row / u * u,
                rows: u as usize,
                moved_per_column: u as usize * t / (k + t),
            }
        } else {
            UnitSpan {
                first_row: whole_end,
                rows: (member_rows - whole_end) as usize,
                moved_per_column: 0,
            }
        }
    }

    /// Every unit of members of `member_rows` rows, in row order.
    pub fn units(&self, member_rows: u64) -> impl Iterator<Item = UnitSpan> + '_ {
        let u = self.unit_rows() as u64;
        let whole = member_rows / u;
        let tail = member_rows % u;
        (0..whole)
            .map(move |i| self.unit_of_row(i * u, member_rows))
            .chain((tail > 0).then(|| self.unit_of_row(whole * u, member_rows)))
    }

    /// Where old data chunk (row, data index j) lives after the growth:
    /// (row, new data index).
    pub fn new_slot_of_old(&self, row: u64, j: usize, member_rows: u64) -> (u64, usize) {
        let (k, t) = (self.old_data_members, self.added_members);
        assert!(j < k, "old data index {j} out of range");
        let unit = self.unit_of_row(row, member_rows);
        let q = unit.moved_per_column;
        let r = (row - unit.first_row) as usize;
        if r < unit.rows - q {
            return (row, j);
        }
        let moved = j * q + (r - (unit.rows - q));
        let received = unit.received_per_new_column(k, t);
        (
            unit.first_row + (moved % received) as u64,
            k + moved / received,
        )
    }

    /// The place of free chunk `f` (0-based among the chunks the growth
    /// adds): in unit order, the old columns' vacated ends, then the new
    /// columns' free ends; in the tail, the new columns.
    pub fn free_slot(&self, f: u64, member_rows: u64) -> (u64, usize) {
        let (k, t) = (self.old_data_members, self.added_members);
        let u = self.unit_rows() as u64;
        let whole = member_rows / u;
        let per_unit = u * t as u64;
        if f < whole * per_unit {
            let unit = self.unit_of_row(f / per_unit * u, member_rows);
            let q = unit.moved_per_column as u64;
            let i = f % per_unit;
            let received = unit.received_per_new_column(k, t) as u64;
            if i < k as u64 * q {
                let column = (i / q) as usize;
                (unit.first_row + (u - q) + i % q, column)
            } else {
                let i = i - k as u64 * q;
                let column = k + (i / (u - received)) as usize;
                (unit.first_row + received + i % (u - received), column)
            }
        } else {
            let i = f - whole * per_unit;
            let tail = member_rows - whole * u;
            assert!(i < tail * t as u64, "free chunk {f} past the members");
            (whole * u + i % tail, k + (i / tail) as usize)
        }
    }

    /// The (row, new data index) of logical chunk `chunk` after the growth
    /// (old chunks keep their numbers; the added space follows them).
    pub fn locate(&self, chunk: u64, member_rows: u64) -> (u64, usize) {
        let k = self.old_data_members as u64;
        let old_capacity = member_rows * k;
        if chunk < old_capacity {
            self.new_slot_of_old(chunk / k, (chunk % k) as usize, member_rows)
        } else {
            self.free_slot(chunk - old_capacity, member_rows)
        }
    }
}

/// One data packet of a unit, named by its place before the growth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OldPacket {
    /// Row within the unit.
    pub row: usize,
    /// Old data index.
    pub column: usize,
    pub packet: usize,
}

/// A whole chunk that changes place (rows within the unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkMove {
    pub from_row: usize,
    pub column: usize,
    pub to_row: usize,
    pub to_column: usize,
}

/// One parity packet of a unit and what it depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParityPacket {
    pub row: usize,
    pub parity: usize,
    pub packet: usize,
    /// G = E xor F: what read-modify-write adds to the old packet.
    pub changes: Vec<OldPacket>,
    /// F: what the new packet is the XOR of.
    pub encoded_by: Vec<OldPacket>,
}

/// The parity update of one unit: the moves, every parity packet that
/// changes, and the unmoved data each method must read.
#[derive(Clone, Debug)]
pub struct UnitPlan {
    pub span: UnitSpan,
    pub moves: Vec<ChunkMove>,
    /// Parity packets whose G is not empty (the others stay as they are).
    pub changed: Vec<ParityPacket>,
    /// Unmoved data packets read-modify-write reads (C - B), sorted.
    pub rmw_reads: Vec<OldPacket>,
    /// Unmoved data packets reconstruct-write reads (D - B), sorted.
    pub rcw_reads: Vec<OldPacket>,
    /// Algorithm 1's counts, from `eraid_codes::crs_scaling::count_reads`.
    pub counts: ParityUpdateReads,
}

impl UnitPlan {
    /// The plan of `span` with the old ((m*w) x (k*w)) and new
    /// ((m*w) x ((k+t)*w)) bit-matrices.
    pub fn new(
        shape: &CrsScaledShape,
        span: UnitSpan,
        w: usize,
        before: &BitMatrix,
        after: &BitMatrix,
    ) -> UnitPlan {
        let (k, t) = (shape.old_data_members, shape.added_members);
        let rows = span.rows;
        let q = span.moved_per_column;
        let received = span.received_per_new_column(k, t);
        let mut moves = Vec::new();
        // Which old chunk each new slot holds: (row, new column) -> (row, column).
        let mut holds = vec![None; rows * (k + t)];
        for column in 0..k {
            for row in 0..rows {
                let (to_row, to_column) = if row < rows - q {
                    (row, column)
                } else {
                    let moved = column * q + (row - (rows - q));
                    (moved % received, k + moved / received)
                };
                if (to_row, to_column) != (row, column) {
                    moves.push(ChunkMove {
                        from_row: row,
                        column,
                        to_row,
                        to_column,
                    });
                }
                assert!(
                    holds[to_row * (k + t) + to_column].is_none(),
                    "one chunk a slot"
                );
                holds[to_row * (k + t) + to_column] = Some((row, column));
            }
        }
        let moved = |p: &OldPacket| p.row >= rows - q;
        let mut changed = Vec::new();
        let mut rmw = std::collections::BTreeSet::new();
        let mut rcw = std::collections::BTreeSet::new();
        for row in 0..rows {
            for bit_row in 0..before.rows {
                let old: Vec<OldPacket> = before
                    .ones_in_row(bit_row)
                    .map(|col| OldPacket {
                        row,
                        column: col / w,
                        packet: col % w,
                    })
                    .collect();
                let new: Vec<OldPacket> = after
                    .ones_in_row(bit_row)
                    .filter_map(|col| {
                        holds[row * (k + t) + col / w].map(|(r, c)| OldPacket {
                            row: r,
                            column: c,
                            packet: col % w,
                        })
                    })
                    .collect();
                let mut changes: Vec<OldPacket> = old
                    .iter()
                    .filter(|p| !new.contains(p))
                    .chain(new.iter().filter(|p| !old.contains(p)))
                    .copied()
                    .collect();
                changes.sort();
                rcw.extend(new.iter().filter(|p| !moved(p)).copied());
                if changes.is_empty() {
                    continue;
                }
                rmw.extend(changes.iter().filter(|p| !moved(p)).copied());
                changed.push(ParityPacket {
                    row,
                    parity: bit_row / w,
                    packet: bit_row % w,
                    changes,
                    encoded_by: new,
                });
            }
        }
        let counts = count_reads(&packet_unit(k, t, w, rows, &moves), before, after);
        let plan = UnitPlan {
            span,
            moves,
            changed,
            rmw_reads: rmw.into_iter().collect(),
            rcw_reads: rcw.into_iter().collect(),
            counts,
        };
        // The engine does what the study counts.
        assert_eq!(plan.changed.len(), plan.counts.parity_blocks_changed);
        assert_eq!(plan.rmw_reads.len(), plan.counts.rmw_data_reads);
        assert_eq!(plan.rcw_reads.len(), plan.counts.rcw_data_reads);
        plan
    }
}

/// The study's packet-level unit for these whole-chunk moves.
fn packet_unit(k: usize, t: usize, w: usize, rows: usize, moves: &[ChunkMove]) -> ScalingUnit {
    let mut before = Vec::new();
    let mut after = Vec::new();
    for column in 0..k {
        for row in 0..rows {
            let to = moves
                .iter()
                .find(|m| m.from_row == row && m.column == column)
                .map_or((row, column), |m| (m.to_row, m.to_column));
            for packet in 0..w {
                before.push(BlockPlace {
                    disk: column,
                    stripe: row,
                    packet,
                });
                after.push(BlockPlace {
                    disk: to.1,
                    stripe: to.0,
                    packet,
                });
            }
        }
    }
    ScalingUnit {
        old_data_disks: k,
        added_disks: t,
        w,
        stripes: rows,
        before,
        after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eraid_codes::crs::matrix_to_bitmatrix;
    use eraid_codes::crs_scaling::{study_case, MatrixChoice};
    use std::collections::HashSet;

    fn shape(k: usize, m: usize, t: usize) -> CrsScaledShape {
        CrsScaledShape {
            old_data_members: k,
            parity_members: m,
            added_members: t,
            matrix: CrsMatrix::Jerasure,
        }
    }

    /// Every logical chunk of the grown array has its own slot, old chunks
    /// keep their place unless they move to a new column, and every column
    /// holds the same number of old chunks per whole unit (uniform).
    #[test]
    fn locate_is_a_bijection_and_uniform() {
        for (k, t, rows) in [(4, 1, 23), (2, 2, 9), (6, 1, 14), (9, 1, 31), (3, 2, 10)] {
            let s = shape(k, 2, t);
            let mut seen = HashSet::new();
            let total = rows * (k + t) as u64;
            for c in 0..total {
                let (row, idx) = s.locate(c, rows);
                assert!(row < rows && idx < k + t, "({k},{t}) chunk {c}");
                assert!(seen.insert((row, idx)), "({k},{t}) slot taken twice by {c}");
                if c < rows * k as u64 {
                    let (old_row, j) = (c / k as u64, (c % k as u64) as usize);
                    assert!(
                        (row, idx) == (old_row, j)
                            || (idx >= k
                                && s.unit_of_row(row, rows) == s.unit_of_row(old_row, rows)),
                        "({k},{t}) chunk {c} moves only to a new column of its unit"
                    );
                }
            }
            for unit in s.units(rows).filter(|u| u.moved_per_column > 0) {
                let mut per_column = vec![0; k + t];
                for c in 0..rows * k as u64 {
                    let (row, idx) = s.locate(c, rows);
                    if row >= unit.first_row && row < unit.first_row + unit.rows as u64 {
                        per_column[idx] += 1;
                    }
                }
                assert!(
                    per_column.iter().all(|&n| n == per_column[0]),
                    "({k},{t}) {per_column:?}"
                );
            }
        }
    }

    fn plan(k: usize, m: usize, t: usize, w: usize) -> UnitPlan {
        let s = shape(k, m, t);
        let before = eraid_codes::jerasure::cauchy_good_general_coding_matrix(k, m, w).unwrap();
        let after = eraid_codes::jerasure::cauchy_good_general_coding_matrix(k + t, m, w).unwrap();
        let u = s.unit_rows() as u64;
        UnitPlan::new(
            &s,
            s.unit_of_row(0, u),
            w,
            &matrix_to_bitmatrix(k, m, w, &before),
            &matrix_to_bitmatrix(k + t, m, w, &after),
        )
    }

    /// Where the array's whole-chunk unit is the paper's unit, its counts
    /// are the study's: (6,3,1,4) EPU reads 144, Scale-CRS 228 per 7-row
    /// unit (Fig. 4's 21 and 33 per stripe).
    #[test]
    fn whole_chunk_units_match_the_study() {
        let p = plan(6, 3, 1, 4);
        assert_eq!(
            (p.counts.epu_reads(), p.counts.scale_crs_reads()),
            (144, 228)
        );
        for (k, m, t, w) in [
            (6, 3, 1, 4),
            (10, 3, 1, 5),
            (12, 3, 1, 5),
            (4, 2, 1, 3),
            (2, 2, 2, 3),
        ] {
            let p = plan(k, m, t, w);
            let study = study_case(MatrixChoice::Jerasure, k, m, t, w).unwrap();
            assert_eq!(study.stripes_per_unit, p.span.rows, "({k},{m},{t},{w})");
            assert_eq!(p.counts, study.reads, "({k},{m},{t},{w})");
        }
    }

    /// Read-modify-write (old packet XOR G) and reconstruct-write (XOR of
    /// F) both give the packet the new matrix encodes over the new places,
    /// for random data (moved chunks at their new columns, vacated and new
    /// free slots zero).
    #[test]
    fn both_methods_give_the_new_encoding() {
        for (k, m, t, w) in [
            (2, 2, 2, 3),
            (4, 2, 1, 3),
            (6, 3, 1, 4),
            (3, 3, 2, 4),
            (5, 2, 3, 4),
        ] {
            let p = plan(k, m, t, w);
            let rows = p.span.rows;
            let old_bits = matrix_to_bitmatrix(
                k,
                m,
                w,
                &eraid_codes::jerasure::cauchy_good_general_coding_matrix(k, m, w).unwrap(),
            );
            let new_bits = matrix_to_bitmatrix(
                k + t,
                m,
                w,
                &eraid_codes::jerasure::cauchy_good_general_coding_matrix(k + t, m, w).unwrap(),
            );
            let value =
                |p: &OldPacket| ((p.row * 131 + p.column * 17 + p.packet * 7) % 251) as u8 + 1;
            let mut new_slots = vec![0u8; rows * (k + t) * w];
            for row in 0..rows {
                for column in 0..k {
                    let to = p
                        .moves
                        .iter()
                        .find(|mv| mv.from_row == row && mv.column == column)
                        .map_or((row, column), |mv| (mv.to_row, mv.to_column));
                    for packet in 0..w {
                        new_slots[(to.0 * (k + t) + to.1) * w + packet] = value(&OldPacket {
                            row,
                            column,
                            packet,
                        });
                    }
                }
            }
            let xor = |ps: &[OldPacket]| ps.iter().fold(0u8, |a, p| a ^ value(p));
            for packet in &p.changed {
                let bit_row = packet.parity * w + packet.packet;
                let old = old_bits.ones_in_row(bit_row).fold(0u8, |a, col| {
                    a ^ value(&OldPacket {
                        row: packet.row,
                        column: col / w,
                        packet: col % w,
                    })
                });
                let new = new_bits.ones_in_row(bit_row).fold(0u8, |a, col| {
                    a ^ new_slots[(packet.row * (k + t) + col / w) * w + col % w]
                });
                assert_eq!(old ^ xor(&packet.changes), new, "({k},{m},{t},{w}) rmw");
                assert_eq!(xor(&packet.encoded_by), new, "({k},{m},{t},{w}) rcw");
            }
        }
    }
}

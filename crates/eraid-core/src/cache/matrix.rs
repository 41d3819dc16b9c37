//! The paper's matrices for one stripe (Section III-B): Z, the cache status
//! of every data block (rows are block offsets in the strip, columns data
//! strips), and M, the rxw-matrix of operations per block (columns data
//! strips then parity strips), with the basic M chosen row by row.

use std::fmt;

/// z_ij: D, C or E.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// New data in the cache, not yet on the disk.
    Dirty,
    /// The cache holds what the disk holds.
    Clean,
    /// Not in the cache.
    Empty,
}

/// A set of the paper's mnemonics (Table I): r, t, x, xx, _ and w.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Ops(u8);

impl Ops {
    /// Read into the block cache.
    pub const R: Ops = Ops(1);
    /// Read into temporary memory, released after the destage.
    pub const T: Ops = Ops(2);
    pub const X: Ops = Ops(4);
    pub const XX: Ops = Ops(8);
    /// The destination of the XOR (new parity).
    pub const DEST: Ops = Ops(16);
    pub const W: Ops = Ops(32);

    pub const NONE: Ops = Ops(0);

    pub fn has(self, op: Ops) -> bool {
        self.0 & op.0 == op.0 && op.0 != 0
    }

    pub fn insert(&mut self, op: Ops) {
        self.0 |= op.0;
    }

    pub fn with(self, op: Ops) -> Ops {
        Ops(self.0 | op.0)
    }

    /// Reads the block in (r or t).
    pub fn reads(self) -> bool {
        self.has(Ops::R) || self.has(Ops::T)
    }

    /// Parses the paper's notation, e.g. "t,xx,w" or "" (for tests and
    /// traces).
    pub fn parse(text: &str) -> Result<Ops, String> {
        let mut ops = Ops::NONE;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            ops.insert(match word {
                "r" => Ops::R,
                "t" => Ops::T,
                "x" => Ops::X,
                "xx" => Ops::XX,
                "_" | "-" => Ops::DEST,
                "w" => Ops::W,
                other => return Err(format!("unknown rxw mnemonic {other:?}")),
            });
        }
        Ok(ops)
    }
}

impl fmt::Debug for Ops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Ops::T, "t"),
            (Ops::R, "r"),
            (Ops::X, "x"),
            (Ops::XX, "xx"),
            (Ops::DEST, "_"),
            (Ops::W, "w"),
        ];
        let present: Vec<&str> = names
            .iter()
            .filter(|(op, _)| self.has(*op))
            .map(|(_, n)| *n)
            .collect();
        write!(f, "{{{}}}", present.join(","))
    }
}

/// Z: rows x data columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusMatrix {
    pub rows: usize,
    pub cols: usize,
    cells: Vec<BlockState>,
}

impl StatusMatrix {
    pub fn empty(rows: usize, cols: usize) -> StatusMatrix {
        StatusMatrix {
            rows,
            cols,
            cells: vec![BlockState::Empty; rows * cols],
        }
    }

    /// From rows of "D", "C", "E" letters (the paper's notation).
    pub fn parse(rows: &[&str]) -> StatusMatrix {
        let cols = rows[0].len();
        let mut z = StatusMatrix::empty(rows.len(), cols);
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.len(), cols, "ragged status matrix");
            for (j, letter) in row.chars().enumerate() {
                z.set(
                    i,
                    j,
                    match letter {
                        'D' => BlockState::Dirty,
                        'C' => BlockState::Clean,
                        'E' => BlockState::Empty,
                        other => panic!("unknown block state {other:?}"),
                    },
                );
            }
        }
        z
    }

    pub fn get(&self, row: usize, col: usize) -> BlockState {
        assert!(row < self.rows && col < self.cols);
        self.cells[row * self.cols + col]
    }

    pub fn set(&mut self, row: usize, col: usize, state: BlockState) {
        assert!(row < self.rows && col < self.cols);
        self.cells[row * self.cols + col] = state;
    }

    pub fn row_has_dirty(&self, row: usize) -> bool {
        (0..self.cols).any(|j| self.get(row, j) == BlockState::Dirty)
    }
}

/// How a row keeps its parity right at destage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowMethod {
    /// No dirty block: nothing to do.
    Idle,
    ReadModifyWrite,
    ReconstructWrite,
}

/// M: rows x (data columns, then parity columns).
#[derive(Clone, PartialEq, Eq)]
pub struct RxwMatrix {
    pub rows: usize,
    pub data_cols: usize,
    pub parity_cols: usize,
    cells: Vec<Ops>,
}

impl RxwMatrix {
    pub fn empty(rows: usize, data_cols: usize, parity_cols: usize) -> RxwMatrix {
        RxwMatrix {
            rows,
            data_cols,
            parity_cols,
            cells: vec![Ops::NONE; rows * (data_cols + parity_cols)],
        }
    }

    pub fn cols(&self) -> usize {
        self.data_cols + self.parity_cols
    }

    pub fn is_parity(&self, col: usize) -> bool {
        col >= self.data_cols
    }

    pub fn get(&self, row: usize, col: usize) -> Ops {
        assert!(row < self.rows && col < self.cols());
        self.cells[row * self.cols() + col]
    }

    pub fn set(&mut self, row: usize, col: usize, ops: Ops) {
        assert!(row < self.rows && col < self.cols());
        let cols = self.cols();
        self.cells[row * cols + col] = ops;
    }

    pub fn add(&mut self, row: usize, col: usize, op: Ops) {
        let ops = self.get(row, col).with(op);
        self.set(row, col, ops);
    }

    /// From rows of cells in the paper's notation, cells split by '|'.
    pub fn parse(rows: &[&str], parity_cols: usize) -> RxwMatrix {
        let parsed: Vec<Vec<Ops>> = rows
            .iter()
            .map(|row| {
                row.split('|')
                    .map(|c| Ops::parse(c).expect("mnemonics"))
                    .collect()
            })
            .collect();
        let cols = parsed[0].len();
        let mut m = RxwMatrix::empty(rows.len(), cols - parity_cols, parity_cols);
        for (i, row) in parsed.iter().enumerate() {
            assert_eq!(row.len(), cols, "ragged rxw-matrix");
            for (j, &ops) in row.iter().enumerate() {
                m.set(i, j, ops);
            }
        }
        m
    }
}

impl fmt::Debug for RxwMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f)?;
        for i in 0..self.rows {
            let cells: Vec<String> = (0..self.cols())
                .map(|j| format!("{:?}", self.get(i, j)))
                .collect();
            writeln!(f, "  {}", cells.join(" "))?;
        }
        Ok(())
    }
}

/// The method for a row with `dirty` dirty and `clean` clean data blocks
/// out of `data_cols`, with `parity_cols` parity blocks: the one with fewer
/// device I/Os (Section II-A: read-modify-write costs 2(d + m), reconstruct-
/// write k - c + m; for RAID-5 these are the paper's 2(1 + d) and N - c).
/// A tie goes to reconstruct-write, as the paper's Case 2 of Fig. 5.
pub fn row_method(dirty: usize, clean: usize, data_cols: usize, parity_cols: usize) -> RowMethod {
    if dirty == 0 {
        return RowMethod::Idle;
    }
    let rmw_ios = 2 * (dirty + parity_cols);
    let rcw_ios = data_cols - clean + parity_cols;
    if rmw_ios < rcw_ios {
        RowMethod::ReadModifyWrite
    } else {
        RowMethod::ReconstructWrite
    }
}

/// The basic rxw-matrix of a stripe (Fig. 7(b)): each row by its method.
pub fn basic_rxw(z: &StatusMatrix, parity_cols: usize) -> (RxwMatrix, Vec<RowMethod>) {
    let mut m = RxwMatrix::empty(z.rows, z.cols, parity_cols);
    let mut methods = Vec::with_capacity(z.rows);
    for i in 0..z.rows {
        let states: Vec<BlockState> = (0..z.cols).map(|j| z.get(i, j)).collect();
        let dirty = states.iter().filter(|&&s| s == BlockState::Dirty).count();
        let clean = states.iter().filter(|&&s| s == BlockState::Clean).count();
        let method = row_method(dirty, clean, z.cols, parity_cols);
        methods.push(method);
        let parity = |m: &mut RxwMatrix, ops: Ops| {
            for p in 0..parity_cols {
                m.set(i, z.cols + p, ops);
            }
        };
        match method {
            RowMethod::Idle => {}
            RowMethod::ReadModifyWrite => {
                for (j, &state) in states.iter().enumerate() {
                    if state == BlockState::Dirty {
                        m.set(i, j, Ops::T.with(Ops::XX).with(Ops::W));
                    }
                }
                parity(&mut m, Ops::R.with(Ops::X).with(Ops::DEST).with(Ops::W));
            }
            RowMethod::ReconstructWrite => {
                for (j, &state) in states.iter().enumerate() {
                    m.set(
                        i,
                        j,
                        match state {
                            BlockState::Dirty => Ops::X.with(Ops::W),
                            BlockState::Clean => Ops::X,
                            BlockState::Empty => Ops::R.with(Ops::X),
                        },
                    );
                }
                parity(&mut m, Ops::DEST.with(Ops::W));
            }
        }
    }
    (m, methods)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_method_matches_fig5_cases() {
        // RAID-5, N = 5 (k = 4): Case 2 (two clean, one dirty) reconstructs.
        assert_eq!(row_method(1, 2, 4, 1), RowMethod::ReconstructWrite);
        // One dirty, nothing cached: RMW (4 I/Os) beats RCW (5).
        assert_eq!(row_method(1, 0, 4, 1), RowMethod::ReadModifyWrite);
        // All dirty: a full parity-block-group write.
        assert_eq!(row_method(4, 0, 4, 1), RowMethod::ReconstructWrite);
        assert_eq!(row_method(0, 3, 4, 1), RowMethod::Idle);
    }
}

//! FastScale addressing for RAID-0 growth, plus the growth history and the
//! types every growth strategy shares.
//!
//! Source: W. Zheng and G. Zhang, "FastScale: Accelerate RAID Scaling by
//! Minimizing Data Migration", FAST 2011 (journal version: G. Zhang, W. Zheng,
//! K. Li, "Design and Evaluation of a New Approach to RAID-0 Scaling", ACM
//! TOS 9(4), 2013), and the FAST talk's slides.
//!
//! Provenance, honestly: the text we could retrieve of the paper is its
//! prose on minimizing data migration (Figures 2 and 3 and their
//! description, quoted in the tests below) plus the slides ("FastScale: Min
//! Migr. & Uniform Dist.", "How is a Block Moved?", the three requirements).
//! The paper's pseudo-code listing of the addressing function was not
//! retrievable, so the functions below are built from that prose: the
//! parallelogram, the head/body/tail moving rule, the three categories of
//! data and the history-driven O(t) lookup are the paper's; the order in
//! which new data fills the holes of one offset is ours (marked below).
//!
//! # Notation (the paper's: `H`, `m`, `n`, `s`, `x`)
//!
//! * `H[0] = m0` disks at creation; addition `i` (1-based) is `A(m, n)` with
//!   `m = H[i-1]`, `n = n_i`, `H[i] = m + n`.
//! * `s`: chunks per disk (every member, old or new, has the same size).
//! * Before any addition the layout is round-robin: chunk `x` is on disk
//!   `x mod m0`, physical chunk `x div m0`.
//! * After addition `i` the logical space is `[0, H[i] * s)`: chunks
//!   `x < m * s` are the *original* data of that addition, chunks
//!   `x >= m * s` are its *new* data (the paper's three categories for
//!   addressing: original-and-unmoved, original-and-migrated, new).
//!
//! # The layout of one addition ("Minimizing data migration", Figures 2 and 3)
//!
//! Physical chunk offsets are cut into *regions* of `m + n` consecutive
//! offsets; `c = b mod (m + n)` is the column of offset `b` in its region.
//!
//! * **Migration.** On old disk `d` the chunks at columns `d .. d + n - 1`
//!   (a parallelogram of base `n` and height `m`) move to new disks, and a
//!   moved chunk keeps its physical offset (only its disk changes). Nothing
//!   moves between old disks, and exactly `m * n` of every `m * (m + n)`
//!   chunks move: the minimum `n / (m + n)` (Requirement 2).
//! * **Where a moved chunk lands** (the slides' "How is a block moved?";
//!   Figure 2's text for `A(3, 2)`). The parallelogram splits into a head
//!   triangle (columns `c < min(m, n)`), a body and a tail triangle (columns
//!   `c >= max(m, n)`). Head and tail keep their shape: head chunks go from
//!   disk `d` to `m + d`, tail chunks to `d + n`. The body is reshaped: if
//!   `m >= n` the body parallelogram becomes a rectangle filling all `n` new
//!   disks (the chunk from disk `d` in column `c` goes to
//!   `m + n - 1 - (c - d)`, so the lowest old disk lands on disk `m`); if
//!   `m < n` the body rectangle becomes a parallelogram (to disk `d + c + 1`).
//!   For `A(3, 2)` this gives Figure 2: columns 1..5 (1-based) receive
//!   1, 2, 2, 1, 0 chunks; column 1's goes to disk 3, column 4's to disk 4,
//!   the first chunks of columns 2 and 3 to disk 3 and the second to disk 4.
//! * **Resulting shape.** After migration column `c` holds data on disks
//!   `c + 1, ..., c + m (mod m + n)` and exactly `n` holes on disks
//!   `c - n + 1, ..., c (mod m + n)`; every disk, old or new, holds `m` chunks
//!   of every region (Requirement 1).
//! * **Filling** (the paper's "data filling" stage). New data chunk
//!   `x = m * s + r` goes to offset `b = r div n`, into the `(r mod n)`-th hole
//!   of that offset counted by ascending disk number. The paper fixes which
//!   slots new data fills; the order of new data inside one offset is our
//!   choice (the text we could retrieve does not spell it out). An engine
//!   must treat it as part of the on-disk format.
//!
//! Because the shape is described per column, an incomplete last region
//! (`s` not a multiple of `m + n`) needs no special case: it just moves and
//! fills the columns it has, so the distribution is uniform up to one
//! region's rounding.
//!
//! # Addressing (the paper's addressing function, requirement 3)
//!
//! To address `x` after `t` additions: find the addition `e` that created
//! `x` (the smallest `e` with `x < H[e] * s`; `e = 0` for the initial data),
//! place it there (round-robin for `e = 0`, filling for `e > 0`), then for each
//! later addition move it if its position lies in that addition's
//! parallelogram. O(t) integer operations, no table: the history (a few
//! integers) is all the state, and it belongs in the superblock.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a history cannot be built or extended.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum HistoryError {
    #[error("an array needs at least one disk")]
    NoDisks,
    #[error("a disk needs at least one chunk")]
    EmptyDisks,
    #[error("an addition must add at least one disk")]
    EmptyAddition,
    #[error("the array would exceed {max} disks or 2^64 chunks")]
    TooLarge { max: u32 },
}

/// The history of a RAID-0 array's growth: `H[0] = initial_disks`, then
/// `additions[i - 1]` disks added by addition `i`. The paper's `H` and `s`
/// (the addressing function's inputs); this is all the state any strategy here needs to address a
/// chunk, so it is what the superblock records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ScalingHistoryRecord")]
pub struct ScalingHistory {
    initial_disks: u32,
    additions: Vec<u32>,
    chunks_per_disk: u64,
}

/// The serialized form, validated on the way in so that a damaged
/// superblock cannot yield a history the arithmetic would overflow on.
#[derive(Deserialize)]
struct ScalingHistoryRecord {
    initial_disks: u32,
    additions: Vec<u32>,
    chunks_per_disk: u64,
}

impl TryFrom<ScalingHistoryRecord> for ScalingHistory {
    type Error = HistoryError;
    fn try_from(record: ScalingHistoryRecord) -> Result<Self, HistoryError> {
        Self::with_additions(
            record.initial_disks,
            record.chunks_per_disk,
            &record.additions,
        )
    }
}

/// A cap on the member count, far above any real array, so every product in
/// the addressing arithmetic stays far from overflow.
pub const DISKS_MAX: u32 = 1 << 16;

impl ScalingHistory {
    pub fn new(initial_disks: u32, chunks_per_disk: u64) -> Result<Self, HistoryError> {
        if initial_disks == 0 {
            return Err(HistoryError::NoDisks);
        }
        if chunks_per_disk == 0 {
            return Err(HistoryError::EmptyDisks);
        }
        let history = Self {
            initial_disks,
            additions: Vec::new(),
            chunks_per_disk,
        };
        history.check_size(initial_disks)?;
        Ok(history)
    }

    /// A history with `additions` already applied.
    pub fn with_additions(
        initial_disks: u32,
        chunks_per_disk: u64,
        additions: &[u32],
    ) -> Result<Self, HistoryError> {
        let mut history = Self::new(initial_disks, chunks_per_disk)?;
        for &n in additions {
            history.add(n)?;
        }
        Ok(history)
    }

    fn check_size(&self, disks: u32) -> Result<(), HistoryError> {
        // One spare factor of the disk count keeps `b * N + d` and
        // `m * s + b * n + j` representable during address arithmetic.
        let fits = disks <= DISKS_MAX
            && u64::from(disks)
                .checked_mul(self.chunks_per_disk)
                .and_then(|c| c.checked_mul(2))
                .is_some();
        if fits {
            Ok(())
        } else {
            Err(HistoryError::TooLarge { max: DISKS_MAX })
        }
    }

    /// Record addition `A(m, n)` with `m = self.disks()`.
    pub fn add(&mut self, disks_added: u32) -> Result<(), HistoryError> {
        if disks_added == 0 {
            return Err(HistoryError::EmptyAddition);
        }
        let disks = self
            .disks()
            .checked_add(disks_added)
            .ok_or(HistoryError::TooLarge { max: DISKS_MAX })?;
        self.check_size(disks)?;
        self.additions.push(disks_added);
        Ok(())
    }

    /// `H[0]`.
    pub fn initial_disks(&self) -> u32 {
        self.initial_disks
    }

    /// `n_1 .. n_k`.
    pub fn additions(&self) -> &[u32] {
        &self.additions
    }

    /// `k`, the number of additions so far.
    pub fn addition_count(&self) -> usize {
        self.additions.len()
    }

    /// `s`.
    pub fn chunks_per_disk(&self) -> u64 {
        self.chunks_per_disk
    }

    /// `H[t]`: disks after the first `t` additions.
    pub fn disks_after(&self, t: usize) -> u32 {
        assert!(
            t <= self.additions.len(),
            "addition {t} is not in the history"
        );
        self.initial_disks + self.additions[..t].iter().sum::<u32>()
    }

    /// `H[k]`: disks now.
    pub fn disks(&self) -> u32 {
        self.disks_after(self.additions.len())
    }

    /// `H[t] * s`: logical chunks after the first `t` additions.
    pub fn capacity_chunks_after(&self, t: usize) -> u64 {
        u64::from(self.disks_after(t)) * self.chunks_per_disk
    }

    /// Logical chunks now.
    pub fn capacity_chunks(&self) -> u64 {
        self.capacity_chunks_after(self.additions.len())
    }

    /// `(m, n)` of addition `t` (1-based).
    pub fn addition(&self, t: usize) -> (u32, u32) {
        assert!(
            (1..=self.additions.len()).contains(&t),
            "addition {t} is not in the history"
        );
        (self.disks_after(t - 1), self.additions[t - 1])
    }
}

/// Where a chunk lives: member disk and chunk offset on that disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ChunkLocation {
    pub disk: u32,
    pub offset_chunks: u64,
}

impl ChunkLocation {
    pub const fn new(disk: u32, offset_chunks: u64) -> Self {
        Self {
            disk,
            offset_chunks,
        }
    }
}

/// One chunk that an addition relocates: logical chunk `chunk` goes from
/// `from` (its place before the addition) to `to` (its place after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChunkMove {
    pub chunk: u64,
    pub from: ChunkLocation,
    pub to: ChunkLocation,
}

/// The growth strategies, as named on the command line and in the superblock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GrowthStrategy {
    /// Keep round-robin order over the current disk count (MD-Reshape, SLAS).
    RoundRobin,
    /// Move a chunk only if its round-robin place after growth is on a new
    /// disk (the FastScale paper's Semi-RR).
    SemiRr,
    /// FastScale (this module).
    FastScale,
}

impl GrowthStrategy {
    pub const ALL: [GrowthStrategy; 3] = [Self::RoundRobin, Self::SemiRr, Self::FastScale];

    pub fn name(self) -> &'static str {
        match self {
            Self::RoundRobin => "round-robin",
            Self::SemiRr => "semi-rr",
            Self::FastScale => "fastscale",
        }
    }

    /// Location of logical chunk `chunk` after the first `t` additions.
    pub fn locate_at(self, history: &ScalingHistory, t: usize, chunk: u64) -> ChunkLocation {
        match self {
            Self::RoundRobin => super::round_robin::locate_at(history, t, chunk),
            Self::SemiRr => super::semi_rr::locate_at(history, t, chunk),
            Self::FastScale => locate_at(history, t, chunk),
        }
    }

    /// Location of logical chunk `chunk` after every addition in `history`.
    pub fn locate(self, history: &ScalingHistory, chunk: u64) -> ChunkLocation {
        self.locate_at(history, history.addition_count(), chunk)
    }

    /// The logical chunk stored at `location` after the first `t` additions
    /// (the inverse of [`Self::locate_at`]).
    pub fn chunk_at(self, history: &ScalingHistory, t: usize, location: ChunkLocation) -> u64 {
        match self {
            Self::RoundRobin => super::round_robin::chunk_at(history, t, location),
            Self::SemiRr => super::semi_rr::chunk_at(history, t, location),
            Self::FastScale => chunk_at(history, t, location),
        }
    }

    /// The chunks addition `t` (1-based) relocates, each once.
    pub fn moves(
        self,
        history: &ScalingHistory,
        t: usize,
    ) -> Box<dyn Iterator<Item = ChunkMove> + '_> {
        match self {
            Self::RoundRobin => Box::new(super::round_robin::moves(history, t)),
            Self::SemiRr => Box::new(super::semi_rr::moves(history, t)),
            Self::FastScale => Box::new(moves(history, t)),
        }
    }

    /// How many chunks addition `t` relocates, without enumerating them.
    pub fn moved_count(self, history: &ScalingHistory, t: usize) -> u64 {
        match self {
            Self::RoundRobin => super::round_robin::moved_count(history, t),
            Self::SemiRr => super::semi_rr::moved_count(history, t),
            Self::FastScale => moved_count(history, t),
        }
    }
}

impl std::str::FromStr for GrowthStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|strategy| strategy.name() == s)
            .ok_or_else(|| {
                format!("unknown growth strategy {s:?} (round-robin, semi-rr, fastscale)")
            })
    }
}

impl std::fmt::Display for GrowthStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------
// FastScale, one addition A(m, n) ("Minimizing data migration").

/// Is the chunk at (`disk`, column `column`) inside the parallelogram of
/// `A(m, n)`, i.e. does it move? Only old disks (`disk < m`) have one.
#[inline]
fn in_parallelogram(m: u64, n: u64, disk: u64, column: u64) -> bool {
    disk < m && column >= disk && column - disk < n
}

/// The new disk that the chunk from old disk `disk`, column `column`, moves
/// to (head / body / tail, see the module docs). The offset is unchanged.
#[inline]
fn moved_to(m: u64, n: u64, disk: u64, column: u64) -> u64 {
    debug_assert!(in_parallelogram(m, n, disk, column));
    if column < m.min(n) {
        m + disk // head triangle, shape unchanged
    } else if column >= m.max(n) {
        disk + n // tail triangle, shape unchanged
    } else if m >= n {
        m + n - 1 - (column - disk) // body parallelogram -> rectangle
    } else {
        disk + column + 1 // body rectangle -> parallelogram
    }
}

/// Inverse of [`moved_to`]: the old disk whose chunk moved to new disk
/// `disk` in `column`, or `None` when that slot is a hole after migration.
#[inline]
fn moved_from(m: u64, n: u64, disk: u64, column: u64) -> Option<u64> {
    debug_assert!(disk >= m && disk < m + n && column < m + n);
    // Column `column` holds data on disks column+1 ..= column+m (mod m+n).
    let occupied = (disk + (m + n) - column - 1) % (m + n) < m;
    if !occupied {
        return None;
    }
    let from = if column < m.min(n) {
        disk - m
    } else if column >= m.max(n) {
        disk - n
    } else if m >= n {
        disk + column + 1 - m - n
    } else {
        disk - column - 1
    };
    debug_assert_eq!(moved_to(m, n, from, column), disk);
    Some(from)
}

/// The disk of the `index`-th hole (ascending disk order) of `column` after
/// the migration of `A(m, n)`. Holes are disks column-n+1 ..= column (mod m+n).
#[inline]
fn hole_disk(m: u64, n: u64, column: u64, index: u64) -> u64 {
    debug_assert!(index < n && column < m + n);
    if column + 1 >= n {
        column + 1 - n + index
    } else if index <= column {
        index
    } else {
        m + index
    }
}

/// Inverse of [`hole_disk`]: which hole of `column` `disk` is, if it is one.
#[inline]
fn hole_index(m: u64, n: u64, column: u64, disk: u64) -> Option<u64> {
    debug_assert!(column < m + n && disk < m + n);
    let index = if column + 1 >= n {
        disk.checked_sub(column + 1 - n).filter(|&i| i < n)
    } else if disk <= column {
        Some(disk)
    } else if disk > m + column {
        Some(disk - m)
    } else {
        None
    };
    debug_assert!(index.iter().all(|&i| hole_disk(m, n, column, i) == disk));
    index
}

/// The addition that created `chunk`: 0 for the initial data, else the
/// smallest `e` with `chunk < H[e] * s`.
#[inline]
fn birth(history: &ScalingHistory, t: usize, chunk: u64) -> usize {
    let s = history.chunks_per_disk;
    let mut disks = u64::from(history.initial_disks);
    let mut e = 0;
    while chunk >= disks * s {
        e += 1;
        assert!(
            e <= t,
            "chunk {chunk} is beyond the capacity after {t} additions"
        );
        disks += u64::from(history.additions[e - 1]);
    }
    e
}

/// FastScale's addressing function: where logical chunk
/// `chunk` lives after the first `t` additions. O(t), no table.
pub fn locate_at(history: &ScalingHistory, t: usize, chunk: u64) -> ChunkLocation {
    assert!(
        t <= history.additions.len(),
        "addition {t} is not in the history"
    );
    let s = history.chunks_per_disk;
    let e = birth(history, t, chunk);
    let mut m = u64::from(history.initial_disks);
    let (mut disk, offset);
    if e == 0 {
        // Original round-robin layout.
        disk = chunk % m;
        offset = chunk / m;
    } else {
        for &n in &history.additions[..e - 1] {
            m += u64::from(n);
        }
        // New data of addition e: fill the holes, offset by offset.
        let n = u64::from(history.additions[e - 1]);
        let r = chunk - m * s;
        offset = r / n;
        disk = hole_disk(m, n, offset % (m + n), r % n);
        m += n;
    }
    // Later additions: move it if it lies in their parallelogram.
    for &n in &history.additions[e..t] {
        let n = u64::from(n);
        let column = offset % (m + n);
        if in_parallelogram(m, n, disk, column) {
            disk = moved_to(m, n, disk, column);
        }
        m += n;
    }
    ChunkLocation::new(disk as u32, offset)
}

/// Where logical chunk `chunk` lives after every addition in `history`.
pub fn locate(history: &ScalingHistory, chunk: u64) -> ChunkLocation {
    locate_at(history, history.additions.len(), chunk)
}

/// The logical chunk stored at `location` after the first `t` additions:
/// follow the slot back through the additions until it was either a hole
/// filled with that addition's new data or part of the original layout.
pub fn chunk_at(history: &ScalingHistory, t: usize, location: ChunkLocation) -> u64 {
    assert!(
        t <= history.additions.len(),
        "addition {t} is not in the history"
    );
    let s = history.chunks_per_disk;
    let b = location.offset_chunks;
    let mut disk = u64::from(location.disk);
    let mut disks = u64::from(history.disks_after(t));
    assert!(
        disk < disks && b < s,
        "{location:?} is outside the array after {t} additions"
    );
    for &n in history.additions[..t].iter().rev() {
        let n = u64::from(n);
        let m = disks - n;
        let column = b % disks;
        let hole = if disk >= m {
            match moved_from(m, n, disk, column) {
                Some(from) => {
                    disk = from;
                    None
                }
                None => hole_index(m, n, column, disk),
            }
        } else if in_parallelogram(m, n, disk, column) {
            hole_index(m, n, column, disk)
        } else {
            None
        };
        if let Some(index) = hole {
            return m * s + b * n + index;
        }
        disks = m;
    }
    b * disks + disk
}

/// The chunks addition `t` (1-based) moves, in physical order (offset, then
/// disk), which is the order an engine aggregates reads and writes in: for
/// each offset, the old disks whose parallelogram covers that column.
pub fn moves(history: &ScalingHistory, t: usize) -> impl Iterator<Item = ChunkMove> + '_ {
    let (m, n) = history.addition(t);
    let (m, n) = (u64::from(m), u64::from(n));
    (0..history.chunks_per_disk).flat_map(move |b| {
        let column = b % (m + n);
        // Old disks d with column - n < d <= column.
        let low = (column + 1).saturating_sub(n);
        let high = column.min(m - 1);
        (low..=high).map(move |d| {
            let from = ChunkLocation::new(d as u32, b);
            ChunkMove {
                chunk: chunk_at(history, t - 1, from),
                from,
                to: ChunkLocation::new(moved_to(m, n, d, column) as u32, b),
            }
        })
    })
}

/// How many chunks addition `t` moves: `m * n` per whole region plus the
/// parallelogram's share of the last, partial region. Exactly
/// `n / (m + n)` of the `m * s` chunks when `m + n` divides `s`.
pub fn moved_count(history: &ScalingHistory, t: usize) -> u64 {
    let (m, n) = history.addition(t);
    let (m, n) = (u64::from(m), u64::from(n));
    let s = history.chunks_per_disk;
    let regions = s / (m + n);
    let tail_columns = s % (m + n);
    // Column c of a region moves min(c, m-1) - max(0, c-n+1) + 1 chunks.
    let partial: u64 = (0..tail_columns)
        .map(|c| {
            let low = (c + 1).saturating_sub(n);
            let high = c.min(m - 1);
            if low <= high {
                high - low + 1
            } else {
                0
            }
        })
        .sum();
    regions * m * n + partial
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The region of A(m, n) drawn as Figures 2 and 3 draw it: for each
    /// column, the disks that hold data after migration (`Some(from)` for a
    /// moved chunk, `None` for an unmoved one) and the holes.
    fn moved_by_column(m: u64, n: u64) -> Vec<Vec<(u64, u64)>> {
        (0..m + n)
            .map(|c| {
                (0..m)
                    .filter(|&d| in_parallelogram(m, n, d, c))
                    .map(|d| (d, moved_to(m, n, d, c)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn figure_2_scaling_3_to_5() {
        let columns = moved_by_column(3, 2);
        let counts: Vec<usize> = columns.iter().map(Vec::len).collect();
        // "the five columns of two new disks will contain 1, 2, 2, 1, and 0
        // migrated data blocks"
        assert_eq!(counts, vec![1, 2, 2, 1, 0]);
        // "the data block in the first column will be placed upon disk 3,
        // while the data block in the fourth column will be placed upon disk 4"
        assert_eq!(columns[0], vec![(0, 3)]);
        assert_eq!(columns[3], vec![(2, 4)]);
        // "The first blocks in columns 2 and 3 are placed on disk 3, and the
        // second blocks in columns 2 and 3 are placed on disk 4."
        assert_eq!(columns[1], vec![(0, 3), (1, 4)]);
        assert_eq!(columns[2], vec![(1, 3), (2, 4)]);
        // "After data migration, each disk, either old or new, has 3 data
        // blocks" and 2 x 3 = 6 blocks moved.
        let history = ScalingHistory::with_additions(3, 5, &[2]).unwrap();
        assert_eq!(moved_count(&history, 1), 6);
        let mut per_disk = [0; 5];
        for x in 0..15 {
            per_disk[locate(&history, x).disk as usize] += 1;
        }
        assert_eq!(per_disk, [3; 5]);
    }

    #[test]
    fn figure_3_scaling_2_to_5() {
        let columns = moved_by_column(2, 3);
        // Head (column 0) keeps its shape, the body rectangle (columns 1, 2)
        // becomes a parallelogram, the tail (column 3) keeps its shape.
        assert_eq!(columns[0], vec![(0, 2)]);
        assert_eq!(columns[1], vec![(0, 2), (1, 3)]);
        assert_eq!(columns[2], vec![(0, 3), (1, 4)]);
        assert_eq!(columns[3], vec![(1, 4)]);
        assert!(columns[4].is_empty());
    }

    #[test]
    fn holes_are_the_complement_of_data_in_every_column() {
        for m in 1..9 {
            for n in 1..9 {
                for c in 0..m + n {
                    let mut holes: Vec<u64> = (0..n).map(|i| hole_disk(m, n, c, i)).collect();
                    let sorted = holes.windows(2).all(|w| w[0] < w[1]);
                    assert!(sorted, "holes of A({m},{n}) column {c} not ascending");
                    let mut data: Vec<u64> = (0..m)
                        .filter(|&d| !in_parallelogram(m, n, d, c))
                        .chain(
                            (0..m)
                                .filter(|&d| in_parallelogram(m, n, d, c))
                                .map(|d| moved_to(m, n, d, c)),
                        )
                        .collect();
                    holes.append(&mut data);
                    holes.sort_unstable();
                    assert_eq!(
                        holes,
                        (0..m + n).collect::<Vec<_>>(),
                        "A({m},{n}) column {c}"
                    );
                    for d in 0..m + n {
                        let index = hole_index(m, n, c, d);
                        assert_eq!(index.map(|i| hole_disk(m, n, c, i)), index.map(|_| d));
                    }
                }
            }
        }
    }

    #[test]
    fn history_rejects_bad_input_and_round_trips_through_serde() {
        assert_eq!(ScalingHistory::new(0, 8), Err(HistoryError::NoDisks));
        assert_eq!(ScalingHistory::new(4, 0), Err(HistoryError::EmptyDisks));
        let mut history = ScalingHistory::new(4, 1 << 20).unwrap();
        assert_eq!(history.add(0), Err(HistoryError::EmptyAddition));
        history.add(2).unwrap();
        history.add(1).unwrap();
        assert!(ScalingHistory::new(4, u64::MAX / 4).is_err());
        assert_eq!(history.disks(), 7);
        assert_eq!(history.addition(2), (6, 1));
        let json = serde_json::to_string(&history).unwrap();
        assert_eq!(
            serde_json::from_str::<ScalingHistory>(&json).unwrap(),
            history
        );
        let damaged = r#"{"initial_disks":4,"additions":[0],"chunks_per_disk":8}"#;
        assert!(serde_json::from_str::<ScalingHistory>(damaged).is_err());
        let strategy: GrowthStrategy = serde_json::from_str("\"semi-rr\"").unwrap();
        assert_eq!(strategy, GrowthStrategy::SemiRr);
        assert_eq!(
            "fastscale".parse::<GrowthStrategy>(),
            Ok(GrowthStrategy::FastScale)
        );
    }
}

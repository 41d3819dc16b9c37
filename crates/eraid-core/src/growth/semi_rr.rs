//! Semi-RR growth: the FastScale paper's "most intuitive method"
//! ("Semi-RR: the most intuitive method", after Goel et al.'s SCADDAR): in addition `A(m, n)` a chunk
//! moves only if its round-robin place over the `m + n` disks is on a new
//! disk, and then it moves to exactly that place. It moves the minimum,
//! `n / (m + n)` of the data, but after several additions the chunks left on
//! the old disks are no longer spread evenly (the paper's uniformity
//! comparison: CV up to 13.06%, which `addressing_tests` reproduces).
//!
//! The paper defines only where old data goes. To keep the whole logical
//! space addressable we also place the new data of each addition (logical
//! chunks `m * s ..< (m + n) * s`):
//!
//! * new data whose round-robin place is on a new disk goes there (those
//!   slots are free, because the old chunks on new disks sit at smaller
//!   offsets of the same residue), so the new disks are exactly round-robin;
//! * the `k`-th remaining new data chunk (round-robin place on an old disk)
//!   fills the hole left by the `k`-th moved old chunk, in logical order. The
//!   two sets have the same size because `(m + n) * s` is a multiple of
//!   `m + n`.
//!
//! Addressing follows the history back: O(t) arithmetic, no table.

use super::fastscale::{ChunkLocation, ChunkMove, ScalingHistory};

/// The `k`-th non-negative integer whose residue mod `disks` is at least
/// `m`: the `k`-th old chunk that addition `A(m, disks - m)` moves.
#[inline]
fn kth_moved(m: u64, disks: u64, k: u64) -> u64 {
    let n = disks - m;
    (k / n) * disks + m + k % n
}

/// Inverse of [`kth_moved`] for `x mod disks >= m`.
#[inline]
fn moved_rank(m: u64, disks: u64, x: u64) -> u64 {
    let n = disks - m;
    (x / disks) * n + (x % disks - m)
}

/// Rank among all integers with residue `< m` mod `disks` of those below `x`.
#[inline]
fn low_rank(m: u64, disks: u64, x: u64) -> u64 {
    (x / disks) * m + (x % disks).min(m)
}

/// The `i`-th integer with residue `< m` mod `disks`.
#[inline]
fn kth_low(m: u64, disks: u64, i: u64) -> u64 {
    (i / m) * disks + i % m
}

/// Where logical chunk `chunk` lives after the first `t` additions.
pub fn locate_at(history: &ScalingHistory, t: usize, chunk: u64) -> ChunkLocation {
    let s = history.chunks_per_disk();
    let mut disks = u64::from(history.disks_after(t));
    assert!(
        chunk < disks * s,
        "chunk {chunk} is beyond the capacity after {t} additions"
    );
    let mut x = chunk;
    for &n in history.additions()[..t].iter().rev() {
        let m = disks - u64::from(n);
        if x % disks >= m {
            // Round-robin place on a new disk: moved (or placed) there.
            return ChunkLocation::new((x % disks) as u32, x / disks);
        }
        if x >= m * s {
            // New data that fills the hole of the k-th moved old chunk.
            let k = low_rank(m, disks, x) - low_rank(m, disks, m * s);
            x = kth_moved(m, disks, k);
        }
        // Otherwise x stayed where it was before this addition.
        disks = m;
    }
    ChunkLocation::new((x % disks) as u32, x / disks)
}

/// Where logical chunk `chunk` lives after every addition in `history`.
pub fn locate(history: &ScalingHistory, chunk: u64) -> ChunkLocation {
    locate_at(history, history.addition_count(), chunk)
}

/// The logical chunk at `location` after the first `t` additions: go back
/// to the addition that wrote the slot round-robin, then forward through
/// the additions where the slot's occupant moved out and new data came in.
pub fn chunk_at(history: &ScalingHistory, t: usize, location: ChunkLocation) -> u64 {
    let s = history.chunks_per_disk();
    let disk = u64::from(location.disk);
    let b = location.offset_chunks;
    assert!(
        location.disk < history.disks_after(t) && b < s,
        "{location:?} is outside the array after {t} additions"
    );
    // The slot was last written round-robin at addition `e`: the one that
    // added its disk (or the initial layout).
    let mut e = t;
    while e > 0 && disk < u64::from(history.disks_after(e - 1)) {
        e -= 1;
    }
    let mut disks = u64::from(history.disks_after(e));
    let mut x = b * disks + disk;
    for &n in &history.additions()[e..t] {
        let m = disks;
        disks += u64::from(n);
        if x % disks >= m {
            // Its occupant moved to a new disk; new data took the hole.
            let k = moved_rank(m, disks, x);
            x = kth_low(m, disks, low_rank(m, disks, m * s) + k);
        }
    }
    x
}

/// The chunks addition `t` (1-based) moves, in logical order.
pub fn moves(history: &ScalingHistory, t: usize) -> impl Iterator<Item = ChunkMove> + '_ {
    let (m, n) = history.addition(t);
    let (m, disks) = (u64::from(m), u64::from(m + n));
    (0..moved_count(history, t)).map(move |k| {
        let chunk = kth_moved(m, disks, k);
        ChunkMove {
            chunk,
            from: locate_at(history, t - 1, chunk),
            to: ChunkLocation::new((chunk % disks) as u32, chunk / disks),
        }
    })
}

/// How many chunks addition `t` moves: the old chunks (`x < m * s`) whose
/// residue mod `m + n` is a new disk. Exactly `n / (m + n)` of them when
/// `m + n` divides `m * s`.
pub fn moved_count(history: &ScalingHistory, t: usize) -> u64 {
    let (m, n) = history.addition(t);
    let (m, disks) = (u64::from(m), u64::from(m + n));
    let old_chunks = m * history.chunks_per_disk();
    old_chunks - low_rank(m, disks, old_chunks)
}

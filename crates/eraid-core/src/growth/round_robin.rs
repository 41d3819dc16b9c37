//! Round-robin growth (the FastScale paper's baseline, and
//! the layout MD-Reshape and SLAS preserve): after every addition the array
//! is a plain RAID-0 over the current disk count, so chunk `x` lives on disk
//! `x mod H[t]` at offset `x div H[t]`. Addressing is one division; the price
//! is that nearly every chunk moves in every addition (all but the first
//! `m`, which sit at offset 0 on the same disk before and after).

use super::fastscale::{ChunkLocation, ChunkMove, ScalingHistory};

/// Where logical chunk `chunk` lives after the first `t` additions.
#[inline]
pub fn locate_at(history: &ScalingHistory, t: usize, chunk: u64) -> ChunkLocation {
    let disks = u64::from(history.disks_after(t));
    assert!(
        chunk < disks * history.chunks_per_disk(),
        "chunk {chunk} is beyond the capacity after {t} additions"
    );
    ChunkLocation::new((chunk % disks) as u32, chunk / disks)
}

/// Where logical chunk `chunk` lives after every addition in `history`.
pub fn locate(history: &ScalingHistory, chunk: u64) -> ChunkLocation {
    locate_at(history, history.addition_count(), chunk)
}

/// The logical chunk at `location` after the first `t` additions.
pub fn chunk_at(history: &ScalingHistory, t: usize, location: ChunkLocation) -> u64 {
    let disks = history.disks_after(t);
    assert!(
        location.disk < disks && location.offset_chunks < history.chunks_per_disk(),
        "{location:?} is outside the array after {t} additions"
    );
    location.offset_chunks * u64::from(disks) + u64::from(location.disk)
}

/// The chunks addition `t` (1-based) moves, in logical order (the order a
/// round-robin reshape such as SLAS proceeds in).
pub fn moves(history: &ScalingHistory, t: usize) -> impl Iterator<Item = ChunkMove> + '_ {
    let (m, _) = history.addition(t);
    let old_chunks = u64::from(m) * history.chunks_per_disk();
    (0..old_chunks).filter_map(move |chunk| {
        let from = locate_at(history, t - 1, chunk);
        let to = locate_at(history, t, chunk);
        (from != to).then_some(ChunkMove { chunk, from, to })
    })
}

/// How many chunks addition `t` moves: all `m * s` but the first `m`.
pub fn moved_count(history: &ScalingHistory, t: usize) -> u64 {
    let (m, _) = history.addition(t);
    let m = u64::from(m);
    m * history.chunks_per_disk() - m
}

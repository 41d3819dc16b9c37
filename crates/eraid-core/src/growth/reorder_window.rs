//! ALV's reordering window and aggregation plans for RAID-5 growth
//! (Zhang, Zheng, Shu: "ALV: A New Data Redistribution Approach to RAID-5
//! Scaling", IEEE TC 2010).
//!
//! Pure arithmetic, no I/O. Notation follows the paper:
//!
//! - `A(m, n)` (Definition 1): grow a RAID-5 of `m` members to `m + n`,
//!   same chunk size, same parity rotation family.
//! - chunk `x`: a logical data chunk (RAID-0 order); it lives at
//!   [`Scaling::old_place`] in the `m`-member layout and moves to
//!   [`Scaling::new_place`] in the `(m + n)`-member layout. Old stripe
//!   `g = x / (m - 1)` sits at member chunk `g` of every old member; new
//!   stripe `s = x / (m + n - 1)` sits at member chunk `s`.
//! - `S(m, n, x)` (Definition 2): chunks `< x` have moved (and that move is
//!   checkpointed); chunks `>= x` are at their old places.
//! - `R(m, n, x)` (Definition 3): the largest `w` such that chunks
//!   `x .. x + w` may be moved in any order without overwriting anything
//!   still needed.
//!
//! # What "needed" means: two safety models
//!
//! Moving a window writes each chunk's new place and, once every data chunk
//! of a new stripe has moved, that stripe's new parity `Q_s` (write alignment:
//! new parity is computed from new data only, so it is written only for
//! complete new stripes). A write is a *hazard* when it lands on:
//!
//! 1. the old place of a chunk `b >= x` other than the chunk being written
//!    (an in-place move `new_place(b) == old_place(b)` rewrites identical
//!    bytes). This covers chunks already copied in the window too: lazy
//!    checkpointing (Sec. 3.3) relies on *both* replicas staying valid until
//!    the checkpoint, so a crash simply restarts from `x`. In particular a new
//!    parity `Q_s` may not land on the old place of any chunk `>= x`.
//! 2. ([`SafetyModel::Redundant`] only) the old parity `P_G` of an old stripe
//!    `G` that still holds a chunk `b >= x` which may not have moved yet:
//!    `b` is not the chunk being written (data write) or not in the stripe
//!    whose parity is written (parity write). Overwriting `P_G` first would
//!    leave `b` with a single copy and no parity: one member failure before
//!    `b` moves loses it.
//!
//! [`SafetyModel::Redundant`] is what eraid uses ([`reordering_window`]).
//! It reproduces the paper's Fig. 1 exactly (`R = 1, 1, 2, 3, 4, 6` for
//! A(3, 1) from chunk 2) and the paper's worked example `R(3, 1, 18) = 9`.
//!
//! The paper's closed form ([`theorem1`]) is *not* the maximum of either
//! model. Its proof only asks what overwrites chunk `x`'s own old place and
//! stops the window at the first chunk whose new place is at or after it in
//! row-major order. That makes it safe under [`SafetyModel::DataOnly`]
//! (Definition 3 read literally: old parity is not protected), exact when
//! `x` is overwritten by a data chunk `x' != x` (Observation 1), and
//! conservative when `x` is overwritten by new parity (Observation 2) or
//! stays in place. Under the redundant model it is sometimes too large: at
//! S(3, 1, 3) Theorem 1 gives 2, but moving chunk 4 first overwrites `P_1`
//! while chunk 3 is still unmoved. That is why Fig. 1 shows a window of 1
//! there. The tests in `reorder_window_tests.rs` check all of this against
//! brute force.
//!
//! # Aggregation (Sec. 3.2)
//!
//! A sliding window `[x, x + S)` with `S <= R(m, n, x)` is moved as a
//! sequence of aggregation windows, each a whole number of new stripes.
//! [`Scaling::plan_aggregation`] gives one aggregation window's device I/O:
//! at most `m` reads (one contiguous extent per old member; it may span old
//! parity chunks, which are read and dropped) and exactly `m + n` writes
//! (one contiguous extent per member: rows `s0 .. s1` of the new layout,
//! data and new parity).
//!
//! At the start of the array, while `x < bootstrap_end`, the window may
//! be too small to hold a single new stripe (A(3, 1): chunks 0..6). Write
//! alignment then needs another safety net (e.g. MD's backed-up critical
//! section); [`Scaling::bootstrap_end`] says where that region ends.

use crate::geometry::{Geometry, Level, ParityLayout, CHUNK_BYTES_DEFAULT, MEMBER_COUNT_MAX};
use crate::layout::{layout_for, ChunkPlace, Layout};

/// Which old contents a redistribution write must not overwrite; see the
/// module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SafetyModel {
    /// Old data replicas of every chunk `>= x` and the old parity of every
    /// old stripe with a not-yet-moved chunk stay intact. eraid's model.
    Redundant,
    /// Only old data replicas of chunks `>= x` stay intact (Definition 3
    /// read literally). Theorem 1's closed form is safe under this model.
    DataOnly,
}

/// What the old (`m`-member) layout keeps at a place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Occupant {
    /// Logical data chunk.
    Data(u64),
    /// Parity of old stripe `G`.
    Parity(u64),
}

/// One write of redistribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedistributionWrite {
    /// Data chunk `x` written at its new place.
    Data(u64),
    /// New parity `Q_s` of new stripe `s`, written once all its data moved.
    NewParity(u64),
}

/// A write that would destroy something the state `S(m, n, x)` still needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hazard {
    pub write: RedistributionWrite,
    pub place: ChunkPlace,
    pub clobbers: Occupant,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScalingError {
    #[error("RAID-5 growth needs m >= 2 members before and n >= 1 added, got m = {m}, n = {n}")]
    BadCounts { m: usize, n: usize },
    #[error("at most {max} members are supported, growth asks for {got}")]
    TooManyMembers { max: usize, got: usize },
    #[error("layout {0} is not a RAID-5 parity rotation")]
    NotRaid5Layout(&'static str),
    #[error("geometry is {0}, not RAID-5")]
    NotRaid5(String),
}

/// Chunk numbers this module accepts: far beyond any array (2^48 chunks of
/// 4 KiB are 1 EiB), and small enough that stripe arithmetic on them never
/// overflows.
pub const CHUNK_INDEX_MAX: u64 = 1 << 48;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("chunk {chunk} is past the largest chunk number {max} this module accepts")]
    ChunkOutOfRange { chunk: u64, max: u64 },
    #[error("chunk {first_chunk} does not start a new stripe of {new_stripe_chunks} chunks")]
    NotStripeStart {
        first_chunk: u64,
        new_stripe_chunks: u64,
    },
    #[error("window [{first_chunk}, +{chunk_count}) is not whole new stripes of {new_stripe_chunks} chunks")]
    NotAligned {
        first_chunk: u64,
        chunk_count: u64,
        new_stripe_chunks: u64,
    },
    #[error("sliding window of {sliding_chunks} chunks at chunk {first_chunk} exceeds the reordering window R = {reorder_chunks}")]
    ExceedsReorderingWindow {
        first_chunk: u64,
        sliding_chunks: u64,
        reorder_chunks: u64,
    },
    #[error("aggregation window must hold at least one new stripe")]
    EmptyAggregation,
}

/// A(m, n) for one parity rotation: old and new layouts side by side.
#[derive(Debug)]
pub struct Scaling {
    m: usize,
    n: usize,
    layout: ParityLayout,
    old: Box<dyn Layout>,
    new: Box<dyn Layout>,
}

/// A contiguous run of chunks on one member: `chunk_count` chunks starting
/// at chunk `member_chunk` of the member's data area.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Extent {
    pub member: usize,
    pub member_chunk: u64,
    pub chunk_count: u64,
}

impl Extent {
    /// Byte offset on the member device and length in bytes.
    pub fn byte_range(&self, chunk_bytes: u64, data_offset_bytes: u64) -> (u64, u64) {
        (
            data_offset_bytes + self.member_chunk * chunk_bytes,
            self.chunk_count * chunk_bytes,
        )
    }
}

/// One data chunk's move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkMove {
    pub chunk: u64,
    pub from: ChunkPlace,
    pub to: ChunkPlace,
}

/// Device I/O for one aggregation window: chunks `first_chunk ..
/// first_chunk + chunk_count`, which are exactly new stripes `new_stripes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregationPlan {
    pub first_chunk: u64,
    pub chunk_count: u64,
    pub new_stripes: std::ops::Range<u64>,
    /// At most one extent per old member (`<= m`), sorted by member. An
    /// extent may cover old parity chunks between window chunks.
    pub reads: Vec<Extent>,
    /// Exactly one extent per new member (`m + n`), sorted by member: rows
    /// `new_stripes` of the new layout, data and new parity.
    pub writes: Vec<Extent>,
    /// Every chunk's move, in chunk order (in-place moves included: they
    /// are read and rewritten with the rest of their row).
    pub moves: Vec<ChunkMove>,
    /// Where each new stripe's parity goes, in stripe order.
    pub new_parity: Vec<(u64, ChunkPlace)>,
}

impl AggregationPlan {
    /// Chunks read from disk, holes included (the read's bandwidth cost).
    pub fn read_chunks(&self) -> u64 {
        self.reads.iter().map(|e| e.chunk_count).sum()
    }

    pub fn write_chunks(&self) -> u64 {
        self.writes.iter().map(|e| e.chunk_count).sum()
    }
}

fn raid5_geometry(layout: ParityLayout, member_count: usize) -> Geometry {
    // Built directly (not through `Geometry::new`) so that A(2, n) works:
    // the layout math only reads level, layout and member count.
    Geometry {
        level: Level::Raid5,
        layout,
        member_count,
        chunk_bytes: CHUNK_BYTES_DEFAULT,
        data_offset_bytes: 0,
        member_data_bytes: CHUNK_BYTES_DEFAULT << 40,
    }
}

impl Scaling {
    /// A(m, n) with parity rotation `layout`, for `m >= 2`, `n >= 1`.
    pub fn new(m: usize, n: usize, layout: ParityLayout) -> Result<Scaling, ScalingError> {
        if m < 2 || n < 1 {
            return Err(ScalingError::BadCounts { m, n });
        }
        if m + n > MEMBER_COUNT_MAX {
            return Err(ScalingError::TooManyMembers {
                max: MEMBER_COUNT_MAX,
                got: m + n,
            });
        }
        if matches!(layout, ParityLayout::None | ParityLayout::Near2) {
            return Err(ScalingError::NotRaid5Layout(layout.name()));
        }
        Ok(Scaling {
            m,
            n,
            layout,
            old: layout_for(&raid5_geometry(layout, m)),
            new: layout_for(&raid5_geometry(layout, m + n)),
        })
    }

    /// Growth of an existing RAID-5 geometry by `n` members.
    pub fn from_geometry(old: &Geometry, n: usize) -> Result<Scaling, ScalingError> {
        if old.level != Level::Raid5 {
            return Err(ScalingError::NotRaid5(old.level.name()));
        }
        Scaling::new(old.member_count, n, old.layout)
    }

    pub fn m(&self) -> usize {
        self.m
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn layout(&self) -> ParityLayout {
        self.layout
    }

    /// Data chunks per old stripe, `m - 1`.
    pub fn old_stripe_chunks(&self) -> u64 {
        (self.m - 1) as u64
    }

    /// Data chunks per new stripe, `m + n - 1`.
    pub fn new_stripe_chunks(&self) -> u64 {
        (self.m + self.n - 1) as u64
    }

    /// Where chunk `x` lives before growth.
    pub fn old_place(&self, x: u64) -> ChunkPlace {
        let (stripe, index) = self.old.locate(x);
        self.old.stripe_map(stripe).data[index]
    }

    /// Where chunk `x` lives after growth.
    pub fn new_place(&self, x: u64) -> ChunkPlace {
        let (stripe, index) = self.new.locate(x);
        self.new.stripe_map(stripe).data[index]
    }

    /// Place of old parity `P_G`.
    pub fn old_parity_place(&self, old_stripe: u64) -> ChunkPlace {
        self.old.stripe_map(old_stripe).parity[0]
    }

    /// Place of new parity `Q_s`.
    pub fn new_parity_place(&self, new_stripe: u64) -> ChunkPlace {
        self.new.stripe_map(new_stripe).parity[0]
    }

    /// What the old layout keeps at `place` (None on added members, and
    /// for a data chunk whose number would pass u64::MAX).
    pub fn old_occupant(&self, place: ChunkPlace) -> Option<Occupant> {
        if place.member >= self.m {
            return None;
        }
        let stripe = place.member_chunk;
        let map = self.old.stripe_map(stripe);
        if map.parity[0] == place {
            return Some(Occupant::Parity(stripe));
        }
        let index = map.data.iter().position(|p| *p == place)?;
        // A data chunk numbered past u64::MAX does not exist (a debug
        // build panicked here on rows near the top).
        let chunk = stripe
            .checked_mul(self.old_stripe_chunks())?
            .checked_add(index as u64)?;
        Some(Occupant::Data(chunk))
    }

    /// The place a redistribution write targets.
    pub fn write_place(&self, write: RedistributionWrite) -> ChunkPlace {
        match write {
            RedistributionWrite::Data(y) => self.new_place(y),
            RedistributionWrite::NewParity(s) => self.new_parity_place(s),
        }
    }

    /// Whether `write`, issued in state `S(m, n, x)` as part of a window
    /// starting at `x`, may destroy needed contents in some move order. The
    /// answer does not depend on the window's size, which is why `R` can be
    /// found by scanning forward.
    pub fn write_hazard(
        &self,
        x: u64,
        write: RedistributionWrite,
        model: SafetyModel,
    ) -> Option<Hazard> {
        let place = self.write_place(write);
        let clobbers = self.old_occupant(place)?;
        let clobbered = match (clobbers, write) {
            (Occupant::Data(b), RedistributionWrite::Data(y)) => b >= x && b != y,
            (Occupant::Data(b), RedistributionWrite::NewParity(_)) => b >= x,
            (Occupant::Parity(_), _) if model == SafetyModel::DataOnly => false,
            (Occupant::Parity(g), write) => {
                let k_old = self.old_stripe_chunks();
                let k_new = self.new_stripe_chunks();
                let may_be_unmoved = |b: u64| match write {
                    RedistributionWrite::Data(y) => b != y,
                    RedistributionWrite::NewParity(s) => b / k_new != s,
                };
                // Saturating: `place` may come from a chunk number near
                // u64::MAX, which must not panic (no stripe reaches it).
                let first = g.saturating_mul(k_old).max(x);
                let end = g.saturating_add(1).saturating_mul(k_old);
                (first..end).any(may_be_unmoved)
            }
        };
        clobbered.then_some(Hazard {
            write,
            place,
            clobbers,
        })
    }

    /// `R(m, n, x)` under `model`: scan chunks `y = x, x + 1, ...` (and the
    /// new parity each completed new stripe writes) until the first hazard.
    ///
    /// Writes into new rows `< g = x / (m - 1)` are never hazards (those rows
    /// hold only old stripes whose chunks are all `< x`), so the scan starts
    /// at `max(x, g (m + n - 1))`. It ends within a few new stripes, O(m + n)
    /// layout lookups.
    pub fn reordering_window(&self, x: u64, model: SafetyModel) -> Result<u64, PlanError> {
        check_chunk(x)?;
        let k_old = self.old_stripe_chunks();
        let k_new = self.new_stripe_chunks();
        let g = x / k_old;
        let start = x.max(g * k_new);
        // A hazard is certain in the first new row s > g past the in-place
        // region (s n >= m - 1): it writes a moved chunk onto old data >= x.
        let in_place_rows = (self.m as u64 - 1).div_ceil(self.n as u64);
        let end_bound = ((g + 1).max(in_place_rows) + 1) * k_new;
        for y in start..end_bound {
            if self
                .write_hazard(x, RedistributionWrite::Data(y), model)
                .is_some()
            {
                return Ok(y - x);
            }
            let stripe_complete = (y + 1).is_multiple_of(k_new);
            if stripe_complete
                && self
                    .write_hazard(x, RedistributionWrite::NewParity(y / k_new), model)
                    .is_some()
            {
                return Ok(y - x);
            }
        }
        // The comment above proves a hazard in row `end_bound / k_new - 1`.
        unreachable!(
            "A({}, {}) {:?}: no hazard before chunk {end_bound} from x = {x}",
            self.m, self.n, self.layout
        );
    }

    /// Whole new stripes from `x` (which must start a new stripe) that fit
    /// in `R(m, n, x)`, as a chunk count: the largest write-aligned window.
    pub fn aligned_window(&self, x: u64, model: SafetyModel) -> Result<u64, PlanError> {
        let k_new = self.new_stripe_chunks();
        if !x.is_multiple_of(k_new) {
            return Err(PlanError::NotStripeStart {
                first_chunk: x,
                new_stripe_chunks: k_new,
            });
        }
        Ok(self.reordering_window(x, model)? / k_new * k_new)
    }

    /// First chunk from which write-aligned redistribution can always make
    /// progress: for every new-stripe-aligned `x >= bootstrap_end`,
    /// `aligned_window(x) >= m + n - 1`. Before it, some aligned state has a
    /// reordering window smaller than one new stripe.
    ///
    /// Beyond row `j = ceil((m - 1) / n)` this needs no search: for aligned
    /// `x = j (m + n - 1)` with `j n >= m - 1`, `g = x / (m - 1) >= j + 1`,
    /// and every chunk of new rows `< g` (a whole stripe at least) is safe.
    pub fn bootstrap_end(&self, model: SafetyModel) -> u64 {
        let k_new = self.new_stripe_chunks();
        let rows_checked = (self.m as u64 - 1).div_ceil(self.n as u64);
        (0..rows_checked)
            .rev()
            .find(|&j| {
                // j * k_new is a small aligned chunk: always accepted.
                self.aligned_window(j * k_new, model)
                    .expect("an aligned chunk in the first rows")
                    == 0
            })
            .map_or(0, |j| (j + 1) * k_new)
    }

    /// Device I/O for moving chunks `first_chunk .. first_chunk +
    /// chunk_count` as one aggregation window. Both ends must be new-stripe
    /// boundaries (write alignment). Safety against the reordering window
    /// is the caller's (see [`Scaling::plan_sliding_window`]).
    pub fn plan_aggregation(
        &self,
        first_chunk: u64,
        chunk_count: u64,
    ) -> Result<AggregationPlan, PlanError> {
        let k_new = self.new_stripe_chunks();
        if !first_chunk.is_multiple_of(k_new) || !chunk_count.is_multiple_of(k_new) {
            return Err(PlanError::NotAligned {
                first_chunk,
                chunk_count,
                new_stripe_chunks: k_new,
            });
        }
        if chunk_count == 0 {
            return Err(PlanError::EmptyAggregation);
        }
        check_chunk(first_chunk)?;
        check_chunk(chunk_count)?;
        let chunks = first_chunk..first_chunk + chunk_count;
        let moves: Vec<ChunkMove> = chunks
            .map(|chunk| ChunkMove {
                chunk,
                from: self.old_place(chunk),
                to: self.new_place(chunk),
            })
            .collect();
        // Per old member: the span of member chunks holding window chunks.
        let mut spans: Vec<Option<(u64, u64)>> = vec![None; self.m];
        for mv in &moves {
            let span = &mut spans[mv.from.member];
            let c = mv.from.member_chunk;
            *span = Some(span.map_or((c, c), |(lo, hi)| (lo.min(c), hi.max(c))));
        }
        let reads = spans
            .iter()
            .enumerate()
            .filter_map(|(member, span)| {
                span.map(|(lo, hi)| Extent {
                    member,
                    member_chunk: lo,
                    chunk_count: hi - lo + 1,
                })
            })
            .collect();
        let new_stripes = first_chunk / k_new..(first_chunk + chunk_count) / k_new;
        let writes = (0..self.m + self.n)
            .map(|member| Extent {
                member,
                member_chunk: new_stripes.start,
                chunk_count: new_stripes.end - new_stripes.start,
            })
            .collect();
        let new_parity = new_stripes
            .clone()
            .map(|s| (s, self.new_parity_place(s)))
            .collect();
        Ok(AggregationPlan {
            first_chunk,
            chunk_count,
            new_stripes,
            reads,
            writes,
            moves,
            new_parity,
        })
    }

    /// Splits the sliding window `first_chunk .. first_chunk +
    /// sliding_chunks` (state `S(m, n, first_chunk)`, both ends new-stripe
    /// boundaries, `sliding_chunks <= R(m, n, first_chunk)` under `model`)
    /// into aggregation windows of `aggregation_stripes` new stripes (the
    /// last one may be shorter). Every write of the whole sliding window is
    /// then safe in any order, so nothing needs checkpointing until its end.
    pub fn plan_sliding_window(
        &self,
        first_chunk: u64,
        sliding_chunks: u64,
        aggregation_stripes: u64,
        model: SafetyModel,
    ) -> Result<Vec<AggregationPlan>, PlanError> {
        let k_new = self.new_stripe_chunks();
        if !first_chunk.is_multiple_of(k_new) || !sliding_chunks.is_multiple_of(k_new) {
            return Err(PlanError::NotAligned {
                first_chunk,
                chunk_count: sliding_chunks,
                new_stripe_chunks: k_new,
            });
        }
        if aggregation_stripes == 0 || sliding_chunks == 0 {
            return Err(PlanError::EmptyAggregation);
        }
        check_chunk(aggregation_stripes)?;
        let reorder_chunks = self.reordering_window(first_chunk, model)?;
        if sliding_chunks > reorder_chunks {
            return Err(PlanError::ExceedsReorderingWindow {
                first_chunk,
                sliding_chunks,
                reorder_chunks,
            });
        }
        let step = aggregation_stripes * k_new;
        let end = first_chunk + sliding_chunks;
        (first_chunk..end)
            .step_by(step as usize)
            .map(|start| self.plan_aggregation(start, step.min(end - start)))
            .collect()
    }
}

/// Why a reordering window could not be computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error(transparent)]
    Scaling(#[from] ScalingError),
    #[error(transparent)]
    Plan(#[from] PlanError),
}

fn check_chunk(chunk: u64) -> Result<(), PlanError> {
    if chunk > CHUNK_INDEX_MAX {
        return Err(PlanError::ChunkOutOfRange {
            chunk,
            max: CHUNK_INDEX_MAX,
        });
    }
    Ok(())
}

/// `R(m, n, x)` for A(m, n) with parity rotation `layout`, under eraid's
/// [`SafetyModel::Redundant`]; an error if `(m, n, layout)` is not a RAID-5
/// growth (see [`Scaling::new`]) or `x` is out of range. Build a
/// [`Scaling`] once for many queries.
pub fn reordering_window(
    m: usize,
    n: usize,
    x: u64,
    layout: ParityLayout,
) -> Result<u64, WindowError> {
    Ok(Scaling::new(m, n, layout)?.reordering_window(x, SafetyModel::Redundant)?)
}

/// The paper's closed form (Theorem 1), for the left-asymmetric layout:
///
/// ```text
/// R(m, n, x) = n * floor(x / (m - 1)) + delta
/// delta =  0  if r <  t and r     <= t'
///         -1  if r <  t and r     >  t'
///          1  if r >= t and r + 1 <= t'
///          0  if r >= t and r + 1 >  t'
/// g = floor(x / (m - 1)), r = x mod (m - 1),
/// t = m - 1 - (g mod m), t' = m + n - 1 - (g mod (m + n))
/// ```
///
/// `t` and `t'` are the old and new parity members of row `g`. This equals
/// `x' - x` where `x'` is the first chunk whose new place is at or after
/// chunk `x`'s old place in row-major order. It is safe under
/// [`SafetyModel::DataOnly`] but is neither model's maximum; see the
/// module documentation.
pub fn theorem1(m: usize, n: usize, x: u64) -> Result<u64, WindowError> {
    if m < 2 || n < 1 {
        return Err(ScalingError::BadCounts { m, n }.into());
    }
    if m + n > MEMBER_COUNT_MAX {
        return Err(ScalingError::TooManyMembers {
            max: MEMBER_COUNT_MAX,
            got: m + n,
        }
        .into());
    }
    check_chunk(x)?;
    Ok(theorem1_terms(m as u64, n as u64, x))
}

fn theorem1_terms(m: u64, n: u64, x: u64) -> u64 {
    let g = x / (m - 1);
    let r = x % (m - 1);
    let t = m - 1 - g % m;
    let t_new = m + n - 1 - g % (m + n);
    let base = n * g;
    if r < t {
        if r <= t_new {
            base
        } else {
            // delta = -1 needs t' < r <= m - 2, so g mod (m + n) > n + 1 and
            // base >= n (n + 2) > 0.
            base - 1
        }
    } else if r < t_new {
        // r + 1 <= t'
        base + 1
    } else {
        base
    }
}

#[cfg(test)]
#[path = "reorder_window_tests.rs"]
mod tests;

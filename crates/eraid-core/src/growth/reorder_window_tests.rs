//! Tests of the reordering window against brute force, the paper's figures,
//! and the aggregation planner.
//!
//! Two oracles, both built straight from the layouts (not from
//! `Scaling::write_hazard`):
//! - `simulate_all_orders`: moves the window's chunks in every order on an
//!   explicit disk image and checks, after each write, that every chunk
//!   `>= x` still has its old replica and (redundant model) every old stripe
//!   with an unmoved chunk `>= x` still has its old parity. Exact, but
//!   factorial: windows of at most 6 chunks.
//! - `pairwise_safe`: for each write of the window, is there an order in
//!   which its target is still needed? Checked on an explicit old image.
//!   Cross-checked against the simulation on small windows; used for big ones.

use super::*;
use crate::layout::StripeMap;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

const LAYOUTS: [ParityLayout; 4] = [
    ParityLayout::LeftAsymmetric,
    ParityLayout::LeftSymmetric,
    ParityLayout::RightAsymmetric,
    ParityLayout::RightSymmetric,
];
const MODELS: [SafetyModel; 2] = [SafetyModel::Redundant, SafetyModel::DataOnly];
const LA: ParityLayout = ParityLayout::LeftAsymmetric;

/// Both layouts, straight from `layout_for`.
struct Oracle {
    m: usize,
    k_old: u64,
    k_new: u64,
    old: Box<dyn Layout>,
    new: Box<dyn Layout>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Old(Occupant),
    NewData(u64),
    NewParity(u64),
}

impl Oracle {
    fn new(m: usize, n: usize, layout: ParityLayout) -> Oracle {
        let geometry = |members| Geometry {
            level: Level::Raid5,
            layout,
            member_count: members,
            chunk_bytes: 4096,
            data_offset_bytes: 0,
            member_data_bytes: 4096 << 40,
        };
        Oracle {
            m,
            k_old: (m - 1) as u64,
            k_new: (m + n - 1) as u64,
            old: layout_for(&geometry(m)),
            new: layout_for(&geometry(m + n)),
        }
    }

    fn old_map(&self, stripe: u64) -> StripeMap {
        self.old.stripe_map(stripe)
    }

    fn old_place(&self, chunk: u64) -> ChunkPlace {
        self.old_map(chunk / self.k_old).data[(chunk % self.k_old) as usize]
    }

    fn new_place(&self, chunk: u64) -> ChunkPlace {
        self.new.stripe_map(chunk / self.k_new).data[(chunk % self.k_new) as usize]
    }

    fn new_parity(&self, stripe: u64) -> ChunkPlace {
        self.new.stripe_map(stripe).parity[0]
    }

    /// The old disk image of rows `0..rows`.
    fn old_image(&self, rows: u64) -> HashMap<ChunkPlace, Occupant> {
        let mut image = HashMap::new();
        for g in 0..rows {
            let map = self.old_map(g);
            image.insert(map.parity[0], Occupant::Parity(g));
            for (j, place) in map.data.iter().enumerate() {
                image.insert(*place, Occupant::Data(g * self.k_old + j as u64));
            }
        }
        assert_eq!(image.len() as u64, rows * self.m as u64);
        image
    }

    /// The writes moving chunks `x .. x + w`: data, plus the parity of each
    /// new stripe whose last chunk is in the window.
    fn window_writes(&self, x: u64, w: u64) -> Vec<(RedistributionWrite, ChunkPlace)> {
        let mut writes = Vec::new();
        for y in x..x + w {
            writes.push((RedistributionWrite::Data(y), self.new_place(y)));
            if (y + 1) % self.k_new == 0 {
                let s = y / self.k_new;
                writes.push((RedistributionWrite::NewParity(s), self.new_parity(s)));
            }
        }
        writes
    }

    /// Is there an order of moving `x .. x + w` in which some write destroys
    /// a needed old replica or needed old parity? (false = unsafe)
    fn pairwise_safe(&self, x: u64, w: u64, model: SafetyModel) -> bool {
        let writes = self.window_writes(x, w);
        let rows = writes
            .iter()
            .map(|(_, p)| p.member_chunk + 1)
            .max()
            .unwrap_or(0);
        let image = self.old_image(rows);
        let in_window = |b: u64| (x..x + w).contains(&b);
        writes.iter().all(|&(write, place)| {
            match (image.get(&place), write) {
                (None, _) => true,
                (Some(&Occupant::Data(b)), RedistributionWrite::Data(y)) => b < x || b == y,
                (Some(&Occupant::Data(b)), RedistributionWrite::NewParity(_)) => b < x,
                (Some(Occupant::Parity(_)), _) if model == SafetyModel::DataOnly => true,
                (Some(&Occupant::Parity(g)), write) => {
                    // Needed while a chunk >= x of old stripe g can still be
                    // unmoved when this write lands.
                    let chunks = g * self.k_old..(g + 1) * self.k_old;
                    !chunks.filter(|&b| b >= x).any(|b| {
                        !in_window(b)
                            || match write {
                                RedistributionWrite::Data(y) => b != y,
                                RedistributionWrite::NewParity(s) => b / self.k_new != s,
                            }
                    })
                }
            }
        })
    }

    /// Move `x .. x + w` in every order on an explicit disk image; false if
    /// any order destroys something needed.
    fn simulate_all_orders(&self, x: u64, w: u64, model: SafetyModel) -> bool {
        assert!(w <= 6, "factorial");
        let writes = self.window_writes(x, w);
        let rows = writes
            .iter()
            .map(|(_, p)| p.member_chunk + 1)
            .chain([x / self.k_old + 2])
            .max()
            .unwrap();
        let image: HashMap<ChunkPlace, Content> = self
            .old_image(rows)
            .into_iter()
            .map(|(p, o)| (p, Content::Old(o)))
            .collect();
        let chunk_end = rows * self.k_old;
        let mut order: Vec<u64> = (x..x + w).collect();
        let mut all_safe = true;
        permutations(&mut order, 0, &mut |order| {
            if !all_safe {
                return;
            }
            let mut disk = image.clone();
            let mut moved: HashSet<u64> = HashSet::new();
            for &a in order {
                moved.insert(a);
                let mut step = vec![(self.new_place(a), Content::NewData(a))];
                let s = a / self.k_new;
                let stripe_done =
                    (s * self.k_new..(s + 1) * self.k_new).all(|c| c < x || moved.contains(&c));
                if stripe_done {
                    step.push((self.new_parity(s), Content::NewParity(s)));
                }
                for (place, content) in step {
                    disk.insert(place, content);
                    if !self.invariants_hold(&disk, x, chunk_end, rows, &moved, model) {
                        all_safe = false;
                        return;
                    }
                }
            }
        });
        all_safe
    }

    fn invariants_hold(
        &self,
        disk: &HashMap<ChunkPlace, Content>,
        x: u64,
        chunk_end: u64,
        rows: u64,
        moved: &HashSet<u64>,
        model: SafetyModel,
    ) -> bool {
        // Every chunk >= x keeps its old replica (an in-place move rewrites
        // the same bytes).
        let replicas = (x..chunk_end).all(|b| {
            let place = self.old_place(b);
            match disk.get(&place) {
                Some(Content::Old(Occupant::Data(c))) => *c == b,
                Some(Content::NewData(c)) => *c == b && self.new_place(b) == place,
                _ => false,
            }
        });
        let parity = model == SafetyModel::DataOnly
            || (0..rows).all(|g| {
                let unmoved =
                    (g * self.k_old..(g + 1) * self.k_old).any(|b| b >= x && !moved.contains(&b));
                !unmoved
                    || disk.get(&self.old_map(g).parity[0])
                        == Some(&Content::Old(Occupant::Parity(g)))
            });
        replicas && parity
    }
}

fn permutations(items: &mut Vec<u64>, k: usize, visit: &mut impl FnMut(&[u64])) {
    if k == items.len() {
        visit(items);
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permutations(items, k + 1, visit);
        items.swap(k, i);
    }
}

fn scaling(m: usize, n: usize, layout: ParityLayout) -> Scaling {
    Scaling::new(m, n, layout).unwrap()
}

fn place(member: usize, member_chunk: u64) -> ChunkPlace {
    ChunkPlace {
        member,
        member_chunk,
    }
}

/// The paper's proof of Theorem 1, step by step: the member `d` of chunk x
/// in row g, the new parity member t' of row g, and x' (the chunk or, when
/// d = t', the first chunk after the parity) the new layout puts there.
fn theorem1_proof_terms(m: u64, n: u64, x: u64) -> (u64, u64, u64) {
    let g = x / (m - 1);
    let r = x % (m - 1);
    let t = m - 1 - g % m;
    let t_new = m + n - 1 - g % (m + n);
    let d = if r < t { r } else { r + 1 };
    let x_prime = g * (m + n - 1) + d - u64::from(d > t_new);
    (d, t_new, x_prime)
}

// ---------------------------------------------------------------- figures

/// Fig. 1, state 0 and the final state: old and new places of chunks 0..20.
#[test]
fn places_match_figure_1() {
    let s = scaling(3, 1, LA);
    // State 0: disk 0: 0 2 P2 6 8 P5 12 14 P8 18; disk 1: 1 P1 4 7 P4 10
    // 13 P7 16 19; disk 2: P0 3 5 P3 9 11 P6 15 17 P9.
    let old_rows: [[Occupant; 3]; 10] = {
        use Occupant::{Data as D, Parity as P};
        [
            [D(0), D(1), P(0)],
            [D(2), P(1), D(3)],
            [P(2), D(4), D(5)],
            [D(6), D(7), P(3)],
            [D(8), P(4), D(9)],
            [P(5), D(10), D(11)],
            [D(12), D(13), P(6)],
            [D(14), P(7), D(15)],
            [P(8), D(16), D(17)],
            [D(18), D(19), P(9)],
        ]
    };
    for (row, occupants) in old_rows.iter().enumerate() {
        for (member, occupant) in occupants.iter().enumerate() {
            let p = place(member, row as u64);
            assert_eq!(s.old_occupant(p), Some(*occupant), "{p:?}");
            match *occupant {
                Occupant::Data(x) => assert_eq!(s.old_place(x), p),
                Occupant::Parity(g) => assert_eq!(s.old_parity_place(g), p),
            }
        }
    }
    assert_eq!(s.old_occupant(place(3, 0)), None, "disk 3 is new");
    // New layout (states 1-5): disk 0: 0 3 6 Q3 12; disk 1: 1 4 Q2 9 13;
    // disk 2: 2 Q1 7 10 14; disk 3: Q0 5 8 11 Q4.
    let new_rows: [[Option<u64>; 4]; 5] = [
        [Some(0), Some(1), Some(2), None],
        [Some(3), Some(4), None, Some(5)],
        [Some(6), None, Some(7), Some(8)],
        [None, Some(9), Some(10), Some(11)],
        [Some(12), Some(13), Some(14), None],
    ];
    for (row, members) in new_rows.iter().enumerate() {
        for (member, chunk) in members.iter().enumerate() {
            let p = place(member, row as u64);
            match chunk {
                Some(x) => assert_eq!(s.new_place(*x), p),
                None => assert_eq!(s.new_parity_place(row as u64), p),
            }
        }
    }
}

/// Fig. 1: "Only chunk 2 can first be moved once, then only chunk 3, then
/// both 4 and 5, then 6-8, then 9-12" and state 5 has R = 6 (13-18); then
/// Sec. 3.2's S(3, 1, 18) with R = 9 (18-26).
#[test]
fn figure_1_window_sequence() {
    let s = scaling(3, 1, LA);
    let mut x = 2; // chunks 0 and 1 stay where they are
    let mut windows = Vec::new();
    while x < 28 {
        let r = s.reordering_window(x, SafetyModel::Redundant).unwrap();
        windows.push((x..x + r).collect::<Vec<u64>>());
        x += r;
    }
    let expected: Vec<Vec<u64>> = vec![
        vec![2],
        vec![3],
        vec![4, 5],
        vec![6, 7, 8],
        vec![9, 10, 11, 12],
        (13..19).collect(),
        (19..28).collect(),
    ];
    assert_eq!(windows, expected);
    assert_eq!(s.reordering_window(18, SafetyModel::Redundant).unwrap(), 9);
    assert_eq!(reordering_window(3, 1, 18, LA).unwrap(), 9);
    // "If Chunk 9 is also taken into account, when Chunk 9 is moved before
    // Chunk 7, the former overwrites the latter."
    let hazard = s.write_hazard(6, RedistributionWrite::Data(9), SafetyModel::Redundant);
    assert_eq!(hazard.map(|h| h.clobbers), Some(Occupant::Data(7)));
    // Chunks 0 and 1 move onto themselves: a window of in-place moves.
    assert_eq!(s.old_place(0), s.new_place(0));
    assert_eq!(s.reordering_window(0, SafetyModel::Redundant).unwrap(), 2);
    // Each window is safe and maximal by brute force over every order.
    let oracle = Oracle::new(3, 1, LA);
    for w in &expected[..5] {
        let (x, len) = (w[0], w.len() as u64);
        assert!(oracle.simulate_all_orders(x, len, SafetyModel::Redundant));
        assert!(!oracle.simulate_all_orders(x, len + 1, SafetyModel::Redundant));
    }
}

/// Theorem 1's closed form against the figure: it agrees at 2, 6, 13, 18
/// but not at 3, 4, 9, where its window overwrites old parity that still
/// protects an unmoved chunk (the figure shows the smaller window). Under
/// the data-only model those windows are safe.
#[test]
fn theorem1_versus_figure_1() {
    let s = scaling(3, 1, LA);
    let oracle = Oracle::new(3, 1, LA);
    for (x, figure, closed_form) in [
        (2, 1, 1),
        (3, 1, 2),
        (4, 2, 3),
        (6, 3, 3),
        (9, 4, 5),
        (13, 6, 6),
        (18, 9, 9),
    ] {
        assert_eq!(theorem1(3, 1, x).unwrap(), closed_form, "x = {x}");
        assert_eq!(
            s.reordering_window(x, SafetyModel::Redundant).unwrap(),
            figure
        );
        assert!(oracle.pairwise_safe(x, closed_form, SafetyModel::DataOnly));
        if closed_form > figure {
            assert!(!oracle.pairwise_safe(x, closed_form, SafetyModel::Redundant));
        }
    }
    // At S(3, 1, 3), moving chunk 4 first overwrites P1 while chunk 3 (old
    // stripe 1) has not moved.
    let hazard = s.write_hazard(3, RedistributionWrite::Data(4), SafetyModel::Redundant);
    assert_eq!(hazard.map(|h| h.clobbers), Some(Occupant::Parity(1)));
    assert_eq!(
        s.write_hazard(3, RedistributionWrite::Data(4), SafetyModel::DataOnly),
        None
    );
}

// ---------------------------------------------------- brute-force checks

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The pairwise checker agrees with moving small windows in every order.
    #[test]
    fn pairwise_checker_matches_every_order(
        layout in 0usize..4, model in 0usize..2,
        m in 2usize..7, n in 1usize..4, x in 0u64..300, w in 0u64..=6,
    ) {
        let oracle = Oracle::new(m, n, LAYOUTS[layout]);
        let model = MODELS[model];
        prop_assert_eq!(
            oracle.pairwise_safe(x, w, model),
            oracle.simulate_all_orders(x, w, model)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The generic R is safe and maximal by brute force, every rotation,
    /// both models; and where it is small, also over every move order.
    #[test]
    fn window_is_safe_and_maximal(
        layout in 0usize..4, model in 0usize..2,
        m in 2usize..10, n in 1usize..6, x in 0u64..5000,
    ) {
        let (layout, model) = (LAYOUTS[layout], MODELS[model]);
        let r = scaling(m, n, layout).reordering_window(x, model).unwrap();
        let oracle = Oracle::new(m, n, layout);
        prop_assert!(oracle.pairwise_safe(x, r, model), "R = {} unsafe", r);
        prop_assert!(!oracle.pairwise_safe(x, r + 1, model), "R = {} not maximal", r);
        if r < 6 {
            prop_assert!(oracle.simulate_all_orders(x, r, model));
            prop_assert!(!oracle.simulate_all_orders(x, r + 1, model));
        }
    }

    /// Theorem 1 (left-asymmetric) against brute force under the data-only
    /// model it was derived for: always safe; equal to the brute-force
    /// maximum whenever chunk x is overwritten by another data chunk x'
    /// (Observation 1); at most the maximum when x is overwritten by new
    /// parity (Observation 2) or does not move.
    #[test]
    fn theorem1_against_brute_force(m in 2usize..10, n in 1usize..6, x in 0u64..5000) {
        let oracle = Oracle::new(m, n, LA);
        let closed_form = theorem1(m, n, x).unwrap();
        let (d, t_new, x_prime) = theorem1_proof_terms(m as u64, n as u64, x);
        prop_assert!(oracle.pairwise_safe(x, closed_form, SafetyModel::DataOnly));
        let brute_max = scaling(m, n, LA).reordering_window(x, SafetyModel::DataOnly).unwrap();
        prop_assert!(closed_form <= brute_max);
        if d != t_new && x_prime != x {
            prop_assert_eq!(closed_form, x_prime - x);
            prop_assert!(!oracle.pairwise_safe(x, closed_form + 1, SafetyModel::DataOnly));
        }
    }

    /// `old_place`/`new_place` agree with the layouts, and every move goes
    /// to the same or an earlier row (growth only moves data forward).
    #[test]
    fn places_agree_with_layouts(layout in 0usize..4, m in 2usize..10, n in 1usize..6, x in 0u64..100_000) {
        let s = scaling(m, n, LAYOUTS[layout]);
        let oracle = Oracle::new(m, n, LAYOUTS[layout]);
        prop_assert_eq!(s.old_place(x), oracle.old_place(x));
        prop_assert_eq!(s.new_place(x), oracle.new_place(x));
        prop_assert_eq!(s.old_occupant(s.old_place(x)), Some(Occupant::Data(x)));
        prop_assert!(s.new_place(x).member_chunk <= s.old_place(x).member_chunk);
    }
}

/// Exhaustive tally of Theorem 1 against the brute-force maximum (the
/// generic R, itself checked against brute force above) for left-asymmetric
/// m in 2..=10, n in 1..=6, x in 0..5000. Run with --nocapture to see it.
#[test]
fn theorem1_tally() {
    let mut rows = Vec::new();
    for model in MODELS {
        let (mut cases, mut equal, mut below, mut above) = (0u64, 0u64, 0u64, 0u64);
        let mut first_above = None;
        for m in 2..=10usize {
            for n in 1..=6usize {
                let s = scaling(m, n, LA);
                for x in 0..5000u64 {
                    let (closed_form, r) = (
                        theorem1(m, n, x).unwrap(),
                        s.reordering_window(x, model).unwrap(),
                    );
                    cases += 1;
                    match closed_form.cmp(&r) {
                        std::cmp::Ordering::Equal => equal += 1,
                        std::cmp::Ordering::Less => below += 1,
                        std::cmp::Ordering::Greater => {
                            above += 1;
                            first_above.get_or_insert((m, n, x, closed_form, r));
                        }
                    }
                }
            }
        }
        println!(
            "{model:?}: {cases} cases, Theorem 1 = max in {equal}, below (safe, conservative) in {below}, above (unsafe) in {above}; first above: {first_above:?}"
        );
        rows.push((model, cases, equal, below, above));
    }
    // Data-only: never unsafe. Redundant: the figure's own counterexample.
    assert_eq!(rows[1].4, 0);
    assert!(rows[0].4 > 0);
}

// ------------------------------------------------------- bootstrap region

#[test]
fn bootstrap_region_of_a_3_1() {
    let s = scaling(3, 1, LA);
    // Aligned states 0 and 3 have R = 2 and 1 < 3 = one new stripe.
    assert_eq!(s.aligned_window(0, SafetyModel::Redundant).unwrap(), 0);
    assert_eq!(s.aligned_window(3, SafetyModel::Redundant).unwrap(), 0);
    assert_eq!(s.aligned_window(6, SafetyModel::Redundant).unwrap(), 3);
    assert_eq!(s.bootstrap_end(SafetyModel::Redundant), 6);
    // Data-only does not help: at S(3, 1, 3) new stripe 1 = {3, 4, 5} puts
    // Q1 on chunk 3's old place, which a crash before the checkpoint needs.
    assert_eq!(s.reordering_window(3, SafetyModel::DataOnly).unwrap(), 2);
    let hazard = s.write_hazard(3, RedistributionWrite::NewParity(1), SafetyModel::DataOnly);
    assert_eq!(hazard.map(|h| h.clobbers), Some(Occupant::Data(3)));
    assert_eq!(s.bootstrap_end(SafetyModel::DataOnly), 6);
}

proptest! {
    /// From `bootstrap_end` on, every aligned state can move a whole stripe.
    #[test]
    fn aligned_progress_after_bootstrap(layout in 0usize..4, model in 0usize..2, m in 2usize..12, n in 1usize..8) {
        let s = scaling(m, n, LAYOUTS[layout]);
        let model = MODELS[model];
        let k = s.new_stripe_chunks();
        let end = s.bootstrap_end(model);
        prop_assert_eq!(end % k, 0);
        if end > 0 {
            prop_assert_eq!(s.aligned_window(end - k, model).unwrap(), 0);
        }
        for j in 0..300 {
            prop_assert!(s.aligned_window(end + j * k, model).unwrap() >= k);
        }
    }
}

// ---------------------------------------------------------- aggregation

fn extent(member: usize, member_chunk: u64, chunk_count: u64) -> Extent {
    Extent {
        member,
        member_chunk,
        chunk_count,
    }
}

/// Sec. 3.2, Figs. 6 and 7: S(3, 1, 18), R = 9, one aggregation window of
/// nine chunks: reads {18, 20, 24, 26} (through P11), {19, 22, 25} (through
/// P10), {21, 23}; writes {18, Q7, 24}, {Q6, 21, 25}, {19, 22, 26},
/// {20, 23, Q8}.
#[test]
fn figures_6_and_7() {
    let s = scaling(3, 1, LA);
    let plans = s
        .plan_sliding_window(18, 9, 3, SafetyModel::Redundant)
        .unwrap();
    assert_eq!(plans.len(), 1);
    let plan = &plans[0];
    assert_eq!(plan.new_stripes, 6..9);
    assert_eq!(
        plan.reads,
        vec![extent(0, 9, 5), extent(1, 9, 4), extent(2, 10, 2)]
    );
    assert_eq!(
        plan.writes,
        (0..4).map(|d| extent(d, 6, 3)).collect::<Vec<_>>()
    );
    let to: HashMap<u64, ChunkPlace> = plan.moves.iter().map(|mv| (mv.chunk, mv.to)).collect();
    assert_eq!((to[&18], to[&24]), (place(0, 6), place(0, 8)));
    assert_eq!((to[&21], to[&25]), (place(1, 7), place(1, 8)));
    assert_eq!(
        (to[&19], to[&22], to[&26]),
        (place(2, 6), place(2, 7), place(2, 8))
    );
    assert_eq!((to[&20], to[&23]), (place(3, 6), place(3, 7)));
    assert_eq!(
        plan.new_parity,
        vec![(6, place(1, 6)), (7, place(0, 7)), (8, place(3, 8))]
    );
    assert_eq!(plan.read_chunks(), 11, "9 chunks and 2 old parity holes");
    assert_eq!(plan.write_chunks(), 12, "9 chunks and 3 new parity");
    assert_eq!(
        extent(1, 9, 4).byte_range(64 << 10, 1 << 20),
        ((1 << 20) + 9 * (64 << 10), 4 * (64 << 10))
    );
}

/// Sec. 3.2: "Provided that the size of the aggregation window is six ...
/// To move all these nine chunks, five reads and eight writes are required."
#[test]
fn aggregation_window_of_six() {
    let s = scaling(3, 1, LA);
    let plans = s
        .plan_sliding_window(18, 9, 2, SafetyModel::Redundant)
        .unwrap();
    assert_eq!(plans.len(), 2);
    assert_eq!((plans[0].first_chunk, plans[0].chunk_count), (18, 6));
    assert_eq!((plans[1].first_chunk, plans[1].chunk_count), (24, 3));
    assert_eq!(plans[0].reads[0], extent(0, 9, 2), "chunks 18 and 20");
    assert_eq!(plans[0].writes[0], extent(0, 6, 2), "chunk 18 and Q7");
    let reads: usize = plans.iter().map(|p| p.reads.len()).sum();
    let writes: usize = plans.iter().map(|p| p.writes.len()).sum();
    assert_eq!((reads, writes), (5, 8));
}

#[test]
fn plans_reject_misaligned_or_oversized_windows() {
    let s = scaling(3, 1, LA);
    let model = SafetyModel::Redundant;
    assert!(matches!(
        s.plan_sliding_window(19, 9, 1, model),
        Err(PlanError::NotAligned { .. })
    ));
    assert!(matches!(
        s.plan_sliding_window(18, 10, 1, model),
        Err(PlanError::NotAligned { .. })
    ));
    assert!(matches!(
        s.plan_sliding_window(18, 12, 1, model),
        Err(PlanError::ExceedsReorderingWindow {
            reorder_chunks: 9,
            ..
        })
    ));
    assert!(matches!(
        s.plan_sliding_window(18, 9, 0, model),
        Err(PlanError::EmptyAggregation)
    ));
    assert!(matches!(
        s.plan_aggregation(18, 0),
        Err(PlanError::EmptyAggregation)
    ));
    assert!(matches!(
        Scaling::new(1, 1, LA),
        Err(ScalingError::BadCounts { .. })
    ));
    assert!(matches!(
        Scaling::new(3, 0, LA),
        Err(ScalingError::BadCounts { .. })
    ));
    assert!(matches!(
        Scaling::new(3, 1, ParityLayout::None),
        Err(ScalingError::NotRaid5Layout(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// For any rotation and any aligned state past the bootstrap region:
    /// the largest sliding window splits into aggregation windows each read
    /// with at most m I/Os (one contiguous extent per old member, holes are
    /// old parity only) and written with exactly m + n (rows of the new
    /// layout, nothing else); all the writes are safe by brute force.
    #[test]
    fn aggregation_plans_cover_exactly(
        layout in 0usize..4, m in 2usize..9, n in 1usize..5,
        row in 0u64..2000, aggregation_stripes in 1u64..5,
    ) {
        let layout = LAYOUTS[layout];
        let s = scaling(m, n, layout);
        let oracle = Oracle::new(m, n, layout);
        let model = SafetyModel::Redundant;
        let k = s.new_stripe_chunks();
        let x = s.bootstrap_end(model) + row * k;
        let sliding = s.aligned_window(x, model).unwrap();
        prop_assert!(sliding >= k);
        let plans = s.plan_sliding_window(x, sliding, aggregation_stripes, model).unwrap();
        prop_assert!(oracle.pairwise_safe(x, sliding, model));
        let mut next = x;
        for plan in &plans {
            prop_assert_eq!(plan.first_chunk, next);
            prop_assert!(plan.chunk_count <= aggregation_stripes * k);
            next += plan.chunk_count;
            let chunks = plan.first_chunk..plan.first_chunk + plan.chunk_count;
            // Reads.
            prop_assert!(plan.reads.len() <= m);
            let members: HashSet<usize> = plan.reads.iter().map(|e| e.member).collect();
            prop_assert_eq!(members.len(), plan.reads.len());
            let mut read_places = HashSet::new();
            for e in &plan.reads {
                for c in e.member_chunk..e.member_chunk + e.chunk_count {
                    let p = place(e.member, c);
                    match s.old_occupant(p) {
                        Some(Occupant::Data(b)) => prop_assert!(chunks.contains(&b)),
                        Some(Occupant::Parity(_)) => {}
                        None => prop_assert!(false, "read off the old members"),
                    }
                    read_places.insert(p);
                }
            }
            for b in chunks.clone() {
                prop_assert!(read_places.contains(&s.old_place(b)));
            }
            // Writes: exactly the new places and new parity of the rows.
            prop_assert_eq!(plan.writes.len(), m + n);
            let written: HashSet<ChunkPlace> = plan
                .writes
                .iter()
                .flat_map(|e| (e.member_chunk..e.member_chunk + e.chunk_count).map(move |c| place(e.member, c)))
                .collect();
            let mut expected: HashSet<ChunkPlace> = chunks.clone().map(|b| s.new_place(b)).collect();
            expected.extend(plan.new_parity.iter().map(|(_, p)| *p));
            prop_assert_eq!(written.len() as u64, plan.write_chunks());
            prop_assert_eq!(written, expected);
            prop_assert_eq!(plan.moves.len() as u64, plan.chunk_count);
        }
        prop_assert_eq!(next, x + sliding);
    }
}

/// Bad input to the public functions is an error naming what was wrong,
/// never a panic (each of these panicked before: an `expect`, two
/// `assert!`s, and stripe arithmetic overflowing past u64::MAX).
#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert_eq!(
        theorem1(1, 1, 0).unwrap_err(),
        WindowError::Scaling(ScalingError::BadCounts { m: 1, n: 1 })
    );
    assert_eq!(
        theorem1(3, 0, 0).unwrap_err(),
        WindowError::Scaling(ScalingError::BadCounts { m: 3, n: 0 })
    );
    assert!(matches!(
        theorem1(60, 10, 0).unwrap_err(),
        WindowError::Scaling(ScalingError::TooManyMembers { got: 70, .. })
    ));
    assert_eq!(
        reordering_window(3, 1, 0, ParityLayout::None).unwrap_err(),
        WindowError::Scaling(ScalingError::NotRaid5Layout(ParityLayout::None.name()))
    );
    assert_eq!(
        reordering_window(3, 1, u64::MAX, LA).unwrap_err(),
        WindowError::Plan(PlanError::ChunkOutOfRange {
            chunk: u64::MAX,
            max: CHUNK_INDEX_MAX
        })
    );
    let s = scaling(3, 1, LA);
    assert_eq!(
        s.aligned_window(1, SafetyModel::Redundant).unwrap_err(),
        PlanError::NotStripeStart {
            first_chunk: 1,
            new_stripe_chunks: 3
        }
    );
    assert!(matches!(
        s.reordering_window(u64::MAX - 1, SafetyModel::DataOnly),
        Err(PlanError::ChunkOutOfRange { .. })
    ));
    assert!(matches!(
        s.plan_aggregation(u64::MAX / 3 * 3 - 3, 3),
        Err(PlanError::ChunkOutOfRange { .. })
    ));
    assert!(matches!(
        s.plan_sliding_window(0, 3, u64::MAX / 2, SafetyModel::Redundant),
        Err(PlanError::ChunkOutOfRange { .. })
    ));
    // A new parity written onto an old parity place in a row near
    // u64::MAX: the old stripe's chunk range overflowed.
    let s_top = (u64::MAX - 12..=u64::MAX)
        .find(|&row| s.old_occupant(s.new_parity_place(row)) == Some(Occupant::Parity(row)))
        .expect("A(3, 1) puts a new parity on an old one every 12 rows");
    let hazard = s.write_hazard(
        0,
        RedistributionWrite::NewParity(s_top),
        SafetyModel::Redundant,
    );
    // Old stripe `s_top`'s chunks would lie past u64::MAX: none is unmoved
    // (wrapping arithmetic made up a range of them instead).
    assert!(
        hazard.is_none(),
        "old stripe {s_top} holds no chunk: {hazard:?}"
    );
    // In range, the same calls still answer.
    assert_eq!(reordering_window(3, 1, 18, LA).unwrap(), 9);
}

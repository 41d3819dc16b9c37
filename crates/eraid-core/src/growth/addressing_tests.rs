//! Properties of the three growth layouts (round-robin, Semi-RR, FastScale)
//! and the FastScale paper's property examination (FAST 2011; "Property
//! Examination" in the slides): add one disk to a 4-disk array ten times,
//! measure the migration fraction and the coefficient of variation of the
//! per-disk data.

use super::examination::{examine_fixed, examine_full, old_data_per_disk, Examination};
use super::fastscale::{ChunkMove, GrowthStrategy, ScalingHistory};
use proptest::prelude::*;

/// Every logical chunk after `t` additions maps inside the array, no two
/// chunks share a slot (with `H[t] * s` chunks and slots, a bijection), and
/// `chunk_at` inverts `locate_at`.
fn assert_bijective(strategy: GrowthStrategy, history: &ScalingHistory, t: usize) {
    let s = history.chunks_per_disk();
    let disks = u64::from(history.disks_after(t));
    let mut seen = vec![false; (disks * s) as usize];
    for chunk in 0..disks * s {
        let at = strategy.locate_at(history, t, chunk);
        assert!(
            u64::from(at.disk) < disks && at.offset_chunks < s,
            "{strategy} {history:?} t={t}: chunk {chunk} at {at:?} is outside the array"
        );
        let slot = (u64::from(at.disk) * s + at.offset_chunks) as usize;
        assert!(
            !seen[slot],
            "{strategy} {history:?} t={t}: chunk {chunk} collides at {at:?}"
        );
        seen[slot] = true;
        assert_eq!(
            strategy.chunk_at(history, t, at),
            chunk,
            "{strategy} {history:?} t={t}: chunk_at({at:?})"
        );
    }
}

/// Brute force: the old chunks whose location differs across addition `t`.
fn moves_by_diff(strategy: GrowthStrategy, history: &ScalingHistory, t: usize) -> Vec<ChunkMove> {
    let (m, _) = history.addition(t);
    (0..u64::from(m) * history.chunks_per_disk())
        .filter_map(|chunk| {
            let from = strategy.locate_at(history, t - 1, chunk);
            let to = strategy.locate_at(history, t, chunk);
            (from != to).then_some(ChunkMove { chunk, from, to })
        })
        .collect()
}

fn history_strategy() -> impl Strategy<Value = ScalingHistory> {
    (1u32..=8, prop::collection::vec(1u32..=4, 0..=10), 1u64..=3).prop_flat_map(
        |(m0, additions, regions)| {
            let disks_max = u64::from(m0 + additions.iter().sum::<u32>());
            // Several regions of the widest addition, plus a ragged tail so
            // incomplete regions are exercised too.
            (0..disks_max).prop_map(move |tail| {
                ScalingHistory::with_additions(m0, regions * disks_max + tail, &additions).unwrap()
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_chunk_has_exactly_one_slot_after_every_addition(history in history_strategy()) {
        for strategy in GrowthStrategy::ALL {
            for t in 0..=history.addition_count() {
                assert_bijective(strategy, &history, t);
            }
        }
    }

    #[test]
    fn planned_moves_are_exactly_the_chunks_that_change_place(history in history_strategy()) {
        for strategy in GrowthStrategy::ALL {
            for t in 1..=history.addition_count() {
                let mut planned: Vec<ChunkMove> = strategy.moves(&history, t).collect();
                prop_assert_eq!(planned.len() as u64, strategy.moved_count(&history, t));
                planned.sort_by_key(|mv| mv.chunk);
                prop_assert_eq!(&planned, &moves_by_diff(strategy, &history, t));
            }
        }
    }

    #[test]
    fn fastscale_is_minimal_uniform_and_keeps_offsets(history in history_strategy()) {
        let s = history.chunks_per_disk();
        for t in 1..=history.addition_count() {
            let (m, n) = history.addition(t);
            let (m64, n64) = (u64::from(m), u64::from(n));
            let region = m64 + n64;
            let moves: Vec<ChunkMove> = GrowthStrategy::FastScale.moves(&history, t).collect();
            for mv in &moves {
                // Old disk to new disk only, same physical offset (the parallelogram).
                prop_assert!(mv.from.disk < m && mv.to.disk >= m);
                prop_assert_eq!(mv.from.offset_chunks, mv.to.offset_chunks);
            }
            // Exactly n / (m + n) of the data over whole regions.
            let whole_rows = s / region * region;
            let whole = moves.iter().filter(|mv| mv.from.offset_chunks < whole_rows).count() as u64;
            prop_assert_eq!(whole * region, n64 * m64 * whole_rows);
            // Uniform up to one region's rounding, exactly over whole regions.
            let counts = old_data_per_disk(&moves, &history, t);
            let spread = counts.iter().max().unwrap() - counts.iter().min().unwrap();
            prop_assert!(spread < region, "{counts:?}");
            if s % region == 0 {
                prop_assert_eq!(spread, 0, "{:?}", counts);
            }
        }
    }

    #[test]
    fn semi_rr_is_minimal_and_round_robin_moves_nearly_everything(history in history_strategy()) {
        let s = history.chunks_per_disk();
        for t in 1..=history.addition_count() {
            let (m, n) = history.addition(t);
            let (m64, n64) = (u64::from(m), u64::from(n));
            let old = m64 * s;
            let semi: Vec<ChunkMove> = GrowthStrategy::SemiRr.moves(&history, t).collect();
            for mv in &semi {
                prop_assert!(mv.to.disk >= m, "semi-rr moved {:?} onto an old disk", mv);
            }
            // The minimum: n / (m + n) of the old data, exactly when it
            // divides evenly, otherwise within one stripe of it.
            let exact = n64 * old;
            let moved = semi.len() as u64 * (m64 + n64);
            prop_assert!(moved.abs_diff(exact) <= n64 * (m64 + n64), "{} vs {}", moved, exact);
            if old % (m64 + n64) == 0 {
                prop_assert_eq!(moved, exact);
            }
            prop_assert_eq!(GrowthStrategy::RoundRobin.moved_count(&history, t), old - m64);
        }
    }
}

// ---------------------------------------------------------------------------
// The paper's property examination (FAST'11; the slides' "Comparison in
// Migration Fraction" and "Comp. in Uniformity of Distribution": "from a 4-disk array, add one disk repeatedly for 10 times").

fn print_examination(
    model: &str,
    history: &ScalingHistory,
    results: &[(GrowthStrategy, Examination)],
) {
    println!(
        "\nFastScale property examination, model {model}: {} disks + 1 x {}, s = {} chunks/disk",
        history.initial_disks(),
        history.addition_count(),
        history.chunks_per_disk()
    );
    println!(
        "{:>5} {:>6} | {:>31} | {:>31}",
        "add", "n/m+n", "moved fraction % (rr semi fs)", "CV % (rr semi fs)"
    );
    for t in 1..=history.addition_count() {
        let (m, n) = history.addition(t);
        let ideal = 100.0 * f64::from(n) / f64::from(m + n);
        let moved: Vec<String> = results
            .iter()
            .map(|(_, e)| format!("{:9.4}", 100.0 * e.moved_fraction[t - 1]))
            .collect();
        let cv: Vec<String> = results
            .iter()
            .map(|(_, e)| format!("{:9.4}", e.cv_percent[t - 1]))
            .collect();
        println!(
            "{m:>2}+{n:<2} {ideal:6.2} | {} | {}",
            moved.join(" "),
            cv.join(" ")
        );
    }
}

/// `s` = lcm(5..=14) = 360360, so every region (5..14 wide) divides a disk
/// and the paper's "exactly n/(m+n)" and "CV 0" claims can be asserted
/// exactly. (The paper used 2M blocks per disk; see the ignored test below.)
const EXAMINATION_CHUNKS_PER_DISK: u64 = 360_360;

#[test]
fn paper_examination_moved_fraction_and_uniformity() {
    let history = ScalingHistory::with_additions(4, EXAMINATION_CHUNKS_PER_DISK, &[1; 10]).unwrap();
    for (model, examine) in [
        (
            "full",
            examine_full as fn(GrowthStrategy, &ScalingHistory) -> Examination,
        ),
        ("fixed", examine_fixed),
    ] {
        let results: Vec<(GrowthStrategy, Examination)> = GrowthStrategy::ALL
            .into_iter()
            .map(|strategy| (strategy, examine(strategy, &history)))
            .collect();
        print_examination(model, &history, &results);
        let [(_, rr), (_, semi), (_, fs)] = &results[..] else {
            unreachable!()
        };
        for t in 1..=history.addition_count() {
            let (m, n) = history.addition(t);
            let ideal = f64::from(n) / f64::from(m + n);
            // Round-robin moves (nearly) everything, keeps CV 0.
            assert!(rr.moved_fraction[t - 1] > 0.99, "{model} rr t={t}");
            assert!(rr.cv_percent[t - 1] < 1e-9, "{model} rr t={t}");
            // Semi-RR and FastScale move the minimum.
            assert!(
                (semi.moved_fraction[t - 1] - ideal).abs() < 1e-12,
                "{model} semi t={t}"
            );
            if model == "full" {
                assert!(
                    (fs.moved_fraction[t - 1] - ideal).abs() < 1e-12,
                    "{model} fs t={t}"
                );
                assert_eq!(fs.cv_percent[t - 1], 0.0, "{model} fs t={t}");
            }
        }
        let semi_cv_max = semi.cv_percent.iter().copied().fold(0.0, f64::max);
        println!("{model}: semi-rr max CV {semi_cv_max:.2}% (paper: up to 13.06%)");
        // Semi-RR drifts away from uniform after the second addition. In the
        // full model (the paper's setting) our Semi-RR reproduces the
        // paper's maximum, 13.06%, at the second addition.
        assert!(
            semi_cv_max > 5.0,
            "{model}: semi-rr CV {:?}",
            semi.cv_percent
        );
        if model == "full" {
            assert!((semi_cv_max - 13.06).abs() < 0.01, "{:?}", semi.cv_percent);
        }
    }
}

/// The paper's exact size (2M chunks of 64 KiB per 128 GB disk); regions
/// do not divide it, so FastScale's CV is small but not zero. Slow in the
/// test profile: `cargo test -p eraid-core --release paper_size -- --ignored --nocapture`.
#[test]
#[ignore]
fn paper_examination_at_paper_size() {
    let history = ScalingHistory::with_additions(4, 2 << 20, &[1; 10]).unwrap();
    let results: Vec<(GrowthStrategy, Examination)> = GrowthStrategy::ALL
        .into_iter()
        .map(|strategy| (strategy, examine_full(strategy, &history)))
        .collect();
    print_examination("full (paper size)", &history, &results);
}

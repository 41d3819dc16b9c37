//! The EPU study's model and counts: the scaling unit reproduces the
//! paper's Figure 2 update equations exactly, Fig. 4's (6,3,1,4) reads,
//! Algorithm 1's invariants, the optimized matrices are MDS, and the table
//! counts the README documents against the paper's Tables I and II.

use std::collections::BTreeSet;

use eraid_codes::crs::matrix_to_bitmatrix;
use eraid_codes::crs_scaling::matrices::{
    extend_optimized, post_scaling_matrix, pre_scaling_matrix,
};
use eraid_codes::crs_scaling::{
    count_reads, run_study, study_case, MatrixChoice, ScalingUnit, UpdateMethod,
};
use eraid_codes::CauchyReedSolomon;

/// G = E xor F for each parity block of a one-stripe unit, as block ids.
fn update_sets(k: usize, m: usize, t: usize, w: usize) -> Vec<BTreeSet<usize>> {
    let unit = ScalingUnit::new(k, t, w);
    assert_eq!(unit.stripes, 1, "a one-stripe example");
    let before = matrix_to_bitmatrix(k, m, w, &pre_scaling_matrix(k, m, w).unwrap());
    let after_matrix = post_scaling_matrix(MatrixChoice::Jerasure, k, t, m, w).unwrap();
    let after = matrix_to_bitmatrix(k + t, m, w, &after_matrix);
    let block_at = |places: &[eraid_codes::crs_scaling::BlockPlace], col: usize| {
        places
            .iter()
            .position(|p| p.disk == col / w && p.packet == col % w)
    };
    (0..m * w)
        .map(|row| {
            let old: BTreeSet<usize> = before
                .ones_in_row(row)
                .filter_map(|c| block_at(&unit.before, c))
                .collect();
            let new: BTreeSet<usize> = after
                .ones_in_row(row)
                .filter_map(|c| block_at(&unit.after, c))
                .collect();
            old.symmetric_difference(&new).copied().collect()
        })
        .collect()
}

#[test]
fn figure_2_unit_reproduces_the_papers_eight_update_equations() {
    // Sec. II-A: p'_0 = p_0 + d2 + d6, p'_1 = p_1 + d3 + d7, p'_2 = p_2 + d2
    // + d6, p'_3 = p_3 + d3 + d7, p'_4 = p_4 + d2 + d3 + d7, p'_5 = p_5 +
    // d7, p'_6 = p_6 + d2 + d6, p'_7 = p_7 + d2 + d3 + d6 + d7.
    let paper: [&[usize]; 8] = [
        &[2, 6],
        &[3, 7],
        &[2, 6],
        &[3, 7],
        &[2, 3, 7],
        &[7],
        &[2, 6],
        &[2, 3, 6, 7],
    ];
    let ours = update_sets(2, 2, 2, 4);
    for (p, expected) in paper.iter().enumerate() {
        let expected: BTreeSet<usize> = expected.iter().copied().collect();
        assert_eq!(ours[p], expected, "p'_{p}");
    }
    let unit = ScalingUnit::new(2, 2, 4);
    let moved: Vec<usize> = (0..8).filter(|&b| unit.is_moved(b)).collect();
    assert_eq!(moved, [2, 3, 6, 7], "B = {{d2, d3, d6, d7}}");
}

#[test]
fn figure_2_algorithm_1_reads_8_by_rmw_and_4_by_rcw_and_picks_rcw() {
    let case = study_case(MatrixChoice::Jerasure, 2, 2, 2, 4).unwrap();
    assert_eq!(case.reads.parity_blocks, 8);
    assert_eq!(case.scale_crs_reads(), 8, "m = 8");
    assert_eq!(case.reads.rcw_data_reads, 4, "n = 4: d0, d1, d4, d5");
    assert_eq!(case.reads.epu_method(), UpdateMethod::ReconstructWrite);
    assert_eq!(case.epu_reads(), 4);
}

#[test]
fn figure_4_case_6_3_1_4_reads_21_against_33_per_stripe() {
    let case = study_case(MatrixChoice::Jerasure, 6, 3, 1, 4).unwrap();
    // A unit is 7 stripes (each old disk gives 4 of its 28 blocks).
    assert_eq!(case.stripes_per_unit, 7);
    assert_eq!(case.moved_blocks, 24);
    assert_eq!((case.epu_reads(), case.scale_crs_reads()), (144, 228));
    // The paper's per-stripe figures are these averages, rounded.
    let per_stripe = |reads: usize| (reads as f64 / 7.0).round() as usize;
    assert_eq!(per_stripe(case.epu_reads()), 21);
    assert_eq!(per_stripe(case.scale_crs_reads()), 33);
}

#[test]
fn units_are_uniform_after_scaling_and_move_the_minimum() {
    for (k, t, w) in [
        (2, 2, 4),
        (6, 1, 4),
        (3, 2, 3),
        (5, 4, 6),
        (17, 17, 6),
        (4, 3, 5),
    ] {
        let unit = ScalingUnit::new(k, t, w);
        let per_disk = unit.stripes * w;
        let mut held = vec![0usize; k + t];
        for place in &unit.after {
            held[place.disk] += 1;
            assert!(place.stripe < unit.stripes && place.packet < w);
        }
        let share = per_disk * k / (k + t);
        assert!(
            held.iter().all(|&h| h == share),
            "({k},{t},{w}) holds {held:?}"
        );
        assert_eq!(
            unit.moved_count(),
            t * share,
            "({k},{t},{w}) moves the minimum"
        );
        let slots: BTreeSet<_> = unit.after.iter().collect();
        assert_eq!(slots.len(), unit.block_count(), "one block per slot");
    }
}

#[test]
fn optimized_matrices_keep_old_columns_and_are_mds() {
    for (k, t, m, w) in [
        (3, 2, 3, 3),
        (2, 2, 4, 3),
        (4, 3, 3, 4),
        (6, 1, 3, 4),
        (5, 5, 5, 4),
        (2, 2, 2, 3),
    ] {
        let old = pre_scaling_matrix(k, m, w).unwrap();
        let new = post_scaling_matrix(MatrixChoice::Optimized, k, t, m, w).unwrap();
        for i in 0..m {
            assert_eq!(
                old[i * k..(i + 1) * k],
                new[i * (k + t)..i * (k + t) + k],
                "row {i}"
            );
        }
        assert_mds(k + t, m, w, new, &format!("({k},{t},{m},{w})"));
    }
}

/// Growing twice with the optimised matrix (each growth extends the
/// matrix the last one made) keeps every earlier column and stays MDS.
#[test]
fn optimized_matrices_extend_again() {
    for (k, t1, t2, m, w) in [
        (3, 1, 1, 2, 3),
        (3, 1, 1, 3, 3),
        (6, 1, 1, 3, 4),
        (2, 2, 3, 4, 4),
    ] {
        let first = post_scaling_matrix(MatrixChoice::Optimized, k, t1, m, w).unwrap();
        let k1 = k + t1;
        let second = extend_optimized(&first, k1, t2, m, w).unwrap();
        for i in 0..m {
            assert_eq!(
                first[i * k1..(i + 1) * k1],
                second[i * (k1 + t2)..i * (k1 + t2) + k1],
                "row {i}"
            );
        }
        assert_mds(k1 + t2, m, w, second, &format!("({k},{t1}+{t2},{m},{w})"));
    }
    assert!(extend_optimized(&pre_scaling_matrix(4, 2, 3).unwrap(), 4, 3, 2, 3).is_none());
}

/// Every set of m lost shards of a stripe coded by `matrix` decodes.
fn assert_mds(k: usize, m: usize, w: usize, matrix: Vec<u32>, name: &str) {
    let code = CauchyReedSolomon::from_matrix(k, m, w, matrix).unwrap();
    let n = k + m;
    let len = w * 8;
    let stripe: Vec<Vec<u8>> = {
        let data: Vec<Vec<u8>> = (0..k)
            .map(|d| (0..len).map(|b| (d * 37 + b * 11 + 5) as u8).collect())
            .collect();
        let refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
        let mut parity = vec![vec![0u8; len]; m];
        let mut prefs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
        code.encode(&refs, &mut prefs).unwrap();
        data.into_iter().chain(parity).collect()
    };
    // Every set of m lost shards (bit masks with m ones).
    for mask in (0u32..1 << n).filter(|x| x.count_ones() as usize == m) {
        let present: Vec<bool> = (0..n).map(|i| mask & (1 << i) == 0).collect();
        let mut shards = stripe.clone();
        for (i, shard) in shards.iter_mut().enumerate() {
            if !present[i] {
                shard.fill(0);
            }
        }
        let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| &mut s[..]).collect();
        code.reconstruct(&mut refs, &present)
            .unwrap_or_else(|e| panic!("{name} lost {mask:b}: {e}"));
        assert_eq!(shards, stripe, "{name} lost {mask:b}");
    }
}

#[test]
fn study_invariants_hold_for_every_case() {
    let report = run_study();
    assert!(!report.cases.is_empty());
    for case in &report.cases {
        let name = format!(
            "{:?} ({},{},{},{})",
            case.matrix, case.k, case.m, case.t, case.w
        );
        assert!(case.epu_reads() <= case.scale_crs_reads(), "{name}");
        assert!(
            case.k + case.t + case.m <= 1 << case.w,
            "{name} has no matrix"
        );
        if case.matrix == MatrixChoice::Optimized {
            // Old columns unchanged: RMW never needs an unmoved block.
            assert_eq!(case.reads.rmw_data_reads, 0, "{name}");
            if case.reads.parity_blocks_changed == case.reads.parity_blocks {
                // Then RCW's unmoved L*w*k^2/(k+t) beats RMW's L*m*w
                // parity reads exactly when k^2 < m(k+t) (README).
                let fewer = case.epu_reads() < case.scale_crs_reads();
                assert_eq!(
                    fewer,
                    case.k * case.k < case.m * (case.k + case.t),
                    "{name}"
                );
            }
        }
        if case.matrix == MatrixChoice::Jerasure && case.epu_reads() == case.scale_crs_reads() {
            // Jerasure's "same" cases are those whose new matrix keeps
            // every old column in effect: RMW reads no unmoved block.
            assert_eq!(case.reads.rmw_data_reads, 0, "{name}");
        }
        // RCW reads every unmoved block of a stripe that keeps data.
        let unit = ScalingUnit::new(case.k, case.t, case.w);
        assert_eq!(
            case.reads.rcw_data_reads,
            unit.block_count() - unit.moved_count(),
            "{name}"
        );
    }
    for summary in &report.summaries {
        assert_eq!(summary.epu_fewer + summary.same, summary.cases);
    }
}

/// Our Table I and II rows (m = 2..5, w = 3..4): (cases, EPU fewer, same).
/// The README explains each difference from the paper's.
#[test]
fn table_counts_are_the_ones_the_readme_documents() {
    let report = run_study();
    let row = |matrix: MatrixChoice, m: usize| {
        let s = report
            .summaries
            .iter()
            .find(|s| s.matrix == matrix && s.m == m)
            .unwrap();
        (s.cases, s.epu_fewer, s.same)
    };
    let jerasure: Vec<_> = (2..=5).map(|m| row(MatrixChoice::Jerasure, m)).collect();
    let optimized: Vec<_> = (2..=5).map(|m| row(MatrixChoice::Optimized, m)).collect();
    assert_eq!(
        jerasure,
        [(56, 8, 48), (46, 33, 13), (38, 38, 0), (30, 30, 0)]
    );
    assert_eq!(
        optimized,
        [(56, 8, 48), (46, 14, 32), (38, 19, 19), (30, 21, 9)]
    );
    // As in the paper, m = 2 gives the same counts for both matrices:
    // Jerasure's m = 2 rows come from a table that extends by prefix.
    assert_eq!(jerasure[0], optimized[0]);
}

#[test]
fn savings_range_lower_end_matches_the_papers_3_13_percent() {
    let report = run_study();
    let (_, range) = report
        .savings
        .iter()
        .find(|(matrix, _)| *matrix == MatrixChoice::Jerasure)
        .unwrap();
    let range = range.expect("EPU reads fewer in some case");
    // The paper: "EPU can reduce 3.13% to 31.15% read/write".
    assert_eq!((range.scaling_ios_min * 10000.0).round() / 100.0, 3.13);
}

#[test]
fn count_reads_refuses_mismatched_matrices() {
    let unit = ScalingUnit::new(3, 1, 3);
    let before = matrix_to_bitmatrix(3, 2, 3, &pre_scaling_matrix(3, 2, 3).unwrap());
    let result = std::panic::catch_unwind(|| count_reads(&unit, &before, &before));
    assert!(
        result.is_err(),
        "a post-scaling matrix of the old width is a caller bug"
    );
}

//! The CI run of the deterministic simulation: a bounded range of seeds
//! must pass; a planted bug must be found within the same budget; a seed
//! must replay identically (the printed replay command relies on it).
//! ERAID_DST_SEEDS sets the budget (default 200).

use eraid_dst::{run_seed, run_seeds, PlantedBug};

fn budget() -> u64 {
    std::env::var("ERAID_DST_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

#[test]
fn bounded_seeds_pass() {
    if let Err(failure) = run_seeds(0, budget(), None) {
        panic!("{failure}");
    }
}

/// Proof the harness can fail: a flush answered before the member flushes
/// complete loses acknowledged data on a crash, and some seed of the CI
/// budget must say so (and replay to the same failure).
#[test]
fn a_planted_early_flush_reply_is_found_within_the_ci_budget() {
    let bug = Some(PlantedBug::FlushReplyBeforeMemberFlushes);
    let failure = (0..budget())
        .find_map(|seed| run_seed(seed, bug).err())
        .expect("no seed of the CI budget caught the planted early flush reply");
    assert!(
        failure.replay.contains(&format!("--seed {}", failure.seed))
            && failure.replay.contains("--planted-bug flush-reply-early"),
        "{failure}"
    );
    let again = run_seed(failure.seed, bug).expect_err("the failing seed fails again");
    assert_eq!(again, failure, "a replay must fail the same way");
    // Without the bug the same seed passes: the failure is the bug's.
    run_seed(failure.seed, None).unwrap_or_else(|f| panic!("{f}"));
}

#[test]
fn a_seed_replays_identically() {
    for seed in [1, 19, 49] {
        let first = format!("{:?}", run_seed(seed, None));
        let second = format!("{:?}", run_seed(seed, None));
        assert_eq!(first, second, "seed {seed} ran differently twice");
    }
}

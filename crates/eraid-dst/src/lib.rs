//! Deterministic simulation testing of the eraid core (in the manner of
//! FoundationDB's simulator and TigerBeetle's VOPR): a seed picks the
//! array (level, members, chunk, capacity, bitmap, cache), a workload of
//! overlapping reads, writes, zeroing, trims and flushes, a fault schedule
//! (crashes that drop, tear or keep each unflushed write per device,
//! member failures, slow members) and a long activity (growth with each
//! strategy, rebuild onto a hot spare or a new member, replace, check;
//! resync after each crash). Checkers: every read against a reference
//! model of admissible values, parity/mirror consistency after recovery,
//! liveness of every activity once faults stop, and no panic.

pub mod model;
pub mod pattern;
pub mod run;
pub mod scenario;

pub use eraid_core::PlantedBug;
use run::Coverage;
use scenario::Scenario;

/// A seed that broke a checker (or panicked), with how to replay it.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub seed: u64,
    pub scenario: String,
    pub message: String,
    pub replay: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DST seed {} FAILED: {}\n  scenario: {}\n  replay: {}",
            self.seed, self.message, self.scenario, self.replay
        )
    }
}

/// The planted bug's name on the command line.
pub fn planted_bug_name(bug: PlantedBug) -> &'static str {
    match bug {
        PlantedBug::FlushReplyBeforeMemberFlushes => "flush-reply-early",
        PlantedBug::ReadErrorRepairNotCounted => "read-error-not-counted",
        PlantedBug::MemberTimeoutIgnored => "member-timeout-ignored",
    }
}

/// Every planted bug, for the command line's help and the tests.
pub const PLANTED_BUGS: [PlantedBug; 3] = [
    PlantedBug::FlushReplyBeforeMemberFlushes,
    PlantedBug::ReadErrorRepairNotCounted,
    PlantedBug::MemberTimeoutIgnored,
];

pub fn parse_planted_bug(name: &str) -> Result<PlantedBug, String> {
    PLANTED_BUGS
        .into_iter()
        .find(|&b| planted_bug_name(b) == name)
        .ok_or_else(|| {
            let names: Vec<&str> = PLANTED_BUGS.into_iter().map(planted_bug_name).collect();
            format!(
                "unknown planted bug {name:?} (expected one of {})",
                names.join(", ")
            )
        })
}

/// The one-line command that replays `seed` exactly.
pub fn replay_command(seed: u64, bug: Option<PlantedBug>) -> String {
    let bug = bug.map_or(String::new(), |b| {
        format!(" --planted-bug {}", planted_bug_name(b))
    });
    format!("cargo run --release -p eraid-dst -- --seed {seed}{bug}")
}

/// Keeps freed memory in the process. Every seed allocates and drops
/// member images of a megabyte or more (each member starts with a 1 MiB
/// metadata area; assembly copies it per member): glibc hands such blocks
/// back to the kernel on free (mmap'd chunks, heap trimming), and taking
/// the zeroed pages back on the next seed cost about half the run in page
/// faults. A larger mmap threshold and no trimming let them be reused.
/// Idempotent; the same seed does the same thing either way.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes allocator tunables; it is safe
            // to call at any time (glibc takes its own lock).
            unsafe {
                // 32 MiB: glibc's largest mmap threshold on 64-bit targets.
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
            }
        });
    }
}

/// Runs one seed; a panic anywhere in the core or the harness is a failure.
pub fn run_seed(seed: u64, bug: Option<PlantedBug>) -> Result<Coverage, Failure> {
    keep_freed_memory();
    let scenario = Scenario::from_seed(seed, bug);
    let described = scenario.describe();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run::run(scenario)));
    let message = match outcome {
        Ok(Ok(coverage)) => return Ok(coverage),
        Ok(Err(message)) => message,
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            format!("panic: {text}")
        }
    };
    Err(Failure {
        seed,
        scenario: described,
        message,
        replay: replay_command(seed, bug),
    })
}

/// Runs seeds `first..first + count`; stops at the first failure.
pub fn run_seeds(first: u64, count: u64, bug: Option<PlantedBug>) -> Result<Coverage, Failure> {
    let mut total = Coverage::default();
    for seed in first..first + count {
        total.add(&run_seed(seed, bug)?);
    }
    Ok(total)
}

//! `eraid-dst`: runs the deterministic simulation over a range of seeds,
//! one seed (replay), or until stopped (`--soak`).

use eraid_dst::{parse_planted_bug, run_seed, PlantedBug};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: eraid-dst [--seeds N] [--first S] [--seed S] [--soak] [--planted-bug NAME]
  --seeds N      run N seeds (default 200) starting at --first (default 0)
  --seed S       run seed S alone and print its scenario (replays a failure)
  --soak         run seeds from --first until stopped, reporting seeds per second
  --keep-going   report every failing seed, not just the first
  --planted-bug  plant a bug the harness must find (proof it can fail): flush-reply-early,
                 read-error-not-counted or member-timeout-ignored";

struct Args {
    first: u64,
    count: u64,
    one: Option<u64>,
    soak: bool,
    keep_going: bool,
    bug: Option<PlantedBug>,
}

fn number(flag: &str, value: Option<String>) -> Result<u64, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag} takes a whole number, not {value:?}"))
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        first: 0,
        count: 200,
        one: None,
        soak: false,
        keep_going: false,
        bug: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seeds" => parsed.count = number("--seeds", args.next())?,
            "--first" => parsed.first = number("--first", args.next())?,
            "--seed" => parsed.one = Some(number("--seed", args.next())?),
            "--soak" => parsed.soak = true,
            "--keep-going" => parsed.keep_going = true,
            "--planted-bug" => {
                let name = args.next().ok_or("--planted-bug needs a value")?;
                parsed.bug = Some(parse_planted_bug(&name)?);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if parsed.one.is_some() && parsed.soak {
        return Err("--seed and --soak cannot be combined".into());
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("eraid-dst: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Panics are caught per seed and reported with the seed; keep their
    // message but not a second copy from the default hook.
    std::panic::set_hook(Box::new(|_| {}));
    if let Some(seed) = args.one {
        println!(
            "seed {seed}: {}",
            eraid_dst::scenario::Scenario::from_seed(seed, args.bug).describe()
        );
        return match run_seed(seed, args.bug) {
            Ok(coverage) => {
                println!("seed {seed} passed: {coverage:?}");
                ExitCode::SUCCESS
            }
            Err(failure) => {
                println!("{failure}");
                ExitCode::FAILURE
            }
        };
    }
    let started = Instant::now();
    let mut last_report = Instant::now();
    let mut done = 0u64;
    let mut total = eraid_dst::run::Coverage::default();
    let mut seed = args.first;
    let mut failed = 0u64;
    while args.soak || seed < args.first + args.count {
        match run_seed(seed, args.bug) {
            Ok(coverage) => total.add(&coverage),
            Err(failure) => {
                println!("{failure}");
                failed += 1;
                if !args.keep_going {
                    println!("({done} seeds passed before it)");
                    return ExitCode::FAILURE;
                }
            }
        }
        done += 1;
        seed += 1;
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{done} seeds in {secs:.0} s ({:.1} seeds/s), next seed {seed}",
                done as f64 / secs
            );
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if failed > 0 {
        println!("{failed} of {done} seeds failed ({}..{seed})", args.first);
        return ExitCode::FAILURE;
    }
    println!(
        "{done} seeds passed ({}..{seed}) in {secs:.1} s ({:.1} seeds/s): {total:?}",
        args.first,
        done as f64 / secs
    );
    ExitCode::SUCCESS
}

//! Every shipped experiment file is ready to run from a fresh clone: the
//! files it names (a trace, a DiskSim model, a workload spec) exist
//! relative to it and lie inside the repository, and it plans and builds
//! every run (drives, array, workload source, every trace record parsed)
//! without running one. A path that leaves the repository (as the traces
//! folder beside it once did) works only on a machine that happens to have
//! that folder, so it is refused even where it exists. No simulation runs
//! here: a broken experiment file fails CI in seconds, not when a
//! researcher first runs it.

mod sim_common;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use eraid_sim::driver::{prepare, FeedSpec};
use eraid_sim::examination;
use eraid_sim::experiment::load;
use eraid_trace::TraceReader;
use sim_common::experiments_dir;

/// Settings whose value is a path, as (table, key); variants set them with
/// dotted keys (`disk.model = ...`), which parse to the same nesting.
const PATH_SETTINGS: [(&str, &str); 3] = [
    ("workload", "trace"),
    ("workload", "spec"),
    ("disk", "model"),
];

/// The paths `value` names under [`PATH_SETTINGS`], in any table, variant
/// or sweep; `keys` is the chain of table names above `value`.
fn named_paths(value: &toml::Value, keys: &mut Vec<String>, found: &mut Vec<String>) {
    match value {
        toml::Value::Table(table) => {
            if keys.last().map(String::as_str) == Some("sweep") {
                found.extend(swept_paths(table));
            }
            for (key, inner) in table {
                keys.push(key.clone());
                named_paths(inner, keys, found);
                keys.pop();
            }
        }
        toml::Value::Array(items) => {
            for item in items {
                named_paths(item, keys, found);
            }
        }
        toml::Value::String(text) => {
            let [.., table, key] = keys.as_slice() else {
                return;
            };
            if PATH_SETTINGS.contains(&(table.as_str(), key.as_str())) {
                found.push(text.clone());
            }
        }
        _ => {}
    }
}

/// A `[sweep]` over a path setting names a path in each of its values.
fn swept_paths(sweep: &toml::map::Map<String, toml::Value>) -> Vec<String> {
    let Some(field) = sweep.get("field").and_then(toml::Value::as_str) else {
        return Vec::new();
    };
    let Some((table, key)) = field.rsplit_once('.') else {
        return Vec::new();
    };
    if !PATH_SETTINGS.contains(&(table, key)) {
        return Vec::new();
    }
    let values = sweep.get("values").and_then(toml::Value::as_array);
    values
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// Why `named` (as written in `file`) is not a usable in-repository path,
/// if it is not. A disk model that is no file may be a preset's name.
fn path_problem(file: &Path, named: &str, repo: &Path) -> Option<String> {
    let base_dir = file.parent().expect("experiment files sit in a folder");
    let full = base_dir.join(named);
    if !full.exists() {
        if eraid_sim::driver::preset(named).is_some() {
            return None;
        }
        return Some(format!(
            "{}: names '{named}', which does not exist relative to the file ({})",
            file.display(),
            full.display()
        ));
    }
    let resolved = full.canonicalize().expect("an existing path resolves");
    if !resolved.starts_with(repo) {
        return Some(format!(
            "{}: names '{named}' ({}), outside the repository {}: a fresh clone lacks it; copy it into data/",
            file.display(),
            resolved.display(),
            repo.display()
        ));
    }
    None
}

fn shipped_experiment_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(experiments_dir())
        .expect("experiments/")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().and_then(|e| e.to_str()) == Some("toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn shipped_experiments_name_only_files_inside_the_repository() {
    let repo = experiments_dir()
        .join("..")
        .canonicalize()
        .expect("repository root");
    let mut problems = Vec::new();
    let mut checked_files = 0;
    for file in shipped_experiment_files() {
        let text = std::fs::read_to_string(&file).expect("readable");
        let value: toml::Value = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut named = Vec::new();
        named_paths(&value, &mut Vec::new(), &mut named);
        if file.ends_with("raid-levels.toml") {
            // Its [disk] model, [workload] trace and the two swept traces:
            // the walk must see tables and sweeps alike, or it checks nothing.
            assert_eq!(named.len(), 4, "raid-levels.toml: {named:?}");
        }
        named.sort();
        named.dedup();
        problems.extend(named.iter().filter_map(|n| path_problem(&file, n, &repo)));
        checked_files += 1;
    }
    assert!(
        checked_files >= 12,
        "only {checked_files} experiment files found"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check itself: a missing trace, a trace outside the repository and
/// a misspelt model are each named; a preset model passes.
#[test]
fn the_path_check_names_missing_and_outside_files() {
    let repo = experiments_dir()
        .join("..")
        .canonicalize()
        .expect("repository root");
    let file = experiments_dir().join("made-up.toml");
    assert_eq!(
        path_problem(&file, "../data/traces/tpcc-small.trace", &repo),
        None
    );
    assert_eq!(path_problem(&file, "cheetah-15k5", &repo), None);
    let missing = path_problem(&file, "../data/traces/nonesuch.trace", &repo).expect("missing");
    assert!(missing.contains("does not exist"), "{missing}");
    let missing_model = path_problem(&file, "cheetah-15k6", &repo).expect("no such model");
    assert!(missing_model.contains("cheetah-15k6"), "{missing_model}");
    // The repository's parent always exists, and is outside it.
    let outside = path_problem(&file, "../..", &repo).expect("outside");
    assert!(outside.contains("outside the repository"), "{outside}");
}

/// Every record of a trace parses, in the format the experiment names (or
/// the one detected); returns how many there are.
fn trace_records(feed: &FeedSpec) -> Result<u64, String> {
    let FeedSpec::Trace { path, format, .. } = feed else {
        return Ok(0);
    };
    let name = path.display().to_string();
    let reader = BufReader::new(File::open(path).map_err(|e| format!("{name}: {e}"))?);
    let records: Box<dyn Iterator<Item = _>> = match format {
        Some(format) => Box::new(TraceReader::new(reader, name.clone(), *format)),
        None => Box::new(TraceReader::autodetect(reader, name.clone()).map_err(|e| e.to_string())?),
    };
    let mut count = 0;
    for record in records {
        record.map_err(|e| e.to_string())?;
        count += 1;
    }
    if count == 0 {
        return Err(format!("{name}: no requests"));
    }
    Ok(count)
}

/// Every shipped file plans, and every run of it builds (drives, array,
/// workload source) as a run would before its first event; every trace
/// it names parses to the end. Examinations (FastScale's layout
/// arithmetic) are checked as `eraid experiment run` would read them.
#[test]
fn every_shipped_experiment_plans_and_builds_without_running() {
    let mut problems = Vec::new();
    let mut traces_parsed = BTreeSet::new();
    let files = shipped_experiment_files();
    let (mut examinations, mut simulations, mut runs_built) = (0, 0, 0);
    for file in &files {
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(file).expect("readable");
        if examination::is_examination(&text) {
            match examination::check(&shown, &text) {
                Ok(()) => examinations += 1,
                Err(e) => problems.push(e),
            }
            continue;
        }
        let experiment = match load(file) {
            Ok(experiment) => experiment,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        assert!(!experiment.runs.is_empty(), "{shown}: no runs");
        simulations += 1;
        for run in &experiment.runs {
            if let Err(e) = prepare(&run.config, &run.feed) {
                problems.push(format!("{shown}: run '{}': {e}", run.name));
                continue;
            }
            runs_built += 1;
            if let FeedSpec::Trace { path, format, .. } = &run.feed {
                // Once per trace and format: a file read as two formats is
                // checked as both.
                let path = path.canonicalize().expect("an opened trace exists");
                if traces_parsed.insert((path, format!("{format:?}"))) {
                    if let Err(e) = trace_records(&run.feed) {
                        problems.push(format!("{shown}: run '{}': {e}", run.name));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Nothing skipped: every file is one or the other.
    assert_eq!(examinations + simulations, files.len());
    assert!(
        examinations >= 2 && simulations >= 12,
        "{examinations} {simulations}"
    );
    assert!(runs_built > simulations, "{runs_built} runs");
    assert!(!traces_parsed.is_empty(), "no experiment replays a trace");
}

/// The check fails on what a run would fail on: a trace with a bad line,
/// and an array the drives cannot hold, each named.
#[test]
fn the_plan_check_refuses_a_bad_trace_and_a_bad_array() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("bad.trace"),
        "0 0 0 8 1\n1000 0 8 eight 1\n",
    )
    .expect("write");
    let text = "name = \"t\"\n[array]\nlevel = 5\ndisks = 3\nchunk = \"64K\"\n\
        [disk]\nmodel = \"cheetah-15k5\"\n[workload]\ntrace = \"bad.trace\"\nformat = \"mqsim\"\n";
    let experiment = eraid_sim::experiment::parse("t.toml", text, dir.path()).expect("plans");
    let run = &experiment.runs[0];
    prepare(&run.config, &run.feed).expect("the trace is read lazily");
    let e = trace_records(&run.feed).unwrap_err();
    assert!(e.contains("bad.trace") && e.contains('2'), "{e}");
    // Members too small for the array's metadata and one chunk: the file
    // plans, the array refuses to be built on them.
    let small = text.replace("[disk]", "member_size = \"64K\"\n[disk]");
    let experiment = eraid_sim::experiment::parse("t.toml", &small, dir.path()).expect("plans");
    let run = &experiment.runs[0];
    let e = prepare(&run.config, &run.feed).unwrap_err();
    assert!(!e.is_empty());
}

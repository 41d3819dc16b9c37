//! Every file a shipped experiment names (a trace, a DiskSim model, a
//! workload spec) exists relative to the experiment file and lies inside
//! the repository, so a fresh clone alone runs every experiment. A path
//! that leaves the repository (as the traces folder beside it once did) works
//! only on a machine that happens to have that folder, so it is refused
//! even where it exists. No simulation runs here.

mod sim_common;

use std::path::{Path, PathBuf};

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

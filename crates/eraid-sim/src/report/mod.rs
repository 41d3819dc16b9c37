//! Writing an experiment's results to a folder:
//!
//! | file | what |
//! |---|---|
//! | `summary.json` | `{"experiment", "seed", "variants": [{"name", "metrics"}]}` |
//! | `summary.md` | Markdown table with ratios between variants |
//! | `results.csv` | one row per run, one column per metric |
//! | `results.json` | every run's full report |
//! | `windows.csv` | local average / maximum response time per window |
//! | `cdf.csv` | response-time CDF per run |
//! | `disks.csv` | per-disk utilisation, queue length, seeks |
//! | `growth.csv` | runs with a growth: progress samples over time |
//! | `rebuild.csv` | runs with a failure: rebuild progress and user response times over time |
//! | `*.svg` | plots (see [`plots`]) |

pub mod markdown;
pub mod plots;
pub mod tables;

use std::path::Path;

use crate::experiment::{Experiment, ExperimentResult};

/// Writes every results file into `dir` (created if needed) and returns
/// the names written, in order.
pub fn write_all(
    experiment: &Experiment,
    result: &ExperimentResult,
    dir: &Path,
) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let files = [
        ("summary.json", tables::summary_json(result)),
        ("summary.md", markdown::summary_md(experiment, result)),
        ("results.csv", tables::results_csv(result)),
        ("results.json", tables::results_json(result)),
        ("windows.csv", tables::windows_csv(result)),
        ("cdf.csv", tables::cdf_csv(result)),
        ("disks.csv", tables::disks_csv(result)),
    ];
    let growth = result.runs.iter().any(|r| r.report.growth.is_some());
    let growth_file = growth.then(|| ("growth.csv", tables::growth_csv(result)));
    let failure = result.runs.iter().any(|r| r.report.failure.is_some());
    let rebuild_file = failure.then(|| ("rebuild.csv", tables::rebuild_csv(result)));
    let files = files.into_iter().chain(growth_file).chain(rebuild_file);
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        written.push(name.to_string());
    }
    if experiment.plots {
        let sweep_metric = experiment
            .sweep
            .as_ref()
            .and_then(|s| s.normalize.as_ref())
            .map(|n| n.output.as_str());
        written.extend(plots::write_plots(result, dir, sweep_metric)?);
    }
    Ok(written)
}

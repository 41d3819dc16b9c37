//! Layout examinations: experiments that need no disk model, only the
//! growth layouts' arithmetic (the FastScale paper's "property
//! examination": add one disk to a 4-disk array ten times and measure, per
//! addition, the fraction of data moved and the coefficient of variation of
//! per-disk data). An experiment file with an `[examination]` table runs
//! this instead of a simulation.
//!
//! ```toml
//! name = "fastscale-migration"
//! description = "..."
//! [examination]
//! initial_disks = 4
//! additions = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
//! chunks_per_disk = 360360   # lcm(5..14): every region divides a disk
//! model = "full"             # or "fixed"
//! measure = "migration"      # or "uniformity"
//! ```

use eraid_core::growth::examination::{examine_fixed, examine_full, Examination};
use eraid_core::growth::fastscale::{GrowthStrategy, ScalingHistory};
use plotters::prelude::*;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExaminationFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub examination: ExaminationTable,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExaminationTable {
    pub initial_disks: u32,
    pub additions: Vec<u32>,
    pub chunks_per_disk: u64,
    #[serde(default = "full")]
    pub model: String,
    pub measure: String,
}

fn full() -> String {
    "full".into()
}

/// Whether a TOML text is an examination (has an `[examination]` table).
pub fn is_examination(text: &str) -> bool {
    text.parse::<toml::Table>()
        .map(|t| t.contains_key("examination"))
        .unwrap_or(false)
}

/// An examination file read and checked, ready to compute.
struct Prepared {
    spec: ExaminationFile,
    history: ScalingHistory,
    examine: fn(GrowthStrategy, &ScalingHistory) -> Examination,
    /// The summary's key per strategy and the plot's axis label.
    key: &'static str,
    unit_label: &'static str,
}

/// Reads and checks an examination file without computing it: every
/// setting a run would refuse is refused here, naming the file.
pub fn check(file: &str, text: &str) -> Result<(), String> {
    prepare(file, text).map(|_| ())
}

fn prepare(file: &str, text: &str) -> Result<Prepared, String> {
    let spec: ExaminationFile = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    let table = &spec.examination;
    if table.additions.is_empty() {
        return Err(format!(
            "{file}: [examination] additions: give at least one addition"
        ));
    }
    let history = ScalingHistory::with_additions(
        table.initial_disks,
        table.chunks_per_disk,
        &table.additions,
    )
    .map_err(|e| format!("{file}: [examination]: {e}"))?;
    let examine: fn(GrowthStrategy, &ScalingHistory) -> Examination = match table.model.as_str() {
        "full" => examine_full,
        "fixed" => examine_fixed,
        other => {
            return Err(format!(
                "{file}: [examination] model = {other:?}: expected \"full\" or \"fixed\""
            ))
        }
    };
    let (key, unit_label) = match table.measure.as_str() {
        "migration" => (
            "moved_percent",
            "data moved (% of data before the addition)",
        ),
        "uniformity" => (
            "cv_percent",
            "coefficient of variation of per-disk data (%)",
        ),
        other => {
            return Err(format!(
            "{file}: [examination] measure = {other:?}: expected \"migration\" or \"uniformity\""
        ))
        }
    };
    Ok(Prepared {
        spec,
        history,
        examine,
        key,
        unit_label,
    })
}

/// Runs the examination described by `text` (from `file`, for messages)
/// and writes summary.json, summary.md, a CSV and an SVG plot into `out`.
pub fn run(file: &str, text: &str, out: &Path) -> Result<serde_json::Value, String> {
    let Prepared {
        spec,
        history,
        examine,
        key,
        unit_label,
    } = prepare(file, text)?;
    let table = &spec.examination;
    let labels: Vec<String> = (1..=history.addition_count())
        .map(|t| {
            let (m, n) = history.addition(t);
            format!("{m}+{n}")
        })
        .collect();
    let ideal: Vec<f64> = (1..=history.addition_count())
        .map(|t| {
            let (m, n) = history.addition(t);
            100.0 * f64::from(n) / f64::from(m + n)
        })
        .collect();
    let mut series = Vec::new();
    for strategy in GrowthStrategy::ALL {
        let e = examine(strategy, &history);
        let values: Vec<f64> = match table.measure.as_str() {
            "migration" => e.moved_fraction.iter().map(|f| 100.0 * f).collect(),
            _ => e.cv_percent.clone(),
        };
        series.push((strategy.name(), values));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut strategies = serde_json::Map::new();
    for (name, values) in &series {
        let max = values.iter().copied().fold(0.0, f64::max);
        strategies.insert(
            name.to_string(),
            serde_json::json!({ key: values, format!("{key}_max"): max }),
        );
    }
    let summary = serde_json::json!({
        "name": spec.name,
        "description": spec.description,
        "kind": "examination",
        "measure": table.measure,
        "model": table.model,
        "initial_disks": table.initial_disks,
        "chunks_per_disk": table.chunks_per_disk,
        "additions": labels,
        "minimal_moved_percent": ideal,
        "strategies": strategies,
    });
    let write = |name: &str, body: String| {
        std::fs::write(out.join(name), body)
            .map_err(|e| format!("{}: {e}", out.join(name).display()))
    };
    write(
        "summary.json",
        serde_json::to_string_pretty(&summary).expect("json") + "\n",
    )?;
    // The minimum n/(m+n) is the reference for migration only.
    let with_ideal = table.measure == "migration";
    let names: Vec<&str> = series.iter().map(|(n, _)| *n).collect();
    let mut csv = format!(
        "addition,{}{}\n",
        if with_ideal {
            "minimal_moved_percent,"
        } else {
            ""
        },
        names.join(",")
    );
    let mut md = format!(
        "# {}\n\n{}\n\n{unit_label}, model `{}`, {} chunks per disk.\n\n| addition | {}{} |\n|---|{}{}\n",
        spec.name,
        spec.description.trim(),
        table.model,
        table.chunks_per_disk,
        if with_ideal { "minimal n/(m+n) % | " } else { "" },
        names.join(" | "),
        if with_ideal { "---|" } else { "" },
        "---|".repeat(series.len())
    );
    for (i, label) in labels.iter().enumerate() {
        let ideal_csv = if with_ideal {
            format!("{:.4},", ideal[i])
        } else {
            String::new()
        };
        let ideal_md = if with_ideal {
            format!("{:.2} | ", ideal[i])
        } else {
            String::new()
        };
        let csv_cells: Vec<String> = series.iter().map(|(_, v)| format!("{:.4}", v[i])).collect();
        let md_cells: Vec<String> = series.iter().map(|(_, v)| format!("{:.2}", v[i])).collect();
        csv.push_str(&format!("{label},{ideal_csv}{}\n", csv_cells.join(",")));
        md.push_str(&format!(
            "| {label} | {ideal_md}{} |\n",
            md_cells.join(" | ")
        ));
    }
    write(&format!("{}.csv", table.measure), csv)?;
    write("summary.md", md)?;
    plot(
        &out.join(format!("{}.svg", table.measure)),
        &labels,
        &series,
        unit_label,
    )?;
    Ok(summary)
}

fn plot(
    path: &Path,
    labels: &[String],
    series: &[(&str, Vec<f64>)],
    y_label: &str,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.5f64..labels.len() as f64 + 0.5, 0f64..max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("addition (m+n)")
        .y_desc(y_label)
        .x_labels(labels.len())
        .x_label_formatter(&|x| {
            let i = x.round() as usize;
            labels.get(i.wrapping_sub(1)).cloned().unwrap_or_default()
        })
        .draw()
        .map_err(|e| err(&e))?;
    let colours = [RED, BLUE, GREEN];
    for (i, (name, values)) in series.iter().enumerate() {
        let colour = colours[i % colours.len()];
        chart
            .draw_series(LineSeries::new(
                values.iter().enumerate().map(|(j, v)| (j as f64 + 1.0, *v)),
                colour.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(measure: &str) -> String {
        format!(
            "name = \"t\"\n[examination]\ninitial_disks = 4\nadditions = [1, 1, 1]\nchunks_per_disk = 360360\nmeasure = \"{measure}\"\n"
        )
    }

    #[test]
    fn migration_and_uniformity_match_the_papers_claims() {
        let dir = tempfile::tempdir().unwrap();
        let m = run("t.toml", &text("migration"), dir.path()).unwrap();
        let fs = m["strategies"]["fastscale"]["moved_percent"]
            .as_array()
            .unwrap();
        let ideal = m["minimal_moved_percent"].as_array().unwrap();
        for (a, b) in fs.iter().zip(ideal) {
            assert!((a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-9);
        }
        let rr = m["strategies"]["round-robin"]["moved_percent"]
            .as_array()
            .unwrap();
        assert!(rr.iter().all(|v| v.as_f64().unwrap() > 99.0));
        let u = run("t.toml", &text("uniformity"), dir.path()).unwrap();
        assert_eq!(u["strategies"]["fastscale"]["cv_percent_max"], 0.0);
        let semi = u["strategies"]["semi-rr"]["cv_percent_max"]
            .as_f64()
            .unwrap();
        assert!((semi - 13.06).abs() < 0.01, "semi-rr max CV {semi}");
        assert!(dir.path().join("uniformity.svg").exists());
    }

    #[test]
    fn bad_settings_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let e = run("t.toml", &text("speed"), dir.path()).unwrap_err();
        assert!(e.contains("measure") && e.contains("speed"), "{e}");
        // The check refuses what the run refuses, and accepts what it runs.
        assert_eq!(check("t.toml", &text("speed")).unwrap_err(), e);
        check("t.toml", &text("uniformity")).unwrap();
        let e = check("t.toml", &text("migration").replace("[1, 1, 1]", "[]")).unwrap_err();
        assert!(e.contains("additions"), "{e}");
        let e = run(
            "t.toml",
            &text("migration").replace("initial_disks = 4", "initial_disks = 0"),
            dir.path(),
        )
        .unwrap_err();
        assert!(e.contains("[examination]"), "{e}");
        assert!(is_examination(&text("migration")));
        assert!(!is_examination("name = \"x\"\n[array]\ndisks = 4\n"));
    }
}

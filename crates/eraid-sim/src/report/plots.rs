//! SVG plots in the papers' style: local average response time over time
//! per run (ALV, FastScale), response-time CDFs, bar charts of totals, and
//! a sweep curve (MSC-CT Fig. 9: normalised turnaround vs stride).
//!
//! SVG needs no fonts at build or run time (text is left to the viewer).
//! Plots with one line per run are only drawn for up to `LINES_MAX` runs;
//! beyond that they are unreadable and the CSV files hold the data.

use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

use crate::experiment::{ExperimentResult, RunResult};

const LINES_MAX: usize = 12;
const BARS_MAX: usize = 32;
const SIZE: (u32, u32) = (960, 560);

type PlotResult = Result<(), String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("plot: {e}")
}

fn colour(i: usize) -> RGBColor {
    // A fixed palette: identical colours across runs of the experiment.
    const COLOURS: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = COLOURS[i % COLOURS.len()];
    RGBColor(r, g, b)
}

fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        max * 1.05
    } else {
        1.0
    }
}

const UPPER_LEFT: SeriesLabelPosition = SeriesLabelPosition::UpperLeft;

type XyChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// An SVG chart at `path`: a caption, the ranges, the axes' names
/// (x, y); `draw` adds the labelled data, the legend goes at `legend_at`,
/// then the file is written.
fn xy_chart(
    path: &Path,
    caption: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    axes: (&str, &str),
    legend_at: SeriesLabelPosition,
    draw: impl FnOnce(&mut XyChart<'_, '_>) -> PlotResult,
) -> PlotResult {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(axes.0)
        .y_desc(axes.1)
        .draw()
        .map_err(err)?;
    draw(&mut chart)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend_at)
        .draw()
        .map_err(|e| format!("plot: {e:?}"))?;
    root.present().map_err(err)
}

/// One labelled line in the palette's `i`th colour.
fn labelled_line(
    chart: &mut XyChart<'_, '_>,
    i: usize,
    label: String,
    points: impl IntoIterator<Item = (f64, f64)>,
) -> PlotResult {
    let c = colour(i);
    chart
        .draw_series(LineSeries::new(points, c.stroke_width(2)))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    Ok(())
}

/// One labelled line per run, from the points `points` gives it (none:
/// the run has no line).
fn run_lines<'r, I: IntoIterator<Item = (f64, f64)>>(
    chart: &mut XyChart<'_, '_>,
    runs: &'r [RunResult],
    points: impl Fn(&'r RunResult) -> Option<I>,
) -> PlotResult {
    for (i, r) in runs.iter().enumerate() {
        if let Some(points) = points(r) {
            labelled_line(chart, i, r.name.clone(), points)?;
        }
    }
    Ok(())
}

/// Most sweep points given plots of their own (see [`write_plots`]).
const GROUPS_MAX: usize = 8;

/// Writes every plot that applies; returns the file names written.
///
/// Runs of different sweep points (say, two traces) are not comparable on
/// one axis, so with up to `GROUPS_MAX` sweep points each point gets its own
/// time, CDF and bar plots (`latency-cdf-wsrch.svg`); without a sweep there
/// is one set for all runs.
pub fn write_plots(
    result: &ExperimentResult,
    dir: &Path,
    sweep_metric: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    let runs = &result.runs;
    let mut groups: Vec<(String, Vec<RunResult>)> = Vec::new();
    for r in runs {
        let label = r.sweep.as_ref().map(|s| s.0.clone()).unwrap_or_default();
        match groups.iter_mut().find(|g| g.0 == label) {
            Some(g) => g.1.push(r.clone()),
            None => groups.push((label, vec![r.clone()])),
        }
    }
    if groups.len() <= GROUPS_MAX {
        for (label, members) in &groups {
            let suffix = if label.is_empty() {
                String::new()
            } else {
                format!("-{}", file_safe(label))
            };
            written.extend(group_plots(members, dir, &suffix)?);
        }
    }
    let growth_runs: Vec<&RunResult> = runs
        .iter()
        .filter(|r| {
            r.report.growth.as_ref().is_some_and(|g| g.done) && r.report.summary.requests > 0
        })
        .collect();
    if growth_runs.len() >= 2 && growth_runs.len() <= BARS_MAX {
        let name = "growth-tradeoff.svg".to_string();
        growth_tradeoff(&growth_runs, &dir.join(&name))?;
        written.push(name);
    }
    if runs.iter().any(|r| r.sweep.is_some()) {
        let metric = sweep_metric.unwrap_or("mean_response_ms");
        let name = format!("sweep-{metric}.svg");
        if sweep_curve(runs, metric, &dir.join(&name))? {
            written.push(name);
        }
    }
    Ok(written)
}

/// Letters, digits, '-' and '_' only, so a label makes a safe file name.
fn file_safe(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn group_plots(runs: &[RunResult], dir: &Path, suffix: &str) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    if !runs.is_empty() && runs.len() <= LINES_MAX {
        let name = format!("latency-over-time{suffix}.svg");
        latency_over_time(runs, &dir.join(&name), false)?;
        written.push(name);
        let name = format!("latency-max-over-time{suffix}.svg");
        latency_over_time(runs, &dir.join(&name), true)?;
        written.push(name);
        if runs.iter().any(|r| r.report.growth.is_some()) {
            let name = format!("growth-progress{suffix}.svg");
            growth_progress(runs, &dir.join(&name))?;
            written.push(name);
        }
        let name = format!("latency-cdf{suffix}.svg");
        latency_cdf(runs, &dir.join(&name))?;
        written.push(name);
    }
    if !runs.is_empty() && runs.len() <= BARS_MAX {
        for (key, title) in [
            ("mean_response_ms", "mean response time (ms)"),
            ("p99_response_ms", "99th percentile response time (ms)"),
            ("throughput_iops", "throughput (IOPS)"),
        ] {
            let name = format!("bars-{key}{suffix}.svg");
            bars(runs, key, title, &dir.join(&name))?;
            written.push(name);
        }
    }
    Ok(written)
}

/// Local average (or, with `max`, local maximum) response time per window
/// over time: the ALV paper's Figs. 10, 12, 13 and FastScale's latency plots.
fn latency_over_time(runs: &[RunResult], path: &Path, max: bool) -> PlotResult {
    let value = |w: &eraid_trace::metrics::WindowStat| {
        if max {
            w.latency_max_ns as f64 / 1e6
        } else {
            w.latency_mean_ns / 1e6
        }
    };
    let x_max = runs
        .iter()
        .flat_map(|r| r.report.windows.iter().map(|w| w.end_ns as f64 / 1e9))
        .fold(0.0, f64::max);
    let y_max = runs
        .iter()
        .flat_map(|r| r.report.windows.iter().map(value))
        .fold(0.0, f64::max);
    let caption = if max {
        "local maximum response time"
    } else {
        "local average response time"
    };
    let x = 0f64..upper(x_max);
    let axes = ("time (s)", "response time (ms)");
    xy_chart(
        path,
        caption,
        x,
        0f64..upper(y_max),
        axes,
        UPPER_LEFT,
        |chart| {
            run_lines(chart, runs, |r| {
                Some(
                    r.report
                        .windows
                        .iter()
                        .map(|w| ((w.start_ns + w.end_ns) as f64 / 2e9, value(w))),
                )
            })
        },
    )
}

/// Growth progress (0..1) over simulated time, one line per growth run.
fn growth_progress(runs: &[RunResult], path: &Path) -> PlotResult {
    let x_max = runs
        .iter()
        .filter_map(|r| r.report.growth.as_ref())
        .flat_map(|g| g.samples.iter().map(|s| s.time_s))
        .fold(0.0, f64::max);
    let axes = ("time (s)", "fraction of the growth done");
    xy_chart(
        path,
        "growth progress",
        0f64..upper(x_max),
        0f64..1.0,
        axes,
        UPPER_LEFT,
        |chart| {
            run_lines(chart, runs, |r| {
                let g = r.report.growth.as_ref()?;
                let steps = g.samples.iter().map(|s| s.step).max().unwrap_or(0) + 1;
                Some(
                    g.samples
                        .iter()
                        .map(move |s| (s.time_s, (s.step as f64 + s.progress) / steps as f64)),
                )
            })
        },
    )
}

/// Redistribution time against the mean user response time during the
/// growth, one labelled point per run (the ALV paper's trade-off, Figs.
/// 14-16).
fn growth_tradeoff(runs: &[&RunResult], path: &Path) -> PlotResult {
    let points: Vec<(String, f64, f64)> = runs
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                metric(r, "redistribution_time_s"),
                metric(r, "growth_mean_response_ms"),
            )
        })
        .collect();
    let x_max = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let y_max = points.iter().map(|p| p.2).fold(0.0, f64::max);
    let caption = "redistribution time vs mean response time during the growth";
    let axes = ("redistribution time (s)", "mean response time (ms)");
    let (x, y) = (0f64..upper(x_max), 0f64..upper(y_max));
    xy_chart(
        path,
        caption,
        x,
        y,
        axes,
        SeriesLabelPosition::UpperRight,
        |chart| {
            for (i, (name, x, y)) in points.into_iter().enumerate() {
                let c = colour(i);
                chart
                    .draw_series(std::iter::once(Circle::new((x, y), 5, c.filled())))
                    .map_err(err)?
                    .label(name)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 5, c.filled()));
            }
            Ok(())
        },
    )
}

fn latency_cdf(runs: &[RunResult], path: &Path) -> PlotResult {
    let x_max = runs
        .iter()
        .map(|r| r.report.summary.p99_response_ms)
        .fold(0.0, f64::max);
    let caption = "response-time CDF (to the largest p99)";
    let axes = ("response time (ms)", "fraction of requests");
    xy_chart(
        path,
        caption,
        0f64..upper(x_max),
        0f64..1.0,
        axes,
        UPPER_LEFT,
        |chart| {
            run_lines(chart, runs, |r| {
                Some(
                    r.report
                        .cdf
                        .iter()
                        .map(|p| (p.latency_ns as f64 / 1e6, p.cumulative_fraction)),
                )
            })
        },
    )
}

fn metric(run: &RunResult, key: &str) -> f64 {
    run.metrics.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn bars(runs: &[RunResult], key: &str, title: &str, path: &Path) -> PlotResult {
    let y_max = runs.iter().map(|r| metric(r, key)).fold(0.0, f64::max);
    let n = runs.len();
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let names: Vec<String> = runs.iter().map(|r| r.name.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(90)
        .y_label_area_size(72)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..upper(y_max))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_style(if n <= 8 {
            ("sans-serif", 14).into_font()
        } else {
            // Many bars: vertical names, each below its bar.
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90)
        })
        .y_desc(title)
        .draw()
        .map_err(err)?;
    chart
        .draw_series(runs.iter().enumerate().map(|(i, r)| {
            let x = i as f64;
            Rectangle::new(
                [(x - 0.35, 0.0), (x + 0.35, metric(r, key))],
                colour(i).filled(),
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

/// One line per variant: `metric` against the numeric sweep value. Returns
/// false (and draws nothing) when the sweep values are not numbers.
fn sweep_curve(runs: &[RunResult], metric_key: &str, path: &Path) -> Result<bool, String> {
    let numeric = |v: &toml::Value| match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    };
    let mut variants: Vec<&str> = Vec::new();
    for r in runs {
        if !variants.contains(&r.variant.as_str()) {
            variants.push(&r.variant);
        }
    }
    let mut series: Vec<Vec<(f64, f64)>> = Vec::new();
    for v in &variants {
        let mut points = Vec::new();
        for r in runs.iter().filter(|r| r.variant == *v) {
            let Some(x) = r.sweep.as_ref().and_then(|(_, value)| numeric(value)) else {
                return Ok(false);
            };
            points.push((x, metric(r, metric_key)));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push(points);
    }
    let all = series.iter().flatten();
    let x_min = all.clone().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_max = all.clone().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y_max = all.map(|p| p.1).fold(0.0, f64::max);
    let x_range = if x_max > x_min {
        x_min..x_max
    } else {
        x_min - 1.0..x_min + 1.0
    };
    let caption = format!("{metric_key} by sweep value");
    let axes = ("sweep value", metric_key);
    xy_chart(
        path,
        &caption,
        x_range,
        0f64..upper(y_max),
        axes,
        UPPER_LEFT,
        |chart| {
            for (i, (v, points)) in variants.iter().zip(series).enumerate() {
                labelled_line(chart, i, v.to_string(), points.clone())?;
                let c = colour(i);
                chart
                    .draw_series(points.into_iter().map(|p| Circle::new(p, 3, c.filled())))
                    .map_err(err)?;
            }
            Ok(())
        },
    )?;
    Ok(true)
}

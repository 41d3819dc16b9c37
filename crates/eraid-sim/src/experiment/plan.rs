//! From an experiment file to the list of runs: variants (or one default
//! variant) times sweep values, each resolved to a [`SimConfig`] and a
//! [`FeedSpec`]. Every error names the file, the run and the setting.

use std::path::{Path, PathBuf};

use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::ArrayOptions;
use eraid_trace::metrics::WindowBy;
use eraid_trace::synthetic::{Preset, WorkloadSpec};
use eraid_trace::{TraceFormat, TraceOptions};

use super::file::*;
use crate::disk::{FastWrite, ReadAhead, SchedulerKind};
use crate::driver::{
    resolve_disk_model, DataMode, FeedSpec, SimConfig, StrideSpec, SyntheticSource, Target,
};
use crate::units::parse_size_bytes;

/// Requests a synthetic open-loop workload issues when `run.max_requests`
/// is not given (its generators never end on their own).
pub const SYNTHETIC_REQUESTS_DEFAULT: u64 = 10_000;

/// One simulation of an experiment.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Unique name, e.g. `write-stride-4`.
    pub name: String,
    /// The variant it comes from.
    pub variant: String,
    /// The sweep point, if the experiment sweeps: (label, value).
    pub sweep: Option<(String, toml::Value)>,
    pub config: SimConfig,
    pub feed: FeedSpec,
}

/// A parsed experiment, ready to run.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    pub description: Option<String>,
    pub seed: u64,
    pub file: PathBuf,
    pub runs: Vec<RunPlan>,
    pub sweep: Option<SweepTable>,
    pub plots: bool,
}

/// Reads and checks an experiment file.
pub fn load(path: &Path) -> Result<Experiment, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&shown, &text, &base_dir)
}

/// Parses an experiment from `text`; `file` names it in errors and
/// relative paths in it are taken from `base_dir`.
pub fn parse(file: &str, text: &str, base_dir: &Path) -> Result<Experiment, String> {
    let parsed: ExperimentFile = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    let seed = parsed.seed.unwrap_or(1);
    let variants = match &parsed.variant {
        Some(v) if !v.is_empty() => v.clone(),
        _ => vec![VariantTable {
            name: parsed.name.clone(),
            array: None,
            disk: None,
            engine: None,
            workload: None,
            run: None,
        }],
    };
    let points = sweep_points(file, parsed.sweep.as_ref())?;
    let cdf_points = parsed
        .outputs
        .as_ref()
        .and_then(|o| o.cdf_points)
        .unwrap_or(200);
    let mut runs = Vec::new();
    for variant in &variants {
        let settings = Settings::of_variant(&parsed, variant);
        for point in &points {
            let (name, settings, sweep) = match (point, &parsed.sweep) {
                (Some((label, value)), Some(sweep)) => {
                    let template = sweep.name.as_deref().unwrap_or("{variant}-{value}");
                    let name = template
                        .replace("{variant}", &variant.name)
                        .replace("{value}", label);
                    let swept = set_field(&settings, &sweep.field, value).map_err(|e| {
                        format!("{file}: run '{name}': sweep field '{}': {e}", sweep.field)
                    })?;
                    (name, swept, Some((label.clone(), value.clone())))
                }
                _ => (variant.name.clone(), settings.clone(), None),
            };
            let (config, feed) = resolve(&settings, seed, cdf_points, base_dir)
                .map_err(|e| format!("{file}: run '{name}': {e}"))?;
            if runs.iter().any(|r: &RunPlan| r.name == name) {
                return Err(format!(
                    "{file}: two runs are named '{name}'; give the variants distinct names"
                ));
            }
            runs.push(RunPlan {
                name,
                variant: variant.name.clone(),
                sweep,
                config,
                feed,
            });
        }
    }
    if let Some(n) = parsed.sweep.as_ref().and_then(|s| s.normalize.as_ref()) {
        if !points.iter().flatten().any(|(_, v)| *v == n.at) {
            return Err(format!(
                "{file}: sweep.normalize.at = {} is not one of the sweep values",
                n.at
            ));
        }
    }
    Ok(Experiment {
        name: parsed.name.clone(),
        description: parsed.description.clone(),
        seed,
        file: PathBuf::from(file),
        runs,
        sweep: parsed.sweep.clone(),
        plots: parsed
            .outputs
            .as_ref()
            .and_then(|o| o.plots)
            .unwrap_or(true),
    })
}

type Point = Option<(String, toml::Value)>;

fn sweep_points(file: &str, sweep: Option<&SweepTable>) -> Result<Vec<Point>, String> {
    let Some(sweep) = sweep else {
        return Ok(vec![None]);
    };
    let values: Vec<toml::Value> = match (&sweep.values, sweep.from, sweep.to) {
        (Some(values), None, None) => values.clone(),
        (None, Some(from), Some(to)) if from <= to => {
            (from..=to).map(toml::Value::Integer).collect()
        }
        _ => {
            return Err(format!(
                "{file}: sweep: give either 'values' or both 'from' and 'to' (from <= to)"
            ))
        }
    };
    if values.is_empty() {
        return Err(format!("{file}: sweep.values is empty"));
    }
    let labels: Vec<String> = match &sweep.labels {
        Some(labels) if labels.len() == values.len() => labels.clone(),
        Some(labels) => {
            return Err(format!(
                "{file}: sweep.labels has {} entries for {} values",
                labels.len(),
                values.len()
            ))
        }
        None => values
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
    };
    Ok(labels.into_iter().zip(values).map(Some).collect())
}

/// `settings` with the dotted `field` set to `value`, checked by
/// deserialising the result.
fn set_field(settings: &Settings, field: &str, value: &toml::Value) -> Result<Settings, String> {
    let mut root = toml::Value::try_from(settings).map_err(|e| e.to_string())?;
    let parts: Vec<&str> = field.split('.').collect();
    let mut at = &mut root;
    for (i, part) in parts.iter().enumerate() {
        let table = at
            .as_table_mut()
            .ok_or_else(|| format!("'{}' is not a table", parts[..i].join(".")))?;
        if i + 1 == parts.len() {
            table.insert(part.to_string(), value.clone());
            break;
        }
        at = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::map::Map::new()));
    }
    root.try_into::<Settings>().map_err(|e| e.to_string())
}

fn resolve(
    settings: &Settings,
    seed: u64,
    cdf_points: usize,
    base_dir: &Path,
) -> Result<(SimConfig, FeedSpec), String> {
    let array = settings.array.clone().unwrap_or_default();
    let disk_table = settings.disk.clone().unwrap_or_default();
    let engine = settings.engine.clone().unwrap_or_default();
    let run = settings.run.clone().unwrap_or_default();
    let target = resolve_target(&array, &engine)?;
    let members = array.disks.unwrap_or(4);
    let model = disk_table
        .model
        .as_deref()
        .ok_or("[disk] model: missing (a preset name or a .diskspecs path)")?;
    let mut disk =
        resolve_disk_model(model, Some(base_dir)).map_err(|e| format!("[disk] model: {e}"))?;
    apply_disk_settings(&mut disk, &disk_table)?;
    let mut config = SimConfig::new(target, members, disk);
    config.seed = seed;
    config.cdf_points = cdf_points;
    config.member_bytes_max = array
        .member_size
        .as_ref()
        .map(|s| size(s).map_err(|e| format!("[array] member_size: {e}")))
        .transpose()?;
    config.max_requests = run.max_requests;
    config.window = match (run.window_requests, run.window_ms) {
        (Some(_), Some(_)) => {
            return Err("[run]: give window_requests or window_ms, not both".into())
        }
        (_, Some(ms)) => WindowBy::Time {
            width_ns: ms.max(1) * 1_000_000,
        },
        (count, None) => WindowBy::Requests {
            count: count.unwrap_or(100).max(1),
        },
    };
    config.data_mode = match run.data_mode.as_deref() {
        None | Some("discard") => DataMode::Discard,
        Some("store") => DataMode::Store,
        Some(other) => {
            return Err(format!(
                "[run] data_mode: '{other}' is not discard or store"
            ))
        }
    };
    let workload = settings.workload.clone().unwrap_or_default();
    let feed = resolve_feed(&workload, seed, base_dir)?;
    let synthetic_open = matches!(
        feed,
        FeedSpec::Synthetic {
            outstanding: None,
            ..
        }
    );
    let synthetic_closed = matches!(
        feed,
        FeedSpec::Synthetic {
            outstanding: Some(_),
            ..
        }
    );
    if config.max_requests.is_none() && (synthetic_open || synthetic_closed) {
        config.max_requests = Some(SYNTHETIC_REQUESTS_DEFAULT);
    }
    Ok((config, feed))
}

fn size(value: &IntOrText) -> Result<u64, String> {
    match value {
        IntOrText::Int(n) => Ok(*n),
        IntOrText::Text(t) => parse_size_bytes(t),
    }
}

fn resolve_target(array: &ArrayTable, engine: &EngineTable) -> Result<Target, String> {
    let level_text = array
        .level
        .as_ref()
        .map_or("5".to_string(), |l| l.to_string());
    if matches!(
        level_text.to_ascii_lowercase().as_str(),
        "disk" | "none" | "jbod"
    ) {
        return Ok(Target::Disk);
    }
    let level =
        Level::parse(&level_text).map_err(|e| format!("[array] level: {e} (or \"disk\")"))?;
    let layout = array
        .layout
        .as_deref()
        .map(|l| ParityLayout::parse(l).map_err(|e| format!("[array] layout: {e}")))
        .transpose()?;
    let chunk_bytes = array
        .chunk
        .as_ref()
        .map(|c| size(c).map_err(|e| format!("[array] chunk: {e}")))
        .transpose()?
        .unwrap_or(64 << 10);
    let defaults = ArrayOptions::default();
    let options = ArrayOptions {
        bitmap_clean_delay_ms: engine
            .bitmap_clean_delay_ms
            .unwrap_or(defaults.bitmap_clean_delay_ms),
        scrub_window_stripes: engine
            .scrub_window_stripes
            .unwrap_or(defaults.scrub_window_stripes),
        resync_on_open: engine.resync_on_open.unwrap_or(defaults.resync_on_open),
        write_intent_bitmap: engine
            .write_intent_bitmap
            .unwrap_or(defaults.write_intent_bitmap),
    };
    Ok(Target::Array {
        level,
        layout,
        chunk_bytes,
        options,
    })
}

fn apply_disk_settings(
    disk: &mut crate::driver::DiskChoice,
    table: &DiskTable,
) -> Result<(), String> {
    let touches_hdd = table.scheduler.is_some()
        || table.queue_depth.is_some()
        || table.write_cache.is_some()
        || table.read_ahead.is_some()
        || table.cache.is_some();
    let Some(spec) = disk.hdd_spec_mut() else {
        return if touches_hdd {
            Err("[disk]: scheduler, queue_depth, write_cache, read_ahead and cache apply to hard disks only".into())
        } else {
            Ok(())
        };
    };
    if let Some(s) = &table.scheduler {
        spec.scheduler = match s.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "fcfs" => SchedulerKind::Fcfs,
            "clook" => SchedulerKind::CLook,
            "sptf" => SchedulerKind::Sptf,
            _ => {
                return Err(format!(
                    "[disk] scheduler: '{s}' is not fcfs, clook or sptf"
                ))
            }
        };
    }
    if let Some(depth) = table.queue_depth {
        if depth == 0 {
            return Err("[disk] queue_depth: must be at least 1".into());
        }
        spec.queue_depth = depth;
    }
    if let Some(w) = &table.write_cache {
        spec.cache.fast_write = match w.to_ascii_lowercase().as_str() {
            "off" => FastWrite::Off,
            "sequential" => FastWrite::Sequential,
            "always" | "on" => FastWrite::Always,
            _ => {
                return Err(format!(
                    "[disk] write_cache: '{w}' is not off, sequential or always"
                ))
            }
        };
    }
    if let Some(r) = &table.read_ahead {
        spec.cache.read_ahead = match r.to_ascii_lowercase().replace('_', "-").as_str() {
            "none" => ReadAhead::None,
            "track" => ReadAhead::ToTrackEnd,
            "cylinder" => ReadAhead::ToCylinderEnd,
            "segment" => ReadAhead::ToSegmentEnd,
            "next-track" => ReadAhead::NextTrack,
            _ => {
                return Err(format!(
                    "[disk] read_ahead: '{r}' is not none, track, cylinder, segment or next-track"
                ))
            }
        };
    }
    if let Some(enabled) = table.cache {
        spec.cache.enabled = enabled;
    }
    Ok(())
}

fn resolve_feed(w: &WorkloadTable, seed: u64, base_dir: &Path) -> Result<FeedSpec, String> {
    let sources = [
        w.trace.is_some(),
        w.preset.is_some(),
        w.spec.is_some(),
        w.stride.is_some(),
    ];
    match sources.iter().filter(|&&s| s).count() {
        1 => {}
        0 => return Err("[workload]: name one of trace, preset, spec or stride".into()),
        _ => return Err("[workload]: name only one of trace, preset, spec or stride".into()),
    }
    if let Some(trace) = &w.trace {
        let format = w
            .format
            .as_deref()
            .map(|f| {
                f.parse::<TraceFormat>()
                    .map_err(|e| format!("[workload] format: {e}"))
            })
            .transpose()?;
        let options = TraceOptions {
            time_scale: w.time_scale.unwrap_or(1.0),
            rebase_time: w.rebase_time.unwrap_or(true),
            devices: w.devices.as_ref().map(|d| d.iter().copied().collect()),
            ..TraceOptions::default()
        };
        options.validate().map_err(|e| format!("[workload]: {e}"))?;
        let path = base_dir.join(trace);
        if !path.is_file() {
            return Err(format!("[workload] trace: no such file {}", path.display()));
        }
        return Ok(FeedSpec::Trace {
            path,
            format,
            options,
        });
    }
    if let Some(preset) = &w.preset {
        let preset: Preset = preset
            .parse()
            .map_err(|e| format!("[workload] preset: {e}"))?;
        return Ok(FeedSpec::Synthetic {
            source: SyntheticSource::Preset(preset),
            outstanding: w.outstanding,
        });
    }
    if let Some(spec) = &w.spec {
        let path = base_dir.join(spec);
        let spec = load_workload_spec(&path, seed)?;
        return Ok(FeedSpec::Synthetic {
            source: SyntheticSource::Spec(Box::new(spec)),
            outstanding: w.outstanding,
        });
    }
    let stride = w.stride.clone().unwrap_or_default();
    let is_read = match stride.op.as_deref() {
        Some("read") => true,
        Some("write") | None => false,
        Some(other) => {
            return Err(format!(
                "[workload] stride.op: '{other}' is not read or write"
            ))
        }
    };
    let block_bytes = stride
        .block
        .as_ref()
        .map(|b| size(b).map_err(|e| format!("[workload] stride.block: {e}")))
        .transpose()?
        .unwrap_or(4096);
    let start_bytes = stride
        .start
        .as_ref()
        .map(|b| size(b).map_err(|e| format!("[workload] stride.start: {e}")))
        .transpose()?
        .unwrap_or(0);
    let stride_blocks = stride.stride_blocks.unwrap_or(1);
    if stride_blocks == 0 {
        return Err("[workload] stride.stride_blocks: must be at least 1".into());
    }
    Ok(FeedSpec::Stride(StrideSpec {
        is_read,
        block_bytes,
        stride_blocks,
        span_blocks: stride.span_blocks.unwrap_or(8192),
        start_bytes,
        outstanding: stride.outstanding.unwrap_or(32),
    }))
}

/// A workload spec file: the fields of [`WorkloadSpec`], where `seed`
/// (default: the run's) and `capacity_bytes` (default: the whole target)
/// may be left out.
pub fn load_workload_spec(path: &Path, seed: u64) -> Result<WorkloadSpec, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    parse_workload_spec(&shown, &text, seed)
}

pub fn parse_workload_spec(file: &str, text: &str, seed: u64) -> Result<WorkloadSpec, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    table
        .entry("seed")
        .or_insert(toml::Value::Integer(seed as i64));
    table
        .entry("capacity_bytes")
        .or_insert(toml::Value::Integer(i64::MAX));
    let spec: WorkloadSpec = toml::Value::Table(table)
        .try_into()
        .map_err(|e| format!("{file}: {e}"))?;
    spec.validate().map_err(|e| format!("{file}: {e}"))?;
    Ok(spec)
}

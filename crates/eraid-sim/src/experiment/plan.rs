//! From an experiment file to the list of runs: variants (or one default
//! variant) times sweep values, each resolved to a [`SimConfig`] and a
//! [`FeedSpec`]. Every error names the file, the run and the setting.

use std::path::{Path, PathBuf};

use eraid_core::cache::config::{Allocation, CacheConfig, CachePolicy};
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::growth::config::{ReshapeConfig, ReshapeStrategy};
use eraid_core::ArrayOptions;
use eraid_trace::metrics::WindowBy;
use eraid_trace::synthetic::{Preset, WorkloadSpec};
use eraid_trace::{TraceFormat, TraceOptions};

use super::failure::resolve_failure;
use super::file::*;
use super::rates::rate_kib_s;
use crate::disk::{FastWrite, ReadAhead, SchedulerKind};
use crate::driver::{
    resolve_disk_model, DataMode, FeedSpec, GrowthLoad, GrowthPlan, GrowthStep, SimConfig,
    StrideSpec, SyntheticSource, Target,
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
    /// An `msc-ct` cache whose `[cache]` leaves S_r_max or S_w_max out:
    /// the runner measures them on the drive model first.
    pub stride_bench: Option<StrideBenchNeed>,
}

/// Which of a run's stride limits the stride benchmark is to set.
#[derive(Debug, Clone, PartialEq)]
pub struct StrideBenchNeed {
    pub read: bool,
    pub write: bool,
    /// The drive as the experiment names it, for the summary.
    pub disk_label: String,
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
            group: None,
            array: None,
            disk: None,
            engine: None,
            cache: None,
            workload: None,
            run: None,
            growth: None,
            failure: None,
        }],
    };
    let points = sweep_points(file, parsed.sweep.as_ref())?;
    if parsed.sweep.is_some() {
        if let Some(v) = variants.iter().find(|v| v.group.is_some()) {
            return Err(format!(
                "{file}: variant '{}' names a group, which a [sweep] cannot have (its points are the groups)",
                v.name
            ));
        }
    }
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
                _ => {
                    let group = variant
                        .group
                        .as_ref()
                        .map(|g| (g.clone(), toml::Value::String(g.clone())));
                    (variant.name.clone(), settings.clone(), group)
                }
            };
            let (config, feed) = resolve(&settings, seed, cdf_points, base_dir)
                .map_err(|e| format!("{file}: run '{name}': {e}"))?;
            if runs.iter().any(|r: &RunPlan| r.name == name) {
                return Err(format!(
                    "{file}: two runs are named '{name}'; give the variants distinct names"
                ));
            }
            let stride_bench = stride_bench_need(&settings);
            runs.push(RunPlan {
                name,
                variant: variant.name.clone(),
                sweep,
                config,
                feed,
                stride_bench,
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
    let target = resolve_target(&array, &engine, settings.cache.as_ref())?;
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
    if let Some(name) = &disk_table.host_scheduler {
        config.host_scheduler = crate::driver::host_sched::HostSchedulerKind::parse(name)
            .map_err(|e| format!("[disk] host_scheduler: {e}"))?;
    }
    config.merge_max_bytes = disk_table
        .merge
        .as_ref()
        .filter(|m| !matches!(m, IntOrText::Text(t) if t == "off"))
        .map(|m| match size(m) {
            Ok(n) if n >= 512 && n % 512 == 0 => Ok(n),
            Ok(n) => Err(format!(
                "[disk] merge: must be a multiple of 512 bytes, at least 512, got {n}"
            )),
            Err(e) => Err(format!("[disk] merge: {e}")),
        })
        .transpose()?;
    config.request_max_bytes = disk_table
        .max_request
        .as_ref()
        .map(|m| match size(m) {
            Ok(n) if n >= 512 && n % 512 == 0 => Ok(n),
            Ok(n) => Err(format!(
                "[disk] max_request: must be a multiple of 512 bytes, at least 512, got {n}"
            )),
            Err(e) => Err(format!("[disk] max_request: {e}")),
        })
        .transpose()?;
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
    let growth = resolve_growth(settings.growth.as_ref(), &config.target, members)?;
    let mut failure = resolve_failure(settings.failure.as_ref(), &config.target, members)?;
    if failure.is_some() && growth.is_some() {
        return Err(
            "[failure] with [growth] in one run is not supported yet; give each its own run".into(),
        );
    }
    let (until_growth, until_rebuild) = match run.until.as_deref() {
        None | Some("workload-done") => (false, false),
        Some("growth-done") => (true, false),
        Some("rebuild-done") => (false, true),
        Some(other) => {
            return Err(format!(
                "[run] until: '{other}' is not workload-done, growth-done or rebuild-done"
            ))
        }
    };
    if until_rebuild && !failure.as_ref().is_some_and(|f| f.spare) {
        return Err(
            "[run] until = \"rebuild-done\" needs a [failure] with a spare (spare = true) to rebuild"
                .into(),
        );
    }
    config.max_time_ns = run
        .max_time_s
        .map(|s| {
            if s.is_finite() && s > 0.0 {
                Ok((s * 1e9) as u64)
            } else {
                Err(format!("[run] max_time_s: must be positive, got {s}"))
            }
        })
        .transpose()?;
    config.final_flush = run.final_flush.unwrap_or(false);
    let workload = settings.workload.clone().unwrap_or_default();
    let unloaded = workload.none == Some(true) || (growth.is_some() && no_source(&workload));
    let mut feed = if unloaded {
        if workload.none == Some(true) && !no_source(&workload) {
            return Err(
                "[workload]: none = true names no load; remove trace, preset, spec or stride"
                    .into(),
            );
        }
        FeedSpec::Requests(Vec::new())
    } else {
        resolve_feed(&workload, seed, base_dir)?
    };
    if until_growth {
        let Some(plan) = &growth else {
            return Err("[run] until = \"growth-done\" needs a [growth] section".into());
        };
        if plan.load == GrowthLoad::After {
            return Err(
                "[run] until = \"growth-done\" ends the workload when the growth is done, but [growth] load = \"after\" starts it then"
                    .into(),
            );
        }
    }
    if until_growth || until_rebuild {
        // The workload is repeated until the growth or rebuild is done.
        if let FeedSpec::Trace { options, .. } = &mut feed {
            options.loop_count = 0;
            if options.max_requests.is_none() && options.max_duration_ns.is_none() {
                options.max_duration_ns = Some(u64::MAX);
            }
        }
    }
    if let Some(depth) = workload.host_queue_depth {
        if depth == 0 {
            return Err("[workload] host_queue_depth: must be at least 1".into());
        }
        if !matches!(
            feed,
            FeedSpec::Trace { .. }
                | FeedSpec::Synthetic {
                    outstanding: None,
                    ..
                }
        ) {
            return Err(
                "[workload] host_queue_depth: only for open-loop workloads (a trace, or a preset or spec without outstanding)"
                    .into(),
            );
        }
        config.host_queue_depth = Some(depth);
    }
    config.growth = growth.map(|mut plan| {
        plan.until_done = until_growth;
        plan
    });
    if let Some(plan) = &mut failure {
        plan.until_done = until_rebuild;
        if let Target::Array { options, .. } = &mut config.target {
            options.rebuild = plan.config.clone();
        }
    }
    config.failure = failure;
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
    if config.max_requests.is_none()
        && (synthetic_open || synthetic_closed)
        && !until_growth
        && !until_rebuild
    {
        config.max_requests = Some(SYNTHETIC_REQUESTS_DEFAULT);
    }
    Ok((config, feed))
}

fn no_source(w: &WorkloadTable) -> bool {
    w.trace.is_none() && w.preset.is_none() && w.spec.is_none() && w.stride.is_none()
}

/// `[growth]` as a plan, every setting checked against the array.
fn resolve_growth(
    table: Option<&GrowthTable>,
    target: &Target,
    members: usize,
) -> Result<Option<GrowthPlan>, String> {
    let Some(g) = table else {
        return Ok(None);
    };
    if g.enabled == Some(false) {
        return Ok(None);
    }
    let level = match target {
        Target::Array { level, .. } => *level,
        Target::Disk => return Err("[growth]: a bare disk cannot grow; set [array] level".into()),
    };
    let adds: Vec<i64> = match &g.add {
        None => {
            return Err("[growth] add: missing (how many disks to add, e.g. 1 or [1, 1])".into())
        }
        Some(AddTable::One(n)) => vec![*n],
        Some(AddTable::Many(list)) => list.clone(),
    };
    if adds.is_empty() {
        return Err("[growth] add: the list of additions is empty".into());
    }
    if let Some(bad) = adds.iter().find(|&&n| n < 1) {
        return Err(format!(
            "[growth] add: every addition must add at least one disk, got {bad}"
        ));
    }
    let strategy_text = g.strategy.as_deref().ok_or(
        "[growth] strategy: missing (alv or md-reshape for RAID-5; fastscale, round-robin or semi-rr for RAID-0)",
    )?;
    let strategy =
        ReshapeStrategy::parse(strategy_text).map_err(|e| format!("[growth] strategy: {e}"))?;
    match (level, strategy.raid0_placement().is_some()) {
        (Level::Crs { .. }, _) if strategy.grows_crs() => {}
        (Level::Crs { .. }, _) => {
            return Err(format!(
                "[growth] strategy: {} does not grow CRS arrays (use scale-crs or epu)",
                strategy.name()
            ))
        }
        (_, _) if strategy.grows_crs() => {
            return Err(format!(
                "[growth] strategy: {} grows CRS arrays, set [array] level = \"crs\"",
                strategy.name()
            ))
        }
        (Level::Raid0, true) | (Level::Raid5, false) => {}
        (Level::Raid0, false) => {
            return Err(format!(
                "[growth] strategy: {} grows RAID-5 arrays, but [array] level is 0 (use fastscale, round-robin or semi-rr)",
                strategy.name()
            ))
        }
        (Level::Raid5, true) => {
            return Err(format!(
                "[growth] strategy: {} grows RAID-0 arrays, but [array] level is 5 (use alv or md-reshape)",
                strategy.name()
            ))
        }
        (other, _) => {
            return Err(format!(
                "[growth]: growing {} is not supported (RAID-0 and RAID-5 are)",
                other.name()
            ))
        }
    }
    let mut config = ReshapeConfig::with_strategy(strategy);
    let bytes = |value: &Option<IntOrText>, key: &str, into: &mut u64| -> Result<(), String> {
        if let Some(v) = value {
            let n = size(v).map_err(|e| format!("[growth] {key}: {e}"))?;
            if n == 0 || n % 512 != 0 {
                return Err(format!(
                    "[growth] {key}: must be a positive multiple of 512 bytes, got {n}"
                ));
            }
            *into = n;
        }
        Ok(())
    };
    bytes(&g.aggregation, "aggregation", &mut config.aggregation_bytes)?;
    bytes(&g.md_page, "md_page", &mut config.md_page_bytes)?;
    bytes(&g.md_window, "md_window", &mut config.md_window_bytes)?;
    bytes(
        &g.md_checkpoint,
        "md_checkpoint",
        &mut config.md_checkpoint_bytes,
    )?;
    if let Some(name) = &g.valve_latency {
        config.valve_latency =
            eraid_core::growth::config::ValveLatency::parse(name).ok_or_else(|| {
                format!("[growth] valve_latency: '{name}' is not response, admission or processing")
            })?;
    }
    if let Some(name) = &g.md_users_wait {
        config.md_users_wait =
            eraid_core::growth::config::MdUsersWait::parse(name).ok_or_else(|| {
                format!("[growth] md_users_wait: '{name}' is not window, reads or touching")
            })?;
    }
    bytes(
        &g.sliding_window_max,
        "sliding_window_max",
        &mut config.sliding_window_bytes_max,
    )?;
    let speed = |value: &Option<IntOrText>, key: &str, into: &mut u64| -> Result<(), String> {
        if let Some(v) = value {
            *into = rate_kib_s(v).map_err(|e| format!("[growth] {key}: {e}"))?;
        }
        Ok(())
    };
    speed(&g.speed_min, "speed_min", &mut config.speed_min_kib_s)?;
    speed(&g.speed_max, "speed_max", &mut config.speed_max_kib_s)?;
    if config.speed_max_kib_s == 0 {
        return Err("[growth] speed_max: must be at least 1 KiB/s".into());
    }
    if config.speed_min_kib_s > config.speed_max_kib_s {
        return Err(format!(
            "[growth] speed_min ({} KiB/s) is above speed_max ({} KiB/s)",
            config.speed_min_kib_s, config.speed_max_kib_s
        ));
    }
    if let Some(name) = &g.crs_matrix {
        if !strategy.grows_crs() {
            return Err(format!(
                "[growth] crs_matrix: only scale-crs and epu choose a coding matrix, not {}",
                strategy.name()
            ));
        }
        config.crs_matrix = eraid_core::growth::scale_crs::CrsMatrix::parse(name)
            .map_err(|e| format!("[growth] crs_matrix: {e}"))?;
    }
    if let Some(v) = &g.overlap_buffer {
        if strategy != ReshapeStrategy::Epu {
            return Err(format!(
                "[growth] overlap_buffer: only epu overlaps scaling reads with user reads, not {}",
                strategy.name()
            ));
        }
        config.overlap_buffer_bytes =
            size(v).map_err(|e| format!("[growth] overlap_buffer: {e}"))?;
    }
    if let Some(blocks) = g.io_rate_max {
        if blocks == 0 {
            return Err(
                "[growth] io_rate_max: must be at least 1 block/s (leave it out for none)".into(),
            );
        }
        config.io_rate_max_blocks_s = blocks;
    }
    if let Some(ms) = g.valve_period_ms {
        if ms == 0 {
            return Err("[growth] valve_period_ms: must be positive".into());
        }
        config.valve_period_ms = ms;
    }
    if let Some(ms) = g.idle_check_ms {
        if ms == 0 {
            return Err("[growth] idle_check_ms: must be positive".into());
        }
        config.idle_check_ms = ms;
    }
    match &g.idle_user {
        None => {}
        Some(IntOrText::Int(bytes)) => config.idle_user_kib = *bytes / 1024,
        Some(IntOrText::Text(t)) => {
            config.idle_user_kib = parse_size_bytes(t.trim())
                .map_err(|e| format!("[growth] idle_user: {e} (a size, e.g. \"2M\", or 0)"))?
                / 1024;
        }
    }
    if let Some(on) = g.idle_in_flight {
        config.md_idle_in_flight = on;
    }
    if let Some(b) = g.latency_bound_ms {
        if !(b.is_finite() && b > 0.0) {
            return Err(format!(
                "[growth] latency_bound_ms: must be positive, got {b}"
            ));
        }
        config.latency_bound_ms = b;
    }
    if let Some(theta) = g.slack {
        if !(0.0..=1.0).contains(&theta) {
            return Err(format!("[growth] slack: must be within 0..1, got {theta}"));
        }
        config.slack = theta;
    }
    config.validate().map_err(|e| format!("[growth]: {e}"))?;
    let start_ns = match g.start_s {
        None => 0,
        Some(s) if s.is_finite() && s >= 0.0 => (s * 1e9) as u64,
        Some(s) => return Err(format!("[growth] start_s: must be 0 or more, got {s}")),
    };
    let load = match g.load.as_deref() {
        None | Some("during") => GrowthLoad::During,
        Some("after") => GrowthLoad::After,
        Some(other) => return Err(format!("[growth] load: '{other}' is not during or after")),
    };
    let sample_ns = match g.sample_ms {
        None => 1_000_000_000,
        Some(0) => return Err("[growth] sample_ms: must be positive".into()),
        Some(ms) => ms * 1_000_000,
    };
    let total: usize = members + adds.iter().map(|&n| n as usize).sum::<usize>();
    if total > eraid_core::geometry::MEMBER_COUNT_MAX {
        return Err(format!(
            "[growth] add: {members} disks plus {} added is more than the {} an array can have",
            total - members,
            eraid_core::geometry::MEMBER_COUNT_MAX
        ));
    }
    Ok(Some(GrowthPlan {
        steps: adds
            .into_iter()
            .map(|n| GrowthStep {
                add: n as usize,
                config: config.clone(),
            })
            .collect(),
        start_ns,
        load,
        until_done: false,
        sample_ns,
    }))
}

fn size(value: &IntOrText) -> Result<u64, String> {
    match value {
        IntOrText::Int(n) => Ok(*n),
        IntOrText::Text(t) => parse_size_bytes(t),
    }
}

/// Only the contiguity transform uses S_r_max and S_w_max, so only an
/// `msc-ct` cache that leaves one out needs the benchmark.
fn stride_bench_need(settings: &Settings) -> Option<StrideBenchNeed> {
    let cache = settings.cache.as_ref()?;
    let policy = cache.policy.as_deref().map(CachePolicy::parse)?.ok()?;
    if policy != CachePolicy::MscCt || (cache.s_r_max.is_some() && cache.s_w_max.is_some()) {
        return None;
    }
    let disk = settings.disk.clone().unwrap_or_default();
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "default".into());
    Some(StrideBenchNeed {
        read: cache.s_r_max.is_none(),
        write: cache.s_w_max.is_none(),
        disk_label: format!(
            "{} (write_cache {}, read_ahead {})",
            disk.model.as_deref().unwrap_or("?"),
            shown(&disk.write_cache),
            shown(&disk.read_ahead)
        ),
    })
}

/// `[cache]` as the engine's cache settings (checked against the array's
/// shape when it is built).
fn resolve_cache(table: Option<&CacheTable>) -> Result<CacheConfig, String> {
    let mut config = CacheConfig::default();
    let Some(t) = table else {
        return Ok(config);
    };
    if let Some(policy) = &t.policy {
        config.policy = CachePolicy::parse(policy).map_err(|e| format!("[cache] policy: {e}"))?;
    }
    if let Some(bytes) = &t.size_bytes {
        config.size_bytes = size(bytes).map_err(|e| format!("[cache] size_bytes: {e}"))?;
    }
    if let Some(name) = &t.allocation {
        config.allocation =
            Allocation::parse(name).map_err(|e| format!("[cache] allocation: {e}"))?;
    }
    config.high_mark_percent = t.high_mark_percent.unwrap_or(config.high_mark_percent);
    config.low_mark_percent = t.low_mark_percent.unwrap_or(config.low_mark_percent);
    config.read_rule.s_max = t.s_r_max.unwrap_or(config.read_rule.s_max);
    config.write_rule.s_max = t.s_w_max.unwrap_or(config.write_rule.s_max);
    config.destage_window_units = t
        .destage_window_units
        .unwrap_or(config.destage_window_units);
    Ok(config)
}

/// `[array] level = "crs"`: m from `parity`, w from `w` or Jerasure's
/// default for k + m members.
fn crs_level(array: &ArrayTable) -> Result<Level, String> {
    let parity_members = array
        .parity
        .ok_or("[array] parity: a CRS array needs its parity member count")?;
    let disks = array.disks.unwrap_or(0);
    if parity_members == 0 || disks <= parity_members {
        return Err(format!(
            "[array] parity: {parity_members} parity members of {disks} disks leaves no data member"
        ));
    }
    let w = match array.w {
        Some(w) => w,
        // Jerasure's default: the smallest field with room for every member.
        None => (2..=8usize)
            .find(|&w| disks <= 1 << w)
            .ok_or_else(|| format!("[array]: no w fits {disks} CRS members"))?,
    };
    Ok(Level::Crs { parity_members, w })
}

fn resolve_target(
    array: &ArrayTable,
    engine: &EngineTable,
    cache: Option<&CacheTable>,
) -> Result<Target, String> {
    let cache = resolve_cache(cache)?;
    let level_text = array
        .level
        .as_ref()
        .map_or("5".to_string(), |l| l.to_string());
    if matches!(
        level_text.to_ascii_lowercase().as_str(),
        "disk" | "none" | "jbod"
    ) {
        if cache.policy != CachePolicy::None {
            return Err(
                "[cache]: a bare disk has no stripe cache; set [array] level 5 or 6".into(),
            );
        }
        return Ok(Target::Disk);
    }
    let level = if level_text.eq_ignore_ascii_case("crs") {
        crs_level(array)?
    } else {
        if array.parity.is_some() || array.w.is_some() {
            return Err("[array] parity and w: for level \"crs\" only".into());
        }
        Level::parse(&level_text).map_err(|e| format!("[array] level: {e} (or \"disk\")"))?
    };
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
        .unwrap_or(match level {
            // The EPU paper's 4 KB blocks are the code's packets.
            Level::Crs { w, .. } => w as u64 * 4096,
            _ => 64 << 10,
        });
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
        cache,
        ..defaults
    };
    Ok(Target::Array {
        level,
        layout,
        chunk_bytes,
        options: Box::new(options),
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
        || table.cache.is_some()
        || table.destage.is_some();
    let Some(spec) = disk.hdd_spec_mut() else {
        return if touches_hdd {
            Err("[disk]: scheduler, queue_depth, write_cache, read_ahead, cache and destage apply to hard disks only".into())
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
    if let Some(d) = &table.destage {
        spec.cache.destage =
            crate::disk::Destage::parse(d).map_err(|e| format!("[disk] destage: {e}"))?;
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
    let exponential_mean_blocks = match stride.mean_stride_blocks {
        None => None,
        Some(mean) if mean.is_finite() && mean >= 1.0 => Some(mean),
        Some(mean) => {
            return Err(format!(
                "[workload] stride.mean_stride_blocks: must be at least 1, got {mean}"
            ))
        }
    };
    Ok(FeedSpec::Stride(StrideSpec {
        is_read,
        block_bytes,
        stride_blocks,
        span_blocks: stride.span_blocks.unwrap_or(8192),
        start_bytes,
        outstanding: stride.outstanding.unwrap_or(32),
        exponential_mean_blocks,
        seed,
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

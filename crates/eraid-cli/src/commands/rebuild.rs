//! `eraid rebuild`: pause, resume, retune or follow the rebuild of a
//! running array.

use super::grow::stop_on_signals;
use crate::control::ControlClient;
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Pause, resume, retune or follow the rebuild of a running array
///
/// Acts on the rebuild (`rebuild` in `eraid detail`) of an array served by
/// `eraid serve --control PATH`:
///   eraid rebuild pause --control ctl.sock
///   eraid rebuild resume --control ctl.sock
///   eraid rebuild set --speed-min 1000 --speed-max 20000 --control ctl.sock
///   eraid rebuild set --strategy pro --hot-zone 64M --control ctl.sock
///   eraid rebuild wait --control ctl.sock
///
/// pause: the stripes in flight finish and the position is recorded; then
/// nothing is rebuilt until `resume`, across restarts of the server too.
/// set: the rebuild's rate floor and ceiling in KiB/s of each replacement
/// (MD's sync_speed_min/max; pr and pro): below the floor it does not
/// yield to users, between the two it goes on only while users are idle.
/// --strategy pr|dor|pro|pro-dor switches a running rebuild (what is
/// rebuilt stays rebuilt); --hot-zone, --time-slice-ms and
/// --popularity-half-life-ms tune PRO (defaults 64 MiB, 100 ms, 10 s).
/// Settings given before any rebuild apply to the next one. wait: a progress bar (rate,
/// ETA) until the rebuild is done (exit 0), stops or is paused (exit 1).
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct RebuildArgs {
    #[command(subcommand)]
    action: RebuildAction,
}

#[derive(Subcommand, Debug)]
enum RebuildAction {
    /// Pause the rebuild (it stays paused until `eraid rebuild resume`).
    Pause(Target),
    /// Let a paused rebuild go on.
    Resume(Target),
    /// Change the rebuild's rate settings.
    Set(SetArgs),
    /// Follow the rebuild until it is done.
    Wait(Target),
}

#[derive(Args, Debug)]
struct Target {
    /// The control socket of `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH")]
    control: PathBuf,
}

#[derive(Args, Debug)]
struct SetArgs {
    /// Rate floor in KiB/s: below it the rebuild does not yield to users.
    #[arg(long = "speed-min", value_name = "KB/S")]
    speed_min: Option<u64>,
    /// Rate ceiling in KiB/s.
    #[arg(long = "speed-max", value_name = "KB/S")]
    speed_max: Option<u64>,
    /// The rebuild strategy: pr, dor, pro or pro-dor.
    #[arg(long, value_name = "NAME", value_parser = parse_strategy)]
    strategy: Option<eraid_core::rebuild::config::RebuildStrategy>,
    /// PRO: the size of a hot zone of each replacement (e.g. 64M).
    #[arg(long = "hot-zone", value_name = "SIZE", value_parser = crate::size::parse_size_bytes)]
    hot_zone_bytes: Option<u64>,
    /// PRO: how long the most popular zone is rebuilt before the next pick.
    #[arg(long = "time-slice-ms", value_name = "MS")]
    time_slice_ms: Option<u64>,
    /// PRO: a zone's access count halves every this many ms.
    #[arg(long = "popularity-half-life-ms", value_name = "MS")]
    popularity_half_life_ms: Option<u64>,
    #[command(flatten)]
    target: Target,
}

impl RebuildArgs {
    pub fn run(self) -> Result<i32> {
        let (target, request) = match &self.action {
            RebuildAction::Pause(t) => (t, Some(json!({"command": "pause-rebuild"}))),
            RebuildAction::Resume(t) => (t, Some(json!({"command": "resume-rebuild"}))),
            RebuildAction::Wait(t) => (t, None),
            RebuildAction::Set(set) => {
                let settings = json!({
                    "strategy": set.strategy.map(|s| s.name()),
                    "speed_min_kib_s": set.speed_min,
                    "speed_max_kib_s": set.speed_max,
                    "hot_zone_bytes": set.hot_zone_bytes,
                    "time_slice_ms": set.time_slice_ms,
                    "popularity_half_life_ms": set.popularity_half_life_ms,
                });
                if settings
                    .as_object()
                    .into_iter()
                    .flatten()
                    .all(|(_, v)| v.is_null())
                {
                    bail!(
                        "nothing to set: give --strategy, --speed-min, --speed-max, --hot-zone, \
                         --time-slice-ms or --popularity-half-life-ms"
                    );
                }
                (
                    &set.target,
                    Some(json!({"command": "tune-rebuild", "settings": settings})),
                )
            }
        };
        let mut client = ControlClient::connect(&target.control)?;
        match request {
            Some(request) => {
                let status = client.call(&request)?;
                println!("{}", rebuild_line(&status["rebuild"]));
                Ok(0)
            }
            None => follow_rebuild(&mut client, &target.control),
        }
    }
}

/// A `--strategy` value, with the names it may be.
pub fn parse_strategy(name: &str) -> Result<eraid_core::rebuild::config::RebuildStrategy, String> {
    eraid_core::rebuild::config::RebuildStrategy::parse(name)
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / 1048576.0)
}

/// One line on a `rebuild` object (live).
pub fn rebuild_line(r: &Value) -> String {
    if r.is_null() {
        return "no rebuild".into();
    }
    let targets: Vec<String> = r["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "member {} ({})",
                t["slot"],
                t["path"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let config = &r["config"];
    if targets.is_empty() && r["kind"] != "replace" {
        // Settings given before any failure: there is nothing to report
        // but what the next rebuild will use.
        return format!(
            "no rebuild running; the next one uses strategy {}, speed {}..{} KiB/s",
            config["strategy"].as_str().unwrap_or("?"),
            config["speed_min_kib_s"],
            config["speed_max_kib_s"],
        );
    }
    let what = if r["kind"] == "replace" {
        format!(
            "replace {} ({}) of member {} ({}) onto {}",
            r["state"].as_str().unwrap_or("?"),
            r["strategy"].as_str().unwrap_or("?"),
            r["source"]["slot"],
            r["source"]["path"].as_str().unwrap_or("retired"),
            r["target"]["path"].as_str().unwrap_or("?"),
        )
    } else {
        format!(
            "rebuild {} ({}) of {}",
            r["state"].as_str().unwrap_or("?"),
            r["strategy"].as_str().unwrap_or("?"),
            targets.join(", "),
        )
    };
    let done = if r["kind"] == "replace" {
        "copied"
    } else {
        "rebuilt"
    };
    let mut line = format!(
        "{what}: {:.1}%, {} of {} {done} ({} recorded), speed {}..{} KiB/s",
        100.0 * r["progress"].as_f64().unwrap_or(0.0),
        mib(r["rebuilt_bytes"].as_f64().unwrap_or(0.0)),
        mib(r["total_bytes"].as_f64().unwrap_or(0.0)),
        mib(r["checkpoint_bytes"].as_f64().unwrap_or(0.0)),
        config["speed_min_kib_s"],
        config["speed_max_kib_s"],
    );
    if r["state"] == "running" {
        line.push_str(&format!(
            ", {}/s",
            mib(r["rate_bytes_per_s"].as_f64().unwrap_or(0.0))
        ));
    }
    if let Some(reason) = r["reason"].as_str() {
        line.push_str(&format!(" ({reason})"));
    }
    line
}

/// Shows the served rebuild's progress until it is done (0), stops or is
/// paused (1), or SIGINT/SIGTERM (130; the rebuild goes on).
pub fn follow_rebuild(client: &mut ControlClient, path: &Path) -> Result<i32> {
    let interrupted = format!(
        "stopped waiting; the rebuild goes on in the server (eraid detail --control {})",
        path.display()
    );
    follow_rebuild_with(&mut || client.status(), &interrupted)
}

/// `follow_rebuild` on any status source (a served array's control socket,
/// or an engine run offline); `interrupted` says what happens on a signal.
pub fn follow_rebuild_with(
    poll: &mut dyn FnMut() -> Result<Value>,
    interrupted: &str,
) -> Result<i32> {
    let stop = stop_on_signals()?;
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("rebuilding [{bar:30}] {percent:>3}% {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut last_line = Instant::now();
    let code = loop {
        if stop.load(Ordering::Relaxed) {
            bar.finish_and_clear();
            eprintln!("{interrupted}");
            break 130;
        }
        let status = poll()?;
        let r = &status["rebuild"];
        if r.is_null() {
            bar.finish_and_clear();
            bail!("the array reports no rebuild");
        }
        let total = r["total_bytes"].as_u64().unwrap_or(0).max(1);
        let done = r["rebuilt_bytes"].as_u64().unwrap_or(0).min(total);
        let rate = r["rate_bytes_per_s"].as_f64().unwrap_or(0.0);
        let eta = match r["eta_s"].as_f64() {
            Some(s) => format!("{}:{:02}", s as u64 / 60, s as u64 % 60),
            None => "-".into(),
        };
        let message = format!("{}/s, ETA {eta}", mib(rate));
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(message.clone());
        if bar.is_hidden() && last_line.elapsed() >= Duration::from_secs(5) {
            eprintln!(
                "rebuilding: {:.1}% {message}",
                100.0 * done as f64 / total as f64
            );
            last_line = Instant::now();
        }
        match r["state"].as_str() {
            Some("done") => {
                bar.finish_and_clear();
                println!("{}", rebuild_line(r));
                break 0;
            }
            Some("paused") | Some("stopped") => {
                bar.finish_and_clear();
                eprintln!("eraid: {}", rebuild_line(r));
                break 1;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    Ok(code)
}

//! `eraid reshape`: pause, resume or retune the growth of a running array.

use super::grow::{follow_served_growth, parse_valve_latency, stop_on_signals};
use crate::control::ControlClient;
use crate::growth_flags::GrowthFlags;
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use eraid_core::growth::config::ReshapeStrategy;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Pause, resume or retune the growth of a running array
///
/// Acts on the growth (`reshape` in `eraid detail`) of an array served by
/// `eraid serve --control PATH`:
///   eraid reshape pause --control ctl.sock
///   eraid reshape resume --control ctl.sock
///   eraid reshape set --speed-max 20000 --control ctl.sock
///
/// pause: the window being moved finishes and what was copied is
/// checkpointed; then nothing moves until `resume`, across restarts of the
/// server too. Users are served throughout. resume is refused while a
/// member is missing or failed. set changes the rate settings of the
/// growth at once and records them with it.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ReshapeArgs {
    #[command(subcommand)]
    action: ReshapeAction,
}

#[derive(Subcommand, Debug)]
enum ReshapeAction {
    /// Pause the growth (it stays paused until `eraid reshape resume`).
    Pause(Target),
    /// Let a paused growth go on.
    Resume(ResumeArgs),
    /// Change the growth's rate settings.
    Set(SetArgs),
}

#[derive(Args, Debug)]
struct Target {
    /// The control socket of `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH")]
    control: PathBuf,
}

#[derive(Args, Debug)]
struct ResumeArgs {
    /// Show a progress bar until the growth is done (exit 0) or pauses
    /// again (exit 1, with the reason).
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    target: Target,
}

#[derive(Args, Debug)]
struct SetArgs {
    /// Rate floor in KiB/s of array data: below it the growth does not
    /// yield to users (MD's sync_speed_min).
    #[arg(long = "speed-min", value_name = "KB/S")]
    speed_min: Option<u64>,
    /// Rate ceiling in KiB/s of array data (MD's sync_speed_max).
    #[arg(long = "speed-max", value_name = "KB/S")]
    speed_max: Option<u64>,
    /// alv: a user I/O slower than this many milliseconds counts as slow.
    #[arg(long, value_name = "MS")]
    latency_bound: Option<f64>,
    /// alv: the valve closes for a period when more than this fraction of
    /// user I/Os were slow (0..1).
    #[arg(long, value_name = "F")]
    slack: Option<f64>,
    /// alv: what the valve times of a user I/O: response, processing or
    /// admission (see `eraid grow --help`).
    #[arg(long, value_name = "READING")]
    valve_latency: Option<String>,
    #[command(flatten)]
    target: Target,
}

impl SetArgs {
    fn flags(&self) -> GrowthFlags {
        GrowthFlags {
            speed_min: self.speed_min,
            speed_max: self.speed_max,
            latency_bound: self.latency_bound,
            slack: self.slack,
            valve_latency: self.valve_latency.is_some(),
            ..GrowthFlags::default()
        }
    }

    /// The flags against the growth the server runs (`status`), so a
    /// refusal names the flags rather than the server's setting fields.
    fn check_against_growth(&self, status: &Value) -> Result<()> {
        let reshape = &status["reshape"];
        if reshape.is_null() {
            // The server says there is no growth to set.
            return Ok(());
        }
        let config = &reshape["config"];
        let flags = self.flags();
        if let Some(strategy) = config["strategy"]
            .as_str()
            .and_then(|name| ReshapeStrategy::parse(name).ok())
        {
            flags.check_strategy(strategy)?;
        }
        if let (Some(floor), Some(ceiling)) = (
            config["speed_min_kib_s"].as_u64(),
            config["speed_max_kib_s"].as_u64(),
        ) {
            flags.check_against(floor, ceiling)?;
        }
        Ok(())
    }
}

impl ReshapeArgs {
    pub fn run(self) -> Result<i32> {
        let (target, request) = match &self.action {
            ReshapeAction::Pause(t) => (t, json!({"command": "pause-grow"})),
            ReshapeAction::Resume(r) => (&r.target, json!({"command": "resume-grow"})),
            ReshapeAction::Set(set) => {
                set.flags().check()?;
                let valve_latency = set
                    .valve_latency
                    .as_deref()
                    .map(parse_valve_latency)
                    .transpose()?;
                let settings = json!({
                    "speed_min_kib_s": set.speed_min,
                    "speed_max_kib_s": set.speed_max,
                    "latency_bound_ms": set.latency_bound,
                    "slack": set.slack,
                    "valve_latency": valve_latency,
                });
                if settings
                    .as_object()
                    .is_some_and(|o| o.values().all(Value::is_null))
                {
                    bail!(
                        "nothing to set: give --speed-min, --speed-max, --latency-bound, --slack or --valve-latency"
                    );
                }
                (
                    &set.target,
                    json!({"command": "tune-grow", "settings": settings}),
                )
            }
        };
        let mut client = ControlClient::connect(&target.control)?;
        if let ReshapeAction::Set(set) = &self.action {
            set.check_against_growth(&client.status()?)?;
        }
        let status = client.call(&request)?;
        println!("{}", summary(&status["reshape"]));
        match &self.action {
            ReshapeAction::Resume(r) if r.wait => {
                let stop = stop_on_signals()?;
                follow_served_growth(&mut client, &r.target.control, &stop)
            }
            _ => Ok(0),
        }
    }
}

/// One line on the growth after the command.
fn summary(reshape: &Value) -> String {
    let progress = reshape["progress"].as_f64().unwrap_or(0.0) * 100.0;
    let config = &reshape["config"];
    let mut line = format!(
        "growth {} ({}, {progress:.1}% moved",
        reshape["state"].as_str().unwrap_or("?"),
        reshape["strategy"].as_str().unwrap_or("?"),
    );
    if let Some(reason) = reshape["pause_reason"].as_str() {
        line.push_str(&format!(": {reason}"));
    }
    line.push_str(&format!(
        "); speed {}..{} KiB/s",
        config["speed_min_kib_s"], config["speed_max_kib_s"]
    ));
    if reshape["strategy"] == "alv" {
        line.push_str(&format!(
            ", latency bound {} ms, slack {}, valve timing {}",
            config["latency_bound_ms"], config["slack"], config["valve_latency"]
        ));
    }
    line
}

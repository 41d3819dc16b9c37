//! `eraid grow`: add members to an array and redistribute its data online,
//! on a running server (--control) or offline on the named members.

use crate::control::ControlClient;
use crate::growth_flags::GrowthFlags;
use crate::members::{check_added_members, check_distinct, member_bytes_needed};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use eraid_core::growth::config::{GrowthTuning, ReshapeConfig, ReshapeStrategy, ValveLatency};
use eraid_core::growth::record::ReshapeState;
use eraid_core::growth::scale_crs::CrsMatrix;
use eraid_core::io::AdminCommand;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Add members to an array and move its data onto them, online
///
/// Adds the files or block devices given with --add to the array and
/// redistributes its data over all members while the array stays in use.
/// With --control PATH it asks a running `eraid serve --control PATH` to do
/// it (NBD clients keep working throughout; new connections see the larger
/// capacity once the growth is done). Without --control it works offline on
/// the named members: it assembles and locks them as `serve` does, grows,
/// waits, and closes the array cleanly.
///
/// Each added file must exist, be at least as large as the array's members,
/// and carry no eraid metadata (not a member of this or another array);
/// otherwise nothing changes. Put the array's members before --add, or end
/// the --add list with `--`:
///   eraid grow d0 d1 d2 d3 --add d4 d5
///   eraid grow --add d4 d5 -- d0 d1 d2 d3
///   eraid grow --add d4 d5 --control ctl.sock
///
/// Strategies (default: fastscale for RAID-0, alv for RAID-5, epu for CRS):
///   RAID-0:
///   round-robin  keeps round-robin order (almost every chunk moves), moved
///                in reordering-window order with aggregated I/O and lazy
///                checkpoints (SLAS).
///   semi-rr      moves a chunk only if its round-robin place after the
///                growth is on a new member (minimal movement; the data is
///                not spread evenly after repeated growths).
///   fastscale    moves the minimum, n/(m+n) of the data, and keeps it
///                spread evenly over repeated growths (FastScale).
///   RAID-5:
///   md-reshape   Linux MD's reshape: page-sized I/O through a stripe
///                cache, a fixed window that blocks users, its position
///                recorded every 3000 KiB per member; yields to users
///                down to --speed-min.
///   alv          ALV: large aligned I/O (new parity from new data only),
///                lazy checkpoints, and an on/off valve that pauses moving
///                data for a period when users were congested or too many
///                of their I/Os exceeded --latency-bound (more than --slack).
///   CRS (k data + m parity members growing by t data members):
///   scale-crs    Scale-CRS's minimum migration: in each unit of
///                (k+t)/gcd(k+t,t) rows every old data member hands its last
///                t/(k+t) of the unit's chunks to the new members; parity
///                stays in place and is updated by read-modify-write.
///   epu          the same migration; each unit's parity is updated by
///                read-modify-write or reconstruct-write, whichever reads
///                fewer blocks (EPU's Algorithm 1), and the unit's reads are
///                merged into as few I/Os as possible; blocks a user read
///                has just brought in (up to 16 MiB) are not read again
///                (I/O overlap).
///   A grown CRS array grows again over its grown layout; --matrix picks
///   the coding matrix after each growth (`detail --json`: crs_matrix,
///   crs_growths).
///
/// Without --no-wait a progress bar shows moved bytes, rate and ETA until
/// the growth is done (exit 0) or pauses (exit 1, with the reason); a
/// pause while a hot spare is rebuilt for a failed member is waited
/// through, since the growth goes on by itself after the rebuild. After a
/// crash, the next `eraid serve` of all members (old and new) resumes the
/// growth from its last checkpoint by itself. `eraid detail` shows
/// `reshape` during and after a growth; `eraid reshape pause|resume|set`
/// pauses, resumes or retunes it on a running server.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct GrowArgs {
    /// Files, block devices or NBD exports to add (same size as the
    /// members or larger).
    #[arg(long = "add", value_name = "MEMBER", num_args = 1.., required = true)]
    add: Vec<PathBuf>,
    /// round-robin, semi-rr or fastscale (RAID-0); md-reshape or alv
    /// (RAID-5); scale-crs or epu (CRS).
    #[arg(long)]
    strategy: Option<String>,
    /// Start the growth and return at once (follow it with `eraid detail`).
    /// Offline, the growth is recorded and continues when the array is next
    /// served.
    #[arg(long)]
    no_wait: bool,
    /// Largest redistribution I/O per member, in KiB (default 1024): reads
    /// and writes of successive chunks are merged up to this size.
    #[arg(long, value_name = "N")]
    aggregation_kib: Option<u64>,
    /// alv: a user I/O slower than this many milliseconds counts as slow (default 15).
    #[arg(long, value_name = "MS")]
    latency_bound: Option<f64>,
    /// alv: the valve closes for a period when more than this fraction of
    /// user I/Os were slow (0..1, default 0.1).
    #[arg(long, value_name = "F")]
    slack: Option<f64>,
    /// alv: what the valve times of a user I/O. response (default): arrival
    /// to reply, and any request the growth holds back (at the window being
    /// moved, or for a checkpoint) closes the valve by itself. processing:
    /// arrival to reply, holds included, and only running out of buffers
    /// (256 user I/Os in the array) counts as congestion. admission: only
    /// how long the growth held the request back.
    #[arg(long, value_name = "READING")]
    valve_latency: Option<String>,
    /// Rate floor in KiB/s of array data: below it the growth does not
    /// yield to users (default 1000, as MD's sync_speed_min, or --speed-max
    /// if that is lower).
    #[arg(long = "speed-min", value_name = "KB/S")]
    speed_min: Option<u64>,
    /// Rate ceiling in KiB/s of array data (default 200000, as MD's
    /// sync_speed_max, or --speed-min if that is higher). The growth moves
    /// whole windows, so a low ceiling is kept on average, window by window.
    #[arg(long = "speed-max", value_name = "KB/S")]
    speed_max: Option<u64>,
    /// The EPU paper's rate control: at most N blocks of 4 KiB per second,
    /// the blocks users ask for and the growth's device I/O together,
    /// judged per 1 s slot; users go first and the growth starts no window in a slot
    /// whose budget they spent (the paper uses 1200 to 1500). Default: off.
    #[arg(long = "io-rate-max", value_name = "BLOCKS/S")]
    io_rate_max: Option<u64>,
    /// scale-crs, epu: the coding matrix after the growth. jerasure
    /// (default): Jerasure's own matrix for the new width, as the EPU
    /// paper's Table I, Fig. 4 and experiments. optimized: Scale-CRS's
    /// (the paper's Table II): the old columns kept, new ones appended, so
    /// unmoved data never enter a parity update.
    #[arg(long, value_name = "MATRIX")]
    matrix: Option<String>,
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// The array's members, when no server runs it (offline growth).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

/// A flag raised by SIGINT or SIGTERM: waiting stops, the growth goes on.
pub(crate) fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install signal handlers")?;
    }
    Ok(stop)
}

/// Shows a served growth's progress until it is done or paused, or `stop`
/// is raised; the exit code.
pub(crate) fn follow_served_growth(
    client: &mut ControlClient,
    path: &std::path::Path,
    stop: &AtomicBool,
) -> Result<i32> {
    let interrupted = format!(
        "stopped waiting; the growth goes on in the server (eraid detail --control {})",
        path.display()
    );
    Ok(exit_code(
        wait_for_growth(&mut || client.status(), stop)?,
        &interrupted,
    ))
}

/// Reports how waiting for a growth ended; the exit code: 0 done,
/// 1 paused, 130 interrupted (`interrupted` says what happens next).
fn exit_code(end: WaitEnd, interrupted: &str) -> i32 {
    match end {
        WaitEnd::Done(status, waited) => {
            report_done(&status, waited);
            0
        }
        WaitEnd::Paused(reason) => {
            eprintln!("eraid: the growth paused: {reason}");
            1
        }
        WaitEnd::Interrupted => {
            eprintln!("{interrupted}");
            130
        }
    }
}

/// An array's level as growth sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowLevel {
    /// RAID-N.
    Raid(u64),
    Crs,
}

impl GrowLevel {
    /// From `status` / `detail --json`'s `level` (a number, or "crs").
    pub fn from_status(level: &Value) -> GrowLevel {
        match level.as_u64() {
            Some(n) => GrowLevel::Raid(n),
            None if level == "crs" => GrowLevel::Crs,
            None => GrowLevel::Raid(u64::MAX),
        }
    }
}

/// Which strategies grow which level.
pub fn check_strategy(level: GrowLevel, strategy: ReshapeStrategy) -> Result<()> {
    let grows = if strategy.grows_crs() {
        "CRS arrays"
    } else if strategy.raid0_placement().is_some() {
        "RAID-0"
    } else {
        "RAID-5"
    };
    match level {
        GrowLevel::Raid(0) if strategy.raid0_placement().is_some() => Ok(()),
        GrowLevel::Raid(5) if grows == "RAID-5" => Ok(()),
        GrowLevel::Crs if strategy.grows_crs() => Ok(()),
        GrowLevel::Raid(0) => bail!(
            "{} grows {grows}; for RAID-0 use round-robin, semi-rr or fastscale",
            strategy.name()
        ),
        GrowLevel::Raid(5) => bail!(
            "{} grows {grows}; for RAID-5 use alv or md-reshape",
            strategy.name()
        ),
        GrowLevel::Crs => bail!(
            "{} grows {grows}; for CRS use scale-crs or epu",
            strategy.name()
        ),
        GrowLevel::Raid(level) => {
            bail!("growing RAID-{level} is not supported (RAID-0, RAID-5 and CRS are)")
        }
    }
}

/// A `--valve-latency` value (grow, reshape set).
pub(crate) fn parse_valve_latency(name: &str) -> Result<ValveLatency> {
    ValveLatency::parse(name).ok_or_else(|| {
        anyhow!("--valve-latency: '{name}' is not response, admission or processing")
    })
}

impl GrowArgs {
    /// The settings, checked against the array's level.
    fn config(&self, level: GrowLevel) -> Result<ReshapeConfig> {
        let strategy = match &self.strategy {
            Some(name) => ReshapeStrategy::parse(name).map_err(|e| anyhow!("--strategy: {e}"))?,
            None if level == GrowLevel::Raid(0) => ReshapeStrategy::FastScale,
            None if level == GrowLevel::Crs => ReshapeStrategy::Epu,
            None => ReshapeStrategy::Alv,
        };
        check_strategy(level, strategy)?;
        let flags = self.flags();
        flags.check()?;
        flags.check_strategy(strategy)?;
        let mut config = ReshapeConfig::with_strategy(strategy);
        if let Some(name) = &self.matrix {
            if !strategy.grows_crs() {
                bail!(
                    "--matrix chooses a CRS array's coding matrix; {} does not grow CRS arrays",
                    strategy.name()
                );
            }
            config.crs_matrix = CrsMatrix::parse(name).map_err(|e| anyhow!("--matrix: {e}"))?;
        }
        if let Some(kib) = self.aggregation_kib {
            config.aggregation_bytes = kib * 1024;
        }
        match self.io_rate_max {
            Some(0) => bail!(
                "--io-rate-max must be at least 1 block per second (leave it out for no budget)"
            ),
            Some(blocks) => config.io_rate_max_blocks_s = blocks,
            None => {}
        }
        // The valve's settings, by the rule `reshape set` uses too (ALV only).
        let valve = GrowthTuning {
            latency_bound_ms: self.latency_bound,
            slack: self.slack,
            valve_latency: self
                .valve_latency
                .as_deref()
                .map(parse_valve_latency)
                .transpose()?,
            ..GrowthTuning::default()
        };
        let mut config = valve
            .applied_to(&config)
            .map_err(|e| anyhow!("bad growth settings: {e}"))?;
        // A flag given alone moves the other bound's default with it: a
        // floor above the default ceiling raises the ceiling, a ceiling
        // below the default floor lowers the floor.
        match (self.speed_min, self.speed_max) {
            (Some(min), Some(max)) => (config.speed_min_kib_s, config.speed_max_kib_s) = (min, max),
            (Some(min), None) => {
                config.speed_min_kib_s = min;
                config.speed_max_kib_s = config.speed_max_kib_s.max(min);
            }
            (None, Some(max)) => {
                config.speed_max_kib_s = max;
                config.speed_min_kib_s = config.speed_min_kib_s.min(max);
            }
            (None, None) => {}
        }
        // The flags were checked above; this is the engine's own rule.
        config
            .validate()
            .map_err(|e| anyhow!("bad growth settings: {e}"))?;
        Ok(config)
    }

    fn flags(&self) -> GrowthFlags {
        GrowthFlags {
            aggregation_kib: self.aggregation_kib,
            speed_min: self.speed_min,
            speed_max: self.speed_max,
            latency_bound: self.latency_bound,
            slack: self.slack,
            valve_latency: self.valve_latency.is_some(),
        }
    }

    /// Settings that are wrong whatever the array (checked before touching it).
    fn precheck(&self) -> Result<()> {
        if let Some(name) = &self.strategy {
            ReshapeStrategy::parse(name).map_err(|e| anyhow!("--strategy: {e}"))?;
        }
        if let Some(name) = &self.valve_latency {
            parse_valve_latency(name)?;
        }
        if let Some(name) = &self.matrix {
            CrsMatrix::parse(name).map_err(|e| anyhow!("--matrix: {e}"))?;
        }
        self.flags().check()
    }

    pub fn run(self) -> Result<i32> {
        self.precheck()?;
        let stop = stop_on_signals()?;
        match self.control.clone() {
            Some(path) => self.run_control(&path, &stop),
            None => self.run_offline(&stop),
        }
    }

    fn run_control(self, path: &std::path::Path, stop: &AtomicBool) -> Result<i32> {
        let mut client = ControlClient::connect(path)?;
        let status = client.status()?;
        let config = self.config(GrowLevel::from_status(&status["level"]))?;
        check_distinct(&self.add)?;
        // The server resolves paths against its own directory: send absolute ones.
        let add: Vec<String> = self
            .add
            .iter()
            .map(|p| crate::member_name::absolute(p).display().to_string())
            .collect();
        let started = client
            .call(&json!({"command": "grow", "add": add, "config": config}))
            .context("cannot grow")?;
        for warning in started["warnings"].as_array().into_iter().flatten() {
            eprintln!("{}", warning.as_str().unwrap_or_default());
        }
        announce(&started, &config);
        if self.no_wait {
            println!("follow it with: eraid detail --control {}", path.display());
            return Ok(0);
        }
        follow_served_growth(&mut client, path, stop)
    }

    fn run_offline(self, stop: &AtomicBool) -> Result<i32> {
        // Added files that are members already are refused by
        // `check_added_members`, naming them as such.
        check_distinct(&self.members)?;
        check_distinct(&self.add)?;
        // Everything below reads only, until the engine starts.
        let (mut locks, assembled) = crate::members::lock_and_assemble(&self.members)?;
        let sb = &assembled.assembly.superblock;
        if let Some(record) = &sb.reshape {
            if record.state != ReshapeState::Done {
                bail!(
                    "a growth ({}, {} -> {} members) is already recorded on these members, {:.1}% checkpointed ({}); \
                     serve the array with all its members (eraid serve) so it finishes, then grow again",
                    record.config.strategy.name(),
                    record.old_geometry.member_count,
                    sb.geometry.member_count,
                    100.0 * record.checkpoint_chunk as f64 / record.total_chunks.max(1) as f64,
                    record.state.name()
                );
            }
        }
        let level = match sb.geometry.level.number() {
            Some(n) => GrowLevel::Raid(u64::from(n)),
            None => GrowLevel::Crs,
        };
        let config = self.config(level)?;
        // A RAID-0 grown by fastscale or semi-rr keeps growing that way
        // (the core refuses otherwise; say so before anything is written).
        if let Some(placement) = &sb.placement {
            if config.strategy.raid0_placement() != Some(placement.strategy) {
                bail!(
                    "this array was grown with {}; grow it again with --strategy {}",
                    placement.strategy.name(),
                    placement.strategy.name()
                );
            }
        }
        if assembled.assembly.missing_or_stale() > 0 {
            bail!(
                "the array is degraded (a member is missing or stale); rebuild it before growing"
            );
        }
        let added = check_added_members(
            &self.add,
            &assembled.paths,
            member_bytes_needed(&sb.geometry),
        )?;
        let mut all = assembled.paths.clone();
        all.extend(self.add.iter().cloned());
        for warning in crate::space::shortfall_warnings(&all, member_bytes_needed(&sb.geometry)) {
            eprintln!("{warning}");
        }
        let running = crate::runtime::start_assembled(
            assembled,
            crate::runtime::real_member_options(),
            None,
        )?;
        for line in &running.report {
            eprintln!("{line}");
        }
        crate::runtime::wait_for_resync(&running, false)?;
        let (members, added_locks) = added.into_grow_members();
        locks.extend(added_locks);
        let handle = running.handle();
        let started = match handle.grow(members, config.clone()) {
            Ok(status) => status,
            Err(error) => {
                running.close()?;
                bail!("the array refused to grow: {error}");
            }
        };
        announce(&started, &config);
        if self.no_wait {
            running.close()?;
            println!(
                "the growth is recorded on the members and continues when the array is next served \
                 (eraid serve with all {} members)",
                started["member_count"]
            );
            return Ok(0);
        }
        let end = wait_for_growth(
            &mut || {
                handle
                    .admin(AdminCommand::Status)
                    .map_err(|e| anyhow!("the array stopped: {e}"))
            },
            stop,
        );
        let closed = running.close();
        let end = end?;
        closed?;
        drop(locks);
        Ok(exit_code(
            end,
            "interrupted: the growth is checkpointed and resumes when the array is next \
             served (eraid serve with all its members)",
        ))
    }
}

fn announce(status: &Value, config: &ReshapeConfig) {
    let reshape = &status["reshape"];
    println!(
        "growth started: {}, {} -> {} members",
        config.strategy.name(),
        reshape["old_member_count"],
        reshape["new_member_count"]
    );
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / 1048576.0)
}

fn report_done(status: &Value, waited: Duration) {
    let r = &status["reshape"];
    let elapsed = r["elapsed_s"].as_f64().unwrap_or(waited.as_secs_f64());
    println!(
        "growth done: {} members, capacity {} bytes ({}); moved {} in {:.1} s ({}), {} metadata writes",
        status["member_count"],
        status["capacity_bytes"],
        mib(status["capacity_bytes"].as_f64().unwrap_or(0.0)),
        mib(r["moved_bytes"].as_f64().unwrap_or(0.0)),
        elapsed,
        r["strategy"].as_str().unwrap_or("?"),
        r["metadata_writes"]
    );
}

enum WaitEnd {
    /// The last status, and how long the wait took.
    Done(Value, Duration),
    Paused(String),
    Interrupted,
}

/// What a paused growth waits for, if not for the operator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PausedFor {
    /// A failed member is being rebuilt: the growth goes on after.
    Rebuild,
    /// A member failed and a spare is here to take it over (once the
    /// growth has recorded its position).
    SpareTakeover,
    Other,
}

fn paused_for(status: &Value) -> PausedFor {
    if status["reshape"]["held"] == true {
        return PausedFor::Other;
    }
    if status["rebuild"]["state"] == "running" && status["rebuild"]["kind"] != "replace" {
        return PausedFor::Rebuild;
    }
    let spare_here = status["members"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["state"] == "spare"));
    if status["degraded"] == true && spare_here {
        PausedFor::SpareTakeover
    } else {
        PausedFor::Other
    }
}

/// How long a paused growth is waited through for a spare to take over
/// (it does as soon as the growth's position is recorded: milliseconds).
const SPARE_TAKEOVER_WAIT: Duration = Duration::from_secs(30);

/// Polls the status until the growth is done or paused, drawing a progress
/// bar (or, when stderr is not a terminal, a line every few seconds).
fn wait_for_growth(poll: &mut dyn FnMut() -> Result<Value>, stop: &AtomicBool) -> Result<WaitEnd> {
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("growing [{bar:30}] {percent:>3}% {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut last_line = Instant::now();
    let started = Instant::now();
    let mut takeover_since: Option<Instant> = None;
    let end = loop {
        if stop.load(Ordering::Relaxed) {
            break WaitEnd::Interrupted;
        }
        let status = poll()?;
        let r = &status["reshape"];
        if r.is_null() {
            bar.finish_and_clear();
            bail!("the array reports no growth");
        }
        let total = r["total_bytes"].as_u64().unwrap_or(0).max(1);
        let processed = r["processed_bytes"].as_u64().unwrap_or(0).min(total);
        let rate = r["rate_bytes_s"].as_f64().unwrap_or(0.0);
        let eta = if rate > 0.0 {
            let s = ((total - processed) as f64 / rate) as u64;
            format!("{}:{:02}", s / 60, s % 60)
        } else {
            "-".into()
        };
        let message = format!(
            "moved {}, {}/s, ETA {eta}",
            mib(r["moved_bytes"].as_f64().unwrap_or(0.0)),
            mib(rate)
        );
        bar.set_length(total);
        bar.set_position(processed);
        bar.set_message(message.clone());
        if bar.is_hidden() && last_line.elapsed() >= Duration::from_secs(5) {
            eprintln!(
                "growing: {:.1}% {message}",
                100.0 * processed as f64 / total as f64
            );
            last_line = Instant::now();
        }
        // Paused for a failed member a spare rebuilds (or is about to):
        // the growth goes on by itself once the rebuild is done.
        let waits_for_rebuild = r["state"] == "paused"
            && match paused_for(&status) {
                PausedFor::Rebuild => {
                    takeover_since = None;
                    true
                }
                PausedFor::SpareTakeover => {
                    takeover_since.get_or_insert_with(Instant::now).elapsed() < SPARE_TAKEOVER_WAIT
                }
                PausedFor::Other => false,
            };
        match r["state"].as_str() {
            Some("done") => break WaitEnd::Done(status, started.elapsed()),
            Some("paused") if waits_for_rebuild => {
                bar.set_message(format!("paused while a member is rebuilt; {message}"));
            }
            Some("paused") => {
                break WaitEnd::Paused(
                    r["pause_reason"]
                        .as_str()
                        .unwrap_or("no reason given")
                        .to_string(),
                )
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    bar.finish_and_clear();
    Ok(end)
}

//! A running array: assembled members, the core engine and its driver.

use crate::members::Assembled;
use crate::output::say;
use anyhow::{Context, Result};
use eraid_core::io::ArrayEvent;
use eraid_core::{Array, ArrayOptions};
use eraid_driver::{CloseOutcome, Engine, EngineConfig, EngineHandle};
use std::time::Instant;

pub struct Running {
    pub engine: Engine,
    pub report: Vec<String>,
    pub events: crossbeam_channel::Receiver<ArrayEvent>,
}

impl Running {
    pub fn handle(&self) -> EngineHandle {
        self.engine.handle()
    }

    /// Flushes, marks the members clean and stops the engine.
    pub fn close(self) -> Result<()> {
        match self.engine.close() {
            CloseOutcome::Closed => Ok(()),
            other => anyhow::bail!(
                "the array did not close cleanly ({other:?}); it will resync on next start"
            ),
        }
    }
}

/// Default member timeout: a device I/O not done within it fails the member.
pub const DEFAULT_MEMBER_TIMEOUT_S: u64 = 30;

/// Default window a sequential write's partial last stripe waits for the
/// rest of the stripe (`ArrayOptions::write_gather_window_us`).
pub const DEFAULT_WRITE_GATHER_WINDOW_US: u64 = 2_000;

/// The engine's options for real members when no flag says otherwise:
/// the core's defaults plus the member timeout (real devices can hang).
pub fn real_member_options() -> ArrayOptions {
    ArrayOptions {
        member_timeout_ms: Some(DEFAULT_MEMBER_TIMEOUT_S * 1000),
        write_gather_window_us: DEFAULT_WRITE_GATHER_WINDOW_US,
        ..ArrayOptions::default()
    }
}

/// Starts the engine on members already assembled (which wrote nothing):
/// from here on the array marks its members dirty. An array with a journal
/// gets it opened and replayed first (at `journal_path`, else where the
/// superblock last saw it).
pub fn start_assembled(
    assembled: Assembled,
    options: ArrayOptions,
    journal_path: Option<&std::path::Path>,
) -> Result<Running> {
    start_assembled_with(assembled, options, journal_path, IoPath::Auto)
}

/// Where device I/Os run (`serve --io-path`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum IoPath {
    /// Members in memory (files on tmpfs or ramfs) are read and written by
    /// the thread running the request (the connection that submitted it,
    /// or a drive thread for large writes); every other member by the I/O
    /// workers.
    #[default]
    Auto,
    /// Every device I/O goes to the I/O worker threads.
    Pool,
}

/// [`start_assembled`] with the I/O path chosen.
pub fn start_assembled_with(
    assembled: Assembled,
    mut options: ArrayOptions,
    journal_path: Option<&std::path::Path>,
    io_path: IoPath,
) -> Result<Running> {
    let journal = crate::journal::open_recorded(&assembled.assembly.superblock, journal_path)?;
    let Assembled {
        assembly,
        paths,
        devices,
        direct,
    } = assembled;
    for (path, direct) in paths.iter().zip(&direct) {
        tracing::info!(
            "{}: {}",
            path.display(),
            if *direct { "O_DIRECT" } else { "buffered I/O" }
        );
    }
    let member_timeout_ms = options.member_timeout_ms;
    let mut report = assembly.report.clone();
    let journal_file = journal.map(|opened| {
        let records = opened.setup.found.len();
        if records > 0 {
            report.push(format!(
                "journal {}: replaying {records} records before serving",
                opened.file.path().display()
            ));
        }
        options.journal = Some(opened.setup);
        opened.file as std::sync::Arc<dyn eraid_driver::MemberIo>
    });
    let array = Array::open(assembly, options, eraid_core::io::TimeNs(0));
    let (sender, events) = crossbeam_channel::unbounded();
    let engine = Engine::start_with_devices(
        Box::new(array),
        devices,
        EngineConfig {
            io_threads: None,
            event_sink: Some(sender),
            member_timeout: member_timeout_ms.map(std::time::Duration::from_millis),
            journal: journal_file,
            io_pool_only: io_path == IoPath::Pool,
        },
    )
    .context("cannot start the array engine")?;
    Ok(Running {
        engine,
        report,
        events,
    })
}

/// Blocks until a resync that started at open has finished (or none runs),
/// reporting progress; used by offline commands so they work on a settled array.
pub fn wait_for_resync(running: &Running, quiet: bool) -> Result<()> {
    let started = Instant::now();
    loop {
        let status = running
            .handle()
            .admin(eraid_core::io::AdminCommand::Status)?;
        let activity = &status["activity"];
        if status["phase"] == "opening" {
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        if activity.is_null() || activity["kind"] != "resync" || activity["state"] == "done" {
            if !quiet && !activity.is_null() && activity["kind"] == "resync" {
                say!(
                    "resync finished in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

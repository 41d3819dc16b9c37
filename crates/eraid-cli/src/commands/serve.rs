//! `eraid serve`: run the array and export it over NBD until SIGINT/SIGTERM/SIGHUP,
//! optionally with a control socket (see `crate::control` for its protocol).

use crate::commands::serve_tls::{tls_policy, TlsMode};
use crate::control::{ControlContext, ControlListener};
use crate::export::ArrayExport;
use crate::output::{say, say_out};
use crate::socket_path::socket_path;
use anyhow::{Context, Result};
use clap::Args;
use eraid_core::geometry::Level;
use eraid_core::growth::record::ReshapeState;
use eraid_core::io::{AdminCommand, ArrayEvent};
use eraid_core::metadata::assemble::SlotState;
use eraid_core::metadata::superblock::ArrayState;
use eraid_core::ArrayOptions;
use eraid_nbd::{Listener, Server, ServerConfig};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Serve the array over NBD (Unix socket or TCP) until SIGINT/SIGTERM/SIGHUP
///
/// Assembles the array from its members (one missing member is fine for
/// RAID-5 and RAID-10, two for RAID-6), listens, and prints the NBD URI to
/// connect to (e.g. with nbdcopy, qemu-img, nbdfuse or fio). On SIGINT,
/// SIGTERM or SIGHUP it stops accepting, finishes in-flight requests (a client
/// that does not take its replies is dropped), flushes every member, marks the
/// members clean and exits 0, within --shutdown-timeout-s plus the flush. After an unclean stop, parity of the regions
/// the write-intent bitmap marks dirty is resynced while serving. The
/// members are locked: a second serve or check of them is refused.
///
/// With --control PATH it also listens on a Unix control socket, through
/// which `eraid grow --control PATH` grows the array online, and `eraid
/// detail --control PATH` and `eraid check --control PATH` reach the running
/// array. Protocol: one JSON request per line, one JSON answer per line:
/// {"command":"status"}, {"command":"grow","add":["/abs/path",...],
/// "config":{"strategy":"alv",...}}, {"command":"check","repair":false},
/// {"command":"pause-grow"}, {"command":"resume-grow"},
/// {"command":"tune-grow","settings":{"speed_max_kib_s":20000}},
/// {"command":"add","path":"/abs/path","spare":false},
/// {"command":"fail","member":"/abs/path"}, {"command":"remove",...},
/// {"command":"pause-rebuild"}, {"command":"resume-rebuild"},
/// {"command":"tune-rebuild","settings":{"speed_max_kib_s":20000}};
/// answers {"ok":true,"status":{...}} or {"ok":false,"error":"..."}.
/// `eraid add|fail|remove|rebuild --control PATH` use them.
///
/// A failed member's contents are rebuilt onto a replacement (`eraid add`)
/// or a hot spare the array records (it takes over by itself), while the
/// array serves; an interrupted rebuild resumes from its last checkpoint.
///
/// A growth recorded on the members (interrupted by a crash or a stop)
/// resumes from its last checkpoint by itself; give every member, old and
/// new. Clients connecting after a growth finished see the new capacity.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Listen on this Unix socket (default: ./eraid.sock when --listen is not given).
    #[arg(long, conflicts_with = "listen")]
    socket: Option<PathBuf>,
    /// Listen on TCP at ADDR:PORT (e.g. 127.0.0.1:10809). Only loopback unless you name another address.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Also listen for control requests (grow, status, check) on this Unix
    /// socket. A stale socket file is replaced; a live one is refused.
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// Serve even though a growth is unfinished and a member is missing or
    /// stale. The absent member is then recorded as failed and the growth
    /// stays paused until a rebuild; without this flag serve refuses.
    #[arg(long)]
    allow_degraded_growth: bool,
    /// Serve a RAID-5/6 even though it was not shut down cleanly (regions
    /// marked for resync) and a member is missing or stale. Parity in those
    /// regions may not match the data, so what is rebuilt from it for the
    /// absent member may be wrong; without this flag serve refuses (as
    /// Linux MD refuses to start a dirty degraded array).
    #[arg(long)]
    allow_dirty_degraded: bool,
    /// When more members have failed than the array survives, take back
    /// the failed members given whose metadata is most recent (highest
    /// event count), as few as make the array run (Linux MD's
    /// --assemble --force), record them active again and mark every region
    /// for resync. Writes made while a member taken back was failed are
    /// lost on it, and stripes being written when it failed may read back
    /// wrong (the write hole). Use it when the failed members are healthy
    /// again, for example after space was freed on a full filesystem.
    /// Implies --allow-dirty-degraded for this start.
    #[arg(long)]
    force: bool,
    /// A client must finish the NBD handshake within this many seconds of
    /// connecting, or it is disconnected.
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    handshake_timeout_s: u64,
    /// Clients served at once (in the transmission phase); more are refused
    /// until one leaves.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    max_connections: u64,
    /// Connections still in the handshake at once, apart from
    /// --max-connections; when full, a new connection displaces the oldest
    /// handshake, so silent clients cannot lock others out.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    handshake_reserve: u64,
    /// Requests one connection may have in flight; it is not read further
    /// until some are answered.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_in_flight_requests: u64,
    /// Read and write bytes one connection may have in flight, in MiB (at
    /// least 32, one maximal request).
    #[arg(long, value_name = "MIB", default_value_t = 128,
          value_parser = clap::value_parser!(u64).range(32..=65536))]
    max_in_flight_mib: u64,
    /// A reply must reach the client within this many seconds (the clock
    /// does not restart on partial progress); a client that reads too
    /// slowly, or not at all, is disconnected.
    #[arg(long, value_name = "SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    send_timeout_s: u64,
    /// On SIGINT/SIGTERM/SIGHUP, connections still open after this many
    /// seconds are cut (requests already taken still complete in the
    /// array); then the members are flushed and marked clean.
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    shutdown_timeout_s: u64,
    /// Serve NBD over TLS with the X.509 certificates in DIR, laid out as
    /// for qemu: server-cert.pem (leaf first, then any intermediates) and
    /// server-key.pem; ca-cert.pem is for the clients. Implies --tls require.
    #[arg(long, value_name = "DIR")]
    tls_cert: Option<PathBuf>,
    /// require: plaintext clients are refused (NBD_REP_ERR_TLS_REQD);
    /// allow: TLS and plaintext clients are both served; off: no TLS.
    /// Default: require with --tls-cert or --tls-psk, else off.
    #[arg(long, value_name = "MODE")]
    tls: Option<TlsMode>,
    /// Serve NBD over TLS with pre-shared keys: FILE holds
    /// username:hexkey lines (nbdkit's and qemu's format, as psktool
    /// writes). Clients connect with e.g.
    /// nbds://USER@HOST/?tls-psk-file=FILE. Implies --tls require; not
    /// with --tls-cert.
    #[arg(long, value_name = "FILE")]
    tls_psk: Option<PathBuf>,
    /// With --tls-cert: every client must present a certificate signed by
    /// DIR/ca-cert.pem (qemu-nbd's verify-peer); others fail the TLS
    /// handshake. libnbd clients present client-cert.pem and
    /// client-key.pem from their tls-certificates directory.
    #[arg(long)]
    tls_verify_peer: bool,
    /// A read error on a member is repaired (rebuilt from the others,
    /// rewritten, read back) and the member stays, until it has had more
    /// than this many (the count halves every hour without one): then it is
    /// failed. Linux MD's max_read_errors.
    #[arg(long, value_name = "N", default_value_t = eraid_core::array::member_health::DEFAULT_MAX_READ_ERRORS,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    max_read_errors: u32,
    /// A member I/O not completed within this many seconds fails the
    /// member (the array goes on degraded); a slower member is only
    /// reported (latency in `detail --json`).
    #[arg(long, value_name = "SECONDS", default_value_t = crate::runtime::DEFAULT_MEMBER_TIMEOUT_S,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    member_timeout_s: u64,
    /// RAID-5/6: the end of a sequential write that covers only part of a
    /// stripe waits up to this many microseconds for the next request to
    /// cover the rest, so the stripe is written whole without reading old
    /// data or parity. After a wait nothing completed (a client that sends
    /// each write only after the previous reply), that stream's next 64
    /// writes do not wait; a stream whose waits were completed before is
    /// only late, and waits up to four times this. 0: never.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = crate::runtime::DEFAULT_WRITE_GATHER_WINDOW_US,
          value_parser = clap::value_parser!(u64).range(0..=100_000))]
    write_gather_window_us: u64,
    /// An NBD member whose server drops the connection is reconnected for
    /// up to this many seconds (0: never), then failed. It is reconnected
    /// only when no write it acknowledged since its last completed flush
    /// could have been lost; otherwise it is failed at once. A member URI's
    /// own reconnect-s=N wins. Must be less than --member-timeout-s
    /// (default: 10, or half of --member-timeout-s if that is shorter).
    #[arg(long, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    member_reconnect_s: Option<u64>,
    /// Write-back cache: none, pbgc, sc or msc-ct (default: what create
    /// recorded). A write-back cache needs the array's journal.
    #[arg(long, value_name = "POLICY")]
    cache: Option<String>,
    /// Cache size (default: what create recorded, else an eighth of the
    /// memory, at most 512M).
    #[arg(long, value_name = "SIZE")]
    cache_size: Option<String>,
    /// Where the array's journal is now, if not where create made it.
    #[arg(long, value_name = "PATH")]
    journal: Option<PathBuf>,
    /// Who performs device I/O. auto: the thread running the request (the
    /// client connection's own, or a drive thread for large writes) for
    /// members in memory (files on tmpfs or ramfs, which cannot stall; a
    /// thread hand-off costs more than their copy), I/O worker threads for
    /// every other member; pool: worker threads for every member.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = crate::runtime::IoPath::Auto)]
    io_path: crate::runtime::IoPath,
    /// Member files, block devices or NBD exports (nbd://HOST:PORT/EXPORT,
    /// nbd+unix:///EXPORT?socket=PATH, nbds://...) of the array (any order).
    #[arg(required = true)]
    members: Vec<PathBuf>,
}

impl ServeArgs {
    /// The NBD server's limits from the command line (clap bounds each).
    fn server_config(&self) -> Result<ServerConfig> {
        use std::time::Duration;
        Ok(ServerConfig {
            handshake_timeout: Duration::from_secs(self.handshake_timeout_s),
            max_connections: self.max_connections as usize,
            handshake_reserve: self.handshake_reserve as usize,
            max_in_flight_requests: self.max_in_flight_requests as usize,
            max_in_flight_bytes: self.max_in_flight_mib << 20,
            send_timeout: Duration::from_secs(self.send_timeout_s),
            shutdown_timeout: Duration::from_secs(self.shutdown_timeout_s),
            tls: tls_policy(
                self.tls,
                self.tls_cert.as_deref(),
                self.tls_psk.as_deref(),
                self.tls_verify_peer,
            )?,
            ..ServerConfig::default()
        })
    }

    pub fn run(self) -> Result<i32> {
        // TLS files are read first: a bad one stops serve before any member
        // is opened.
        let mut server_config = self.server_config()?;
        let member_reconnect_s = match self.member_reconnect_s {
            Some(given) if given >= self.member_timeout_s => anyhow::bail!(
                "--member-reconnect-s {given} must be less than --member-timeout-s {}: a member \
                 I/O waiting for a reconnect would be failed by the member timeout first",
                self.member_timeout_s
            ),
            Some(given) => given,
            // A shorter member timeout given alone shortens the default
            // window rather than refusing to start.
            None => eraid_nbd::DEFAULT_RECONNECT_WINDOW
                .as_secs()
                .min(self.member_timeout_s / 2),
        };
        // Before any member is opened: NBD members connected from here on
        // take it.
        eraid_nbd::SharedClient::set_default_reconnect_window(std::time::Duration::from_secs(
            member_reconnect_s,
        ));
        let stop = Arc::new(AtomicBool::new(false));
        // SIGHUP too (a closed terminal or ssh session): a daemon that dies
        // on it leaves its array dirty.
        for signal in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            signal_hook::flag::register(signal, Arc::clone(&stop))
                .context("cannot install signal handlers")?;
        }
        let listener = match (self.listen, self.socket) {
            (Some(addr), _) => Listener::Tcp(addr),
            // Absolute when it fits, so the printed URI works from any
            // directory.
            (None, Some(path)) => Listener::Unix(socket_path(&path, "--socket")?),
            (None, None) => Listener::Unix(socket_path(Path::new("eraid.sock"), "--socket")?),
        };
        // Assemble (reads only) and bind before the array writes anything, so
        // a failure to listen changes nothing on disk.
        // Like MD, serve runs degraded without a member whose superblock is
        // damaged or unreadable, when redundancy allows, and says so.
        let options = eraid_core::metadata::assemble::AssembleOptions {
            force: self.force,
            leave_out_unusable: true,
        };
        let (locks, assembled) = crate::members::lock_and_assemble_with(&self.members, options)?;
        for (path, why) in &assembled.assembly.left_out {
            say!("warning: left out {path}: {why}");
        }
        for forced in &assembled.assembly.forced {
            say!(
                "forced assembly: took back member {} ({}): its events {}, the array's {}; \
                 recorded active again, every region marked for resync",
                forced.slot,
                forced.path,
                forced.events,
                forced.array_events
            );
        }
        let superblock = &assembled.assembly.superblock;
        let geometry = superblock.geometry;
        let cache_size_bytes = match &self.cache_size {
            Some(text) => Some(
                crate::size::parse_size_bytes(text)
                    .map_err(anyhow::Error::msg)
                    .context("--cache-size")?,
            ),
            None => None,
        };
        let cache = crate::journal::cache_config(
            superblock,
            &geometry,
            self.cache.as_deref(),
            cache_size_bytes,
        )?;
        // A journal replayed before serving makes every stripe it touched
        // consistent: no write hole to fear with a member missing.
        let journal_closes_write_hole = superblock
            .journal
            .as_ref()
            .is_some_and(|j| j.failed.is_none());
        let size_bytes = Arc::new(AtomicU64::new(crate::members::visible_capacity_bytes(
            superblock,
        )));
        let growth_note = superblock.reshape.as_ref().and_then(|record| {
            let percent =
                100.0 * record.checkpoint_chunk as f64 / record.total_chunks.max(1) as f64;
            match record.state {
                ReshapeState::Done => None,
                ReshapeState::Running => Some(format!(
                    "growth in progress ({}, {} -> {} members, {percent:.1}% checkpointed): resuming it",
                    record.config.strategy.name(),
                    record.old_geometry.member_count,
                    geometry.member_count
                )),
                ReshapeState::Paused => Some(format!(
                    "growth paused ({}, {} -> {} members, {percent:.1}% checkpointed): {}{}",
                    record.config.strategy.name(),
                    record.old_geometry.member_count,
                    geometry.member_count,
                    record.pause_reason.as_deref().unwrap_or("no reason recorded"),
                    if record.held {
                        "; `eraid reshape resume --control PATH` continues it"
                    } else {
                        ""
                    }
                )),
            }
        });
        let growth_unfinished = superblock
            .reshape
            .as_ref()
            .is_some_and(|r| r.state != ReshapeState::Done);
        let left_out = !assembled.assembly.left_out.is_empty();
        let re_add = &assembled.assembly.re_add;
        let absent: Vec<String> = assembled
            .assembly
            .slots
            .iter()
            .enumerate()
            .filter(|(index, slot)| {
                !matches!(slot, SlotState::Present { .. }) && !re_add.contains(index)
            })
            .map(|(index, slot)| match slot {
                // (Members given but unusable are named above, with why.)
                SlotState::Stale { .. } => format!(
                    "member {index} ({}) is stale{}",
                    assembled.paths[index].display(),
                    superblock.members[index]
                        .failure
                        .as_deref()
                        .map(|f| format!(" (failed: {f})"))
                        .unwrap_or_default()
                ),
                _ if left_out => format!(
                    "member {index} (last seen at {}) was not given or was left out",
                    assembled.paths[index].display()
                ),
                _ => format!(
                    "member {index} (last seen at {}) was not given",
                    assembled.paths[index].display()
                ),
            })
            .collect();
        let any_not_given = assembled
            .assembly
            .slots
            .iter()
            .any(|slot| matches!(slot, SlotState::Missing));
        // Advice that works: naming a member helps only if one was left out;
        // a stale one cannot be used before a rebuild.
        let remedy = if left_out {
            "A member left out for a damaged or unreadable superblock cannot be used again: \
             serve without it and add a replacement (eraid add NEW --control PATH), which is \
             rebuilt from the others (nothing was changed)"
        } else if any_not_given {
            "Name every member on the command line (nothing was changed)"
        } else {
            "A stale member cannot be used again: serve without it and add a replacement \
             (eraid add NEW --control PATH), which is rebuilt from the others (nothing was \
             changed)"
        };
        if growth_unfinished && !absent.is_empty() {
            if !self.allow_degraded_growth {
                anyhow::bail!(
                    "a growth is unfinished and {}; serving without it would record it as \
                     failed and the growth could not finish before a rebuild. {remedy}, or \
                     pass --allow-degraded-growth to serve degraded with the growth paused",
                    absent.join(", ")
                );
            }
            say!(
                "warning: a growth is unfinished and {}; serving degraded, the growth stays \
                 paused",
                absent.join(", ")
            );
        }
        for warning in crate::space::shortfall_warnings(
            &assembled.paths,
            crate::members::member_bytes_needed(&geometry),
        ) {
            say!("{warning}");
        }
        let dirty_regions = assembled.assembly.bitmap.dirty_regions().count();
        let parity_level = matches!(
            geometry.level,
            Level::Raid5 | Level::Raid6 | Level::Crs { .. }
        );
        let allow_dirty_degraded = self.allow_dirty_degraded || self.force;
        // A clean array keeps marks only for a member that may be re-added
        // (older versions also kept regions a resync had not finished).
        let marks_for_re_add = superblock.state == ArrayState::Clean
            && superblock
                .members
                .iter()
                .any(|m| m.re_add_from_events.is_some());
        // A member being re-added is reconstructed from that parity too.
        let mut absent_or_re_added = absent.clone();
        absent_or_re_added.extend(re_add.iter().map(|slot| {
            format!(
                "member {slot} ({}) is being re-added",
                assembled.paths[*slot].display()
            )
        }));
        if parity_level
            && dirty_regions > 0
            && !marks_for_re_add
            && !absent_or_re_added.is_empty()
            && !allow_dirty_degraded
            && !journal_closes_write_hole
        {
            anyhow::bail!(
                "the array was not shut down cleanly ({dirty_regions} bitmap regions await a \
                 resync, so their parity may not match their data) and {}: data rebuilt for \
                 it from that parity could be wrong. {remedy}, or pass \
                 --allow-dirty-degraded to serve anyway",
                absent_or_re_added.join(", ")
            );
        }
        let control = match &self.control {
            Some(path) => Some(ControlListener::bind(path)?),
            None => None,
        };
        let member_paths = assembled.paths.clone();
        // Slots and spares served by a stand-in (see ControlContext).
        let detached_devices: Vec<usize> = assembled
            .assembly
            .slots
            .iter()
            .enumerate()
            .filter(|(slot, state)| {
                !matches!(state, SlotState::Present { .. })
                    && !assembled.assembly.re_add.contains(slot)
            })
            .map(|(slot, _)| slot)
            .chain(
                assembled
                    .assembly
                    .spares
                    .iter()
                    .enumerate()
                    .filter(|(_, probe)| probe.is_none())
                    .map(|(j, _)| geometry.member_count + j),
            )
            .collect();
        // A journal takes writes up to half its log at once; the array
        // refuses longer ones, so clients are told the limit up front.
        if let Some(journal) = superblock.journal.as_ref().filter(|j| j.failed.is_none()) {
            let journal_max_bytes = eraid_core::journal::user_write_bytes_max(journal.size_bytes);
            server_config.max_request_bytes = server_config
                .max_request_bytes
                .min(u32::try_from(journal_max_bytes).unwrap_or(u32::MAX));
        }
        let handle = Arc::new(OnceLock::new());
        let export = ArrayExport {
            handle: Arc::clone(&handle),
            size_bytes: Arc::clone(&size_bytes),
            preferred_block_bytes: geometry
                .stripe_data_bytes()
                .min(u64::from(server_config.max_request_bytes))
                as u32,
            description: format!(
                "eraid {} on {} members",
                geometry.level.name(),
                geometry.member_count
            ),
        };
        // The error names the address and why (no context: it would repeat).
        let server = Server::bind(listener, Arc::new(export), server_config)?;
        let options = ArrayOptions {
            cache,
            max_read_errors: self.max_read_errors,
            member_timeout_ms: Some(self.member_timeout_s * 1000),
            write_gather_window_us: self.write_gather_window_us,
            ..ArrayOptions::default()
        };
        let running = crate::runtime::start_assembled_with(
            assembled,
            options,
            self.journal.as_deref(),
            self.io_path,
        )?;
        for line in &running.report {
            say!("{line}");
        }
        if let Some(note) = &growth_note {
            say!("{note}");
        }
        if !absent.is_empty() && !growth_unfinished {
            // Forgetting a member's path (often the one a growth added) is
            // the easy way here: say what it costs.
            let advice = if any_not_given {
                " A member that was not given stays current until the first write: if it \
                 was only left off the command line, stop now (SIGTERM), before any client \
                 writes, and serve again naming every member."
            } else {
                ""
            };
            say!(
                "warning: serving degraded: {}. Once data is written without a member it is \
                 stale; `eraid add NEW --control PATH` rebuilds its contents onto a new \
                 member (a recorded hot spare takes over by itself).{advice}",
                absent.join(", ")
            );
        }
        handle
            .set(running.handle())
            .map_err(|_| anyhow::anyhow!("engine handle set twice"))?;
        let events = running.events.clone();
        let logger_size = Arc::clone(&size_bytes);
        let logger = std::thread::spawn(move || {
            for event in events {
                if let ArrayEvent::ReshapeFinished { capacity_bytes, .. } = &event {
                    logger_size.store(*capacity_bytes, Ordering::Release);
                }
                say!("event: {event:?}");
            }
        });
        // What the array itself says users can address (the old capacity
        // while a growth runs).
        if let Ok(status) = running.handle().admin(AdminCommand::Status) {
            if let Some(capacity) = status["capacity_bytes"].as_u64() {
                size_bytes.store(capacity, Ordering::Release);
            }
        }
        let control_stop = Arc::new(AtomicBool::new(false));
        // The member locks (those of added members too) live in the context,
        // which is kept until the array is closed.
        let context = Arc::new(ControlContext {
            handle: running.handle(),
            members: Mutex::new(member_paths),
            member_bytes_needed: crate::members::member_bytes_needed(&geometry),
            locks: Mutex::new(locks),
            grow_lock: Mutex::new(()),
            detached_devices,
        });
        let control_thread = match control {
            Some(listener) => {
                say!("control socket: {}", listener.path().display());
                Some(listener.spawn(Arc::clone(&context), Arc::clone(&control_stop))?)
            }
            None => None,
        };
        say_out!("{}", server.uri());
        // If the engine stops on its own (an internal error), serving on
        // would accept clients it cannot answer: stop as on a signal, and
        // exit with an error.
        let engine_died = Arc::new(AtomicBool::new(false));
        let watchdog = {
            let handle = running.handle();
            let (stop, control_stop, died) = (
                Arc::clone(&stop),
                Arc::clone(&control_stop),
                Arc::clone(&engine_died),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) && !control_stop.load(Ordering::SeqCst) {
                    if !handle.is_accepting() {
                        died.store(true, Ordering::SeqCst);
                        stop.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            })
        };
        let served = server.run_until(&stop);
        control_stop.store(true, Ordering::Relaxed);
        let _ = watchdog.join();
        if engine_died.load(Ordering::SeqCst) {
            say!("the array engine stopped unexpectedly (see above); no longer serving");
        } else {
            say!("stopping: flushing and marking the members clean");
        }
        if let Some(thread) = control_thread {
            let _ = thread.join();
        }
        drop(server);
        let closed = running.close();
        drop(context);
        let _ = logger.join();
        served.context("NBD server failed")?;
        if engine_died.load(Ordering::SeqCst) {
            anyhow::bail!(
                "the array engine stopped on an internal error; the members were not marked \
                 clean, so the next start recovers as after a crash"
            );
        }
        closed?;
        say!("stopped cleanly");
        Ok(0)
    }
}

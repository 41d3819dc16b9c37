//! `eraid serve`: run the array and export it over NBD until SIGINT/SIGTERM.

use crate::export::ArrayExport;
use anyhow::{Context, Result};
use clap::Args;
use eraid_core::ArrayOptions;
use eraid_nbd::{Listener, Server, ServerConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// Serve the array over NBD (Unix socket or TCP) until SIGINT/SIGTERM
///
/// Assembles the array from its members (one missing member is fine for
/// RAID-5 and RAID-10, two for RAID-6), listens, and prints the NBD URI to
/// connect to (e.g. with nbdcopy, qemu-img, nbdfuse or fio). On SIGINT or
/// SIGTERM it finishes in-flight requests, flushes every member, marks the
/// members clean and exits 0. After an unclean stop, parity of the regions
/// the write-intent bitmap marks dirty is resynced while serving. The
/// members are locked: a second serve or check of them is refused.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Listen on this Unix socket (default: ./eraid.sock when --listen is not given).
    #[arg(long, conflicts_with = "listen")]
    socket: Option<PathBuf>,
    /// Listen on TCP at ADDR:PORT (e.g. 127.0.0.1:10809). Only loopback unless you name another address.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Member files or block devices of the array (any order).
    #[arg(required = true)]
    members: Vec<PathBuf>,
}

impl ServeArgs {
    pub fn run(self) -> Result<i32> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(signal, Arc::clone(&stop))
                .context("cannot install signal handlers")?;
        }
        let listener = match (self.listen, self.socket) {
            (Some(addr), _) => Listener::Tcp(addr),
            // Absolute, so the printed URI works from any directory.
            (None, Some(path)) => Listener::Unix(std::path::absolute(&path).unwrap_or(path)),
            (None, None) => Listener::Unix(
                std::path::absolute("eraid.sock").unwrap_or_else(|_| "eraid.sock".into()),
            ),
        };
        let _locks = crate::members::lock_members(&self.members)?;
        // Assemble (reads only) and bind before the array writes anything, so
        // a failure to listen changes nothing on disk.
        let assembled = crate::members::assemble_members(&self.members)?;
        let geometry = assembled.assembly.superblock.geometry;
        let handle = Arc::new(OnceLock::new());
        let export = ArrayExport {
            handle: Arc::clone(&handle),
            size_bytes: geometry.capacity_bytes(),
            preferred_block_bytes: geometry.stripe_data_bytes().min(32 << 20) as u32,
            description: format!(
                "eraid RAID-{} on {} members",
                geometry.level.number(),
                geometry.member_count
            ),
        };
        let server = Server::bind(listener, Arc::new(export), ServerConfig::default())
            .context("cannot listen")?;
        let running = crate::runtime::start_assembled(assembled, ArrayOptions::default())?;
        for line in &running.report {
            eprintln!("{line}");
        }
        handle
            .set(running.handle())
            .map_err(|_| anyhow::anyhow!("engine handle set twice"))?;
        println!("{}", server.uri());
        let events = running.events.clone();
        let logger = std::thread::spawn(move || {
            for event in events {
                eprintln!("event: {event:?}");
            }
        });
        let served = server.run_until(&stop);
        eprintln!("stopping: flushing and marking the members clean");
        drop(server);
        let closed = running.close();
        let _ = logger.join();
        served.context("NBD server failed")?;
        closed?;
        eprintln!("stopped cleanly");
        Ok(0)
    }
}

//! `eraid serve`: run the array and export it over NBD until SIGINT/SIGTERM.

use crate::export::ArrayExport;
use anyhow::{Context, Result};
use clap::Args;
use eraid_core::ArrayOptions;
use eraid_nbd::{Listener, Server, ServerConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Assemble the array and serve it over NBD. Prints the NBD URI. On SIGINT
/// or SIGTERM: finishes in-flight requests, flushes, marks the members
/// clean and exits 0. After an unclean stop, dirty regions are resynced
/// while serving.
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
            (None, Some(path)) => Listener::Unix(path),
            (None, None) => Listener::Unix(PathBuf::from("eraid.sock")),
        };
        let running = crate::runtime::start(&self.members, ArrayOptions::default())?;
        for line in &running.report {
            eprintln!("{line}");
        }
        let export = ArrayExport {
            handle: running.handle(),
            size_bytes: running.capacity_bytes,
            preferred_block_bytes: running.stripe_data_bytes.min(32 << 20) as u32,
            description: format!("eraid array on {} members", running.paths.len()),
        };
        let server = match Server::bind(listener, Arc::new(export), ServerConfig::default()) {
            Ok(server) => server,
            Err(e) => {
                running.close()?;
                return Err(e).context("cannot listen");
            }
        };
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

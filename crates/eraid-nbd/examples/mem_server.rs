//! Serves an in-memory export until stdin closes.
//!
//! cargo run -p eraid-nbd --example mem_server -- /tmp/mem.sock 64
//! cargo run -p eraid-nbd --example mem_server -- 127.0.0.1:10809 64
//! then e.g. `nbdinfo nbd+unix:///?socket=/tmp/mem.sock`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use eraid_nbd::{Listener, MemExport, Server, ServerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = args.next().unwrap_or_else(|| "/tmp/eraid-mem.sock".into());
    let size_mib: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(64);
    let listener = match target.parse() {
        Ok(address) => Listener::Tcp(address),
        Err(_) => Listener::Unix(target.into()),
    };
    let export = Arc::new(MemExport::new("mem", size_mib * 1024 * 1024));
    let server = Server::bind(listener, export, ServerConfig::default())?;
    println!("{}", server.uri());

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            stop.store(true, Ordering::SeqCst);
        });
    }
    server.run_until(&stop)?;
    Ok(())
}

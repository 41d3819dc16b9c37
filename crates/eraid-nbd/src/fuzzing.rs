//! Entry points for the fuzz targets (`fuzz/` at the repository root) and
//! their regression tests: one connection served, server side, over an
//! in-process socket pair, from a client's bytes given whole. Not part of
//! the server's API.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::config::ServerConfig;
use crate::connection::{new_cancel_flag, serve_connection};
use crate::export::Export;
use crate::mem_export::MemExport;
use crate::protocol::{FLAG_C_KNOWN, IHAVEOPT, OPT_GO, OPT_STRUCTURED_REPLY};
use crate::slots::Slots;
use crate::stream::{Stream, Watch};

/// The export every fuzzed connection sees: 64 KiB, named "fuzz".
pub const EXPORT_NAME: &str = "fuzz";
const EXPORT_BYTES: usize = 64 * 1024;

/// Serves one connection whose client sends `client_bytes` and then closes
/// its sending side; returns what the server sent back. The server must
/// end the connection on its own (EOF, a protocol error) without panicking.
pub fn serve_client_bytes(client_bytes: &[u8]) -> Vec<u8> {
    let (server_end, client_end) = UnixStream::pair().expect("socket pair");
    let export: Arc<dyn Export> = Arc::new(MemExport::new(EXPORT_NAME, EXPORT_BYTES));
    let config = ServerConfig {
        // Fuzz inputs are whole; a stall means a bug, not a slow client.
        handshake_timeout: Duration::from_secs(5),
        send_timeout: Duration::from_secs(5),
        max_request_bytes: 1 << 20,
        oversize_write_drain_bytes_max: 1 << 20,
        ..ServerConfig::default()
    };
    let slots = Slots::new(config.max_connections, config.handshake_reserve);
    let watch = Watch {
        stopping: Arc::new(AtomicBool::new(false)),
        cancelled: new_cancel_flag(),
        stop_grace: config.stop_grace(),
    };
    let registered = Stream::Unix(server_end.try_clone().expect("clone socket"));
    slots.admit_handshake(1, Arc::clone(&watch.cancelled), registered);
    let mut sender = client_end.try_clone().expect("clone socket");
    let input = client_bytes.to_vec();
    // The client writes and reads on their own threads: the server may
    // reply while the client is still sending, and stop reading early.
    let writer = std::thread::spawn(move || {
        let _ = sender.write_all(&input);
        let _ = sender.shutdown(Shutdown::Write);
    });
    let mut receiver = client_end;
    let reader = std::thread::spawn(move || {
        let mut replies = Vec::new();
        let _ = receiver.read_to_end(&mut replies);
        replies
    });
    let write_buffers = eraid_buffers::BufferPool::new(1 << 20);
    serve_connection(
        Stream::Unix(server_end),
        1,
        export,
        &config,
        watch,
        &slots,
        &write_buffers,
    );
    writer.join().expect("client writer");
    reader.join().expect("client reader")
}

/// A client's fixed-newstyle handshake up to transmission on the fuzz
/// export (NBD_OPT_GO, with structured replies first if asked), so a
/// target can fuzz the transmission phase behind it.
pub fn handshake_prefix(structured_replies: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&FLAG_C_KNOWN.to_be_bytes());
    if structured_replies {
        bytes.extend_from_slice(&IHAVEOPT.to_be_bytes());
        bytes.extend_from_slice(&OPT_STRUCTURED_REPLY.to_be_bytes());
        bytes.extend_from_slice(&0u32.to_be_bytes());
    }
    let mut go = Vec::new();
    go.extend_from_slice(&(EXPORT_NAME.len() as u32).to_be_bytes());
    go.extend_from_slice(EXPORT_NAME.as_bytes());
    go.extend_from_slice(&0u16.to_be_bytes());
    bytes.extend_from_slice(&IHAVEOPT.to_be_bytes());
    bytes.extend_from_slice(&OPT_GO.to_be_bytes());
    bytes.extend_from_slice(&(go.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&go);
    bytes
}

//! One client connection from accept to close: handshake (within its
//! deadline), then transmission.

use eraid_buffers::BufferPool;
use std::net::Shutdown;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use crate::config::ServerConfig;
use crate::export::Export;
use crate::handshake::{self, Negotiated};
use crate::slots::Slots;
use crate::stream::{DeadlineWriter, MessageReader, Stream, Watch, STOP_POLL_INTERVAL};
use crate::transmission;

/// Serves one connection to its end, then frees its slot. Never panics on
/// client input; every failure just ends this connection.
pub fn serve_connection(
    stream: Stream,
    id: u64,
    export: Arc<dyn Export>,
    config: &ServerConfig,
    watch: Watch,
    slots: &Slots,
    write_buffers: &BufferPool,
) {
    serve_registered(stream, id, export, config, watch, slots, write_buffers);
    slots.leave(id);
}

fn serve_registered(
    stream: Stream,
    id: u64,
    export: Arc<dyn Export>,
    config: &ServerConfig,
    watch: Watch,
    slots: &Slots,
    write_buffers: &BufferPool,
) {
    let deadline = Instant::now() + config.handshake_timeout;
    if let Err(e) = setup(&stream) {
        tracing::warn!("nbd: cannot set up connection: {e}");
        return;
    }
    let (read_half, write_half) = match (stream.try_clone(), stream.try_clone()) {
        (Ok(read_half), Ok(write_half)) => (read_half, write_half),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!("nbd: cannot clone connection socket: {e}");
            return;
        }
    };
    let mut reader = MessageReader::new(read_half, watch.clone());
    let mut writer = DeadlineWriter::new(write_half, watch.clone());
    // The whole handshake, reads and writes, must end by the deadline.
    reader.set_deadline(Some(deadline));
    writer.set_deadline(Some(deadline));
    let mut admit = || slots.enter_transmission(id);
    match handshake::negotiate(
        &mut reader,
        &mut writer,
        export.as_ref(),
        config,
        &mut admit,
        &handshake::TlsUpgrade {
            watch: &watch,
            deadline,
        },
    ) {
        Ok(Negotiated::Transmission(session)) => {
            tracing::debug!("nbd: client entered transmission ({session:?})");
            reader.set_deadline(None);
            writer.set_deadline(None);
            transmission::serve(&mut reader, writer, &export, config, session, write_buffers);
        }
        Ok(Negotiated::Closed) => tracing::debug!("nbd: client left during handshake"),
        Err(e) => tracing::debug!("nbd: handshake ended: {e}"),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn setup(stream: &Stream) -> std::io::Result<()> {
    // Short socket timeouts let blocked reads and writes look at the stop
    // flag, the cancel flag and their deadlines.
    stream.set_read_timeout(Some(STOP_POLL_INTERVAL))?;
    stream.set_write_timeout(Some(STOP_POLL_INTERVAL))?;
    stream.set_nodelay()
}

/// A fresh cancel flag for a new connection.
pub fn new_cancel_flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

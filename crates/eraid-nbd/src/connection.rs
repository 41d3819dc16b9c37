//! One client connection from accept to close: handshake, then transmission.

use std::net::Shutdown;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::ServerConfig;
use crate::export::Export;
use crate::handshake::{self, Negotiated};
use crate::stream::{MessageReader, Stream, STOP_POLL_INTERVAL};
use crate::transmission;

/// Serves one connection to its end. Never panics on client input; every
/// failure just ends this connection.
pub fn serve_connection(
    stream: Stream,
    export: Arc<dyn Export>,
    config: &ServerConfig,
    stopping: &AtomicBool,
) {
    if let Err(e) = setup(&stream, config) {
        tracing::warn!("nbd: cannot set up connection: {e}");
        return;
    }
    let (read_half, mut write_half) = match (stream.try_clone(), stream.try_clone()) {
        (Ok(read_half), Ok(write_half)) => (read_half, write_half),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!("nbd: cannot clone connection socket: {e}");
            return;
        }
    };
    let mut reader = MessageReader::new(read_half, stopping, config.stop_stall_grace);
    match handshake::negotiate(&mut reader, &mut write_half, export.as_ref(), config) {
        Ok(Negotiated::Transmission) => {
            tracing::debug!("nbd: client entered transmission");
            transmission::serve(&mut reader, write_half, &export, config);
        }
        Ok(Negotiated::Closed) => tracing::debug!("nbd: client left during handshake"),
        Err(e) => tracing::warn!("nbd: handshake failed: {e}"),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn setup(stream: &Stream, config: &ServerConfig) -> std::io::Result<()> {
    // The short read timeout lets an idle connection notice the stop flag.
    stream.set_read_timeout(Some(STOP_POLL_INTERVAL))?;
    stream.set_write_timeout(Some(config.write_timeout))?;
    stream.set_nodelay()
}

//! eraid-nbd: an NBD server for one export, on std threads.
//!
//! The CLI implements [`Export`] for the array and serves it with
//! [`Server`]; [`MemExport`] is an in-memory export and [`client::Client`] a
//! small blocking client, both handy for tests and demos.
//! [`SharedClient`] is the client an array member on another host uses:
//! many threads, requests pipelined, every wait bounded, `nbds://` too,
//! and a dropped connection replaced when no acknowledged write could have
//! been lost with it.
//!
//! Protocol: fixed newstyle handshake (NBD_OPT_GO/INFO/EXPORT_NAME/LIST/
//! ABORT/STRUCTURED_REPLY/LIST_META_CONTEXT/SET_META_CONTEXT, and STARTTLS
//! when `ServerConfig::tls` is set (rustls for X.509, OpenSSL for
//! pre-shared keys, which rustls lacks; when TLS is required, other
//! options before it get NBD_REP_ERR_TLS_REQD); everything else gets
//! NBD_REP_ERR_UNSUP), simple or structured replies,
//! READ/WRITE/FLUSH/TRIM/WRITE_ZEROES/BLOCK_STATUS (`base:allocation`)/DISC
//! with FUA, replies out of order. Every request is judged against the
//! spec (`transmission::judge`): flags a command may not carry get EINVAL.
//!
//! Threads per connection: a reader (handshake, then requests) and a reply
//! writer. The reader stops taking requests while
//! `ServerConfig::max_in_flight_requests` / `max_in_flight_bytes` are in
//! flight. Handshakes have a deadline and their own slots (`slots.rs`);
//! replies a send deadline; a stop is bounded by `shutdown_timeout`.
//! Client input never panics the server: bad requests get NBD errors,
//! protocol violations close only that connection.

pub mod client;
mod client_connection;
mod config;
mod connection;
mod export;
#[doc(hidden)]
pub mod fuzzing;
mod handshake;
mod in_flight;
pub mod mem_export;
mod part_sequence;
pub mod protocol;
mod reply;
mod server;
pub mod shared_client;
mod slots;
mod stream;
pub mod tls;
mod tls_client;
pub mod tls_psk;
mod transmission;
pub mod uri;

pub use client_connection::{ConnectError, Death, DeathKind};
pub use config::ServerConfig;
pub use export::{Done, Export, ExportCommand, ExportError, ExportResult};
pub use handshake::OPTION_DATA_BYTES_MAX;
pub use mem_export::MemExport;
pub use server::{Listener, RunningServer, Server, ServerError};
pub use shared_client::{SharedClient, DEFAULT_RECONNECT_WINDOW};
pub use tls::{load_cert_dir, load_cert_dir_with, TlsCredentials, TlsPolicy, TlsSetupError};
pub use tls_psk::{load_psk_file, PskServer};
pub use uri::{looks_like_nbd_uri, NbdUri, UriError};

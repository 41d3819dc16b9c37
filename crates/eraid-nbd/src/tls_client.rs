//! The client side of NBD_OPT_STARTTLS (`nbds://`): after the greeting,
//! ask for TLS, then run a rustls client handshake verifying the server
//! against the CA in `tls-certificates=DIR/ca-cert.pem` (qemu's layout, as
//! `nbdinfo` and `nbdcopy` take it), presenting `client-cert.pem` with
//! `client-key.pem` from DIR when both are there (libnbd's layout, for
//! servers that verify their clients). No fallback to plaintext.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, Connection};

use crate::client::{receive_option_reply, send_option, ClientError};
use crate::protocol as p;
use crate::stream::Stream;
use crate::tls::TlsStream;
use crate::uri::{Endpoint, NbdUri};

/// The CA certificate file in a `tls-certificates` directory.
pub const CA_CERT_FILE: &str = "ca-cert.pem";
/// This client's certificate chain (leaf first), if it has one.
pub const CLIENT_CERT_FILE: &str = "client-cert.pem";
/// The private key of `client-cert.pem`.
pub const CLIENT_KEY_FILE: &str = "client-key.pem";

/// Turns `stream` (greeted, in option haggling) into a TLS stream.
pub(crate) fn start_tls(
    stream: &mut Stream,
    uri: &NbdUri,
    deadline: Instant,
) -> Result<(), ClientError> {
    let Some(dir) = &uri.tls_certificates else {
        return Err(ClientError::Uri(format!(
            "{uri}: nbds needs ?tls-certificates=DIR, a directory holding {CA_CERT_FILE}"
        )));
    };
    let config = client_config(dir)?;
    let server_name = match &uri.endpoint {
        Endpoint::Tcp { host, .. } => ServerName::try_from(host.clone())
            .map_err(|e| ClientError::Uri(format!("{uri}: host {host:?}: {e}")))?,
        // A Unix socket has no host name; servers on one are reached as
        // localhost (as qemu does).
        Endpoint::Unix { .. } => ServerName::try_from("localhost").expect("a valid name"),
    };
    send_option(stream, p::OPT_STARTTLS, &[])?;
    let (reply_type, reply) = receive_option_reply(stream, p::OPT_STARTTLS)?;
    if reply_type != p::REP_ACK {
        return Err(ClientError::OptionRejected {
            option: p::OPT_STARTTLS,
            reply_type,
            message: if reply_type == p::REP_ERR_UNSUP {
                "the server offers no TLS (use nbd:// for it)".into()
            } else {
                String::from_utf8_lossy(&reply).into_owned()
            },
        });
    }
    let mut conn = ClientConnection::new(config, server_name)
        .map_err(|e| ClientError::Protocol(format!("TLS: {e}")))?;
    let mut socket = stream.try_clone()?;
    // The socket's timeouts bound each wait; the deadline bounds them all.
    while conn.is_handshaking() {
        if Instant::now() > deadline {
            return Err(ClientError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake took too long",
            )));
        }
        conn.complete_io(&mut socket).map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidData {
                ClientError::Protocol(format!("TLS handshake: {e}"))
            } else {
                ClientError::Io(e)
            }
        })?;
    }
    socket.flush()?;
    *stream = Stream::Tls(TlsStream::over(
        crate::tls::Session::Rustls(Box::new(Connection::Client(conn))),
        &socket,
    )?);
    Ok(())
}

fn client_config(dir: &Path) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    let path = dir.join(CA_CERT_FILE);
    let pem =
        std::fs::read(&path).map_err(|e| ClientError::Uri(format!("{}: {e}", path.display())))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| {
            ClientError::Uri(format!(
                "{}: not a PEM certificate file: {e}",
                path.display()
            ))
        })?;
        roots.add(cert).map_err(|e| {
            ClientError::Uri(format!("{}: unusable CA certificate: {e}", path.display()))
        })?;
    }
    if roots.is_empty() {
        return Err(ClientError::Uri(format!(
            "{}: holds no CERTIFICATE block",
            path.display()
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Protocol(format!("TLS: {e}")))?
        .with_root_certificates(roots);
    let config = match client_identity(dir)? {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
            ClientError::Uri(format!(
                "{} and {}: cannot be used together: {e}",
                dir.join(CLIENT_CERT_FILE).display(),
                dir.join(CLIENT_KEY_FILE).display()
            ))
        })?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// `client-cert.pem` and `client-key.pem` of `dir` when it has both; one
/// without the other is an error naming the missing file.
fn client_identity(
    dir: &Path,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, ClientError> {
    let cert_path = dir.join(CLIENT_CERT_FILE);
    let key_path = dir.join(CLIENT_KEY_FILE);
    match (cert_path.exists(), key_path.exists()) {
        (false, false) => return Ok(None),
        (true, false) => {
            return Err(ClientError::Uri(format!(
                "{}: missing beside {}",
                key_path.display(),
                cert_path.display()
            )))
        }
        (false, true) => {
            return Err(ClientError::Uri(format!(
                "{}: missing beside {}",
                cert_path.display(),
                key_path.display()
            )))
        }
        (true, true) => {}
    }
    let (chain, key) = crate::tls::read_cert_and_key(&cert_path, &key_path)
        .map_err(|(path, reason)| ClientError::Uri(format!("{}: {reason}", path.display())))?;
    Ok(Some((chain, key)))
}

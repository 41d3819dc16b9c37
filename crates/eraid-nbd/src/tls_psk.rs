//! TLS with pre-shared keys (`eraid serve --tls-psk FILE`), through the
//! system OpenSSL: rustls has no external-PSK support (rustls issue #174,
//! still open for the rustls 0.23 in Cargo.lock), so this module is the
//! only user of OpenSSL, and only for PSK.
//!
//! The key file is nbdkit's and qemu's (GnuTLS `psktool`'s): one
//! `username:hexkey` per line. A client is accepted when it names a user
//! of the file and proves it holds that user's key (TLS 1.3 external PSK
//! with (EC)DHE, or TLS 1.2 (EC)DHE-PSK suites).
//!
//! The session runs over memory buffers, never the socket itself, so the
//! connection's reader and writer threads share it the way they share a
//! rustls session (`crate::tls`): the lock is held only while OpenSSL works
//! on buffers, never across a socket wait.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use openssl::ssl::{
    ErrorCode, HandshakeError, MidHandshakeSslStream, Ssl, SslContext, SslMethod, SslStream,
    SslVersion,
};

use crate::stream::{is_timeout, Stream, Watch};
use crate::tls::TlsSetupError;

/// Longest key accepted (OpenSSL's PSK_MAX_PSK_LEN).
const KEY_BYTES_MAX: usize = 512;
/// Longest username (OpenSSL's PSK_MAX_IDENTITY_LEN).
const USERNAME_BYTES_MAX: usize = 128;
/// TLS 1.2 suites with a PSK and an ephemeral key exchange (forward
/// secrecy), as GnuTLS clients offer them.
const TLS12_PSK_CIPHERS: &str = "kECDHEPSK:!SHA1:!aNULL:!eNULL";

/// The keys of a PSK file and the OpenSSL context that checks clients
/// against them.
pub struct PskServer {
    path: PathBuf,
    usernames: Vec<String>,
    context: SslContext,
}

impl std::fmt::Debug for PskServer {
    /// Never the keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PskServer")
            .field("path", &self.path)
            .field("usernames", &self.usernames)
            .finish()
    }
}

impl PskServer {
    pub fn usernames(&self) -> &[String] {
        &self.usernames
    }
}

/// Reads a PSK file (`username:hexkey` lines; blank lines are skipped)
/// and builds the server context. Errors name the file and the line.
pub fn load_psk_file(path: &Path) -> Result<Arc<PskServer>, TlsSetupError> {
    let fail = |reason: String| TlsSetupError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let keys = parse_psk_lines(&text).map_err(fail)?;
    let mut usernames: Vec<String> = keys.keys().cloned().collect();
    usernames.sort();
    let context = psk_context(keys).map_err(|e| fail(format!("OpenSSL refused it: {e}")))?;
    Ok(Arc::new(PskServer {
        path: path.to_path_buf(),
        usernames,
        context,
    }))
}

fn parse_psk_lines(text: &str) -> Result<HashMap<String, Vec<u8>>, String> {
    let mut keys = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let Some((username, hex)) = line.split_once(':') else {
            return Err(format!(
                "line {line_number}: expected username:hexkey (as psktool writes)"
            ));
        };
        if username.is_empty() || username.len() > USERNAME_BYTES_MAX {
            return Err(format!(
                "line {line_number}: the username must be 1 to {USERNAME_BYTES_MAX} bytes"
            ));
        }
        let key = decode_hex(hex.trim())
            .ok_or_else(|| format!("line {line_number}: the key is not hexadecimal"))?;
        if key.is_empty() || key.len() > KEY_BYTES_MAX {
            return Err(format!(
                "line {line_number}: the key must be 1 to {KEY_BYTES_MAX} bytes"
            ));
        }
        if keys.insert(username.to_string(), key).is_some() {
            return Err(format!(
                "line {line_number}: user {username:?} appears twice"
            ));
        }
    }
    if keys.is_empty() {
        return Err("holds no username:hexkey line".into());
    }
    Ok(keys)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

fn psk_context(keys: HashMap<String, Vec<u8>>) -> Result<SslContext, openssl::error::ErrorStack> {
    let mut builder = SslContext::builder(SslMethod::tls_server())?;
    builder.set_min_proto_version(Some(SslVersion::TLS1_2))?;
    builder.set_cipher_list(TLS12_PSK_CIPHERS)?;
    builder.set_psk_server_callback(move |_ssl, identity, key_out| {
        // An unknown user gets no key: OpenSSL then fails the handshake.
        let key = identity
            .and_then(|name| std::str::from_utf8(name).ok())
            .and_then(|name| keys.get(name));
        match key {
            Some(key) if key.len() <= key_out.len() => {
                key_out[..key.len()].copy_from_slice(key);
                Ok(key.len())
            }
            _ => Ok(0),
        }
    });
    Ok(builder.build())
}

/// The session's view of the socket: ciphertext handed in by the reader,
/// and records OpenSSL produced, waiting to be sent by the writer.
#[derive(Debug, Default)]
pub(crate) struct MemoryPipe {
    incoming: Vec<u8>,
    outgoing: Vec<u8>,
}

impl Read for MemoryPipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.incoming.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.incoming.len());
        buf[..n].copy_from_slice(&self.incoming[..n]);
        self.incoming.drain(..n);
        Ok(n)
    }
}

impl Write for MemoryPipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.outgoing.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An established PSK session over a [`MemoryPipe`]; the operations
/// mirror those `crate::tls` uses on a rustls session.
#[derive(Debug)]
pub(crate) struct PskSession {
    stream: SslStream<MemoryPipe>,
}

impl PskSession {
    pub(crate) fn wants_write(&self) -> bool {
        !self.stream.get_ref().outgoing.is_empty()
    }

    /// Moves the records ready to send into `out`.
    pub(crate) fn write_tls(&mut self, out: &mut Vec<u8>) -> io::Result<usize> {
        let records = std::mem::take(&mut self.stream.get_mut().outgoing);
        out.extend_from_slice(&records);
        Ok(records.len())
    }

    /// Takes ciphertext read from the socket (all of it: the caller hands
    /// it in only when no plaintext is waiting, which bounds the buffer).
    pub(crate) fn read_tls(&mut self, data: &[u8]) -> usize {
        self.stream.get_mut().incoming.extend_from_slice(data);
        data.len()
    }

    /// Plaintext, or WouldBlock when more ciphertext is needed; 0 at the
    /// client's close_notify.
    pub(crate) fn read_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.stream.ssl_read(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.code() == ErrorCode::WANT_READ => Err(io::ErrorKind::WouldBlock.into()),
            Err(e) if e.code() == ErrorCode::ZERO_RETURN => Ok(0),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
        }
    }

    /// Encrypts all of `buf` into records (the pipe never refuses).
    pub(crate) fn write_plain(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream
            .ssl_write(buf)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    }
}

/// Runs the server side of a PSK handshake on `plain` (whose socket has a
/// short timeout), giving up at `deadline` or when `watch` says so.
pub(crate) fn accept(
    plain: &Stream,
    server: &PskServer,
    watch: &Watch,
    deadline: Instant,
) -> io::Result<PskSession> {
    let ssl = Ssl::new(&server.context).map_err(io::Error::other)?;
    let mut socket = plain.try_clone()?;
    let mut stop_seen_at = None;
    let mut attempt = ssl.accept(MemoryPipe::default());
    loop {
        let mut mid: MidHandshakeSslStream<MemoryPipe> = match attempt {
            Ok(stream) => {
                let mut session = PskSession { stream };
                // The server's last flight (Finished) goes out now.
                send_all(&mut socket, &mut session.stream, watch, deadline)?;
                return Ok(session);
            }
            Err(HandshakeError::WouldBlock(mid)) => mid,
            Err(HandshakeError::Failure(mut mid)) => {
                // Tell the client why (an alert) before giving up.
                let reason = mid.error().to_string();
                let _ = socket.write_all(&std::mem::take(&mut mid.get_mut().outgoing));
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("TLS-PSK handshake failed (unknown user or wrong key?): {reason}"),
                ));
            }
            Err(HandshakeError::SetupFailure(e)) => return Err(io::Error::other(e)),
        };
        let outgoing = std::mem::take(&mut mid.get_mut().outgoing);
        write_within(&mut socket, &outgoing, watch, deadline, &mut stop_seen_at)?;
        let mut raw = [0u8; 16 * 1024];
        loop {
            if let Some(error) = watch.give_up(Some(deadline), &mut stop_seen_at) {
                return Err(error);
            }
            match socket.read(&mut raw) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "client closed during the TLS handshake",
                    ))
                }
                Ok(n) => {
                    mid.get_mut().incoming.extend_from_slice(&raw[..n]);
                    break;
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
        attempt = mid.handshake();
    }
}

fn send_all(
    socket: &mut Stream,
    stream: &mut SslStream<MemoryPipe>,
    watch: &Watch,
    deadline: Instant,
) -> io::Result<()> {
    let outgoing = std::mem::take(&mut stream.get_mut().outgoing);
    write_within(socket, &outgoing, watch, deadline, &mut None)
}

/// Writes all of `bytes`, retrying socket timeouts until `deadline`.
fn write_within(
    socket: &mut Stream,
    mut bytes: &[u8],
    watch: &Watch,
    deadline: Instant,
    stop_seen_at: &mut Option<Instant>,
) -> io::Result<()> {
    while !bytes.is_empty() {
        if let Some(error) = watch.give_up(Some(deadline), stop_seen_at) {
            return Err(error);
        }
        match socket.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psk_files_are_read_as_psktool_writes_them_and_bad_ones_refused_by_line() {
        let keys = parse_psk_lines("alice:0123456789abcdef\n\nbob:FF00\r\n").unwrap();
        assert_eq!(
            keys["alice"],
            vec![0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]
        );
        assert_eq!(keys["bob"], vec![0xff, 0x00]);
        for (text, reason) in [
            ("", "holds no username:hexkey line"),
            ("alice", "line 1: expected username:hexkey"),
            ("alice:0g", "line 1: the key is not hexadecimal"),
            ("alice:abc", "line 1: the key is not hexadecimal"),
            (":abcd", "line 1: the username must be"),
            ("alice:", "line 1: the key must be 1 to"),
            ("a:00\na:11", "line 2: user \"a\" appears twice"),
        ] {
            let error = parse_psk_lines(text).unwrap_err();
            assert!(error.contains(reason), "{text:?}: {error}");
        }
    }
}

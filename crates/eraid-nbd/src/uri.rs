//! NBD URIs (the NBD project's `doc/uri.md`, as qemu and libnbd read
//! them): `nbd://HOST[:PORT][/EXPORT]`, `nbd+unix:///[EXPORT]?socket=PATH`,
//! and their TLS forms `nbds://` and `nbds+unix://`.
//!
//! Query parameters understood: `socket` (Unix forms, required there),
//! `tls-certificates` (a directory with qemu's `ca-cert.pem`, TLS forms),
//! and three of eraid's own bounds, `connect-timeout-s`, `request-timeout-s`
//! and `reconnect-s` (how long a dropped connection is retried; 0: never).
//! Any other parameter is refused rather than ignored, so a misspelt bound
//! cannot silently fall back to its default.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The TCP port of NBD when a URI names none (IANA's 10809).
pub const DEFAULT_PORT: u16 = 10809;
/// How long connecting and the handshake may take unless the URI says.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may wait for its reply unless the URI says.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest timeout a URI may ask for (a day): a bound, not a way to wait forever.
const TIMEOUT_S_MAX: u64 = 24 * 60 * 60;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix { socket: PathBuf },
}

/// A parsed NBD URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NbdUri {
    pub endpoint: Endpoint,
    pub export_name: String,
    /// `nbds`: NBD_OPT_STARTTLS before anything else, and no fallback.
    pub tls: bool,
    /// The directory holding `ca-cert.pem` to verify the server with.
    pub tls_certificates: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// How long a dropped connection is retried (`reconnect-s`); None:
    /// the process's default (`SharedClient::set_default_reconnect_window`).
    pub reconnect_window: Option<Duration>,
}

/// Why a text is not a usable NBD URI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad NBD URI {uri}: {reason}")]
pub struct UriError {
    pub uri: String,
    pub reason: String,
}

/// True when `text` is meant as an NBD URI (its scheme starts with `nbd`),
/// whether or not it is a valid one: such a member is never taken for a
/// file name.
pub fn looks_like_nbd_uri(text: &str) -> bool {
    match text.split_once("://") {
        Some((scheme, _)) => scheme.starts_with("nbd"),
        None => text.starts_with("nbd:") || text.starts_with("nbds:") || text.starts_with("nbd+"),
    }
}

impl NbdUri {
    pub fn parse(uri: &str) -> Result<NbdUri, UriError> {
        let fail = |reason: String| UriError {
            uri: uri.to_string(),
            reason,
        };
        let (scheme, rest) = uri.split_once("://").ok_or_else(|| {
            fail("expected SCHEME://..., e.g. nbd://HOST:PORT/EXPORT or nbd+unix:///EXPORT?socket=PATH".into())
        })?;
        let (tls, unix) = match scheme {
            "nbd" => (false, false),
            "nbds" => (true, false),
            "nbd+unix" => (false, true),
            "nbds+unix" => (true, true),
            other => {
                return Err(fail(format!(
                    "unsupported scheme {other:?}: use nbd, nbds, nbd+unix or nbds+unix"
                )))
            }
        };
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        if before_query.contains('#') || query.contains('#') {
            return Err(fail("a fragment (#...) has no meaning here".into()));
        }
        let (authority, path) = match before_query.find('/') {
            Some(at) => (&before_query[..at], &before_query[at + 1..]),
            None => (before_query, ""),
        };
        let export_name = percent_decode(path).map_err(fail)?;
        let mut socket = None;
        let mut tls_certificates = None;
        let mut connect_timeout = DEFAULT_CONNECT_TIMEOUT;
        let mut request_timeout = DEFAULT_REQUEST_TIMEOUT;
        let mut reconnect_window = None;
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value).map_err(fail)?;
            match key {
                "socket" if unix => socket = Some(PathBuf::from(value)),
                "tls-certificates" if tls => tls_certificates = Some(PathBuf::from(value)),
                "connect-timeout-s" => {
                    connect_timeout = parse_timeout(key, &value).map_err(fail)?
                }
                "request-timeout-s" => {
                    request_timeout = parse_timeout(key, &value).map_err(fail)?
                }
                "reconnect-s" => reconnect_window = Some(parse_window(key, &value).map_err(fail)?),
                _ => {
                    return Err(fail(format!(
                        "unknown query parameter {key:?} for {scheme}:// (known: {})",
                        known_parameters(tls, unix)
                    )))
                }
            }
        }
        let endpoint = if unix {
            if !authority.is_empty() {
                return Err(fail(format!(
                    "{scheme}:// takes no host ({authority:?}); write {scheme}:///EXPORT?socket=PATH"
                )));
            }
            let socket = socket
                .filter(|s| !s.as_os_str().is_empty())
                .ok_or_else(|| fail(format!("{scheme}:// needs ?socket=PATH")))?;
            Endpoint::Unix { socket }
        } else {
            let (host, port) = split_host_port(authority).map_err(fail)?;
            Endpoint::Tcp { host, port }
        };
        Ok(NbdUri {
            endpoint,
            export_name,
            tls,
            tls_certificates,
            connect_timeout,
            request_timeout,
            reconnect_window,
        })
    }
}

impl fmt::Display for NbdUri {
    /// Where and which export, for messages (bounds and options left out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.tls { "s" } else { "" };
        match &self.endpoint {
            Endpoint::Tcp { host, port } if host.contains(':') => {
                write!(f, "nbd{s}://[{host}]:{port}/{}", self.export_name)
            }
            Endpoint::Tcp { host, port } => {
                write!(f, "nbd{s}://{host}:{port}/{}", self.export_name)
            }
            Endpoint::Unix { socket } => write!(
                f,
                "nbd{s}+unix:///{}?socket={}",
                self.export_name,
                socket.display()
            ),
        }
    }
}

fn known_parameters(tls: bool, unix: bool) -> String {
    let mut known = Vec::new();
    if unix {
        known.push("socket");
    }
    if tls {
        known.push("tls-certificates");
    }
    known.extend(["connect-timeout-s", "request-timeout-s", "reconnect-s"]);
    known.join(", ")
}

/// A retry window: like a timeout, but 0 (never retry) is allowed.
fn parse_window(key: &str, value: &str) -> Result<Duration, String> {
    match value.parse::<u64>() {
        Ok(seconds) if seconds <= TIMEOUT_S_MAX => Ok(Duration::from_secs(seconds)),
        _ => Err(format!(
            "{key}={value:?}: expected whole seconds from 0 to {TIMEOUT_S_MAX}"
        )),
    }
}

fn parse_timeout(key: &str, value: &str) -> Result<Duration, String> {
    match value.parse::<u64>() {
        Ok(seconds) if (1..=TIMEOUT_S_MAX).contains(&seconds) => Ok(Duration::from_secs(seconds)),
        _ => Err(format!(
            "{key}={value:?}: expected whole seconds from 1 to {TIMEOUT_S_MAX}"
        )),
    }
}

/// `HOST`, `HOST:PORT`, `[IPV6]` or `[IPV6]:PORT`.
fn split_host_port(authority: &str) -> Result<(String, u16), String> {
    if authority.is_empty() {
        return Err("no host: write nbd://HOST[:PORT]/EXPORT".into());
    }
    if authority.contains('@') {
        return Err("user names (USER@HOST) are not supported".into());
    }
    let (host, port_text) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("unclosed [ in host {authority:?}"))?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("unexpected {after:?} after [{host}]")),
            },
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("no host: write nbd://HOST[:PORT]/EXPORT".into());
    }
    let port = match port_text {
        None => DEFAULT_PORT,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port != 0 => port,
            _ => return Err(format!("port {text:?} is not a number from 1 to 65535")),
        },
    };
    Ok((host.to_string(), port))
}

pub(crate) fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| format!("bad %-escape in {text:?}"))?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Endpoint {
        Endpoint::Tcp {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn tcp_forms() {
        let uri = NbdUri::parse("nbd://127.0.0.1:10900/disk%201").unwrap();
        assert_eq!(uri.endpoint, tcp("127.0.0.1", 10900));
        assert_eq!(uri.export_name, "disk 1");
        assert!(!uri.tls);
        assert_eq!(uri.request_timeout, DEFAULT_REQUEST_TIMEOUT);
        assert_eq!(
            NbdUri::parse("nbd://host").unwrap().endpoint,
            tcp("host", DEFAULT_PORT)
        );
        assert_eq!(NbdUri::parse("nbd://host/").unwrap().export_name, "");
        let v6 = NbdUri::parse("nbd://[::1]:99/x").unwrap();
        assert_eq!(v6.endpoint, tcp("::1", 99));
        assert_eq!(v6.to_string(), "nbd://[::1]:99/x");
    }

    #[test]
    fn unix_and_tls_forms_and_bounds() {
        let uri =
            NbdUri::parse("nbd+unix:///e?socket=/tmp/a%20b.sock&request-timeout-s=5").unwrap();
        assert_eq!(
            uri.endpoint,
            Endpoint::Unix {
                socket: "/tmp/a b.sock".into()
            }
        );
        assert_eq!(uri.export_name, "e");
        assert_eq!(uri.request_timeout, Duration::from_secs(5));
        let uri = NbdUri::parse("nbds://h:1/?tls-certificates=/pki&connect-timeout-s=2").unwrap();
        assert!(uri.tls);
        assert_eq!(uri.tls_certificates, Some(PathBuf::from("/pki")));
        assert_eq!(uri.connect_timeout, Duration::from_secs(2));
        assert_eq!(uri.reconnect_window, None);
        let uri = NbdUri::parse("nbd://h/?reconnect-s=0").unwrap();
        assert_eq!(uri.reconnect_window, Some(Duration::ZERO));
        let uri = NbdUri::parse("nbd://h/?reconnect-s=45").unwrap();
        assert_eq!(uri.reconnect_window, Some(Duration::from_secs(45)));
    }

    #[test]
    fn malformed_uris_are_refused_with_the_reason() {
        for (text, reason) in [
            ("nbd:/host/x", "expected SCHEME://"),
            ("nbdx://host/x", "unsupported scheme"),
            ("nbd://:99/x", "no host"),
            ("nbd://host:0/x", "port \"0\""),
            ("nbd://host:99999/x", "port \"99999\""),
            ("nbd://host:ab/x", "port \"ab\""),
            ("nbd+unix:///x", "needs ?socket=PATH"),
            ("nbd+unix://host/x?socket=/s", "takes no host"),
            (
                "nbd://host/x?socket=/s",
                "unknown query parameter \"socket\"",
            ),
            (
                "nbd://host/x?tls-certificates=/d",
                "unknown query parameter",
            ),
            (
                "nbd://host/x?request-timeout-s=0",
                "request-timeout-s=\"0\"",
            ),
            ("nbd://host/x?request-timeout-s=soon", "whole seconds"),
            ("nbd://host/x?reconnect-s=-1", "from 0 to"),
            ("nbd://host/%zz", "bad %-escape"),
            ("nbd://[::1/x", "unclosed ["),
            ("nbd://u@host/x", "user names"),
        ] {
            let error = NbdUri::parse(text).unwrap_err();
            assert_eq!(error.uri, text);
            assert!(error.reason.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn what_counts_as_a_uri() {
        for uri in [
            "nbd://h/x",
            "nbds://h",
            "nbd+unix:///x?socket=s",
            "nbd:x",
            "nbdq://h",
        ] {
            assert!(looks_like_nbd_uri(uri), "{uri}");
        }
        for path in ["/dev/sdb", "d0", "./nbd/x", "http://h/x", "nbdfile"] {
            assert!(!looks_like_nbd_uri(path), "{path}");
        }
    }
}

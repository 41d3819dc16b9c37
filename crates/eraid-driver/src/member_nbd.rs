//! An array member that is an NBD export on another host (or another
//! process): `nbd://HOST:PORT/EXPORT`, `nbd+unix:///EXPORT?socket=PATH`,
//! `nbds://...?tls-certificates=DIR`.
//!
//! The protocol, the pipelining and the bounds on every wait are
//! [`eraid_nbd::SharedClient`]'s; this adapts it to [`MemberIo`]: the I/O
//! pool's threads each send their request on the one connection, several
//! in flight at once. A connection the server drops is replaced within
//! the reconnect window (`reconnect-s`, else `serve --member-reconnect-s`)
//! when no write it acknowledged since its last completed flush could
//! have been lost with it, and the I/O in flight is sent again: the member
//! stays active. Otherwise (unflushed acknowledged writes, the window
//! passed, a request timeout, a protocol violation) every I/O fails from
//! then on, so the array fails the member and serves degraded.

use std::io;

use eraid_nbd::{NbdUri, SharedClient};

use crate::member::MemberOptions;
use crate::member_io::MemberIo;

/// The largest smallest block a server may demand: the array addresses
/// members in 4 KiB units (its O_DIRECT alignment), never less.
const SERVER_BLOCK_BYTES_MIN_MAX: u32 = crate::DIRECT_ALIGN_BYTES as u32;

/// An open NBD export used as a member.
#[derive(Debug)]
pub struct NbdMember {
    /// The URI as given, which the superblock records and messages name.
    uri_text: String,
    /// Boxed: the client is large beside a file member.
    client: Box<SharedClient>,
}

impl NbdMember {
    /// Connects to `uri_text` and checks the export can be a member: a
    /// writable export when `options.writable`, and block constraints the
    /// array's I/O meets. Errors name the URI.
    pub fn open(uri_text: &str, options: MemberOptions) -> io::Result<NbdMember> {
        let uri = NbdUri::parse(uri_text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let client = SharedClient::connect(&uri).map_err(|e| {
            let kind = match e {
                eraid_nbd::ConnectError::Unreachable { .. } => io::ErrorKind::ConnectionRefused,
                eraid_nbd::ConnectError::NoSuchExport { .. } => io::ErrorKind::NotFound,
                _ => io::ErrorKind::Other,
            };
            io::Error::new(kind, e.to_string())
        })?;
        if options.writable && client.read_only() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{uri_text}: the export is read-only; a member must be writable"),
            ));
        }
        if let Some(block) = client.export().block_size {
            if block.min_bytes > SERVER_BLOCK_BYTES_MIN_MAX {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{uri_text}: the server's minimum block is {} bytes; the array writes \
                         {SERVER_BLOCK_BYTES_MIN_MAX}-byte blocks",
                        block.min_bytes
                    ),
                ));
            }
        }
        Ok(NbdMember {
            uri_text: uri_text.to_string(),
            client: Box::new(client),
        })
    }

    pub fn uri(&self) -> &str {
        &self.uri_text
    }

    /// The export's size, as the server gave it in the handshake.
    pub fn size_bytes(&self) -> u64 {
        self.client.size_bytes()
    }
}

impl MemberIo for NbdMember {
    fn label(&self) -> &str {
        &self.uri_text
    }

    /// Bytes past the export's end read as zeroes (the trait's promise,
    /// which a metadata read of a small export relies on); they are never
    /// asked of the server.
    fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        let size_bytes = self.client.size_bytes();
        let inside_bytes = size_bytes
            .saturating_sub(offset_bytes)
            .min(len_bytes as u64) as usize;
        let mut data = if inside_bytes == 0 {
            Vec::new()
        } else {
            self.client.read(offset_bytes, inside_bytes)?
        };
        data.resize(len_bytes, 0);
        Ok(data)
    }

    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.client.write(offset_bytes, data, false)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.client.flush()
    }

    fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        if self.client.can_write_zeroes() {
            return self.client.write_zeroes(offset_bytes, len_bytes);
        }
        crate::zeroing::write_zeroes_in_pieces(offset_bytes, len_bytes, |at, zeroes| {
            self.client.write(at, zeroes, false)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member_device::MemberDevice;
    use eraid_nbd::{Export, Listener, MemExport, RunningServer, Server, ServerConfig};
    use std::sync::Arc;

    /// Serves `export` on a Unix socket in `dir`; returns the server and
    /// the member URI naming it.
    fn serve(dir: &std::path::Path, export: MemExport) -> (RunningServer, Arc<MemExport>, String) {
        let export = Arc::new(export);
        let socket = dir.join("member.sock");
        let server = Server::bind(
            Listener::Unix(socket.clone()),
            Arc::clone(&export) as Arc<dyn Export>,
            ServerConfig::default(),
        )
        .unwrap()
        .start()
        .unwrap();
        let uri = format!("nbd+unix:///?socket={}", socket.display());
        (server, export, uri)
    }

    #[test]
    fn an_export_is_a_member_reads_past_its_end_are_zeroes_and_flush_reaches_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let (server, export, uri) = serve(dir.path(), MemExport::new("", 64 << 10));
        let member = MemberDevice::open(&uri).unwrap();
        assert!(member.is_nbd());
        assert_eq!(member.path(), std::path::Path::new(&uri));
        assert_eq!(member.size_bytes(), 64 << 10);
        assert!(!member.direct());
        member.write_at(4096, &[7; 8192]).unwrap();
        member.sync_data().unwrap();
        assert!(export.flush_count() >= 1);
        assert_eq!(&export.contents()[4096..12288], &[7; 8192][..]);
        // A metadata read larger than the export: the rest is zeroes.
        let area = member.read_at(0, 1 << 20).unwrap();
        assert_eq!(area.len(), 1 << 20);
        assert_eq!(&area[4096..12288], &[7; 8192][..]);
        assert!(area[64 << 10..].iter().all(|&b| b == 0));
        member.write_zeroes(4096, 4096).unwrap();
        assert_eq!(member.read_at(4096, 8192).unwrap()[..4096], [0; 4096]);
        // Writing past the end is an error naming the member.
        let error = member.write_at(60 << 10, &[1; 8192]).unwrap_err();
        assert!(error.to_string().contains(&uri), "{error}");
        drop(member);
        server.stop().unwrap();
    }

    #[test]
    fn a_read_only_export_is_refused_as_a_writable_member_but_read_for_detail() {
        let dir = tempfile::tempdir().unwrap();
        let export = MemExport::new("", 64 << 10).with_read_only(true);
        let (server, _export, uri) = serve(dir.path(), export);
        let error = MemberDevice::open(&uri).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("read-only"), "{error}");
        assert!(error.to_string().contains(&uri), "{error}");
        let read_only = MemberOptions {
            writable: false,
            ..MemberOptions::default()
        };
        MemberDevice::open_with(&uri, read_only).unwrap();
        server.stop().unwrap();
    }

    #[test]
    fn a_malformed_uri_is_refused_as_such_never_opened_as_a_file() {
        for text in ["nbd:/x", "nbdq://h/x", "nbd://h:0/"] {
            let error = MemberDevice::open(text).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{text}");
            assert!(error.to_string().contains("bad NBD URI"), "{text}: {error}");
        }
        assert!(!crate::is_nbd_uri(std::path::Path::new("./d0")));
    }
}

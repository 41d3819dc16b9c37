//! An array member that is an NBD export on another host (or another
//! process): `nbd://HOST:PORT/EXPORT`, `nbd+unix:///EXPORT?socket=PATH`,
//! `nbds://...?tls-certificates=DIR`.
//!
//! The protocol, the pipelining and the bounds on every wait are
//! [`eraid_nbd::SharedClient`]'s; this adapts it to [`MemberIo`]: the I/O
//! pool's threads each send their request on the one connection, several
//! in flight at once. A connection that dies fails every I/O from then on,
//! so the array fails the member and serves degraded.

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
    client: SharedClient,
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
            client,
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

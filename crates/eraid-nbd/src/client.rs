//! A small blocking NBD client: fixed newstyle handshake with NBD_OPT_GO,
//! simple replies, one connection. `read`/`write`/... wait for their reply;
//! `send_request`/`receive_reply` let a caller keep many requests in flight.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::protocol::{self as p, be_u16, be_u32, be_u64, RequestHeader};
use crate::stream::Stream;
use crate::uri::{Endpoint, NbdUri};

/// Largest option reply the client reads (a trusted server sends a few dozen bytes).
const OPTION_REPLY_BYTES_MAX: u32 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("server rejected option {option} with reply {reply_type:#x}: {message}")]
    OptionRejected {
        option: u32,
        reply_type: u32,
        message: String,
    },
    /// The server answered a request with this NBD error value.
    #[error("server replied with NBD error {0}")]
    Request(u32),
    #[error("bad NBD URI: {0}")]
    Uri(String),
}

/// Block size constraints the server advertised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSize {
    pub min_bytes: u32,
    pub preferred_bytes: u32,
    pub max_bytes: u32,
}

/// One reply from `receive_reply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub handle: u64,
    /// NBD error value; 0 is success.
    pub error: u32,
    /// The data of a successful read.
    pub data: Option<Vec<u8>>,
}

/// A connected client in the transmission phase.
pub struct Client {
    stream: Stream,
    size_bytes: u64,
    transmission_flags: u16,
    block_size: Option<BlockSize>,
    description: Option<String>,
    next_handle: u64,
    /// Read length of every read still awaiting its reply, by handle:
    /// simple replies do not say how much data follows.
    reads_in_flight: HashMap<u64, u32>,
}

impl Client {
    pub fn connect_unix(path: impl AsRef<Path>, export_name: &str) -> Result<Client, ClientError> {
        Self::handshake(Stream::Unix(UnixStream::connect(path)?), export_name)
    }

    pub fn connect_tcp(
        address: impl ToSocketAddrs,
        export_name: &str,
    ) -> Result<Client, ClientError> {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        Self::handshake(Stream::Tcp(stream), export_name)
    }

    /// Connects to `nbd+unix:///NAME?socket=PATH` or `nbd://HOST[:PORT]/NAME`
    /// (no TLS, no timeouts: see [`crate::SharedClient`] for those).
    pub fn connect_uri(uri: &str) -> Result<Client, ClientError> {
        let parsed = NbdUri::parse(uri).map_err(|e| ClientError::Uri(e.to_string()))?;
        if parsed.tls {
            return Err(ClientError::Uri(format!(
                "{uri}: this small client speaks no TLS"
            )));
        }
        match parsed.endpoint {
            Endpoint::Unix { socket } => Self::connect_unix(socket, &parsed.export_name),
            Endpoint::Tcp { host, port } => {
                Self::connect_tcp((host.as_str(), port), &parsed.export_name)
            }
        }
    }

    /// Applies a timeout to every later socket read and write.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(timeout)?;
        self.stream.set_write_timeout(timeout)
    }

    /// Bytes the server has sent that this client has not read yet
    /// (FIONREAD; 0 over TLS).
    pub fn unread_bytes(&self) -> usize {
        self.stream.readable_bytes()
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    pub fn transmission_flags(&self) -> u16 {
        self.transmission_flags
    }

    pub fn block_size(&self) -> Option<BlockSize> {
        self.block_size
    }

    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    pub fn read(&mut self, offset_bytes: u64, len_bytes: u32) -> Result<Vec<u8>, ClientError> {
        let handle = self.send_request(p::CMD_READ, 0, offset_bytes, len_bytes, &[])?;
        Ok(self.wait(handle)?.unwrap_or_default())
    }

    pub fn write(&mut self, offset_bytes: u64, data: &[u8], fua: bool) -> Result<(), ClientError> {
        let len_bytes = u32::try_from(data.len())
            .map_err(|_| ClientError::Protocol("write longer than 4 GiB".into()))?;
        let flags = if fua { p::CMD_FLAG_FUA } else { 0 };
        let handle = self.send_request(p::CMD_WRITE, flags, offset_bytes, len_bytes, data)?;
        self.wait(handle).map(drop)
    }

    pub fn flush(&mut self) -> Result<(), ClientError> {
        let handle = self.send_request(p::CMD_FLUSH, 0, 0, 0, &[])?;
        self.wait(handle).map(drop)
    }

    pub fn trim(&mut self, offset_bytes: u64, len_bytes: u32) -> Result<(), ClientError> {
        let handle = self.send_request(p::CMD_TRIM, 0, offset_bytes, len_bytes, &[])?;
        self.wait(handle).map(drop)
    }

    pub fn write_zeroes(
        &mut self,
        offset_bytes: u64,
        len_bytes: u32,
        fua: bool,
    ) -> Result<(), ClientError> {
        let flags = if fua { p::CMD_FLAG_FUA } else { 0 };
        let handle = self.send_request(p::CMD_WRITE_ZEROES, flags, offset_bytes, len_bytes, &[])?;
        self.wait(handle).map(drop)
    }

    /// Sends NBD_CMD_DISC and closes. Replies still owed are not awaited.
    pub fn disconnect(mut self) -> Result<(), ClientError> {
        self.send_request(p::CMD_DISC, 0, 0, 0, &[])?;
        self.stream.flush()?;
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        Ok(())
    }

    /// Sends one request without waiting; returns its handle. `payload` is
    /// sent after the header (a write's data).
    pub fn send_request(
        &mut self,
        command: u16,
        flags: u16,
        offset_bytes: u64,
        len_bytes: u32,
        payload: &[u8],
    ) -> Result<u64, ClientError> {
        let handle = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1);
        let header = RequestHeader {
            flags,
            command,
            handle,
            offset_bytes,
            len_bytes,
        };
        let mut message = Vec::with_capacity(p::REQUEST_HEADER_BYTES + payload.len());
        message.extend_from_slice(&header.encode());
        message.extend_from_slice(payload);
        self.stream.write_all(&message)?;
        if command == p::CMD_READ {
            self.reads_in_flight.insert(handle, len_bytes);
        }
        Ok(handle)
    }

    /// Receives the next reply, in whatever order the server sends them.
    pub fn receive_reply(&mut self) -> Result<Reply, ClientError> {
        let mut header = [0u8; p::SIMPLE_REPLY_HEADER_BYTES];
        self.stream.read_exact(&mut header)?;
        let magic = be_u32(&header[0..4]);
        if magic != p::SIMPLE_REPLY_MAGIC {
            return Err(ClientError::Protocol(format!("bad reply magic {magic:#x}")));
        }
        let error = be_u32(&header[4..8]);
        let handle = be_u64(&header[8..16]);
        let read_len_bytes = self.reads_in_flight.remove(&handle);
        let data = match read_len_bytes {
            Some(len_bytes) if error == 0 => {
                let mut data = vec![0u8; len_bytes as usize];
                self.stream.read_exact(&mut data)?;
                Some(data)
            }
            _ => None,
        };
        Ok(Reply {
            handle,
            error,
            data,
        })
    }

    /// Waits for the reply to `handle`; only for one request at a time.
    fn wait(&mut self, handle: u64) -> Result<Option<Vec<u8>>, ClientError> {
        let reply = self.receive_reply()?;
        if reply.handle != handle {
            return Err(ClientError::Protocol(format!(
                "reply for handle {} while waiting for {handle}",
                reply.handle
            )));
        }
        if reply.error != 0 {
            return Err(ClientError::Request(reply.error));
        }
        Ok(reply.data)
    }

    fn handshake(mut stream: Stream, export_name: &str) -> Result<Client, ClientError> {
        let export = negotiate(&mut stream, export_name)?;
        Ok(Client {
            stream,
            size_bytes: export.size_bytes,
            transmission_flags: export.transmission_flags,
            block_size: export.block_size,
            description: export.description,
            next_handle: 1,
            reads_in_flight: HashMap::new(),
        })
    }
}

/// What the server said about the export in answer to NBD_OPT_GO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInfo {
    pub size_bytes: u64,
    pub transmission_flags: u16,
    pub block_size: Option<BlockSize>,
    pub description: Option<String>,
}

/// Reads the server's greeting and answers it (fixed newstyle, NO_ZEROES
/// when offered); returns the server's handshake flags.
pub(crate) fn greet(stream: &mut Stream) -> Result<u16, ClientError> {
    let mut greeting = [0u8; 18];
    stream.read_exact(&mut greeting)?;
    if be_u64(&greeting[0..8]) != p::NBDMAGIC || be_u64(&greeting[8..16]) != p::IHAVEOPT {
        return Err(ClientError::Protocol("not a newstyle NBD server".into()));
    }
    let server_flags = be_u16(&greeting[16..18]);
    if server_flags & p::FLAG_FIXED_NEWSTYLE == 0 {
        return Err(ClientError::Protocol("server lacks fixed newstyle".into()));
    }
    let mut client_flags = p::FLAG_C_FIXED_NEWSTYLE;
    if server_flags & p::FLAG_NO_ZEROES != 0 {
        client_flags |= p::FLAG_C_NO_ZEROES;
    }
    stream.write_all(&client_flags.to_be_bytes())?;
    Ok(server_flags)
}

/// The fixed newstyle handshake up to the transmission phase: greeting,
/// then NBD_OPT_GO for `export_name` asking for the block size.
pub(crate) fn negotiate(stream: &mut Stream, export_name: &str) -> Result<ExportInfo, ClientError> {
    greet(stream)?;
    go(stream, export_name)
}

/// NBD_OPT_GO for `export_name`, after the greeting (and STARTTLS).
pub(crate) fn go(stream: &mut Stream, export_name: &str) -> Result<ExportInfo, ClientError> {
    let name = export_name.as_bytes();
    if name.len() > p::STRING_BYTES_MAX {
        return Err(ClientError::Protocol(format!(
            "export name of {} bytes; the protocol allows {}",
            name.len(),
            p::STRING_BYTES_MAX
        )));
    }
    let requests = [p::INFO_BLOCK_SIZE, p::INFO_DESCRIPTION];
    let mut data = Vec::new();
    data.extend_from_slice(&(name.len() as u32).to_be_bytes());
    data.extend_from_slice(name);
    data.extend_from_slice(&(requests.len() as u16).to_be_bytes());
    for request in requests {
        data.extend_from_slice(&request.to_be_bytes());
    }
    send_option(stream, p::OPT_GO, &data)?;

    let mut export_info: Option<(u64, u16)> = None;
    let mut block_size = None;
    let mut description = None;
    loop {
        let (reply_type, reply) = receive_option_reply(stream, p::OPT_GO)?;
        if p::is_reply_error(reply_type) {
            return Err(ClientError::OptionRejected {
                option: p::OPT_GO,
                reply_type,
                message: String::from_utf8_lossy(&reply).into_owned(),
            });
        }
        match reply_type {
            p::REP_ACK => break,
            p::REP_INFO if reply.len() >= 2 => match be_u16(&reply[0..2]) {
                p::INFO_EXPORT if reply.len() == 12 => {
                    export_info = Some((be_u64(&reply[2..10]), be_u16(&reply[10..12])));
                }
                p::INFO_BLOCK_SIZE if reply.len() == 14 => {
                    block_size = Some(BlockSize {
                        min_bytes: be_u32(&reply[2..6]),
                        preferred_bytes: be_u32(&reply[6..10]),
                        max_bytes: be_u32(&reply[10..14]),
                    });
                }
                p::INFO_DESCRIPTION => {
                    description = Some(String::from_utf8_lossy(&reply[2..]).into_owned());
                }
                _ => {} // unknown or unrequested info is ignored, as the spec asks
            },
            other => {
                return Err(ClientError::Protocol(format!(
                    "unexpected GO reply {other:#x}"
                )))
            }
        }
    }
    let (size_bytes, transmission_flags) = export_info
        .ok_or_else(|| ClientError::Protocol("GO acknowledged without NBD_INFO_EXPORT".into()))?;
    Ok(ExportInfo {
        size_bytes,
        transmission_flags,
        block_size,
        description,
    })
}

pub(crate) fn send_option(stream: &mut Stream, option: u32, data: &[u8]) -> io::Result<()> {
    let mut message = Vec::with_capacity(16 + data.len());
    message.extend_from_slice(&p::IHAVEOPT.to_be_bytes());
    message.extend_from_slice(&option.to_be_bytes());
    message.extend_from_slice(&(data.len() as u32).to_be_bytes());
    message.extend_from_slice(data);
    stream.write_all(&message)?;
    // A TLS stream holds records back until flushed.
    stream.flush()
}

pub(crate) fn receive_option_reply(
    stream: &mut Stream,
    option: u32,
) -> Result<(u32, Vec<u8>), ClientError> {
    let mut header = [0u8; 20];
    stream.read_exact(&mut header)?;
    if be_u64(&header[0..8]) != p::OPTION_REPLY_MAGIC || be_u32(&header[8..12]) != option {
        return Err(ClientError::Protocol("bad option reply header".into()));
    }
    let reply_type = be_u32(&header[12..16]);
    let len_bytes = be_u32(&header[16..20]);
    if len_bytes > OPTION_REPLY_BYTES_MAX {
        return Err(ClientError::Protocol(format!(
            "option reply of {len_bytes} bytes"
        )));
    }
    let mut data = vec![0u8; len_bytes as usize];
    stream.read_exact(&mut data)?;
    Ok((reply_type, data))
}

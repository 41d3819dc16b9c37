//! What the server serves: the `Export` trait the CLI implements for the array.

use crate::protocol;

/// One operation on the export, already validated by the server: offsets and
/// lengths are aligned to `ServerConfig::min_block_bytes`, lie inside
/// `size_bytes()`, and are no longer than `ServerConfig::max_request_bytes`
/// (longer client trims and zero writes are split before they get here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportCommand {
    Read {
        offset_bytes: u64,
        len_bytes: u32,
    },
    /// `data` is shared, not copied, by the array's member writes.
    Write {
        offset_bytes: u64,
        data: bytes::Bytes,
        fua: bool,
    },
    /// Must make durable every write *completed* before it was submitted,
    /// whichever connection sent it (the server advertises CAN_MULTI_CONN
    /// on that promise).
    Flush,
    Trim {
        offset_bytes: u64,
        len_bytes: u32,
    },
    WriteZeroes {
        offset_bytes: u64,
        len_bytes: u32,
        fua: bool,
    },
}

/// Why an export command failed; each maps to one NBD error value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    #[error("I/O error: {0}")]
    Io(String),
    #[error("no space left")]
    NoSpace,
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("export is shutting down")]
    ShuttingDown,
}

impl ExportError {
    /// The NBD error value sent in the reply.
    pub fn nbd_error(&self) -> u32 {
        match self {
            ExportError::Io(_) => protocol::EIO,
            ExportError::NoSpace => protocol::ENOSPC,
            ExportError::Invalid(_) => protocol::EINVAL,
            ExportError::ShuttingDown => protocol::ESHUTDOWN,
        }
    }
}

/// `Ok(Some(bytes))` for reads (exactly `len_bytes` long), `Ok(None)` otherwise.
pub type ExportResult = Result<Option<eraid_buffers::ReadData>, ExportError>;

/// The completion callback handed to `Export::submit`.
pub type Done = Box<dyn FnOnce(ExportResult) + Send>;

/// A block device the server exports.
pub trait Export: Send + Sync + 'static {
    /// The export name clients ask for (the empty name also selects it).
    fn name(&self) -> &str;
    /// A human-readable line sent as NBD_INFO_DESCRIPTION.
    fn description(&self) -> String;
    /// Read at every handshake and for every request's range check, so an
    /// export may grow while served (an array after an online growth):
    /// clients that connect afterwards see the new size.
    fn size_bytes(&self) -> u64;
    /// The I/O size that performs best (chunk or stripe size). The server
    /// advertises the largest power of two that divides it, within the
    /// configured minimum and maximum, since the protocol demands a power of two.
    fn preferred_block_bytes(&self) -> u32;
    fn read_only(&self) -> bool {
        false
    }
    /// Starts `command`. Must not block for long (it runs on the connection's
    /// reader thread); must call `done` exactly once, from any thread. If
    /// `done` is dropped uncalled the client gets an EIO reply, so a lost
    /// callback cannot hang the connection.
    fn submit(&self, command: ExportCommand, done: Done);
    /// Starts several commands a client sent together, in order, as
    /// `submit` would each. An export that can hand them on at once (one
    /// wake-up of the thread that runs them) overrides this.
    fn submit_batch(&self, commands: Vec<(ExportCommand, Done)>) {
        for (command, done) in commands {
            self.submit(command, done);
        }
    }
}

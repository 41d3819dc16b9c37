//! The array as an NBD export: NBD commands become user requests on the
//! engine. Flush covers every connection's completed writes, because the
//! array flushes every member (which is what makes CAN_MULTI_CONN safe).

use eraid_core::io::{UserError, UserOp};
use eraid_driver::EngineHandle;
use eraid_nbd::{Done, Export, ExportCommand, ExportError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub struct ArrayExport {
    /// Set once the engine runs; the server binds before that so a failure
    /// to listen leaves the members untouched.
    pub handle: Arc<OnceLock<EngineHandle>>,
    /// The capacity users see; raised when a growth finishes, so clients
    /// that connect afterwards see the new size.
    pub size_bytes: Arc<AtomicU64>,
    pub preferred_block_bytes: u32,
    pub description: String,
}

fn to_export_error(error: UserError, is_write: bool) -> ExportError {
    match error {
        UserError::OutOfRange { .. } if is_write => ExportError::NoSpace,
        UserError::OutOfRange { .. } | UserError::Unaligned { .. } | UserError::TooLong { .. } => {
            ExportError::Invalid(error.to_string())
        }
        UserError::Unavailable(_) => ExportError::Io(error.to_string()),
        UserError::ShuttingDown => ExportError::ShuttingDown,
    }
}

impl Export for ArrayExport {
    fn name(&self) -> &str {
        "eraid"
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn size_bytes(&self) -> u64 {
        self.size_bytes.load(Ordering::Acquire)
    }

    fn preferred_block_bytes(&self) -> u32 {
        self.preferred_block_bytes
    }

    fn submit(&self, command: ExportCommand, done: Done) {
        let (op, reply) = to_request(command, done);
        match self.handle.get() {
            Some(handle) => handle.submit(op, reply),
            None => reply(Err(UserError::ShuttingDown)),
        }
    }

    fn submit_batch(&self, commands: Vec<(ExportCommand, Done)>) {
        let requests: Vec<_> = commands
            .into_iter()
            .map(|(command, done)| to_request(command, done))
            .collect();
        match self.handle.get() {
            Some(handle) => handle.submit_batch(requests),
            None => {
                for (_, reply) in requests {
                    reply(Err(UserError::ShuttingDown));
                }
            }
        }
    }
}

/// The user request an NBD command becomes, and its reply callback.
fn to_request(command: ExportCommand, done: Done) -> (UserOp, eraid_driver::ReplyFn) {
    let (op, is_write) = match command {
        ExportCommand::Read {
            offset_bytes,
            len_bytes,
        } => (
            UserOp::Read {
                offset_bytes,
                len_bytes: len_bytes as usize,
            },
            false,
        ),
        ExportCommand::Write {
            offset_bytes,
            data,
            fua,
        } => (
            UserOp::Write {
                offset_bytes,
                data,
                fua,
            },
            true,
        ),
        ExportCommand::Flush => (UserOp::Flush, false),
        ExportCommand::Trim {
            offset_bytes,
            len_bytes,
        } => (
            UserOp::Trim {
                offset_bytes,
                len_bytes: len_bytes as u64,
            },
            true,
        ),
        ExportCommand::WriteZeroes {
            offset_bytes,
            len_bytes,
            fua,
        } => (
            UserOp::WriteZeroes {
                offset_bytes,
                len_bytes: len_bytes as u64,
                fua,
            },
            true,
        ),
    };
    let reply: eraid_driver::ReplyFn =
        Box::new(move |result| done(result.map_err(|e| to_export_error(e, is_write))));
    (op, reply)
}

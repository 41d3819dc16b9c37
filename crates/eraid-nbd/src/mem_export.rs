//! An export backed by memory: for tests, demos and as a reference model.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::export::{Done, Export, ExportCommand, ExportError, ExportResult};

/// A byte vector behind a mutex. Completes every command inline, on the
/// submitting thread (the trait allows any thread).
#[derive(Debug)]
pub struct MemExport {
    name: String,
    description: String,
    preferred_block_bytes: u32,
    read_only: bool,
    bytes: Mutex<Vec<u8>>,
    flush_count: AtomicU64,
    fua_count: AtomicU64,
}

impl MemExport {
    /// A zero-filled export of `size_bytes`.
    pub fn new(name: impl Into<String>, size_bytes: usize) -> Self {
        Self::with_contents(name, vec![0u8; size_bytes])
    }

    /// An export holding `contents`.
    pub fn with_contents(name: impl Into<String>, contents: Vec<u8>) -> Self {
        let name = name.into();
        MemExport {
            description: format!("in-memory export {name}"),
            name,
            preferred_block_bytes: 4096,
            read_only: false,
            bytes: Mutex::new(contents),
            flush_count: AtomicU64::new(0),
            fua_count: AtomicU64::new(0),
        }
    }

    pub fn with_preferred_block_bytes(mut self, preferred_block_bytes: u32) -> Self {
        self.preferred_block_bytes = preferred_block_bytes;
        self
    }

    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// A copy of the current contents.
    pub fn contents(&self) -> Vec<u8> {
        self.lock().clone()
    }

    /// Flush commands executed so far.
    pub fn flush_count(&self) -> u64 {
        self.flush_count.load(Ordering::Relaxed)
    }

    /// Writes and zero writes executed with FUA so far.
    pub fn fua_count(&self) -> u64 {
        self.fua_count.load(Ordering::Relaxed)
    }

    /// Runs one command synchronously. Checks its own bounds, since callers
    /// other than the server (wrapping test exports) may use it directly.
    pub fn execute(&self, command: ExportCommand) -> ExportResult {
        match command {
            ExportCommand::Read {
                offset_bytes,
                len_bytes,
            } => {
                let bytes = self.lock();
                let range = range(bytes.len(), offset_bytes, u64::from(len_bytes))?;
                Ok(Some(bytes[range].to_vec().into()))
            }
            ExportCommand::Write {
                offset_bytes,
                data,
                fua,
            } => {
                self.check_writable()?;
                let mut bytes = self.lock();
                let range = range(bytes.len(), offset_bytes, data.len() as u64)?;
                bytes[range].copy_from_slice(&data);
                self.count_fua(fua);
                Ok(None)
            }
            ExportCommand::Flush => {
                self.flush_count.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            // Memory has nothing to deallocate; reading trimmed bytes as
            // zeroes is what the RAID will do too, and is easy to check.
            ExportCommand::Trim {
                offset_bytes,
                len_bytes,
            }
            | ExportCommand::WriteZeroes {
                offset_bytes,
                len_bytes,
                ..
            } => {
                self.check_writable()?;
                let mut bytes = self.lock();
                let range = range(bytes.len(), offset_bytes, u64::from(len_bytes))?;
                bytes[range].fill(0);
                if let ExportCommand::WriteZeroes { fua, .. } = command {
                    self.count_fua(fua);
                }
                Ok(None)
            }
        }
    }

    fn check_writable(&self) -> Result<(), ExportError> {
        if self.read_only {
            return Err(ExportError::Invalid("export is read-only".into()));
        }
        Ok(())
    }

    fn count_fua(&self, fua: bool) {
        if fua {
            self.fua_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn range(
    size_bytes: usize,
    offset_bytes: u64,
    len_bytes: u64,
) -> Result<std::ops::Range<usize>, ExportError> {
    let end_bytes = offset_bytes
        .checked_add(len_bytes)
        .filter(|&end| end <= size_bytes as u64)
        .ok_or(ExportError::NoSpace)?;
    Ok(offset_bytes as usize..end_bytes as usize)
}

impl Export for MemExport {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn size_bytes(&self) -> u64 {
        self.lock().len() as u64
    }

    fn preferred_block_bytes(&self) -> u32 {
        self.preferred_block_bytes
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn submit(&self, command: ExportCommand, done: Done) {
        // `execute` releases the lock before `done` runs, so a callback that
        // submits again (flush after trim) cannot deadlock.
        let result = self.execute(command);
        done(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_trim_round_trip() {
        let export = MemExport::new("m", 8192);
        let data = vec![7u8; 1024];
        export
            .execute(ExportCommand::Write {
                offset_bytes: 512,
                data: data.clone().into(),
                fua: true,
            })
            .unwrap();
        let read = export.execute(ExportCommand::Read {
            offset_bytes: 512,
            len_bytes: 1024,
        });
        assert_eq!(read, Ok(Some(data.into())));
        export
            .execute(ExportCommand::Trim {
                offset_bytes: 512,
                len_bytes: 512,
            })
            .unwrap();
        let read = export.execute(ExportCommand::Read {
            offset_bytes: 512,
            len_bytes: 1024,
        });
        let mut expected = vec![0u8; 512];
        expected.extend_from_slice(&[7u8; 512]);
        assert_eq!(read, Ok(Some(expected.into())));
        assert_eq!(export.fua_count(), 1);
    }

    #[test]
    fn out_of_range_is_an_error_not_a_panic() {
        let export = MemExport::new("m", 4096);
        let read = export.execute(ExportCommand::Read {
            offset_bytes: u64::MAX,
            len_bytes: 512,
        });
        assert_eq!(read, Err(ExportError::NoSpace));
    }
}

//! Opening member files, reading their metadata and assembling the array.

use anyhow::{bail, Context, Result};
use eraid_core::geometry::METADATA_BYTES;
use eraid_core::metadata::assemble::{assemble, Assembly, MemberProbe, SlotState};
use eraid_driver::{read_metadata_area, MemberFile, MemberIo};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// An assembled array: the decision, and an open device per member slot.
pub struct Assembled {
    pub assembly: Assembly,
    pub paths: Vec<PathBuf>,
    /// Slot i's device; absent or stale slots get a device that fails.
    pub devices: Vec<Arc<dyn MemberIo>>,
    /// Whether each slot's device uses O_DIRECT (tmpfs and some others refuse it).
    pub direct: Vec<bool>,
}

/// Stands in for a member slot that has no usable device; the core never
/// addresses such slots, and if it did the I/O fails cleanly.
struct AbsentMember {
    label: String,
}

impl MemberIo for AbsentMember {
    fn label(&self) -> &str {
        &self.label
    }
    fn read_at(&self, _offset_bytes: u64, _len_bytes: usize) -> io::Result<Vec<u8>> {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is not part of the running array", self.label),
        ))
    }
    fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is not part of the running array", self.label),
        ))
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

/// Holds an exclusive advisory lock on every member for this process's
/// lifetime, so two eraid processes never drive the same members.
pub struct MemberLocks {
    _files: Vec<std::fs::File>,
}

pub fn lock_members(paths: &[PathBuf]) -> Result<MemberLocks> {
    use std::os::fd::AsRawFd;
    check_distinct(paths)?;
    let mut files = Vec::new();
    for path in paths {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot open member {}", path.display()))?;
        // SAFETY: flock on a file descriptor we own; no memory is shared.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
                bail!(
                    "{} is in use by another eraid process (serve or check); stop it first",
                    path.display()
                );
            }
            return Err(error).with_context(|| format!("cannot lock {}", path.display()));
        }
        files.push(file);
    }
    Ok(MemberLocks { _files: files })
}

pub fn check_distinct(paths: &[PathBuf]) -> Result<()> {
    for (i, a) in paths.iter().enumerate() {
        for b in &paths[i + 1..] {
            let same = match (a.canonicalize(), b.canonicalize()) {
                (Ok(x), Ok(y)) => x == y,
                _ => a == b,
            };
            if same {
                bail!("{} is named twice", a.display());
            }
        }
    }
    Ok(())
}

/// Reads every member's metadata (without changing anything).
pub fn probe(paths: &[PathBuf]) -> Result<(Vec<MemberProbe>, Vec<MemberFile>)> {
    check_distinct(paths)?;
    let mut probes = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        let file = MemberFile::open(path)
            .with_context(|| format!("cannot open member {}", path.display()))?;
        let metadata =
            read_metadata_area(&file, METADATA_BYTES as usize).map_err(|e| e.to_string());
        probes.push(MemberProbe {
            path: path.display().to_string(),
            metadata,
            size_bytes: file.size_bytes(),
        });
        files.push(file);
    }
    Ok((probes, files))
}

/// Probes and assembles, returning devices ordered by member slot.
pub fn assemble_members(paths: &[PathBuf]) -> Result<Assembled> {
    if paths.is_empty() {
        bail!("no members given");
    }
    let (probes, files) = probe(paths)?;
    let assembly = assemble(&probes)?;
    let mut files: Vec<Option<MemberFile>> = files.into_iter().map(Some).collect();
    let mut devices: Vec<Arc<dyn MemberIo>> = Vec::new();
    let mut slot_paths = Vec::new();
    let mut direct = Vec::new();
    for (slot, state) in assembly.slots.iter().enumerate() {
        match state {
            SlotState::Present { probe } => {
                let file = files[*probe].take().expect("each probe used once");
                slot_paths.push(file.path().to_path_buf());
                direct.push(file.direct());
                devices.push(Arc::new(file));
            }
            SlotState::Stale { probe, .. } => {
                slot_paths.push(paths[*probe].clone());
                direct.push(false);
                devices.push(Arc::new(AbsentMember {
                    label: format!("stale member {slot} ({})", paths[*probe].display()),
                }));
            }
            SlotState::Missing => {
                let hint = &assembly.superblock.members[slot].path_hint;
                slot_paths.push(PathBuf::from(hint));
                direct.push(false);
                devices.push(Arc::new(AbsentMember {
                    label: format!("missing member {slot} ({hint})"),
                }));
            }
        }
    }
    Ok(Assembled {
        assembly,
        paths: slot_paths,
        devices,
        direct,
    })
}

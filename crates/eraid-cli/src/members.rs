//! Opening member files, reading their metadata and assembling the array.

use anyhow::{bail, Context, Result};
use eraid_core::geometry::METADATA_BYTES;
use eraid_core::metadata::assemble::{
    assemble, assemble_with, AssembleOptions, Assembly, AssemblyError, MemberProbe, SlotState,
};
use eraid_driver::{
    is_nbd_uri, read_metadata_area, DetachedMember, MemberDevice, MemberIo, MemberOptions,
};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An assembled array: the decision, and an open device per member slot
/// and per spare (the engine's devices, in its order).
pub struct Assembled {
    pub assembly: Assembly,
    /// Per device: slots first, then the spares the superblock records.
    pub paths: Vec<PathBuf>,
    /// Slot i's device is `devices[i]`, spare j's `devices[member_count +
    /// j]`; absent or stale ones get a device that fails.
    pub devices: Vec<Arc<dyn MemberIo>>,
    /// Whether each slot's device uses O_DIRECT (tmpfs and some others refuse it).
    pub direct: Vec<bool>,
}

pub use crate::locks::{lock_members, MemberLocks};

/// Files about to join an array in a growth: checked, opened and locked.
pub struct AddedMembers {
    /// Canonical paths, in the order given.
    pub paths: Vec<PathBuf>,
    pub files: Vec<MemberDevice>,
    pub locks: MemberLocks,
}

impl AddedMembers {
    /// The devices and their superblock descriptions for the engine, with
    /// fresh member UUIDs (as `create` makes them).
    pub fn into_grow_members(self) -> (Vec<eraid_driver::GrowMember>, MemberLocks) {
        let members = self
            .files
            .into_iter()
            .zip(self.paths)
            .map(|(file, path)| {
                let size_bytes = file.size_bytes();
                eraid_driver::GrowMember {
                    device: Arc::new(file),
                    member: eraid_core::growth::config::NewMember {
                        uuid: uuid::Uuid::new_v4().to_string(),
                        path_hint: path.display().to_string(),
                        size_bytes,
                    },
                }
            })
            .collect();
        (members, self.locks)
    }
}

pub fn same_file(a: &Path, b: &Path) -> bool {
    // Two names of one export are caught by its lock (`lock_member`).
    if is_nbd_uri(a) || is_nbd_uri(b) {
        return a.as_os_str() == b.as_os_str();
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Checks every file to add before anything changes: it exists, is not
/// named twice nor already a member (`current`), is at least `needed_bytes`
/// long, carries no eraid superblock (of this or another array), and no
/// other eraid process holds it. Errors name the path.
pub fn check_added_members(
    added: &[PathBuf],
    current: &[PathBuf],
    needed_bytes: u64,
) -> Result<AddedMembers> {
    use eraid_core::metadata::superblock::Superblock;
    if added.is_empty() {
        bail!("name at least one member to add (--add MEMBER...)");
    }
    check_distinct(added)?;
    for path in added {
        if let Some(member) = current.iter().find(|m| same_file(m, path)) {
            bail!(
                "{} is already a member of this array (as {})",
                path.display(),
                member.display()
            );
        }
    }
    let mut paths = Vec::new();
    let mut files = Vec::new();
    let mut locks = MemberLocks::default();
    for path in added {
        match std::fs::metadata(path) {
            // An export is checked by connecting to it, below.
            _ if is_nbd_uri(path) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => bail!(
                "{} does not exist; create it first (for example `truncate -s {needed_bytes} {}`)",
                path.display(),
                path.display()
            ),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot examine {}", path.display()))
            }
            Ok(meta) if meta.is_dir() => bail!(
                "{} is a directory, not a file or block device",
                path.display()
            ),
            Ok(_) => {}
        }
        locks.extend(crate::locks::lock_member(path)?);
        let file =
            MemberDevice::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        if file.size_bytes() < needed_bytes {
            bail!(
                "{} is too small: {} bytes, but every member of this array needs at least {needed_bytes} bytes",
                path.display(),
                file.size_bytes()
            );
        }
        let area = read_metadata_area(&file, METADATA_BYTES as usize)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if let Ok(sb) = Superblock::decode_newest(&area) {
            bail!(
                "{} already belongs to eraid array {} (member {} of a {} of {} members); \
                 only a file or device without eraid metadata can be added",
                path.display(),
                sb.array_uuid,
                sb.this_member,
                sb.geometry.level.name(),
                sb.geometry.member_count
            );
        }
        paths.push(crate::member_name::canonical_or_given(path));
        files.push(file);
    }
    Ok(AddedMembers {
        paths,
        files,
        locks,
    })
}

/// The capacity users see on members whose superblock is `sb`: the old
/// capacity while a recorded growth is unfinished.
pub fn visible_capacity_bytes(sb: &eraid_core::metadata::superblock::Superblock) -> u64 {
    use eraid_core::growth::record::ReshapeState;
    match &sb.reshape {
        Some(r) if r.state != ReshapeState::Done => r.old_capacity_chunks * sb.geometry.chunk_bytes,
        _ => sb.geometry.capacity_bytes(),
    }
}

/// Bytes a member of this geometry must have (metadata plus data area).
pub fn member_bytes_needed(geometry: &eraid_core::geometry::Geometry) -> u64 {
    geometry.data_offset_bytes + geometry.member_data_bytes
}

pub fn check_distinct(paths: &[PathBuf]) -> Result<()> {
    for (i, a) in paths.iter().enumerate() {
        for b in &paths[i + 1..] {
            if same_file(a, b) {
                bail!("{} is named twice", a.display());
            }
        }
    }
    Ok(())
}

/// Reads every member's metadata (without changing anything).
pub fn probe(paths: &[PathBuf]) -> Result<(Vec<MemberProbe>, Vec<MemberDevice>)> {
    probe_with(paths, MemberOptions::default())
}

/// Decides the array from its members' metadata, opening them read-only.
pub fn assemble_read_only(paths: &[PathBuf]) -> Result<Assembly> {
    if paths.is_empty() {
        bail!("no members given");
    }
    let read_only = MemberOptions {
        writable: false,
        ..MemberOptions::default()
    };
    let (probes, _files) = probe_with(paths, read_only)?;
    Ok(assemble(&probes)?)
}

/// Locks the members, assembles the array (reading only) and locks it by
/// its UUID too, so no other eraid process drives it by any path.
pub fn lock_and_assemble(paths: &[PathBuf]) -> Result<(MemberLocks, Assembled)> {
    lock_and_assemble_with(paths, AssembleOptions::default())
}

/// `lock_and_assemble` with options (`serve --force`).
pub fn lock_and_assemble_with(
    paths: &[PathBuf],
    options: AssembleOptions,
) -> Result<(MemberLocks, Assembled)> {
    let mut locks = lock_members(paths)?;
    let assembled = assemble_members_with(paths, options)?;
    locks.extend(crate::locks::lock_array(
        &assembled.assembly.superblock.array_uuid,
    )?);
    Ok((locks, assembled))
}

fn probe_with(
    paths: &[PathBuf],
    options: MemberOptions,
) -> Result<(Vec<MemberProbe>, Vec<MemberDevice>)> {
    check_distinct(paths)?;
    let mut probes = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        let file = MemberDevice::open_with(path, options)
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
    assemble_members_with(paths, AssembleOptions::default())
}

/// `assemble_members` with options (`serve --force`). When the array
/// cannot run but a forced assembly would run it, the error says so.
pub fn assemble_members_with(paths: &[PathBuf], options: AssembleOptions) -> Result<Assembled> {
    if paths.is_empty() {
        bail!("no members given");
    }
    let (probes, files) = probe(paths)?;
    let assembly = match assemble_with(&probes, options) {
        Ok(assembly) => assembly,
        Err(error) => return Err(with_force_hint(error, &probes, options)),
    };
    let mut files: Vec<Option<MemberDevice>> = files.into_iter().map(Some).collect();
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
            // Re-added from the bitmap: served, and brought up to date.
            SlotState::Stale { probe, .. } if assembly.re_add.contains(&slot) => {
                let file = files[*probe].take().expect("each probe used once");
                slot_paths.push(file.path().to_path_buf());
                direct.push(file.direct());
                devices.push(Arc::new(file));
            }
            SlotState::Stale { probe, .. } => {
                slot_paths.push(paths[*probe].clone());
                direct.push(false);
                devices.push(Arc::new(DetachedMember {
                    label: format!("stale member {slot} ({})", paths[*probe].display()),
                }));
            }
            SlotState::Missing => {
                let hint = &assembly.superblock.members[slot].path_hint;
                slot_paths.push(PathBuf::from(hint));
                direct.push(false);
                devices.push(Arc::new(DetachedMember {
                    label: format!("missing member {slot} ({hint})"),
                }));
            }
        }
    }
    for (index, spare) in assembly.spares.iter().enumerate() {
        match spare {
            Some(probe) => {
                let file = files[*probe].take().expect("each probe used once");
                slot_paths.push(file.path().to_path_buf());
                direct.push(file.direct());
                devices.push(Arc::new(file));
            }
            None => {
                let hint = &assembly.superblock.spares[index].path_hint;
                slot_paths.push(PathBuf::from(hint));
                direct.push(false);
                devices.push(Arc::new(DetachedMember {
                    label: format!("missing spare {index} ({hint})"),
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

/// One member as `detail` reads it: its probe (whose `metadata` says why it
/// could not be read), and whether it could be opened at all.
pub struct ReadOnlyProbe {
    pub probe: MemberProbe,
    pub opened: bool,
}

/// Reads every member's metadata through a read-only handle, for commands
/// that only look (`detail`): nothing is written, nothing is locked, a FIFO
/// is not opened (it would block), and a member that cannot be opened or
/// read is described in its probe instead of failing the whole.
pub fn probe_read_only(paths: &[PathBuf]) -> Vec<ReadOnlyProbe> {
    use eraid_driver::{DirectMode, MemberOptions};
    use std::os::unix::fs::FileTypeExt;
    let options = MemberOptions {
        writable: false,
        direct: DirectMode::Never,
    };
    paths
        .iter()
        .map(|path| {
            let kind_checked = if is_nbd_uri(path) {
                Ok(())
            } else {
                std::fs::metadata(path)
                    .map_err(|e| e.to_string())
                    .and_then(|meta| {
                        let kind = meta.file_type();
                        if kind.is_file() || kind.is_block_device() {
                            Ok(())
                        } else {
                            Err("not a regular file or block device".to_string())
                        }
                    })
            };
            let opened = kind_checked
                .and_then(|()| MemberDevice::open_with(path, options).map_err(|e| e.to_string()));
            let (metadata, size_bytes, opened) = match opened {
                Ok(file) => (
                    read_metadata_area(&file, METADATA_BYTES as usize)
                        .map_err(|e| format!("cannot read: {e}")),
                    file.size_bytes(),
                    true,
                ),
                Err(error) => (Err(format!("cannot open: {error}")), 0, false),
            };
            ReadOnlyProbe {
                probe: MemberProbe {
                    path: path.display().to_string(),
                    metadata,
                    size_bytes,
                },
                opened,
            }
        })
        .collect()
}

/// `error`, and when too many members failed but some of them were given
/// and a forced assembly would run the array: what `serve --force` would
/// take back, and what that risks.
fn with_force_hint(
    error: AssemblyError,
    probes: &[MemberProbe],
    options: AssembleOptions,
) -> anyhow::Error {
    let too_few = matches!(
        error,
        AssemblyError::TooManyMissing { .. }
            | AssemblyError::MissingMember { .. }
            | AssemblyError::MirrorLost { .. }
    );
    if options.force || !too_few {
        return error.into();
    }
    let Ok(forced) = assemble_with(
        probes,
        AssembleOptions {
            force: true,
            ..Default::default()
        },
    ) else {
        return error.into();
    };
    let taken: Vec<String> = forced
        .forced
        .iter()
        .map(|f| {
            format!(
                "member {} ({}, events {} of the array's {})",
                f.slot, f.path, f.events, f.array_events
            )
        })
        .collect();
    anyhow::anyhow!(
        "{error}. Nothing was changed. `eraid serve --force` with the same members would take \
         back {} (the most recent failed copy, as Linux MD's --assemble --force): writes made \
         while it was failed are lost on it, stripes being written when it failed may read back \
         wrong (the write hole), and every region is marked for resync. Use it only when the \
         failed members are healthy again (for example space was freed after ENOSPC)",
        taken.join(" and ")
    )
}

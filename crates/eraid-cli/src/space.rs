//! Sparse member files and the free space under them: a host filesystem
//! that fills up fails writes to a member, and eraid then fails that member
//! (no rebuild yet), so say so before it happens.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One warning per host filesystem whose free space is less than what the
/// regular member files among `paths` still need to fill `bytes_each`.
pub fn shortfall_warnings(paths: &[PathBuf], bytes_each: u64) -> Vec<String> {
    // Device id -> (a member path on it, bytes still to allocate).
    let mut by_fs: BTreeMap<u64, (PathBuf, u64)> = BTreeMap::new();
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let allocated = meta.blocks().saturating_mul(512);
        let need = bytes_each.saturating_sub(allocated);
        let entry = by_fs.entry(meta.dev()).or_insert((path.clone(), 0));
        entry.1 = entry.1.saturating_add(need);
    }
    let mut warnings = Vec::new();
    for (path, need) in by_fs.values() {
        let Some(free) = free_bytes(path) else {
            continue;
        };
        if *need > free {
            warnings.push(format!(
                "warning: the member files on the filesystem holding {} are sparse and need up to \
                 {} MiB more as they fill, but only {} MiB is free there. If it fills, writes to a \
                 member fail and eraid fails that member (a spare or a replacement added later is rebuilt \
                 from the others). Free space, or \
                 allocate each member first (fallocate -l {} FILE)",
                path.display(),
                need >> 20,
                free >> 20,
                bytes_each
            ));
        }
    }
    warnings
}

/// Bytes an unprivileged writer may still allocate on `path`'s filesystem.
fn free_bytes(path: &Path) -> Option<u64> {
    let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a valid NUL-terminated path and a buffer statvfs fills in.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let stat = unsafe { stat.assume_init() };
    // The field types differ between platforms (u32 on some 32-bit ones).
    #[allow(clippy::unnecessary_cast)]
    let (blocks, block_bytes) = (stat.f_bavail as u64, stat.f_frsize as u64);
    Some(blocks.saturating_mul(block_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_file_larger_than_the_free_space_is_warned_about() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m0");
        let file = std::fs::File::create(&path).expect("create");
        let free = free_bytes(dir.path()).expect("statvfs");
        // Sparse: nothing allocated yet.
        file.set_len(4096).expect("set_len");
        let paths = vec![path];
        let warnings = shortfall_warnings(&paths, free.saturating_mul(2).max(1 << 30));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("fallocate"), "{warnings:?}");
        assert!(shortfall_warnings(&paths, 4096).is_empty());
    }
}

//! What a device error means, for the core: a read that hit a bad sector
//! (the core repairs it), or a failed device. And for the operator: a
//! write refused for lack of space names the filesystem that is full.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A read error the device survives (a latent sector error): the core
/// rebuilds the range from the others and rewrites it. Anything else (the
/// device gone, a member that shrank) fails the member.
pub fn is_media_error(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EIO | libc::EILSEQ | libc::ENODATA | libc::EBADMSG)
    )
}

/// For a write refused with ENOSPC on a member file: which filesystem is
/// full and what to do; empty for any other error.
pub fn no_space_note(error: &io::Error, label: &str) -> String {
    if error.raw_os_error() != Some(libc::ENOSPC) {
        return String::new();
    }
    let filesystem = filesystem_of(Path::new(label))
        .map(|fs| format!("the filesystem {fs} holding it is full"))
        .unwrap_or_else(|| "the device or filesystem holding it is full".into());
    format!(
        "; {filesystem}: eraid fails the member rather than leave it half-written. Free space \
         there, then serve again (with --force if more members failed than the array \
         survives), or add a replacement elsewhere"
    )
}

/// "MOUNT_POINT (TYPE on SOURCE)" of the filesystem holding `path`, from
/// /proc/self/mountinfo (matched by device number).
pub fn filesystem_of(path: &Path) -> Option<String> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let wanted = format!("{major}:{minor}");
    let canonical = std::fs::canonicalize(path).ok();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // Several mounts may share a device (bind mounts): prefer the longest
    // mount point above the path.
    mountinfo
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let separator = fields.iter().position(|f| *f == "-")?;
            (fields.get(2)? == &wanted).then(|| {
                let mount_point = fields.get(4)?.to_string();
                let fs_type = fields.get(separator + 1)?;
                let source = fields.get(separator + 2)?;
                Some((
                    mount_point.clone(),
                    format!("{mount_point} ({fs_type} on {source})"),
                ))
            })?
        })
        .max_by_key(|(mount_point, _)| {
            let above = canonical
                .as_ref()
                .is_some_and(|c| c.starts_with(mount_point.as_str()));
            (above, mount_point.len())
        })
        .map(|(_, described)| described)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_errors_are_told_apart_from_failed_devices() {
        assert!(is_media_error(&io::Error::from_raw_os_error(libc::EIO)));
        assert!(is_media_error(&io::Error::from_raw_os_error(libc::EILSEQ)));
        assert!(!is_media_error(&io::Error::from_raw_os_error(libc::ENODEV)));
        assert!(!is_media_error(&io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "shrank"
        )));
    }

    #[test]
    fn enospc_names_the_filesystem_holding_the_member() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("member");
        std::fs::write(&file, b"x").unwrap();
        let label = file.display().to_string();
        let note = no_space_note(&io::Error::from_raw_os_error(libc::ENOSPC), &label);
        let fs = filesystem_of(&file).expect("the test directory is on a filesystem");
        assert!(note.contains(&fs) && note.contains("is full"), "{note}");
        assert_eq!(
            no_space_note(&io::Error::from_raw_os_error(libc::EIO), &label),
            ""
        );
    }
}

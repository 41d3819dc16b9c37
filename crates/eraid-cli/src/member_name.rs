//! Member names as commands pass them on: a file's path is made absolute
//! (or canonical) so another directory or a superblock can use it; an NBD
//! URI is a name already, which path functions would mangle (`nbd://h/x`
//! is not the relative path `nbd:/h/x`), so it is kept exactly as given.

use std::path::{Path, PathBuf};

use eraid_driver::is_nbd_uri;

/// `path` made absolute against the current directory; a URI as given.
pub fn absolute(path: &Path) -> PathBuf {
    if is_nbd_uri(path) {
        return path.to_path_buf();
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `path` with symbolic links resolved when it exists, else as given; a
/// URI as given. What a superblock records as a member's path hint.
pub fn canonical_or_given(path: &Path) -> PathBuf {
    if is_nbd_uri(path) {
        return path.to_path_buf();
    }
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `path` canonical when it exists, else absolute; a URI as given.
pub fn canonical_or_absolute(path: &Path) -> PathBuf {
    if is_nbd_uri(path) {
        return path.to_path_buf();
    }
    std::fs::canonicalize(path).unwrap_or_else(|_| absolute(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_kept_as_given_and_paths_made_absolute() {
        for uri in [
            "nbd://127.0.0.1:10809/disk",
            "nbd+unix:///e?socket=/tmp/s.sock",
        ] {
            assert_eq!(absolute(Path::new(uri)).to_str(), Some(uri));
            assert_eq!(canonical_or_given(Path::new(uri)).to_str(), Some(uri));
            assert_eq!(canonical_or_absolute(Path::new(uri)).to_str(), Some(uri));
        }
        let made = absolute(Path::new("d0"));
        assert!(made.is_absolute());
        assert!(made.ends_with("d0"));
    }
}

//! Unix socket paths must fit `sun_path` (108 bytes with the final NUL).
//! An absolute path is preferred (the printed URI then works from any
//! directory), but a relative path that fits is used as given when its
//! absolute form would not (a deep working directory).

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// Longest socket path, in bytes.
pub const SOCKET_PATH_BYTES_MAX: usize = 107;

/// The path to bind for `given` (`flag` names the option in errors).
pub fn socket_path(given: &Path, flag: &str) -> Result<PathBuf> {
    let absolute = std::path::absolute(given).unwrap_or_else(|_| given.to_path_buf());
    if absolute.as_os_str().len() <= SOCKET_PATH_BYTES_MAX {
        return Ok(absolute);
    }
    let given_bytes = given.as_os_str().len();
    if given_bytes <= SOCKET_PATH_BYTES_MAX {
        return Ok(given.to_path_buf());
    }
    bail!(
        "{flag} {}: a Unix socket path can be at most {SOCKET_PATH_BYTES_MAX} bytes long, \
         this one is {given_bytes}; choose a shorter path (a relative one works too)",
        given.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_when_it_fits_else_as_given_else_refused() {
        let short = socket_path(Path::new("/run/x.sock"), "--socket").unwrap();
        assert_eq!(short, Path::new("/run/x.sock"));
        let long = format!("/{}/s.sock", "d".repeat(120));
        let error = socket_path(Path::new(&long), "--control")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--control") && error.contains("107"),
            "{error}"
        );
        let cwd = std::env::current_dir().unwrap();
        let fits_only_relative = Path::new("s.sock");
        let bound = socket_path(fits_only_relative, "--socket").unwrap();
        if cwd.join("s.sock").as_os_str().len() <= SOCKET_PATH_BYTES_MAX {
            assert_eq!(bound, cwd.join("s.sock"));
        } else {
            assert_eq!(bound, fits_only_relative);
        }
    }
}

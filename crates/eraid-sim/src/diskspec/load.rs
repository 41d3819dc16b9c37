//! Reading DiskSim files from the file system: the only place in this crate
//! that opens files, kept apart so the parser stays pure.

use std::path::{Path, PathBuf};

use super::{parse_diskspecs, SpecError};
use crate::disk::DiskSpec;

/// Loads a drive from a `.diskspecs` file, or from a folder holding exactly
/// one. Files it references are looked up beside it.
pub fn load_diskspecs_path(path: &Path) -> Result<DiskSpec, SpecError> {
    let file = if path.is_dir() {
        find_diskspecs(path)?
    } else {
        path.to_path_buf()
    };
    let name = file.display().to_string();
    let text = std::fs::read_to_string(&file)
        .map_err(|e| SpecError::new(&name, 0, format!("cannot read: {e}")))?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut resolve = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    parse_diskspecs(&name, &text, &mut resolve)
}

fn find_diskspecs(dir: &Path) -> Result<PathBuf, SpecError> {
    let name = dir.display().to_string();
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| SpecError::new(&name, 0, format!("cannot list folder: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "diskspecs"))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(SpecError::new(&name, 0, "folder holds no .diskspecs file")),
        n => Err(SpecError::new(
            &name,
            0,
            format!("folder holds {n} .diskspecs files; name one"),
        )),
    }
}

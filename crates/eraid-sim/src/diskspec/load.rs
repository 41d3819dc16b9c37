//! Reading DiskSim files from the file system: the only place in this crate
//! that opens files, kept apart so the parser stays pure.

use std::path::{Path, PathBuf};

use super::{parse_diskspecs, parse_parv, SpecError};
use crate::disk::DiskSpec;

/// Loads a drive from a DiskSim run file (`.parv`: its first disk, with the
/// bus it sits on), a `.diskspecs` file, or a folder holding exactly one
/// `.parv` (else exactly one `.diskspecs`). Files they reference are looked
/// up beside them.
pub fn load_disksim_model(path: &Path) -> Result<DiskSpec, SpecError> {
    let file = if path.is_dir() {
        find_model_file(path)?
    } else {
        path.to_path_buf()
    };
    let name = file.display().to_string();
    let text = std::fs::read_to_string(&file)
        .map_err(|e| SpecError::new(&name, 0, format!("cannot read: {e}")))?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut resolve = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    if file.extension().is_some_and(|x| x == "parv") {
        parse_parv(&name, &text, &mut resolve)
    } else {
        parse_diskspecs(&name, &text, &mut resolve)
    }
}

fn find_model_file(dir: &Path) -> Result<PathBuf, SpecError> {
    let name = dir.display().to_string();
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| SpecError::new(&name, 0, format!("cannot list folder: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    for ext in ["parv", "diskspecs"] {
        let mut found: Vec<&PathBuf> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        found.sort();
        match found.len() {
            0 => continue,
            1 => return Ok(found[0].clone()),
            n => {
                return Err(SpecError::new(
                    &name,
                    0,
                    format!("folder holds {n} .{ext} files; name one"),
                ))
            }
        }
    }
    Err(SpecError::new(
        &name,
        0,
        "folder holds no .parv or .diskspecs file",
    ))
}

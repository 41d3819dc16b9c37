//! Which drive each simulated member is: a built-in preset by name, or a
//! DiskSim `.diskspecs` file (or a folder holding one).

use std::path::{Path, PathBuf};

use crate::disk::presets;
use crate::disk::{Device, DiskModel, DiskSpec, SsdModel, SsdSpec};
use crate::diskspec::load_disksim_model;

/// Capacity of the `ssd` preset: that of the 146 GB Cheetahs, so SSD and
/// HDD arrays built from the same trace fold addresses alike.
pub const SSD_PRESET_SECTORS: u64 = 286_749_488;

/// The preset names accepted on command lines and in experiment files.
pub const PRESET_NAMES: [&str; 6] = [
    "cheetah-15k5",
    "cheetah-10k7",
    "barracuda-7200-10",
    "barracuda-7200-8",
    "cheetah-15k4",
    "ssd",
];

/// A drive description each member is built from.
#[derive(Debug, Clone, PartialEq)]
pub enum DiskChoice {
    Hdd(Box<DiskSpec>),
    Ssd(SsdSpec),
}

impl DiskChoice {
    /// A fresh drive in its initial state.
    pub fn build(&self) -> Result<Device, String> {
        match self {
            DiskChoice::Hdd(spec) => DiskModel::new((**spec).clone())
                .map(|d| Device::Hdd(Box::new(d)))
                .map_err(|e| format!("{}: {e}", spec.name)),
            DiskChoice::Ssd(spec) => Ok(Device::Ssd(SsdModel::new(*spec))),
        }
    }

    /// Whether writes may complete before they reach the media, so a flush
    /// has to wait for the drive to drain.
    pub fn write_back(&self) -> bool {
        match self {
            DiskChoice::Hdd(spec) => {
                spec.cache.enabled && spec.cache.fast_write != crate::disk::FastWrite::Off
            }
            DiskChoice::Ssd(_) => false,
        }
    }

    pub fn name(&self) -> String {
        match self {
            DiskChoice::Hdd(spec) => spec.name.clone(),
            DiskChoice::Ssd(_) => "simple SSD".to_string(),
        }
    }

    /// The hard-disk spec, for settings an experiment overrides.
    pub fn hdd_spec_mut(&mut self) -> Option<&mut DiskSpec> {
        match self {
            DiskChoice::Hdd(spec) => Some(spec),
            DiskChoice::Ssd(_) => None,
        }
    }
}

/// A preset by name, ignoring case and the punctuation people put in model
/// names (`cheetah-15k5`, `Cheetah 15K.5`, `ST3146855FC` all work).
pub fn preset(name: &str) -> Option<DiskChoice> {
    let key: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let spec = match key.as_str() {
        "cheetah15k5" | "st3146855fc" => presets::cheetah_15k5(),
        "cheetah10k7" | "st3146807fc" => presets::cheetah_10k7(),
        "barracuda720010" | "barracuda" => presets::barracuda_7200_10(),
        "barracuda72008" | "st3300831as" => presets::barracuda_7200_8(),
        "cheetah15k4" | "st373454lc" => presets::cheetah_15k4(),
        "ssd" => return Some(DiskChoice::Ssd(presets::simple_ssd(SSD_PRESET_SECTORS))),
        _ => return None,
    };
    Some(DiskChoice::Hdd(Box::new(spec)))
}

/// Resolves MODEL: a preset name, else a path (relative paths against
/// `base_dir` when given) to a `.diskspecs` file or a folder holding one.
pub fn resolve_disk_model(model: &str, base_dir: Option<&Path>) -> Result<DiskChoice, String> {
    let path = match base_dir {
        Some(dir) if Path::new(model).is_relative() => dir.join(model),
        _ => PathBuf::from(model),
    };
    if path.exists() {
        return load_disksim_model(&path)
            .map(|spec| DiskChoice::Hdd(Box::new(spec)))
            .map_err(|e| e.to_string());
    }
    preset(model).ok_or_else(|| {
        format!(
            "disk model '{model}' is neither a preset ({}) nor an existing .diskspecs file or folder ({})",
            PRESET_NAMES.join(", "),
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_preset_resolves() {
        for name in PRESET_NAMES {
            let choice = resolve_disk_model(name, None).unwrap();
            choice.build().unwrap();
        }
        assert!(resolve_disk_model("nonesuch", None)
            .unwrap_err()
            .contains("cheetah-15k5"));
    }
}

//! Helpers shared by the simulator tests: small arrays and tiny traces.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use eraid_core::geometry::Level;
use eraid_core::ArrayOptions;
use eraid_sim::driver::{preset, SimConfig, Target};

/// A RAID-`level` array of `disks` Cheetah 15K.5 drives, using only the
/// first `member_mib` MiB of each (small, so `DataMode::Store` stays small).
pub fn small_array(level: Level, disks: usize, member_mib: u64) -> SimConfig {
    let target = Target::Array {
        level,
        layout: None,
        chunk_bytes: 64 << 10,
        options: Box::new(ArrayOptions::default()),
    };
    let mut config = SimConfig::new(target, disks, preset("cheetah-15k5").expect("preset"));
    config.member_bytes_max = Some(member_mib << 20);
    config
}

/// Writes an MQSim-format trace of `count` requests (arrival_ns device
/// start_sector size_sectors type), a third of them writes, 2 ms apart.
pub fn tiny_trace(dir: &Path, count: u64) -> PathBuf {
    let mut text = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..count {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let sector = (x % 2_000_000) / 8 * 8;
        let sectors = [8, 16, 32, 128][(x >> 40) as usize % 4];
        let is_read = u64::from(i % 3 != 0);
        text.push_str(&format!(
            "{} {} {sector} {sectors} {is_read}\n",
            1_000_000 + i * 2_000_000,
            i % 3
        ));
    }
    let path = dir.join("tiny.trace");
    std::fs::write(&path, text).expect("write trace");
    path
}

/// The repository's `experiments/` folder.
pub fn experiments_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

/// Metric `key` of run `run` in an experiment's result.
pub fn metric(result: &eraid_sim::experiment::ExperimentResult, run: &str, key: &str) -> f64 {
    let r = result
        .runs
        .iter()
        .find(|r| r.name == run)
        .unwrap_or_else(|| panic!("no run {run}"));
    r.metrics
        .get(key)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("run {run} has no metric {key}: {:?}", r.metrics))
}

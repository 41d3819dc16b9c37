//! Shared helpers for the growth tests: create an array on member files,
//! start the engine on them, describe a file joining in a growth.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::growth::config::{self, ReshapeConfig, ReshapeStrategy};
use eraid_core::io::{AdminCommand, TimeNs};
use eraid_core::metadata::assemble::{assemble, MemberProbe};
use eraid_core::metadata::create::{initial_writes, new_superblock, NewMember};
use eraid_core::{Array, ArrayOptions};
use eraid_driver::{
    read_metadata_area, write_at_sync, Engine, EngineConfig, EngineHandle, GrowMember, MemberFile,
    MemberIo,
};

pub const MEMBER_BYTES: u64 = 9 << 20;
pub const CHUNK: u64 = 64 << 10;

pub fn blank(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let path = dir.join(name);
    File::create(&path).unwrap().set_len(bytes).unwrap();
    path
}

pub fn create(dir: &Path, level: Level, count: usize) -> Vec<PathBuf> {
    create_with(dir, level, ParityLayout::default_for(level), count)
}

pub fn create_with(dir: &Path, level: Level, layout: ParityLayout, count: usize) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = (0..count)
        .map(|i| blank(dir, &format!("m{i}"), MEMBER_BYTES))
        .collect();
    let geometry = Geometry::new(level, layout, count, CHUNK, MEMBER_BYTES).unwrap();
    let members = (0..count)
        .map(|i| NewMember {
            uuid: format!("member-{i}"),
            path_hint: paths[i].display().to_string(),
        })
        .collect();
    let sb = new_superblock(geometry, "array".into(), members, 0);
    let files: Vec<MemberFile> = paths.iter().map(|p| MemberFile::open(p).unwrap()).collect();
    for (member, offset, bytes) in initial_writes(&sb, false) {
        write_at_sync(&files[member], offset, &bytes).unwrap();
    }
    paths
}

pub fn start(paths: &[PathBuf]) -> Engine {
    let files: Vec<MemberFile> = paths.iter().map(|p| MemberFile::open(p).unwrap()).collect();
    let probes = files
        .iter()
        .zip(paths)
        .map(|(f, p)| MemberProbe {
            path: p.display().to_string(),
            metadata: read_metadata_area(f, METADATA_BYTES as usize).map_err(|e| e.to_string()),
            size_bytes: f.size_bytes(),
        })
        .collect::<Vec<_>>();
    let assembly = assemble(&probes).unwrap();
    // Devices in slot order.
    let mut by_slot: Vec<Option<MemberFile>> = (0..assembly.slots.len()).map(|_| None).collect();
    let mut files: Vec<Option<MemberFile>> = files.into_iter().map(Some).collect();
    for (slot, state) in assembly.slots.iter().enumerate() {
        if let eraid_core::metadata::assemble::SlotState::Present { probe } = state {
            by_slot[slot] = files[*probe].take();
        }
    }
    let devices: Vec<Arc<dyn MemberIo>> = by_slot
        .into_iter()
        .map(|f| Arc::new(f.expect("every member present")) as Arc<dyn MemberIo>)
        .collect();
    let array = Array::open(assembly, ArrayOptions::default(), TimeNs(0));
    Engine::start_with_devices(Box::new(array), devices, EngineConfig::default()).unwrap()
}

pub fn grow_member(path: &Path, uuid: &str) -> GrowMember {
    let file = MemberFile::open(path).unwrap();
    let size_bytes = file.size_bytes();
    GrowMember {
        device: Arc::new(file),
        member: config::NewMember {
            uuid: uuid.into(),
            path_hint: path.display().to_string(),
            size_bytes,
        },
    }
}

pub fn status(handle: &EngineHandle) -> serde_json::Value {
    handle.admin(AdminCommand::Status).unwrap()
}

pub fn wait_until_open(handle: &EngineHandle) {
    let started = Instant::now();
    while status(handle)["phase"] == "opening" {
        assert!(started.elapsed() < Duration::from_secs(30), "never opened");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn wait_done(handle: &EngineHandle) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let s = status(handle);
        match s["reshape"]["state"].as_str() {
            Some("done") => return s,
            Some("running") => {}
            other => panic!("growth state {other:?}: {s:#}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "growth did not finish: {s:#}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8)
        .collect()
}

pub fn fast(strategy: ReshapeStrategy) -> ReshapeConfig {
    ReshapeConfig {
        speed_min_kib_s: 1 << 30,
        speed_max_kib_s: 1 << 30,
        ..ReshapeConfig::with_strategy(strategy)
    }
}

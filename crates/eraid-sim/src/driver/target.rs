//! The system under test: an eraid array created in memory on the simulated
//! members, or one bare drive.

use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::Machine;
use eraid_core::metadata::assemble::{assemble, MemberProbe};
use eraid_core::metadata::create::{initial_writes, new_superblock, NewMember};
use eraid_core::{Array, ArrayOptions};
use serde::{Deserialize, Serialize};

use super::passthrough::Passthrough;
use super::store::SparseStore;

/// What the simulated members are assembled into.
#[derive(Debug, Clone)]
pub enum Target {
    /// An eraid array over all members.
    Array {
        level: Level,
        /// `None`: the level's default layout.
        layout: Option<ParityLayout>,
        chunk_bytes: u64,
        /// Boxed: the options are large and a `Disk` target has none.
        options: Box<ArrayOptions>,
    },
    /// One bare drive (member 0); no RAID, no metadata.
    Disk,
}

impl Target {
    pub fn member_count(&self, requested: usize) -> usize {
        match self {
            Target::Array { .. } => requested,
            Target::Disk => 1,
        }
    }
}

/// Numbers describing the target, for reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// "raid5", "disk", ...
    pub kind: String,
    pub members: usize,
    pub chunk_bytes: u64,
    pub capacity_bytes: u64,
    pub member_bytes: u64,
}

pub struct Built {
    pub machine: Box<dyn Machine>,
    pub info: TargetInfo,
    /// Member contents after creation (metadata), for `DataMode::Store`.
    pub initial_contents: Vec<SparseStore>,
}

/// Creates the array's metadata in memory, as `eraid create` would write it
/// on real members, assembles it and opens the engine at time 0.
pub fn build(
    target: &Target,
    members: usize,
    member_bytes: u64,
    seed: u64,
) -> Result<Built, String> {
    match target {
        Target::Disk => Ok(Built {
            machine: Box::new(Passthrough::new(member_bytes / 512 * 512)),
            info: TargetInfo {
                kind: "disk".to_string(),
                members: 1,
                chunk_bytes: 0,
                capacity_bytes: member_bytes / 512 * 512,
                member_bytes,
            },
            initial_contents: vec![SparseStore::default()],
        }),
        Target::Array {
            level,
            layout,
            chunk_bytes,
            options,
        } => {
            let layout = layout.unwrap_or_else(|| ParityLayout::default_for(*level));
            let geometry = Geometry::new(*level, layout, members, *chunk_bytes, member_bytes)
                .map_err(|e| e.to_string())?;
            let superblock = new_superblock(
                geometry,
                format!("sim-array-{seed}"),
                (0..members)
                    .map(|i| NewMember {
                        uuid: format!("sim-member-{seed}-{i}"),
                        path_hint: format!("sim{i}"),
                    })
                    .collect(),
                0,
            );
            let mut areas = vec![vec![0u8; METADATA_BYTES as usize]; members];
            let mut contents = vec![SparseStore::default(); members];
            for (member, offset, bytes) in initial_writes(&superblock, false) {
                let at = offset as usize;
                areas[member][at..at + bytes.len()].copy_from_slice(&bytes);
                contents[member].write(offset, &bytes);
            }
            let probes: Vec<MemberProbe> = areas
                .into_iter()
                .enumerate()
                .map(|(i, area)| MemberProbe {
                    path: format!("sim{i}"),
                    metadata: Ok(area),
                    size_bytes: member_bytes,
                })
                .collect();
            // Simulated members start zeroed, so parity is consistent and no
            // initial resync is needed.
            let assembly = assemble(&probes).map_err(|e| e.to_string())?;
            options
                .cache
                .validate(&geometry)
                .map_err(|e| format!("[cache]: {e}"))?;
            let array = Array::open(assembly, (**options).clone(), eraid_core::io::TimeNs(0));
            let info = TargetInfo {
                kind: match level.number() {
                    Some(number) => format!("raid{number}"),
                    None => "crs".into(),
                },
                members,
                chunk_bytes: *chunk_bytes,
                capacity_bytes: array.capacity_bytes(),
                member_bytes,
            };
            Ok(Built {
                machine: Box::new(array),
                info,
                initial_contents: contents,
            })
        }
    }
}

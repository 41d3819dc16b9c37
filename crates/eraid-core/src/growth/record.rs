//! What the superblock records about growth: the RAID-0 placement that
//! non-round-robin growths leave behind, and the checkpoint of a growth in
//! progress (enough to resume it after a crash).

use super::config::ReshapeConfig;
use super::fastscale::{GrowthStrategy, ScalingHistory};
use crate::geometry::Geometry;
use serde::{Deserialize, Serialize};

/// A RAID-0 array's chunk placement when it is not plain round-robin: the
/// strategy and the history of additions it is a function of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub strategy: GrowthStrategy,
    pub history: ScalingHistory,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReshapeState {
    Running,
    /// Stopped, and says why (`pause_reason`); user I/O is still served.
    Paused,
    Done,
}

impl ReshapeState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Done => "done",
        }
    }
}

/// Device I/O and metadata counts of one growth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReshapeCounters {
    /// Bytes of array data that changed place.
    pub moved_bytes: u64,
    /// Redistribution device reads and writes (each I/O counts once).
    pub redistribution_reads: u64,
    pub redistribution_writes: u64,
    /// Checkpoint (reshape position) updates written to the superblocks.
    pub metadata_writes: u64,
    /// Windows moved through a backup copy (the critical section).
    pub backup_windows: u64,
    /// ALV valve periods judged, and those after which it closed (this run).
    pub valve_periods: u64,
    pub valve_closed_periods: u64,
    /// Scale-CRS and EPU: blocks (code packets, the paper's unit) read for
    /// migration and parity update, and written (moved data and changed
    /// parity; zeroed free space apart).
    pub scaling_read_blocks: u64,
    pub scaling_write_blocks: u64,
    /// Scale-CRS and EPU: bytes of new free space written with zeros.
    pub zeroed_bytes: u64,
    /// Scale-CRS and EPU: scaling units whose parity was updated by
    /// read-modify-write and by reconstruct-write.
    pub rmw_units: u64,
    pub rcw_units: u64,
    /// EPU: blocks the growth needed that a user read had just brought in
    /// (not read again: I/O overlap).
    pub overlap_blocks: u64,
}

impl ReshapeCounters {
    /// Every counter (for range checks).
    pub fn as_array(&self) -> [u64; 13] {
        [
            self.moved_bytes,
            self.redistribution_reads,
            self.redistribution_writes,
            self.metadata_writes,
            self.backup_windows,
            self.valve_periods,
            self.valve_closed_periods,
            self.scaling_read_blocks,
            self.scaling_write_blocks,
            self.zeroed_bytes,
            self.rmw_units,
            self.rcw_units,
            self.overlap_blocks,
        ]
    }
}

/// A window whose source data was copied aside before it was overwritten:
/// after a crash, the window is rewritten from this copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupRecord {
    pub start_chunk: u64,
    pub end_chunk: u64,
    pub member: usize,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub crc32c: u32,
}

/// A growth in progress (or the last one, done). `Superblock::geometry` is
/// already the grown geometry; `old_geometry` is where data not yet moved is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReshapeRecord {
    pub config: ReshapeConfig,
    pub old_geometry: Geometry,
    /// The RAID-0 placement before the growth (None: round-robin).
    #[serde(default)]
    pub old_placement: Option<Placement>,
    /// Logical chunks below this are durably in the new layout.
    pub checkpoint_chunk: u64,
    /// Logical chunks the growth walks: the old capacity for RAID-0; the
    /// new capacity for parity levels (the new space is zeroed so its
    /// parity is consistent).
    pub total_chunks: u64,
    /// Logical chunks that hold data from before the growth.
    pub old_capacity_chunks: u64,
    #[serde(default)]
    pub backup: Option<BackupRecord>,
    pub state: ReshapeState,
    #[serde(default)]
    pub pause_reason: Option<String>,
    /// Paused by the operator: stays paused, across restarts too, until the
    /// operator resumes it.
    #[serde(default)]
    pub held: bool,
    #[serde(default)]
    pub counters: ReshapeCounters,
}

impl ReshapeRecord {
    /// What the record itself says, named as in the live status and in
    /// `eraid detail`: both start from these fields and add their own.
    pub fn recorded_json(
        &self,
        new_member_count: usize,
        chunk_bytes: u64,
    ) -> serde_json::Map<String, serde_json::Value> {
        let c = self.counters;
        let fields = serde_json::json!({
            "strategy": self.config.strategy.name(),
            "state": self.state.name(),
            "pause_reason": self.pause_reason,
            "held": self.held,
            "old_member_count": self.old_geometry.member_count,
            "new_member_count": new_member_count,
            "checkpoint_bytes": self.checkpoint_chunk * chunk_bytes,
            "total_bytes": self.total_chunks * chunk_bytes,
            "moved_bytes": c.moved_bytes,
            "metadata_writes": c.metadata_writes,
            "redistribution_reads": c.redistribution_reads,
            "redistribution_writes": c.redistribution_writes,
            "backup_windows": c.backup_windows,
            "scaling_read_blocks": c.scaling_read_blocks,
            "scaling_write_blocks": c.scaling_write_blocks,
            "zeroed_bytes": c.zeroed_bytes,
            "rmw_units": c.rmw_units,
            "rcw_units": c.rcw_units,
            "overlap_blocks": c.overlap_blocks,
            // A backed-up window a crash interrupted, not yet rewritten.
            "pending_backup": self.backup.as_ref().map(|b| serde_json::json!({
                "start_bytes": b.start_chunk * chunk_bytes,
                "end_bytes": b.end_chunk * chunk_bytes,
                "member": b.member,
                "member_offset_bytes": b.offset_bytes,
            })),
            "config": self.config,
        });
        match fields {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("json! of an object literal is an object"),
        }
    }
}

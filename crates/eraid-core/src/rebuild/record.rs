//! What the superblock records about a rebuild: its targets and the
//! checkpointed position, enough to resume it after a crash.

use super::config::RebuildConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RebuildState {
    Running,
    /// Held by the operator (`held`); resumes when released.
    Paused,
    Done,
    /// Cannot go on (its replacements failed, or too few members are left
    /// to reconstruct from); `reason` says why.
    Stopped,
}

impl RebuildState {
    pub fn name(self) -> &'static str {
        match self {
            RebuildState::Running => "running",
            RebuildState::Paused => "paused",
            RebuildState::Done => "done",
            RebuildState::Stopped => "stopped",
        }
    }

    /// Whether the record describes a rebuild still to finish.
    pub fn unfinished(self) -> bool {
        matches!(self, RebuildState::Running | RebuildState::Paused)
    }
}

/// What a rebuild copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RebuildKind {
    /// Every stripe: the target's old contents count for nothing.
    #[default]
    Full,
    /// A member that left without losing a write comes back (MD's
    /// `--re-add`): only the stripes of the regions the write-intent
    /// bitmap marks are copied; the rest of it is current already.
    ReAdd,
}

impl RebuildKind {
    pub fn name(self) -> &'static str {
        match self {
            RebuildKind::Full => "full",
            RebuildKind::ReAdd => "re-add",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RebuildCounters {
    /// Positions recorded in the superblocks.
    pub checkpoints: u64,
    /// Times the pass started again from stripe 0 (a second replacement
    /// joined it).
    pub restarts: u64,
    /// Bytes of each target reconstructed and written below the recorded
    /// position (a re-add skips the regions the bitmap does not mark).
    pub copied_bytes: u64,
}

/// A rebuild in progress (or the last one). The target members' records
/// say `Rebuilding` until it is done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebuildRecord {
    pub config: RebuildConfig,
    #[serde(default)]
    pub kind: RebuildKind,
    /// Member slots being reconstructed, in one pass.
    pub targets: Vec<usize>,
    /// Stripes below this are rebuilt and durable on every target.
    pub checkpoint_stripe: u64,
    /// The array's stripe count when the rebuild started.
    pub total_stripes: u64,
    pub state: RebuildState,
    /// Paused by the operator: stays paused, across restarts too.
    #[serde(default)]
    pub held: bool,
    /// Why it stopped, for status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub counters: RebuildCounters,
}

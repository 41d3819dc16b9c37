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
    /// PRO's reconstruction bitmap table (RBT) as last made durable: units
    /// past `checkpoint_stripe` wholly rebuilt (by a zone thread or by user
    /// writes). None: nothing past the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilt_units: Option<RebuiltUnits>,
    /// A replace (MD's `--replace`) rather than a rebuild: `targets` is
    /// empty, the source member keeps serving while it is copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<ReplaceRecord>,
    /// A rebuild beside a paused growth: the growth's checkpoint (logical
    /// chunks) where its rows change layout. The map means nothing
    /// against another cut (the rebuild then starts again from row 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth_checkpoint_chunk: Option<u64>,
}

/// A replace: member slot `source` is copied onto a new member, kept in
/// `Superblock::spares` (uuid `replacement`) until the copy is done; then
/// the new member takes the slot and the source is retired (never
/// assembled again). The source serves meanwhile, so no window runs
/// without redundancy. Stripes below `RebuildRecord::checkpoint_stripe`
/// are copied and durable on the new member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaceRecord {
    pub source: usize,
    /// The source member's uuid (its slot holds the new member once done).
    pub source_uuid: String,
    /// The new member's uuid.
    pub replacement: String,
}

impl RebuildRecord {
    /// Stripes recorded rebuilt and durable: those below the checkpoint
    /// stripe and those of the map's units (all of them once done).
    pub fn recorded_stripes(&self) -> u64 {
        let total = self.total_stripes;
        if self.state == RebuildState::Done {
            return total;
        }
        let mut count = self.checkpoint_stripe.min(total);
        let bits = self
            .rebuilt_units
            .as_ref()
            .and_then(|m| m.decode(total).ok());
        let unit_stripes = recorded_unit_stripes(total);
        for (byte_index, &byte) in bits.unwrap_or_default().iter().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    let start = (byte_index as u64 * 8 + bit) * unit_stripes;
                    let end = (start + unit_stripes).min(total);
                    count += end.saturating_sub(start.max(self.checkpoint_stripe));
                }
            }
        }
        count
    }
}

/// Most units the recorded map has: one bit each, 4 KiB, 8 KiB of hex in
/// the 64 KiB superblock slot (`the_largest_superblock_fits_its_slot`).
pub const RECORDED_UNITS_MAX: u64 = 32_768;

/// Most stripes the engine tracks one by one in memory (128 MiB of bits):
/// 64 TiB members at 64 KiB chunks. Larger arrays track groups of stripes.
pub const TRACKED_UNITS_MAX: u64 = 1 << 30;

/// How the rebuilt-units map groups stripes for `total_stripes`: stripes
/// per in-memory unit, and in-memory units per recorded unit (so a recorded
/// unit is always whole in-memory units).
pub fn unit_layout(total_stripes: u64) -> (u64, u64) {
    let tracked_stripes = total_stripes.div_ceil(TRACKED_UNITS_MAX).max(1);
    let tracked_units = total_stripes.div_ceil(tracked_stripes);
    let per_recorded = tracked_units.div_ceil(RECORDED_UNITS_MAX).max(1);
    (tracked_stripes, per_recorded)
}

/// Stripes one recorded bit covers.
pub fn recorded_unit_stripes(total_stripes: u64) -> u64 {
    let (tracked, per_recorded) = unit_layout(total_stripes);
    tracked * per_recorded
}

/// The recorded rebuilt-units map: a compact bitmap, one bit per
/// `unit_stripes` stripes (a unit's bit is set only when every stripe of it
/// is rebuilt and durable), bit i in byte i/8 at (i%8), as hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebuiltUnits {
    pub unit_stripes: u64,
    pub bits_hex: String,
}

impl RebuiltUnits {
    pub fn encode(total_stripes: u64, bits: &[u8]) -> RebuiltUnits {
        let mut bits_hex = String::with_capacity(bits.len() * 2);
        for byte in bits {
            bits_hex.push_str(&format!("{byte:02x}"));
        }
        RebuiltUnits {
            unit_stripes: recorded_unit_stripes(total_stripes),
            bits_hex,
        }
    }

    /// The bits, checked against the array's stripe count: the unit size
    /// this version computes, one hex digit pair per byte, exactly the
    /// bytes the units need, no bit past the last unit.
    pub fn decode(&self, total_stripes: u64) -> Result<Vec<u8>, String> {
        let unit_stripes = recorded_unit_stripes(total_stripes);
        if self.unit_stripes != unit_stripes {
            return Err(format!(
                "the rebuilt-units map has units of {} stripes; {total_stripes} stripes need units of {unit_stripes}",
                self.unit_stripes
            ));
        }
        let units = total_stripes.div_ceil(unit_stripes);
        let bytes = units.div_ceil(8) as usize;
        if self.bits_hex.len() != bytes * 2 {
            return Err(format!(
                "the rebuilt-units map has {} hex digits; {units} units need {}",
                self.bits_hex.len(),
                bytes * 2
            ));
        }
        let mut bits = Vec::with_capacity(bytes);
        for (i, pair) in self.bits_hex.as_bytes().chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| "the rebuilt-units map is not hex")?;
            let byte = u8::from_str_radix(text, 16)
                .map_err(|_| format!("the rebuilt-units map has {text:?} at byte {i}, not hex"))?;
            bits.push(byte);
        }
        let spare_bits = bytes as u64 * 8 - units;
        if spare_bits > 0 && bits[bytes - 1] >> (8 - spare_bits) != 0 {
            return Err(format!(
                "the rebuilt-units map marks units past the last one ({units})"
            ));
        }
        Ok(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_map_stays_within_its_bound_and_decodes_back() {
        for total in [1, 7, 8, 9, 32_768, 32_769, 1 << 20, (1 << 40) + 3] {
            let unit = recorded_unit_stripes(total);
            let units = total.div_ceil(unit);
            assert!(units <= RECORDED_UNITS_MAX, "{total}");
            let (tracked, per) = unit_layout(total);
            assert_eq!(unit, tracked * per);
            assert!(total.div_ceil(tracked) <= TRACKED_UNITS_MAX);
            let mut bits = vec![0u8; units.div_ceil(8) as usize];
            bits[0] = 1;
            let map = RebuiltUnits::encode(total, &bits);
            assert_eq!(map.decode(total).unwrap(), bits);
        }
    }

    #[test]
    fn a_damaged_map_is_refused_with_what_is_wrong() {
        let total = 20;
        let good = RebuiltUnits::encode(total, &[0xff, 0x0f, 0x00]);
        assert!(good.decode(total).is_ok());
        let past_end = RebuiltUnits::encode(total, &[0xff, 0xff, 0x10]);
        assert!(past_end
            .decode(total)
            .unwrap_err()
            .contains("past the last"));
        let short = RebuiltUnits::encode(total, &[0xff]);
        assert!(short.decode(total).unwrap_err().contains("hex digits"));
        let mut not_hex = good.clone();
        not_hex.bits_hex.replace_range(0..2, "zz");
        assert!(not_hex.decode(total).unwrap_err().contains("not hex"));
        let mut wrong_unit = good;
        wrong_unit.unit_stripes = 2;
        assert!(wrong_unit.decode(total).unwrap_err().contains("units of"));
    }
}

//! Cache settings: the policy, the size, the destage marks and the
//! contiguity transform's performance rule.

use super::BLOCK_BYTES;
use crate::geometry::{Geometry, Level};

/// What the cache manages and how it destages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    /// No cache: every write goes to the members before it is acknowledged.
    None,
    /// Linux MD's way: the unit of management and destage is a parity
    /// block group (one 4 KiB page per member at one offset, MD's
    /// `stripe_head`).
    Pbgc,
    /// The unit is a whole stripe (one LRW entry per stripe).
    Sc,
    /// SC plus the contiguity transform at destage.
    MscCt,
}

impl CachePolicy {
    pub fn parse(name: &str) -> Result<CachePolicy, String> {
        match name {
            "none" => Ok(CachePolicy::None),
            "pbgc" => Ok(CachePolicy::Pbgc),
            "sc" => Ok(CachePolicy::Sc),
            "msc-ct" => Ok(CachePolicy::MscCt),
            other => Err(format!(
                "unknown cache policy {other:?} (expected none, pbgc, sc or msc-ct)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::None => "none",
            CachePolicy::Pbgc => "pbgc",
            CachePolicy::Sc => "sc",
            CachePolicy::MscCt => "msc-ct",
        }
    }
}

/// How cache memory is charged (the paper's Section III-G.3 names both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Only blocks holding data take memory.
    Block,
    /// A unit takes its whole size as soon as it holds anything: a page per
    /// member for a parity block group (MD's stripe_head), a stripe's data
    /// for a stripe (the MSC driver's contiguous stripe memory).
    Unit,
}

impl Allocation {
    pub fn parse(name: &str) -> Result<Allocation, String> {
        match name {
            "block" => Ok(Allocation::Block),
            "unit" => Ok(Allocation::Unit),
            other => Err(format!(
                "unknown cache allocation {other:?} (expected block or unit)"
            )),
        }
    }
}

/// The performance rule of one direction (the paper's Section III-D): a
/// transform over stride distance S is made only if S < `s_max` and S is
/// in no exception range (inclusive bounds, the paper's Fig. 9(d)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrideRule {
    pub s_max: u32,
    pub except: Vec<(u32, u32)>,
}

impl StrideRule {
    /// Predicates (8) and (9).
    pub fn permits(&self, stride: u32) -> bool {
        stride < self.s_max && !self.except.iter().any(|&(s, e)| s <= stride && stride <= e)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    pub policy: CachePolicy,
    pub size_bytes: u64,
    pub allocation: Allocation,
    /// Destaging starts when the pinned occupancy reaches this share.
    pub high_mark_percent: u32,
    /// and stops once it falls below this one.
    pub low_mark_percent: u32,
    pub read_rule: StrideRule,
    pub write_rule: StrideRule,
    /// Destage operations in flight at once.
    pub destage_window_units: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            policy: CachePolicy::None,
            // The paper's experiments.
            size_bytes: 512 << 20,
            allocation: Allocation::Block,
            high_mark_percent: 95,
            low_mark_percent: 85,
            // Until the stride benchmark measures them: transforms over
            // strides up to 8 blocks (32 KiB), a missed revolution costs more.
            read_rule: StrideRule {
                s_max: 8,
                except: Vec::new(),
            },
            write_rule: StrideRule {
                s_max: 8,
                except: Vec::new(),
            },
            destage_window_units: 64,
        }
    }
}

impl CacheConfig {
    /// Checks the settings against themselves and the array's shape; the
    /// error names the setting.
    pub fn validate(&self, geometry: &Geometry) -> Result<(), String> {
        if self.policy == CachePolicy::None {
            return Ok(());
        }
        if !matches!(geometry.level, Level::Raid5 | Level::Raid6) {
            return Err(format!(
                "cache policy {} needs RAID-5 or RAID-6 (the array is {:?})",
                self.policy.name(),
                geometry.level
            ));
        }
        if !geometry.chunk_bytes.is_multiple_of(BLOCK_BYTES) {
            return Err(format!(
                "cache needs a chunk size that is a multiple of {BLOCK_BYTES} bytes"
            ));
        }
        let min_bytes =
            BLOCK_BYTES * 2 * geometry.member_count as u64 * (geometry.chunk_bytes / BLOCK_BYTES);
        if self.size_bytes < min_bytes {
            return Err(format!(
                "cache size_bytes {} is below {min_bytes} (two stripes of this array)",
                self.size_bytes
            ));
        }
        if !(self.low_mark_percent < self.high_mark_percent && self.high_mark_percent <= 100) {
            return Err(format!(
                "cache marks must satisfy low < high <= 100 (low {}, high {})",
                self.low_mark_percent, self.high_mark_percent
            ));
        }
        for (name, rule) in [("s_r", &self.read_rule), ("s_w", &self.write_rule)] {
            if rule.s_max < 1 {
                return Err(format!("cache {name}_max must be at least 1"));
            }
            if let Some(&(s, e)) = rule.except.iter().find(|(s, e)| s > e || *s < 1) {
                return Err(format!(
                    "cache {name} exception range {s}..={e} is empty or starts below 1"
                ));
            }
        }
        if self.destage_window_units == 0 {
            return Err("cache destage_window_units must be at least 1".into());
        }
        Ok(())
    }

    pub fn capacity_blocks(&self) -> u64 {
        self.size_bytes / BLOCK_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_rule_follows_predicate_9() {
        let rule = StrideRule {
            s_max: 10,
            except: vec![(4, 6)],
        };
        let permitted: Vec<u32> = (1..12).filter(|&s| rule.permits(s)).collect();
        assert_eq!(permitted, vec![1, 2, 3, 7, 8, 9]);
    }

    #[test]
    fn policies_parse_and_bad_names_are_named() {
        assert_eq!(CachePolicy::parse("msc-ct"), Ok(CachePolicy::MscCt));
        let error = CachePolicy::parse("lru").unwrap_err();
        assert!(error.contains("\"lru\""), "{error}");
    }
}

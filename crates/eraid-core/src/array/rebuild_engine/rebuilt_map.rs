//! Which stripes of the replacements are rebuilt: PRO's reconstruction
//! bitmap table (RBT), kept for every strategy. Reads of a rebuilt stripe
//! go to the replacement (redirection of reads); the scheduler skips it.
//!
//! One bit per stripe in memory (per group of stripes past
//! `TRACKED_UNITS_MAX`, whose stripes are listed one by one until the group
//! is whole), and a coarser copy for the superblock: a recorded unit's bit
//! is set once all its stripes are (`recorded_bits`).

use crate::rebuild::record::{unit_layout, RebuiltUnits};
use std::collections::{BTreeMap, BTreeSet};

pub(in crate::array) struct RebuiltMap {
    total_stripes: u64,
    /// Stripes per tracked unit.
    unit_stripes: u64,
    /// Tracked units per recorded unit.
    per_recorded: u64,
    /// Tracked units wholly rebuilt, one bit each.
    units: Vec<u64>,
    /// Stripes rebuilt in tracked units not yet whole (only when a unit has
    /// several stripes).
    partial: BTreeMap<u64, BTreeSet<u64>>,
    /// Recorded units wholly rebuilt, one bit each (bit i of byte i/8).
    recorded: Vec<u8>,
    /// Whole tracked units in each recorded unit.
    recorded_counts: Vec<u64>,
    /// Stripes rebuilt.
    done_stripes: u64,
    /// Every stripe below is rebuilt.
    prefix: u64,
}

impl RebuiltMap {
    pub fn new(total_stripes: u64) -> RebuiltMap {
        let (unit_stripes, per_recorded) = unit_layout(total_stripes);
        RebuiltMap::with_layout(total_stripes, unit_stripes, per_recorded)
    }

    fn with_layout(total_stripes: u64, unit_stripes: u64, per_recorded: u64) -> RebuiltMap {
        let units = total_stripes.div_ceil(unit_stripes);
        let recorded_units = units.div_ceil(per_recorded);
        RebuiltMap {
            total_stripes,
            unit_stripes,
            per_recorded,
            units: vec![0; units.div_ceil(64) as usize],
            partial: BTreeMap::new(),
            recorded: vec![0; recorded_units.div_ceil(8) as usize],
            recorded_counts: vec![0; recorded_units as usize],
            done_stripes: 0,
            prefix: 0,
        }
    }

    /// The map a superblock records: stripes below `checkpoint_stripe` and
    /// those of the recorded units (already decoded and checked).
    pub fn from_record(total_stripes: u64, checkpoint_stripe: u64, bits: Option<&[u8]>) -> Self {
        let mut map = RebuiltMap::new(total_stripes);
        map.mark_range(0, checkpoint_stripe.min(total_stripes));
        if let Some(bits) = bits {
            let recorded_stripes = map.unit_stripes * map.per_recorded;
            for (byte_index, &byte) in bits.iter().enumerate() {
                for bit in 0..8 {
                    if byte & (1 << bit) != 0 {
                        let unit = byte_index as u64 * 8 + bit;
                        let start = unit * recorded_stripes;
                        map.mark_range(start, (start + recorded_stripes).min(total_stripes));
                    }
                }
            }
        }
        map
    }

    fn unit_whole(&self, unit: u64) -> bool {
        self.units[(unit / 64) as usize] & (1 << (unit % 64)) != 0
    }

    pub fn is_rebuilt(&self, stripe: u64) -> bool {
        let unit = stripe / self.unit_stripes;
        self.unit_whole(unit)
            || self
                .partial
                .get(&unit)
                .is_some_and(|stripes| stripes.contains(&stripe))
    }

    /// Marks `stripe` rebuilt; false if it already was.
    pub fn mark(&mut self, stripe: u64) -> bool {
        assert!(stripe < self.total_stripes, "stripe {stripe} out of range");
        if self.is_rebuilt(stripe) {
            return false;
        }
        let unit = stripe / self.unit_stripes;
        let unit_len = self.unit_len(unit);
        self.done_stripes += 1;
        if unit_len == 1 {
            self.unit_completed(unit);
        } else {
            let stripes = self.partial.entry(unit).or_default();
            stripes.insert(stripe);
            if stripes.len() as u64 == unit_len {
                self.partial.remove(&unit);
                self.unit_completed(unit);
            }
        }
        while self.prefix < self.total_stripes && self.is_rebuilt(self.prefix) {
            self.prefix += 1;
        }
        true
    }

    /// Marks every stripe in `start..end` rebuilt.
    pub fn mark_range(&mut self, start: u64, end: u64) {
        for stripe in start..end {
            self.mark(stripe);
        }
    }

    fn unit_len(&self, unit: u64) -> u64 {
        let start = unit * self.unit_stripes;
        (start + self.unit_stripes).min(self.total_stripes) - start
    }

    fn unit_completed(&mut self, unit: u64) {
        self.units[(unit / 64) as usize] |= 1 << (unit % 64);
        let recorded = unit / self.per_recorded;
        let first = recorded * self.per_recorded;
        let last = (first + self.per_recorded).min(self.units_count());
        self.recorded_counts[recorded as usize] += 1;
        if self.recorded_counts[recorded as usize] == last - first {
            self.recorded[(recorded / 8) as usize] |= 1 << (recorded % 8);
        }
    }

    fn units_count(&self) -> u64 {
        self.total_stripes.div_ceil(self.unit_stripes)
    }

    pub fn done_stripes(&self) -> u64 {
        self.done_stripes
    }

    pub fn complete(&self) -> bool {
        self.done_stripes == self.total_stripes
    }

    /// Every stripe below is rebuilt.
    pub fn prefix(&self) -> u64 {
        self.prefix
    }

    /// The recorded form of what is rebuilt now (None: nothing past the
    /// prefix).
    pub fn recorded(&self) -> Option<RebuiltUnits> {
        let recorded_stripes = self.unit_stripes * self.per_recorded;
        let past_prefix = self.recorded.iter().enumerate().any(|(i, &byte)| {
            (0..8).any(|bit| {
                byte & (1 << bit) != 0 && (i as u64 * 8 + bit) * recorded_stripes >= self.prefix
            })
        });
        past_prefix.then(|| RebuiltUnits::encode(self.total_stripes, &self.recorded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_marked_out_of_order_advance_the_prefix_and_round_trip() {
        let mut map = RebuiltMap::new(100);
        assert!(map.mark(5));
        assert!(!map.mark(5));
        assert_eq!(map.prefix(), 0);
        for s in 0..5 {
            map.mark(s);
        }
        assert_eq!(map.prefix(), 6);
        for s in 40..60 {
            map.mark(s);
        }
        assert_eq!(map.done_stripes(), 26);
        let recorded = map.recorded().expect("stripes past the prefix");
        let bits = recorded.decode(100).unwrap();
        let back = RebuiltMap::from_record(100, map.prefix(), Some(&bits));
        for s in 0..100 {
            assert_eq!(back.is_rebuilt(s), map.is_rebuilt(s), "stripe {s}");
        }
        assert_eq!(back.done_stripes(), 26);
    }

    #[test]
    fn grouped_stripes_are_recorded_only_when_their_group_is_whole() {
        // Past the tracked bound, several stripes share a unit (here 3,
        // two units a recorded one, as `unit_layout` makes for huge arrays).
        let mut map = RebuiltMap::with_layout(20, 3, 2);
        map.mark(10);
        map.mark(9);
        assert!(map.is_rebuilt(9) && map.is_rebuilt(10) && !map.is_rebuilt(11));
        map.mark(11);
        assert!(map.unit_whole(3) && map.partial.is_empty());
        assert_eq!(map.recorded, vec![0], "recorded unit 1 needs unit 2 too");
        for s in 6..9 {
            map.mark(s);
        }
        assert_eq!(map.recorded, vec![0b10]);
        // The last unit is short (stripes 18 and 19) and whole when both are.
        map.mark(18);
        map.mark(19);
        assert!(map.unit_whole(6));
        assert_eq!(map.recorded, vec![0b1010]);
    }
}

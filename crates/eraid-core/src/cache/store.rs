//! The cached blocks: their data, dirty or clean, grouped into management
//! units (a stripe for SC and MSC-CT, a parity block group for PBGC) kept in
//! least-recently-written order. A unit with a dirty block, or one being
//! destaged, is pinned; units wholly clean are evicted oldest first when
//! space is needed. Space is charged per block (`unit_charge_blocks` 1) or
//! per unit, its whole size (see `config::Allocation`). Every write gives its block a new version, so a destage
//! marks clean only the versions it wrote.

use super::matrix::BlockState;
use super::BLOCK_BYTES;
use bytes::Bytes;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Stripe,
    ParityBlockGroup,
}

/// A data block: stripe, row (block offset in the strip), data column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    pub stripe: u64,
    pub row: u32,
    pub col: u32,
}

/// A management unit: a stripe, or one row of it (a parity block group).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnitKey {
    pub stripe: u64,
    pub row: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct Entry {
    /// Shared, not copied, by the reads and destages that look at it; a
    /// write to a block still shared copies it first (see `write`).
    pub data: Bytes,
    pub dirty: bool,
    pub version: u64,
    /// For a dirty block: the journal record of the first write since it
    /// was last clean (the journal keeps every record from there on).
    pub dirty_since_tag: Option<u64>,
}

#[derive(Default)]
struct UnitInfo {
    blocks: u64,
    dirty: u64,
    busy: bool,
    order: u64,
}

impl UnitInfo {
    fn pinned(&self) -> bool {
        self.dirty > 0 || self.busy
    }
}

/// Why a fill from a device read was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    Filled,
    /// The block is cached clean already (same data).
    AlreadyClean,
    /// The consistency rule: read data never replaces a dirty block.
    RefusedDirty,
}

pub struct CacheStore {
    granularity: Granularity,
    capacity_blocks: u64,
    unit_charge_blocks: u64,
    stripes: HashMap<u64, BTreeMap<(u32, u32), Entry>>,
    units: HashMap<UnitKey, UnitInfo>,
    /// Dirty, not busy: least recently written first.
    lrw: BTreeMap<u64, UnitKey>,
    /// Wholly clean, not busy: evicted first-in first.
    clean: BTreeMap<u64, UnitKey>,
    next_order: u64,
    next_version: u64,
    total_blocks: u64,
    pinned_blocks: u64,
    dirty_blocks: u64,
    /// The dirty blocks carrying a `dirty_since_tag`, oldest tag first.
    dirty_tags: std::collections::BTreeSet<(u64, BlockKey)>,
}

impl CacheStore {
    pub fn new(
        granularity: Granularity,
        capacity_blocks: u64,
        unit_charge_blocks: u64,
    ) -> CacheStore {
        assert!(unit_charge_blocks >= 1);
        CacheStore {
            granularity,
            capacity_blocks,
            unit_charge_blocks,
            stripes: HashMap::default(),
            units: HashMap::default(),
            lrw: BTreeMap::new(),
            clean: BTreeMap::new(),
            next_order: 0,
            next_version: 1,
            total_blocks: 0,
            pinned_blocks: 0,
            dirty_blocks: 0,
            dirty_tags: Default::default(),
        }
    }

    pub fn unit_of(&self, key: BlockKey) -> UnitKey {
        UnitKey {
            stripe: key.stripe,
            row: match self.granularity {
                Granularity::Stripe => None,
                Granularity::ParityBlockGroup => Some(key.row),
            },
        }
    }

    pub fn capacity_blocks(&self) -> u64 {
        self.capacity_blocks
    }
    pub fn total_blocks(&self) -> u64 {
        self.total_blocks
    }
    /// Space charged to pinned units (what the destage marks watch).
    pub fn pinned_blocks(&self) -> u64 {
        self.pinned_blocks
    }
    /// Space charged to every unit held.
    pub fn charged_blocks(&self) -> u64 {
        self.units.len() as u64 * self.unit_charge_blocks
    }
    pub fn unit_charge_blocks(&self) -> u64 {
        self.unit_charge_blocks
    }
    pub fn unit_exists(&self, unit: UnitKey) -> bool {
        self.units.contains_key(&unit)
    }
    pub fn dirty_blocks(&self) -> u64 {
        self.dirty_blocks
    }

    /// The oldest journal record a dirty block still needs.
    pub fn oldest_dirty_tag(&self) -> Option<u64> {
        self.dirty_tags.first().map(|(tag, _)| *tag)
    }

    fn tag_add(&mut self, tag: Option<u64>, key: BlockKey) {
        if let Some(tag) = tag {
            assert!(self.dirty_tags.insert((tag, key)), "a block tagged twice");
        }
    }

    fn tag_remove(&mut self, tag: Option<u64>, key: BlockKey) {
        if let Some(tag) = tag {
            assert!(self.dirty_tags.remove(&(tag, key)), "an untracked tag");
        }
    }

    /// Takes the unit holding the block with the oldest journal tag for
    /// destage (so the journal's tail moves), or the least recently
    /// written one if that unit is being destaged already.
    pub fn take_oldest_tagged(&mut self) -> Option<UnitKey> {
        let Some(&(_, key)) = self.dirty_tags.first() else {
            return self.take_lrw();
        };
        let unit = self.unit_of(key);
        let info = self.units.get(&unit).expect("a dirty block's unit");
        if info.busy {
            return self.take_lrw();
        }
        self.unlist(unit);
        self.units.get_mut(&unit).expect("unit").busy = true;
        self.list(unit);
        Some(unit)
    }
    /// Units waiting in the LRW list (dirty, not being destaged).
    pub fn waiting_units(&self) -> usize {
        self.lrw.len()
    }

    pub fn get(&self, key: BlockKey) -> Option<&Entry> {
        self.stripes.get(&key.stripe)?.get(&(key.row, key.col))
    }

    pub fn state(&self, key: BlockKey) -> BlockState {
        match self.get(key) {
            None => BlockState::Empty,
            Some(e) if e.dirty => BlockState::Dirty,
            Some(_) => BlockState::Clean,
        }
    }

    /// Takes the unit off its list before a change.
    fn unlist(&mut self, unit: UnitKey) {
        if let Some(info) = self.units.get(&unit) {
            if info.pinned() {
                self.pinned_blocks -= self.unit_charge_blocks;
            }
            if !info.busy {
                let list = if info.dirty > 0 {
                    &mut self.lrw
                } else {
                    &mut self.clean
                };
                list.remove(&info.order);
            }
        }
    }

    /// Puts it back after the change (or forgets it if it holds nothing).
    fn list(&mut self, unit: UnitKey) {
        let Some(info) = self.units.get(&unit) else {
            return;
        };
        if info.blocks == 0 {
            assert!(!info.busy || info.dirty == 0);
            if !info.busy {
                self.units.remove(&unit);
                return;
            }
        }
        if info.pinned() {
            self.pinned_blocks += self.unit_charge_blocks;
        }
        if !info.busy {
            let list = if info.dirty > 0 {
                &mut self.lrw
            } else {
                &mut self.clean
            };
            list.insert(info.order, unit);
        }
    }

    fn fresh_order(&mut self) -> u64 {
        self.next_order += 1;
        self.next_order
    }

    /// Writes `bytes` at `offset_bytes` into the block, making it dirty and
    /// its unit the most recently written. An absent block takes only a
    /// whole-block write: false means the block is absent and the write
    /// partial (the caller writes it through instead).
    pub fn write(&mut self, key: BlockKey, offset_bytes: usize, bytes: &[u8]) -> bool {
        self.write_tagged(key, offset_bytes, bytes, None)
    }

    /// `write`, the block tagged with the journal record `tag` if it
    /// becomes dirty now.
    pub fn write_tagged(
        &mut self,
        key: BlockKey,
        offset_bytes: usize,
        bytes: &[u8],
        tag: Option<u64>,
    ) -> bool {
        assert!(offset_bytes + bytes.len() <= BLOCK_BYTES as usize);
        let whole = bytes.len() == BLOCK_BYTES as usize;
        if self.get(key).is_none() && !whole {
            return false;
        }
        let unit = self.unit_of(key);
        self.unlist(unit);
        let version = self.next_version;
        self.next_version += 1;
        let order = self.fresh_order();
        let blocks = self.stripes.entry(key.stripe).or_default();
        let info = self.units.entry(unit).or_default();
        info.order = order;
        let mut newly_dirty = false;
        match blocks.get_mut(&(key.row, key.col)) {
            Some(entry) => {
                // In place when nothing else holds the block, else on a copy.
                let mut data = Vec::from(std::mem::take(&mut entry.data));
                data[offset_bytes..offset_bytes + bytes.len()].copy_from_slice(bytes);
                entry.data = Bytes::from(data);
                if !entry.dirty {
                    info.dirty += 1;
                    self.dirty_blocks += 1;
                    entry.dirty_since_tag = tag;
                    newly_dirty = true;
                }
                entry.dirty = true;
                entry.version = version;
            }
            None => {
                blocks.insert(
                    (key.row, key.col),
                    Entry {
                        data: Bytes::copy_from_slice(bytes),
                        dirty: true,
                        version,
                        dirty_since_tag: tag,
                    },
                );
                info.blocks += 1;
                info.dirty += 1;
                self.total_blocks += 1;
                self.dirty_blocks += 1;
                newly_dirty = true;
            }
        }
        if newly_dirty {
            self.tag_add(tag, key);
        }
        self.list(unit);
        true
    }

    /// Caches a block read from the disk (the r of the rxw-matrix).
    pub fn fill(&mut self, key: BlockKey, data: &[u8]) -> Fill {
        assert_eq!(data.len() as u64, BLOCK_BYTES);
        match self.get(key) {
            Some(e) if e.dirty => return Fill::RefusedDirty,
            Some(_) => return Fill::AlreadyClean,
            None => {}
        }
        let unit = self.unit_of(key);
        self.unlist(unit);
        let order = self.fresh_order();
        self.stripes.entry(key.stripe).or_default().insert(
            (key.row, key.col),
            Entry {
                data: Bytes::copy_from_slice(data),
                dirty: false,
                version: 0,
                dirty_since_tag: None,
            },
        );
        let info = self.units.entry(unit).or_default();
        if info.blocks == 0 {
            info.order = order;
        }
        info.blocks += 1;
        self.total_blocks += 1;
        self.list(unit);
        self.make_room(0);
        Fill::Filled
    }

    /// Drops a block (its data superseded on the disk, e.g. by zeroes).
    pub fn remove(&mut self, key: BlockKey) {
        let Some(entry) = self.get(key) else {
            return;
        };
        let dirty = entry.dirty;
        let tag = entry.dirty_since_tag;
        let unit = self.unit_of(key);
        self.unlist(unit);
        let blocks = self.stripes.get_mut(&key.stripe).expect("stripe cached");
        blocks.remove(&(key.row, key.col));
        if blocks.is_empty() {
            self.stripes.remove(&key.stripe);
        }
        let info = self.units.get_mut(&unit).expect("unit cached");
        info.blocks -= 1;
        self.total_blocks -= 1;
        if dirty {
            info.dirty -= 1;
            self.dirty_blocks -= 1;
        }
        if dirty {
            self.tag_remove(tag, key);
        }
        self.list(unit);
    }

    /// Drops the block if it is cached clean: the disk under it changed
    /// (a write went through), so the copy may be stale. Dirty data is
    /// newer than any write through and stays.
    pub fn drop_clean(&mut self, key: BlockKey) {
        if self.get(key).is_some_and(|e| !e.dirty) {
            self.remove(key);
        }
    }

    /// Evicts wholly clean units, oldest first, until `more_units` new
    /// units fit. False if they cannot fit without destaging.
    pub fn make_room(&mut self, more_units: u64) -> bool {
        while self.charged_blocks() + more_units * self.unit_charge_blocks > self.capacity_blocks {
            let Some((_, unit)) = self.clean.pop_first() else {
                return false;
            };
            for key in self.unit_keys(unit) {
                self.remove(key);
            }
        }
        true
    }

    /// The blocks of a unit, in (row, column) order.
    pub fn unit_keys(&self, unit: UnitKey) -> Vec<BlockKey> {
        let Some(blocks) = self.stripes.get(&unit.stripe) else {
            return Vec::new();
        };
        blocks
            .keys()
            .filter(|(row, _)| unit.row.is_none_or(|r| r == *row))
            .map(|&(row, col)| BlockKey {
                stripe: unit.stripe,
                row,
                col,
            })
            .collect()
    }

    /// Takes the least recently written unit for destage (it is busy until
    /// `destaged` or `release`).
    pub fn take_lrw(&mut self) -> Option<UnitKey> {
        let (_, unit) = self.lrw.first_key_value().map(|(o, u)| (*o, *u))?;
        self.unlist(unit);
        self.units.get_mut(&unit).expect("listed unit").busy = true;
        self.list(unit);
        Some(unit)
    }

    /// The destage of `unit` wrote these block versions: they are clean now
    /// unless written again since.
    pub fn destaged(&mut self, unit: UnitKey, written: &[(BlockKey, u64)]) {
        self.unlist(unit);
        let mut cleaned = 0;
        for (key, _) in written {
            assert_eq!(self.unit_of(*key), unit, "a destage wrote outside its unit");
        }
        let mut cleaned_tags = Vec::new();
        if let Some(blocks) = self.stripes.get_mut(&unit.stripe) {
            for (key, version) in written {
                if let Some(entry) = blocks.get_mut(&(key.row, key.col)) {
                    if entry.dirty && entry.version == *version {
                        entry.dirty = false;
                        cleaned_tags.push((entry.dirty_since_tag.take(), *key));
                        cleaned += 1;
                    }
                }
            }
        }
        // A block written again during its destage keeps its older tag:
        // the journal then keeps a little more than it must, never less.
        for (tag, key) in cleaned_tags {
            self.tag_remove(tag, key);
        }
        self.dirty_blocks -= cleaned;
        let order = self.fresh_order();
        let info = self.units.get_mut(&unit).expect("busy unit");
        info.dirty -= cleaned;
        info.busy = false;
        info.order = order;
        self.list(unit);
    }

    /// Gives a unit back unchanged (its destage failed).
    pub fn release(&mut self, unit: UnitKey) {
        self.destaged(unit, &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(stripe: u64, row: u32, col: u32) -> BlockKey {
        BlockKey { stripe, row, col }
    }
    fn block(byte: u8) -> Vec<u8> {
        vec![byte; BLOCK_BYTES as usize]
    }

    #[test]
    fn lrw_order_follows_fig6() {
        // Writes <17, 1, 9, 0, 11, 25> on the paper's Fig. 6 array: 4 data
        // strips of 4 blocks, block b in stripe b/16, strip (b%16)/4, row
        // b%4; 17 and 25 share PBG5 (stripe 1, row 1).
        let block_of = |b: u32| key((b / 16) as u64, (b % 16) % 4, (b % 16) / 4);
        for (granularity, want) in [
            (
                Granularity::ParityBlockGroup,
                vec![(0, Some(1)), (0, Some(0)), (0, Some(3)), (1, Some(1))],
            ),
            (Granularity::Stripe, vec![(0, None), (1, None)]),
        ] {
            let mut store = CacheStore::new(granularity, 1000, 1);
            for b in [17, 1, 9, 0, 11, 25] {
                assert!(store.write(block_of(b), 0, &block(b as u8)));
            }
            let mut order = Vec::new();
            while let Some(unit) = store.take_lrw() {
                order.push((unit.stripe, unit.row));
            }
            assert_eq!(order, want, "{granularity:?}");
        }
    }

    #[test]
    fn destage_cleans_only_the_versions_it_wrote() {
        let mut store = CacheStore::new(Granularity::Stripe, 100, 1);
        let a = key(0, 0, 0);
        store.write(a, 0, &block(1));
        let unit = store.take_lrw().unwrap();
        let version = store.get(a).unwrap().version;
        store.write(a, 0, &block(2)); // written again during the destage
        store.destaged(unit, &[(a, version)]);
        assert_eq!(store.state(a), BlockState::Dirty);
        assert_eq!(store.dirty_blocks(), 1);
        let unit = store.take_lrw().unwrap();
        let version = store.get(a).unwrap().version;
        store.destaged(unit, &[(a, version)]);
        assert_eq!(store.state(a), BlockState::Clean);
        assert_eq!((store.dirty_blocks(), store.pinned_blocks()), (0, 0));
    }

    #[test]
    fn fills_never_replace_dirty_blocks_and_clean_units_are_evicted() {
        let mut store = CacheStore::new(Granularity::Stripe, 2, 1);
        let a = key(0, 0, 0);
        store.write(a, 0, &block(1));
        assert_eq!(store.fill(a, &block(9)), Fill::RefusedDirty);
        assert_eq!(store.get(a).unwrap().data, block(1));
        assert!(
            !store.write(key(0, 1, 0), 0, &[7; 512]),
            "partial write to an absent block"
        );
        assert_eq!(store.fill(key(1, 0, 0), &block(3)), Fill::Filled);
        assert!(
            store.make_room(1),
            "a dirty and a clean block: the clean one goes"
        );
        assert_eq!(store.total_blocks(), 1);
        assert!(!store.make_room(2), "the dirty block stays until destaged");
        assert_eq!(store.state(key(1, 0, 0)), BlockState::Empty);
    }
}

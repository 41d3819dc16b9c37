//! The destage engine: the write-back cache's activity, one state object.
//! It owns the cache store and decides when (high/low marks, a flush, a
//! close, a write waiting for room) and what (the least recently written
//! unit) to destage. Each destage is a stripe op (`OpKind::Destage`) under
//! the stripe lock, planned by `work::DestageWork`; `pump` drives them.

mod pump;
pub(super) mod work;

use crate::cache::config::{Allocation, CacheConfig, CachePolicy};
use crate::cache::marks::HighLowMarks;
use crate::cache::store::{CacheStore, Granularity};
use crate::io::{RequestId, UserRequest};
use std::collections::VecDeque;

/// What the cache did, for status and the simulator's report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    pub destages: u64,
    pub destage_read_ios: u64,
    pub destage_write_ios: u64,
    /// Blocks the contiguity transform added to reads and to writes.
    pub transform_read_blocks: u64,
    pub transform_write_blocks: u64,
    pub read_hit_blocks: u64,
    pub read_miss_blocks: u64,
    pub written_blocks: u64,
    /// Writes that went to the members directly (partial blocks not
    /// cached, zeroing, writes larger than a quarter of the cache).
    pub write_through_requests: u64,
}

pub(super) struct DestageEngine {
    pub config: CacheConfig,
    pub store: CacheStore,
    marks: HighLowMarks,
    pub in_flight: usize,
    /// Flushes waiting until every dirty block is on the members.
    pub flush_waiters: Vec<RequestId>,
    /// Writes waiting for room in the cache, in arrival order.
    pub blocked: VecDeque<UserRequest>,
    /// A destage failed (the array lost too many members): no more
    /// destaging; flushes fail.
    pub failed: Option<String>,
    pub counters: CacheCounters,
    /// The journal is filling (or failed): destage until it says stop.
    pub journal_pressure: bool,
}

impl DestageEngine {
    pub fn new(config: CacheConfig, geometry: &crate::geometry::Geometry) -> DestageEngine {
        assert!(config.policy != CachePolicy::None);
        let rows = geometry.chunk_bytes / crate::cache::BLOCK_BYTES;
        let (granularity, unit_bytes_in_blocks) = match config.policy {
            CachePolicy::Pbgc => (Granularity::ParityBlockGroup, geometry.member_count as u64),
            _ => (
                Granularity::Stripe,
                rows * geometry.data_per_stripe() as u64,
            ),
        };
        let charge = match config.allocation {
            Allocation::Block => 1,
            Allocation::Unit => unit_bytes_in_blocks,
        };
        DestageEngine {
            store: CacheStore::new(granularity, config.capacity_blocks(), charge),
            marks: HighLowMarks::new(config.high_mark_percent, config.low_mark_percent),
            config,
            in_flight: 0,
            flush_waiters: Vec::new(),
            blocked: VecDeque::new(),
            failed: None,
            counters: CacheCounters::default(),
            journal_pressure: false,
        }
    }

    /// Whether to start more destages now; `closing` drains everything.
    fn wants_destage(&mut self, closing: bool) -> bool {
        let marks = self
            .marks
            .update(self.store.pinned_blocks(), self.store.capacity_blocks());
        marks
            || closing
            || self.journal_pressure
            || !self.blocked.is_empty()
            || !self.flush_waiters.is_empty()
    }

    /// Nothing dirty and nothing in flight.
    pub fn drained(&self) -> bool {
        self.store.dirty_blocks() == 0 && self.in_flight == 0 && self.blocked.is_empty()
    }

    pub fn status_json(&self) -> serde_json::Value {
        let c = &self.counters;
        serde_json::json!({
            "policy": self.config.policy.name(),
            "size_bytes": self.config.size_bytes,
            "dirty_bytes": self.store.dirty_blocks() * crate::cache::BLOCK_BYTES,
            "cached_bytes": self.store.total_blocks() * crate::cache::BLOCK_BYTES,
            "destages": c.destages,
            "destages_in_flight": self.in_flight,
            "destage_read_ios": c.destage_read_ios,
            "destage_write_ios": c.destage_write_ios,
            "transform_reads": c.transform_read_blocks,
            "transform_writes": c.transform_write_blocks,
            "read_hit_blocks": c.read_hit_blocks,
            "read_miss_blocks": c.read_miss_blocks,
            "write_through_requests": c.write_through_requests,
            "failed": self.failed,
            "stride": {
                "s_r_max": self.config.read_rule.s_max,
                "s_r_except": self.config.read_rule.except,
                "s_w_max": self.config.write_rule.s_max,
                "s_w_except": self.config.write_rule.except,
            },
        })
    }
}

use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::Geometry;
use crate::growth::record::Placement;

/// RAID-0 after semi-rr or fastscale growth: each logical chunk is its own
/// "stripe", placed by the strategy's addressing function over the history
/// of additions (O(additions) arithmetic, no table).
#[derive(Debug)]
pub struct HistoryLayout {
    pub geometry: Geometry,
    pub placement: Placement,
}

impl Layout for HistoryLayout {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let location = self
            .placement
            .strategy
            .locate(&self.placement.history, stripe);
        StripeMap {
            data: smallvec::smallvec![ChunkPlace {
                member: location.disk as usize,
                member_chunk: location.offset_chunks,
            }],
            parity: super::Places::new(),
        }
    }

    fn locate(&self, logical_chunk: u64) -> (u64, usize) {
        (logical_chunk, 0)
    }
}

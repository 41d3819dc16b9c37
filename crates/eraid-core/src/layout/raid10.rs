use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::Geometry;

/// RAID-10 "near", two copies (MD's n2): the copies of logical chunk c take
/// chunk slots 2c and 2c+1 in row-major order over the members. A stripe is
/// one logical chunk; its "parity" is the second copy.
#[derive(Debug)]
pub struct Raid10Near {
    pub geometry: Geometry,
}

impl Raid10Near {
    fn slot(&self, slot: u64) -> ChunkPlace {
        let n = self.geometry.member_count as u64;
        ChunkPlace {
            member: (slot % n) as usize,
            member_chunk: slot / n,
        }
    }
}

impl Layout for Raid10Near {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        StripeMap {
            data: smallvec::smallvec![self.slot(2 * stripe)],
            parity: smallvec::smallvec![self.slot(2 * stripe + 1)],
        }
    }
}

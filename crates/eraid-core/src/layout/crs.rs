use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::Geometry;

/// CRS with m parity members, rotated as RAID-6's left-symmetric layout
/// generalised: parity i of stripe s sits on member (n - 1 - s + i) mod n
/// (walking down one member per stripe), data starts right after the last
/// parity member and wraps. With m = 2 it is exactly the RAID-6 layout.
#[derive(Debug)]
pub struct Crs {
    pub geometry: Geometry,
}

impl Layout for Crs {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let n = self.geometry.member_count;
        let m = self.geometry.parity_per_stripe();
        let first_parity = n - 1 - (stripe % n as u64) as usize;
        let place = |j: usize| ChunkPlace {
            member: (first_parity + j) % n,
            member_chunk: stripe,
        };
        StripeMap {
            data: (m..n).map(place).collect(),
            parity: (0..m).map(place).collect(),
        }
    }
}

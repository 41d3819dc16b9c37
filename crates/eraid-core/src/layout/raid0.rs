use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::Geometry;

/// Round-robin striping: stripe s is chunk row s on every member.
#[derive(Debug)]
pub struct Raid0 {
    pub geometry: Geometry,
}

impl Layout for Raid0 {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let data = (0..self.geometry.member_count)
            .map(|member| ChunkPlace {
                member,
                member_chunk: stripe,
            })
            .collect();
        StripeMap {
            data,
            parity: super::Places::new(),
        }
    }
}

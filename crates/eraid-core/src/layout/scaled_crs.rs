use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::Geometry;
use crate::growth::scale_crs::CrsScaledShape;

/// A CRS array grown by Scale-CRS or EPU (see `growth::scale_crs`): parity
/// and the old data indices stay where the old layout (rotated over the
/// old members) put them; data index k + i is new member n + i; logical
/// chunks follow the minimum migration.
#[derive(Debug)]
pub struct ScaledCrs {
    /// The grown geometry (k + t data members).
    pub geometry: Geometry,
    pub shape: CrsScaledShape,
}

impl Layout for ScaledCrs {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let n = self.shape.old_member_count();
        let (k, m) = (self.shape.old_data_members, self.shape.parity_members);
        let first_parity = n - 1 - (stripe % n as u64) as usize;
        let place = |member: usize| ChunkPlace {
            member,
            member_chunk: stripe,
        };
        StripeMap {
            data: (m..m + k)
                .map(|j| place((first_parity + j) % n))
                .chain((0..self.shape.added_members).map(|i| place(n + i)))
                .collect(),
            parity: (0..m).map(|i| place((first_parity + i) % n)).collect(),
        }
    }

    fn locate(&self, logical_chunk: u64) -> (u64, usize) {
        self.shape
            .locate(logical_chunk, self.geometry.member_chunks())
    }
}

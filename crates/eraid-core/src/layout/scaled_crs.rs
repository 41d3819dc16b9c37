use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::Geometry;
use crate::growth::scale_crs::CrsScaledShape;

/// A CRS array grown by Scale-CRS or EPU, once or more (see
/// `growth::scale_crs`): parity and the created data indices stay where
/// the created layout (rotated over the created members) put them; data
/// index k0 + i is the i-th added member (n0 + i) whichever growth added
/// it; logical chunks follow each growth's minimum migration in turn.
#[derive(Debug)]
pub struct ScaledCrs {
    /// The grown geometry (k0 + every t data members).
    pub geometry: Geometry,
    /// Every growth, oldest first (at least one).
    pub shapes: Vec<CrsScaledShape>,
}

impl ScaledCrs {
    fn created(&self) -> &CrsScaledShape {
        self.shapes.first().expect("a grown layout has a growth")
    }
}

impl Layout for ScaledCrs {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let created = self.created();
        let n = created.old_member_count();
        let (k, m) = (created.old_data_members, created.parity_members);
        let added: usize = self.shapes.iter().map(|s| s.added_members).sum();
        let first_parity = n - 1 - (stripe % n as u64) as usize;
        let place = |member: usize| ChunkPlace {
            member,
            member_chunk: stripe,
        };
        StripeMap {
            data: (m..m + k)
                .map(|j| place((first_parity + j) % n))
                .chain((0..added).map(|i| place(n + i)))
                .collect(),
            parity: (0..m).map(|i| place((first_parity + i) % n)).collect(),
        }
    }

    /// The growth that added `logical_chunk`'s space places it (created
    /// chunks: the created row-major order), then every later growth moves
    /// its slot. Growths keep rows, so a slot is (row, data index).
    fn locate(&self, logical_chunk: u64) -> (u64, usize) {
        let rows = self.geometry.member_chunks();
        let created_k = self.created().old_data_members as u64;
        let (mut slot, mut later) = if logical_chunk < rows * created_k {
            (
                (
                    logical_chunk / created_k,
                    (logical_chunk % created_k) as usize,
                ),
                0,
            )
        } else {
            let (i, shape) = self
                .shapes
                .iter()
                .enumerate()
                .find(|(_, s)| logical_chunk < rows * s.new_data_members() as u64)
                .expect("a logical chunk within the grown capacity");
            let before = rows * shape.old_data_members as u64;
            (shape.free_slot(logical_chunk - before, rows), i + 1)
        };
        while let Some(shape) = self.shapes.get(later) {
            slot = shape.new_slot_of_old(slot.0, slot.1, rows);
            later += 1;
        }
        slot
    }
}

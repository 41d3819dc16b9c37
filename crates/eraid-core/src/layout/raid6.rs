use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::{Geometry, ParityLayout};

/// RAID-6 (P+Q) with MD's rotations (drivers/md/raid5.c, the RAID-6 cases of
/// raid5_compute_sector): Q follows P, wrapping to member 0.
#[derive(Debug)]
pub struct Raid6 {
    pub geometry: Geometry,
}

impl Layout for Raid6 {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let n = self.geometry.member_count;
        let turn = (stripe % n as u64) as usize;
        let p = match self.geometry.layout {
            ParityLayout::LeftAsymmetric | ParityLayout::LeftSymmetric => n - 1 - turn,
            _ => turn,
        };
        let q = (p + 1) % n;
        let data: Vec<usize> = match self.geometry.layout {
            // Data skips both P and Q, keeping member order.
            ParityLayout::LeftAsymmetric | ParityLayout::RightAsymmetric => {
                (0..n).filter(|&d| d != p && d != q).collect()
            }
            // Data starts right after Q and wraps.
            _ => (0..n - 2).map(|j| (p + 2 + j) % n).collect(),
        };
        let place = |member| ChunkPlace {
            member,
            member_chunk: stripe,
        };
        StripeMap {
            data: data.into_iter().map(place).collect(),
            parity: smallvec::smallvec![place(p), place(q)],
        }
    }
}

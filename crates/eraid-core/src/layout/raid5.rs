use super::{ChunkPlace, Layout, StripeMap};
use crate::geometry::{Geometry, ParityLayout};

/// RAID-5 with MD's four parity rotations (drivers/md/raid5.c,
/// raid5_compute_sector).
#[derive(Debug)]
pub struct Raid5 {
    pub geometry: Geometry,
}

/// Parity member and the member of each data index, for one stripe of an
/// n-member single-parity layout.
pub(super) fn rotate(
    layout: ParityLayout,
    member_count: usize,
    stripe: u64,
) -> (usize, super::ShardVec<usize>) {
    let n = member_count;
    let data_count = n - 1;
    let turn = (stripe % n as u64) as usize;
    let parity = match layout {
        ParityLayout::LeftAsymmetric | ParityLayout::LeftSymmetric => data_count - turn,
        ParityLayout::RightAsymmetric | ParityLayout::RightSymmetric => turn,
        ParityLayout::None | ParityLayout::Near2 => {
            unreachable!("geometry validated a parity layout")
        }
    };
    let data = (0..data_count)
        .map(|j| match layout {
            ParityLayout::LeftAsymmetric | ParityLayout::RightAsymmetric => {
                if j >= parity {
                    j + 1
                } else {
                    j
                }
            }
            _ => (parity + 1 + j) % n,
        })
        .collect();
    (parity, data)
}

impl Layout for Raid5 {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn stripe_map(&self, stripe: u64) -> StripeMap {
        let (parity, data) = rotate(self.geometry.layout, self.geometry.member_count, stripe);
        let place = |member| ChunkPlace {
            member,
            member_chunk: stripe,
        };
        StripeMap {
            data: data.into_iter().map(place).collect(),
            parity: smallvec::smallvec![place(parity)],
        }
    }
}

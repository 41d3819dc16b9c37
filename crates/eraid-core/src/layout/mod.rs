//! Layouts: where each stripe's data and redundancy chunks live.
//!
//! Every level is expressed as stripes of k data chunks and m redundancy
//! chunks coded by an erasure code (RAID-0: m = 0; RAID-10: k = 1, m = 1 and
//! the "code" is a copy). A stripe is the unit of parity consistency and of
//! locking in the array engine; a reshape later swaps one layout for another.

mod crs;
mod history;
mod raid0;
mod raid10;
mod raid5;
mod raid6;
mod scaled_crs;

use crate::geometry::{Geometry, Level};

/// One chunk's home: which member, and which chunk of its data area.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkPlace {
    pub member: usize,
    pub member_chunk: u64,
}

/// The places of one stripe's chunks: `data[j]` holds data chunk j, and
/// `parity[i]` holds the code's redundancy shard i (a copy for RAID-10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeMap {
    pub data: Places,
    pub parity: Places,
}

/// A stripe's data or parity places: inline for up to 8 (a stripe map is
/// made per stripe op, under the driver's engine lock).
pub type Places = smallvec::SmallVec<[ChunkPlace; 8]>;

/// One value per shard of a stripe, kept inline for stripes of up to 16
/// shards: the core makes several per op, under the driver's engine lock,
/// and heap allocations were a sixth of its time there.
pub(crate) type ShardVec<T> = smallvec::SmallVec<[T; 16]>;

impl StripeMap {
    /// Data places then parity places: the shard order the code uses.
    pub fn shards(&self) -> impl Iterator<Item = ChunkPlace> + '_ {
        self.data.iter().chain(self.parity.iter()).copied()
    }
}

/// Maps logical chunks to stripes and stripes to places. Implementations
/// are pure arithmetic (no tables), so any address is O(1) to locate.
pub trait Layout: Send + Sync + std::fmt::Debug {
    fn geometry(&self) -> &Geometry;
    /// The places of stripe `stripe` (< stripe_count).
    fn stripe_map(&self, stripe: u64) -> StripeMap;
    /// Which stripe and which data index hold logical chunk `logical_chunk`.
    fn locate(&self, logical_chunk: u64) -> (u64, usize) {
        let k = self.geometry().data_per_stripe() as u64;
        (logical_chunk / k, (logical_chunk % k) as usize)
    }
}

/// The layout of an array with this geometry and RAID-0 placement (None:
/// the level's usual layout).
pub fn layout_with(
    geometry: &Geometry,
    placement: Option<&crate::growth::record::Placement>,
) -> Box<dyn Layout> {
    match placement {
        Some(placement) if geometry.level == Level::Raid0 => Box::new(history::HistoryLayout {
            geometry: *geometry,
            placement: placement.clone(),
        }),
        _ => layout_for(geometry),
    }
}

/// The layout of a CRS array grown by Scale-CRS or EPU (`shapes`: every
/// growth, oldest first; at least one).
pub fn scaled_crs_layout(
    geometry: &Geometry,
    shapes: &[crate::growth::scale_crs::CrsScaledShape],
) -> Box<dyn Layout> {
    let last = shapes.last().expect("a grown CRS layout has a growth");
    assert_eq!(
        geometry.data_per_stripe(),
        last.new_data_members(),
        "the grown geometry has k + t data members"
    );
    Box::new(scaled_crs::ScaledCrs {
        geometry: *geometry,
        shapes: shapes.to_vec(),
    })
}

/// The layout a superblock describes: a grown CRS layout (`crs_growths`,
/// oldest first), a RAID-0 placement, or the level's usual layout.
pub fn layout_of(
    geometry: &Geometry,
    placement: Option<&crate::growth::record::Placement>,
    crs_growths: &[crate::growth::scale_crs::CrsScaledShape],
) -> Box<dyn Layout> {
    if !crs_growths.is_empty() && matches!(geometry.level, Level::Crs { .. }) {
        return scaled_crs_layout(geometry, crs_growths);
    }
    layout_with(geometry, placement)
}

/// The layout the geometry names.
pub fn layout_for(geometry: &Geometry) -> Box<dyn Layout> {
    match geometry.level {
        Level::Raid0 => Box::new(raid0::Raid0 {
            geometry: *geometry,
        }),
        Level::Raid5 => Box::new(raid5::Raid5 {
            geometry: *geometry,
        }),
        Level::Raid6 => Box::new(raid6::Raid6 {
            geometry: *geometry,
        }),
        Level::Raid10 => Box::new(raid10::Raid10Near {
            geometry: *geometry,
        }),
        Level::Crs { .. } => Box::new(crs::Crs {
            geometry: *geometry,
        }),
    }
}

#[cfg(test)]
mod tests;

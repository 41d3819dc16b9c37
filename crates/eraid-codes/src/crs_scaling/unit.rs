//! One scaling unit of Scale-CRS's minimum data migration, rebuilt from the
//! EPU paper's Figure 2 (k = 2, t = 2, w = 4: d2, d3 leave the end of D0
//! for the start of D2; d6, d7 leave the end of D1 for the start of D3).
//!
//! The choices, stated (Scale-CRS's paper is not at hand):
//! - A unit is the fewest stripes L in which every old data disk gives the
//!   same whole number of blocks to the new disks and every data disk ends
//!   with the same number of blocks: L = (k+t) / gcd(k+t, w*t). Each old
//!   disk keeps its first L*w*k/(k+t) blocks and moves the other
//!   q = L*w*t/(k+t); each new disk receives r = L*w*k/(k+t).
//! - Blocks of a disk in a unit are numbered stripe by stripe, packet by
//!   packet (offset = stripe * w + packet); positions do not change on the
//!   old disks, and parity disks stay where they are.
//! - The moved blocks, old disk by old disk and in offset order, fill new
//!   disk k, then k + 1, ..., each from its offset 0.
//! - Slots left without data (the vacated ends of old disks, the ends of
//!   new disks) are free space and hold zeros: they encode into nothing.

/// Where a data block sits: disk (0-based; old data disks are 0..k, new
/// ones k..k+t), stripe within the unit, packet within the stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BlockPlace {
    pub disk: usize,
    pub stripe: usize,
    pub packet: usize,
}

/// The blocks of one scaling unit before and after the migration.
#[derive(Clone, Debug)]
pub struct ScalingUnit {
    pub old_data_disks: usize,
    pub added_disks: usize,
    pub w: usize,
    pub stripes: usize,
    /// Block b's place before scaling (b = old disk * L*w + offset).
    pub before: Vec<BlockPlace>,
    /// Block b's place after scaling.
    pub after: Vec<BlockPlace>,
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl ScalingUnit {
    /// The unit for k old data disks growing by t, w packets per stripe.
    pub fn new(old_data_disks: usize, added_disks: usize, w: usize) -> Self {
        let (k, t) = (old_data_disks, added_disks);
        assert!(k >= 1 && t >= 1 && w >= 1, "a growth needs k, t, w >= 1");
        let stripes = (k + t) / gcd(k + t, w * t);
        let per_disk = stripes * w;
        let moved_per_old_disk = per_disk * t / (k + t);
        let received_per_new_disk = per_disk * k / (k + t);
        assert_eq!(
            moved_per_old_disk * (k + t),
            per_disk * t,
            "L makes q whole"
        );
        assert_eq!(
            moved_per_old_disk * k,
            received_per_new_disk * t,
            "moved = received"
        );
        let place = |disk: usize, offset: usize| BlockPlace {
            disk,
            stripe: offset / w,
            packet: offset % w,
        };
        let mut before = Vec::with_capacity(k * per_disk);
        let mut after = Vec::with_capacity(k * per_disk);
        let mut moved_so_far = 0;
        for disk in 0..k {
            for offset in 0..per_disk {
                before.push(place(disk, offset));
                if offset < per_disk - moved_per_old_disk {
                    after.push(place(disk, offset));
                } else {
                    let new_disk = k + moved_so_far / received_per_new_disk;
                    after.push(place(new_disk, moved_so_far % received_per_new_disk));
                    moved_so_far += 1;
                }
            }
        }
        Self {
            old_data_disks: k,
            added_disks: t,
            w,
            stripes,
            before,
            after,
        }
    }

    pub fn block_count(&self) -> usize {
        self.before.len()
    }

    /// Whether block b leaves its disk.
    pub fn is_moved(&self, block: usize) -> bool {
        self.before[block] != self.after[block]
    }

    pub fn moved_count(&self) -> usize {
        (0..self.block_count())
            .filter(|&b| self.is_moved(b))
            .count()
    }
}

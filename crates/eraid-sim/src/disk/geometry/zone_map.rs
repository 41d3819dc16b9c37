//! Where the LBNs of one zone lie among its physical locations, for every
//! DiskSim sparing scheme.
//!
//! A zone is a row of physical *units* in LBN order (sectors, or whole tracks
//! under track sparing), cut into equal *regions* (a track, a cylinder, a
//! range of cylinders or the whole zone) that keep `spares` units each at
//! their end (or front). A unit is *data* unless it is a spare position or
//! slipped. When slips use the spares, each region holds exactly
//! `region - spares` data units: the first ones not slipped (the last ones,
//! for spares at the front). Otherwise every non-spare, non-slipped unit is
//! data, so a slip shifts the rest of the zone. The first `dead` data
//! sectors hold no LBN ("Empty space at zone front"). Remapped defects send
//! one unit's data to another unit.

use crate::disk::config::{Sparing, ZoneSpec};

#[derive(Debug, Clone)]
pub struct ZoneMap {
    /// Sectors per unit: 1, or sectors per track under track sparing.
    pub unit_sectors: u64,
    units: u64,
    region_units: u64,
    /// Spare units of every full region (a partial last region has none).
    spares: u64,
    spares_at_front: bool,
    slips_use_spares: bool,
    /// Slipped units, ascending, without repeats.
    slips: Vec<u64>,
    /// `slipped_data_prefix[i]`: how many of `slips[..i]` are not spare
    /// positions (only kept when slips shift the rest of the zone), so
    /// `data_before` needs no scan of the slips.
    slipped_data_prefix: Vec<u64>,
    /// Remapped units: (defective, replacement), defective != replacement.
    defects: Vec<(u64, u64)>,
    dead_sectors: u64,
    /// Sectors holding LBNs.
    pub blocks: u64,
}

impl ZoneMap {
    /// `surfaces` and the zone's shape give the region sizes; errors say what
    /// does not fit.
    pub fn new(sparing: Sparing, z: &ZoneSpec, surfaces: u32) -> Result<Self, String> {
        let bpt = u64::from(z.sectors_per_track);
        let cyls = u64::from(z.last_cyl - z.first_cyl + 1);
        let per_cyl = bpt * u64::from(surfaces);
        let sectors = cyls * per_cyl;
        // (unit, region, spares per region, at front, slips use spares)
        let (unit, region, spares, front, absorb) = match sparing {
            Sparing::None => (1, sectors, 0, false, true),
            Sparing::TracksPerZone => (bpt, sectors / bpt, z.spares, false, true),
            Sparing::SectorsPerCylinder {
                at_front,
                slip_to_end,
            } => (1, per_cyl, z.spares, at_front, !slip_to_end),
            Sparing::SectorsPerTrack => (1, bpt, z.spares, false, true),
            Sparing::SectorsAtDiskEnd => {
                if z.spares != 0 {
                    return Err(
                        "sparing scheme 7 keeps its spares beyond the last zone: 'Number of spares' must be 0"
                            .into(),
                    );
                }
                (1, sectors, 0, false, false)
            }
            Sparing::SectorsPerRange { cylinders } => (
                1,
                per_cyl * u64::from(cylinders.max(1)),
                z.spares,
                false,
                true,
            ),
            Sparing::SectorsPerZone => (1, sectors, z.spares, false, true),
            Sparing::SectorsPerZoneSlipToEnd => (1, sectors, z.spares, false, false),
        };
        let units = sectors / unit;
        if spares > region {
            return Err(format!(
                "{spares} spares per region of {region} {}",
                if unit == 1 { "sectors" } else { "tracks" }
            ));
        }
        let mut slips = if sparing == Sparing::None {
            Vec::new()
        } else {
            z.slips.clone()
        };
        slips.sort_unstable();
        slips.dedup();
        if let Some(&s) = slips.last().filter(|&&s| s >= units) {
            return Err(format!("slip {s} lies beyond the zone's {units} locations"));
        }
        let mut defects = Vec::new();
        for &(bad, good) in &z.defects {
            if bad >= units || good >= units {
                return Err(format!(
                    "defect ({bad}, {good}) lies beyond the zone's {units} locations"
                ));
            }
            if bad != good {
                defects.push((bad, good));
            }
        }
        let mut map = ZoneMap {
            unit_sectors: unit,
            units,
            region_units: region.max(1),
            spares,
            spares_at_front: front,
            slips_use_spares: absorb,
            slips,
            slipped_data_prefix: Vec::new(),
            defects,
            dead_sectors: z.dead_space_sectors,
            blocks: 0,
        };
        if !absorb {
            let mut count = 0;
            map.slipped_data_prefix.push(0);
            for &s in &map.slips {
                count += u64::from(!map.is_spare_position(s));
                map.slipped_data_prefix.push(count);
            }
        }
        if absorb {
            // Each region's data must fit among its locations not slipped.
            let mut start = 0;
            while start < units {
                let len = map.region_len(start);
                let slipped = map.slips_in(start, start + len);
                if slipped > map.region_spares(start) {
                    return Err(format!(
                        "{slipped} slips in the region at location {start} but only {} spares",
                        map.region_spares(start)
                    ));
                }
                start += len;
            }
        }
        let data_sectors = map.data_before(units) * unit;
        map.blocks = data_sectors.checked_sub(z.dead_space_sectors).ok_or_else(|| {
            format!(
                "empty space at zone front ({} sectors) exceeds the zone's {data_sectors} data sectors",
                z.dead_space_sectors
            )
        })?;
        Ok(map)
    }

    fn region_start(&self, u: u64) -> u64 {
        u / self.region_units * self.region_units
    }

    fn region_len(&self, start: u64) -> u64 {
        self.region_units.min(self.units - start)
    }

    fn region_spares(&self, start: u64) -> u64 {
        if self.region_len(start) == self.region_units {
            self.spares
        } else {
            0
        }
    }

    /// Slipped units in `[from, to)`.
    fn slips_in(&self, from: u64, to: u64) -> u64 {
        (self.slips.partition_point(|&s| s < to) - self.slips.partition_point(|&s| s < from)) as u64
    }

    fn is_spare_position(&self, u: u64) -> bool {
        let start = self.region_start(u);
        let spares = self.region_spares(start);
        let off = u - start;
        if self.spares_at_front {
            off < spares
        } else {
            off >= self.region_len(start) - spares
        }
    }

    /// Spare positions among units `[0, u)`.
    fn spare_positions_before(&self, u: u64) -> u64 {
        let full = u / self.region_units;
        let full_len = (self.units / self.region_units) * self.region_units;
        let mut n = full.min(self.units / self.region_units) * self.spares;
        let start = full * self.region_units;
        if start < u && start < full_len {
            let off = u - start;
            n += if self.spares_at_front {
                off.min(self.spares)
            } else {
                off.saturating_sub(self.region_units - self.spares)
            };
        }
        n
    }

    /// First data unit of the region starting at `start`, counted among the
    /// region's units that are not slipped.
    fn first_data_rank(&self, start: u64) -> u64 {
        if self.spares_at_front {
            let len = self.region_len(start);
            self.region_spares(start) - self.slips_in(start, start + len)
        } else {
            0
        }
    }

    /// Data units among `[0, u)`.
    pub fn data_before(&self, u: u64) -> u64 {
        let u = u.min(self.units);
        if !self.slips_use_spares {
            let slipped_data = self.slipped_data_prefix[self.slips.partition_point(|&s| s < u)];
            return u - self.spare_positions_before(u) - slipped_data;
        }
        if u == self.units {
            let full = self.units / self.region_units;
            let last = self.units - full * self.region_units;
            return full * (self.region_units - self.spares) + last;
        }
        let start = self.region_start(u);
        let regions = start / self.region_units;
        let per_region = self.region_units - self.spares;
        let len = self.region_len(start);
        let capacity = len - self.region_spares(start);
        let good = (u - start) - self.slips_in(start, u);
        regions * per_region
            + good
                .saturating_sub(self.first_data_rank(start))
                .min(capacity)
    }

    pub fn is_data(&self, u: u64) -> bool {
        u < self.units && self.data_before(u + 1) > self.data_before(u)
    }

    /// The unit holding data unit number `q` (before remapping).
    fn select(&self, q: u64) -> u64 {
        if let Some(u) = self.select_in_region(q) {
            return u;
        }
        self.select_by_bisection(q)
    }

    /// `select` when slips use the spares: every full region holds the same
    /// number of data units, so the region is a division away and the unit
    /// within it one search over the slips (the simulator asks this for
    /// every request, and bisection over the whole zone was a quarter of
    /// its time). `None` where that shortcut does not hold.
    fn select_in_region(&self, q: u64) -> Option<u64> {
        let per_region = self.region_units - self.spares;
        if !self.slips_use_spares || per_region == 0 {
            return None;
        }
        let full_regions = self.units / self.region_units;
        let region = (q / per_region).min(full_regions);
        let start = region * self.region_units;
        if start >= self.units {
            return None;
        }
        let rank = self.first_data_rank(start) + (q - region * per_region);
        // The unit is start + rank + j, where j counts the slips at or
        // before it: the first j with slips[first + j] - j beyond
        // start + rank (slips are distinct and ascending, so that
        // difference never decreases).
        let first = self.slips.partition_point(|&s| s < start);
        let later = &self.slips[first..];
        let (mut lo, mut hi) = (0, later.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if later[mid] - mid as u64 <= start + rank {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Some(start + rank + lo as u64)
    }

    fn select_by_bisection(&self, q: u64) -> u64 {
        // data_before is non-decreasing and grows by one exactly at data
        // units, so the answer is the largest u with data_before(u) == q.
        let (mut lo, mut hi) = (0, self.units);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.data_before(mid) <= q {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Zone-relative physical sector of zone-relative LBN `zl` (< blocks).
    pub fn sector_of(&self, zl: u64) -> u64 {
        let k = zl + self.dead_sectors;
        let unit = self.select(k / self.unit_sectors);
        let unit = self
            .defects
            .iter()
            .find(|d| d.0 == unit)
            .map_or(unit, |d| d.1);
        unit * self.unit_sectors + k % self.unit_sectors
    }

    /// Zone-relative LBNs stored before physical sector `idx`, ignoring
    /// remapping (DiskSim's track boundaries do the same).
    pub fn lbns_before(&self, idx: u64) -> u64 {
        let unit = idx / self.unit_sectors;
        let within = if self.is_data(unit) {
            idx % self.unit_sectors
        } else {
            0
        };
        (self.data_before(unit) * self.unit_sectors + within)
            .saturating_sub(self.dead_sectors)
            .min(self.blocks)
    }

    /// Sectors from zone-relative LBN `zl` (stored at `idx`) that follow one
    /// another on the media, at most `limit` (which the caller keeps within
    /// the track).
    pub fn contiguous_from(&self, zl: u64, idx: u64, limit: u64) -> u64 {
        let unit = idx / self.unit_sectors;
        if self.unit_sectors == 1 && self.defects.iter().any(|d| d.1 == unit) {
            return 1; // a lone replacement sector
        }
        let mut limit = limit.min(self.blocks - zl).max(1);
        if self.unit_sectors == 1 {
            // A remapped sector ahead breaks the run.
            for &(bad, _) in &self.defects {
                if bad > idx && bad < idx + limit {
                    limit = bad - idx;
                }
            }
            // LBNs zl.. sit on idx.. exactly while no non-data sector lies
            // between; find the longest such run by bisection.
            let fits = |n: u64| self.lbns_before(idx + n) - self.lbns_before(idx) == n;
            if !fits(limit) {
                let (mut lo, mut hi) = (1, limit);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if fits(mid) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                limit = lo;
            }
        }
        limit
    }

    /// Slipped units before unit `u` (DiskSim moves the angle of later
    /// tracks by one sector per such slip in the per-track and per-cylinder
    /// schemes).
    pub fn slips_before(&self, u: u64) -> u64 {
        self.slips.partition_point(|&s| s < u) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(bpt: u32, cyls: u32, spares: u64, slips: Vec<u64>, dead: u64) -> ZoneSpec {
        ZoneSpec {
            first_cyl: 0,
            last_cyl: cyls - 1,
            sectors_per_track: bpt,
            first_block_offset_sectors: 0.0,
            dead_space_sectors: dead,
            track_skew_sectors: 0.0,
            cyl_skew_sectors: 0.0,
            spares,
            slips,
            defects: vec![],
        }
    }

    /// Every LBN, by brute force over the physical locations.
    fn lbn_sectors(m: &ZoneMap) -> Vec<u64> {
        (0..m.blocks).map(|l| m.sector_of(l)).collect()
    }

    #[test]
    fn per_cylinder_spares_absorb_slips_in_their_cylinder() {
        // 2 surfaces x 4 sectors = 8 per cylinder, 2 spares each, 2 cylinders.
        let z = zone(4, 2, 2, vec![1], 0);
        let m = ZoneMap::new(
            Sparing::SectorsPerCylinder {
                at_front: false,
                slip_to_end: false,
            },
            &z,
            2,
        )
        .unwrap();
        assert_eq!(m.blocks, 12);
        assert_eq!(
            lbn_sectors(&m),
            vec![0, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13]
        );
        assert_eq!(m.lbns_before(8), 6);
        assert_eq!(m.contiguous_from(0, 0, 10), 1);
        assert_eq!(m.contiguous_from(1, 2, 10), 5);
    }

    #[test]
    fn slip_to_end_shifts_the_rest_of_the_zone() {
        let z = zone(4, 2, 2, vec![1], 0);
        let m = ZoneMap::new(
            Sparing::SectorsPerCylinder {
                at_front: false,
                slip_to_end: true,
            },
            &z,
            2,
        )
        .unwrap();
        assert_eq!(m.blocks, 11);
        assert_eq!(lbn_sectors(&m), vec![0, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]);
    }

    #[test]
    fn spares_at_front_and_ranges() {
        let z = zone(4, 2, 2, vec![], 0);
        let front = Sparing::SectorsPerCylinder {
            at_front: true,
            slip_to_end: false,
        };
        let m = ZoneMap::new(front, &z, 2).unwrap();
        assert_eq!(
            lbn_sectors(&m),
            vec![2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15]
        );
        // Ranges of 2 cylinders over 3 cylinders: the last range is partial
        // and keeps no spares.
        let z = zone(4, 3, 3, vec![0], 0);
        let m = ZoneMap::new(Sparing::SectorsPerRange { cylinders: 2 }, &z, 1).unwrap();
        assert_eq!(m.blocks, 5 + 4);
        assert_eq!(lbn_sectors(&m), vec![1, 2, 3, 4, 5, 8, 9, 10, 11]);
    }

    #[test]
    fn track_sparing_dead_space_and_per_track_spares() {
        // 1 surface, 4 sectors per track, 4 tracks, 1 spare track, track 1
        // slipped, 2 dead sectors.
        let z = zone(4, 4, 1, vec![1], 2);
        let m = ZoneMap::new(Sparing::TracksPerZone, &z, 1).unwrap();
        assert_eq!(m.blocks, 10);
        assert_eq!(lbn_sectors(&m), vec![2, 3, 8, 9, 10, 11, 12, 13, 14, 15]);
        assert_eq!(m.lbns_before(8), 2);
        assert_eq!(m.lbns_before(4), 2);
        assert_eq!(m.contiguous_from(0, 2, 2), 2);
        let z = zone(4, 2, 1, vec![5], 0);
        let m = ZoneMap::new(Sparing::SectorsPerTrack, &z, 1).unwrap();
        assert_eq!(lbn_sectors(&m), vec![0, 1, 2, 4, 6, 7]);
    }

    /// The region shortcut finds the same unit as bisection over the zone
    /// for every data unit, in every sparing scheme whose slips use spares.
    #[test]
    fn region_select_agrees_with_bisection() {
        let schemes = [
            Sparing::SectorsPerCylinder {
                at_front: false,
                slip_to_end: false,
            },
            Sparing::SectorsPerCylinder {
                at_front: true,
                slip_to_end: false,
            },
            Sparing::SectorsPerTrack,
            Sparing::SectorsPerRange { cylinders: 3 },
            Sparing::SectorsPerZone,
            Sparing::TracksPerZone,
            Sparing::None,
        ];
        let layouts = [
            (3, vec![1, 9, 17, 30, 55, 100]),
            (7, vec![0, 1, 2, 40, 41, 90, 111]),
            (1, vec![]),
        ];
        let mut maps_checked = 0;
        for sparing in schemes {
            for (spares, slips) in &layouts {
                let z = zone(8, 7, *spares, slips.clone(), 3);
                let Ok(m) = ZoneMap::new(sparing, &z, 2) else {
                    continue; // more slips in a region than it has spares
                };
                for q in 0..m.data_before(m.units) {
                    let fast = m.select_in_region(q).expect("slips use spares here");
                    assert_eq!(fast, m.select_by_bisection(q), "{sparing:?} q {q}");
                }
                maps_checked += 1;
            }
        }
        assert!(maps_checked >= 15, "only {maps_checked} maps checked");
    }

    /// Where slips shift the rest of the zone, `data_before` (from the
    /// prefix counts) equals counting the units that are neither spare
    /// positions nor slipped.
    #[test]
    fn shifting_slips_count_like_a_scan() {
        let schemes = [
            (Sparing::SectorsPerZoneSlipToEnd, 4),
            (
                Sparing::SectorsPerCylinder {
                    at_front: false,
                    slip_to_end: true,
                },
                2,
            ),
            (
                Sparing::SectorsPerCylinder {
                    at_front: true,
                    slip_to_end: true,
                },
                2,
            ),
            (Sparing::SectorsAtDiskEnd, 0),
        ];
        for (sparing, spares) in schemes {
            let slips = vec![0, 14, 15, 31, 47, 60, 111];
            let m = ZoneMap::new(sparing, &zone(8, 7, spares, slips.clone(), 0), 2).unwrap();
            let mut data = 0;
            for u in 0..=m.units {
                assert_eq!(m.data_before(u), data, "{sparing:?} unit {u}");
                if u < m.units && !m.is_spare_position(u) && !slips.contains(&u) {
                    data += 1;
                }
            }
        }
    }

    #[test]
    fn too_many_slips_for_the_spares_is_an_error() {
        let z = zone(4, 1, 1, vec![0, 1], 0);
        assert!(ZoneMap::new(Sparing::SectorsPerTrack, &z, 1).is_err());
        let z = zone(4, 1, 1, vec![], 0);
        assert!(ZoneMap::new(Sparing::SectorsAtDiskEnd, &z, 1).is_err());
    }
}

//! Zoned layout: logical block numbers to (cylinder, head, sector) and the
//! angular position of every physical sector, following DiskSim's
//! `dm_layout_g1` (zones with track and cylinder skew, slipped sectors or
//! tracks, remapped defects).

use super::config::{GeometrySpec, Sparing, ZoneSpec};

/// A physical block address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pbn {
    pub cyl: u32,
    pub head: u32,
    pub sector: u32,
}

/// A run of consecutive LBNs stored on consecutive sectors of one track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackRun {
    pub lbn: u64,
    pub sectors: u64,
    pub pbn: Pbn,
    pub zone: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error("the layout has no zones")]
    NoZones,
    #[error("zone {0}: {1}")]
    BadZone(usize, String),
}

#[derive(Debug, Clone)]
struct Zone {
    spec: ZoneSpec,
    /// Slips sorted ascending (sectors or tracks depending on sparing).
    slips: Vec<u64>,
    blocks: u64,
    first_lbn: u64,
}

#[derive(Debug, Clone)]
pub struct Geometry {
    surfaces: u32,
    sparing: Sparing,
    zones: Vec<Zone>,
    capacity_sectors: u64,
    cylinders: u32,
}

impl Geometry {
    pub fn new(spec: &GeometrySpec) -> Result<Self, GeometryError> {
        if spec.zones.is_empty() {
            return Err(GeometryError::NoZones);
        }
        if spec.surfaces == 0 {
            return Err(GeometryError::BadZone(0, "zero surfaces".into()));
        }
        let mut zones = Vec::with_capacity(spec.zones.len());
        let mut first_lbn = 0;
        for (i, z) in spec.zones.iter().enumerate() {
            if z.last_cyl < z.first_cyl || z.sectors_per_track == 0 {
                return Err(GeometryError::BadZone(
                    i,
                    "empty cylinder range or zero sectors per track".into(),
                ));
            }
            let cyls = u64::from(z.last_cyl - z.first_cyl + 1);
            let bpt = u64::from(z.sectors_per_track);
            let raw = cyls * bpt * u64::from(spec.surfaces);
            let lost = z.dead_space_sectors
                + match spec.sparing {
                    Sparing::None => 0,
                    Sparing::TracksPerZone => z.spares * bpt,
                    Sparing::SectorsPerZone => z.spares,
                    Sparing::SectorsPerZoneSlipToEnd => z.spares + z.slips.len() as u64,
                };
            let blocks = raw.checked_sub(lost).ok_or_else(|| {
                GeometryError::BadZone(i, "more spare/dead space than sectors".into())
            })?;
            let mut slips = z.slips.clone();
            slips.sort_unstable();
            slips.dedup();
            zones.push(Zone {
                spec: z.clone(),
                slips,
                blocks,
                first_lbn,
            });
            first_lbn += blocks;
        }
        let cylinders = spec.zones.iter().map(|z| z.last_cyl + 1).max().unwrap_or(0);
        Ok(Geometry {
            surfaces: spec.surfaces,
            sparing: spec.sparing,
            zones,
            capacity_sectors: first_lbn,
            cylinders,
        })
    }

    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }
    pub fn cylinders(&self) -> u32 {
        self.cylinders
    }
    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }
    pub fn zone_count(&self) -> usize {
        self.zones.len()
    }
    pub fn sectors_per_track(&self, zone: usize) -> u32 {
        self.zones[zone].spec.sectors_per_track
    }

    fn zone_of_lbn(&self, lbn: u64) -> usize {
        self.zones
            .partition_point(|z| z.first_lbn + z.blocks <= lbn)
            .min(self.zones.len() - 1)
    }

    /// Zone-relative logical block to zone-relative physical sector index.
    fn to_index(&self, z: &Zone, zl: u64) -> u64 {
        let bpt = u64::from(z.spec.sectors_per_track);
        let mut idx = zl + z.spec.dead_space_sectors;
        match self.sparing {
            Sparing::None => {}
            Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => {
                for &s in &z.slips {
                    if s <= idx {
                        idx += 1;
                    }
                }
            }
            Sparing::TracksPerZone => {
                let mut track = idx / bpt;
                for &s in &z.slips {
                    if s <= track {
                        track += 1;
                    }
                }
                idx = track * bpt + idx % bpt;
            }
        }
        for &(bad, good) in &z.spec.defects {
            let hit = match self.sparing {
                Sparing::TracksPerZone => idx / bpt == bad,
                _ => idx == bad,
            };
            if hit && bad != good {
                idx = match self.sparing {
                    Sparing::TracksPerZone => good * bpt + idx % bpt,
                    _ => good,
                };
                break;
            }
        }
        idx
    }

    /// Zone-relative LBN of the first mapped sector at or after physical index
    /// `idx` (used for track boundaries).
    fn lbn_at_or_after_index(&self, z: &Zone, idx: u64) -> u64 {
        let bpt = u64::from(z.spec.sectors_per_track);
        let below = match self.sparing {
            Sparing::None => 0,
            Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => {
                z.slips.partition_point(|&s| s < idx) as u64
            }
            Sparing::TracksPerZone => {
                z.slips.partition_point(|&s| s < idx.div_ceil(bpt)) as u64 * bpt
            }
        };
        idx.saturating_sub(z.spec.dead_space_sectors + below)
            .min(z.blocks)
    }

    fn pbn_of_index(&self, z: &Zone, idx: u64) -> Pbn {
        let bpt = u64::from(z.spec.sectors_per_track);
        let per_cyl = bpt * u64::from(self.surfaces);
        Pbn {
            cyl: z.spec.first_cyl + (idx / per_cyl) as u32,
            head: ((idx % per_cyl) / bpt) as u32,
            sector: (idx % bpt) as u32,
        }
    }

    pub fn lbn_to_pbn(&self, lbn: u64) -> Option<Pbn> {
        (lbn < self.capacity_sectors).then(|| self.run_at(lbn, 1).pbn)
    }

    /// The longest run starting at `lbn` (at most `max_sectors`) that is
    /// contiguous on one track. `lbn` must be below the capacity.
    pub fn run_at(&self, lbn: u64, max_sectors: u64) -> TrackRun {
        let zi = self.zone_of_lbn(lbn);
        let z = &self.zones[zi];
        let zl = lbn - z.first_lbn;
        let idx = self.to_index(z, zl);
        let bpt = u64::from(z.spec.sectors_per_track);
        let track_end = (idx / bpt + 1) * bpt;
        let mut end = track_end
            .min(idx + (z.blocks - zl))
            .min(idx + max_sectors.max(1));
        if matches!(
            self.sparing,
            Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd
        ) {
            let next_slip = z.slips.partition_point(|&s| s <= idx);
            if let Some(&s) = z.slips.get(next_slip) {
                end = end.min(s);
            }
        }
        // A remapped sector breaks the physical contiguity.
        for &(bad, _) in &z.spec.defects {
            if bad > idx && bad < end {
                end = bad;
            }
        }
        if z.spec
            .defects
            .iter()
            .any(|&(bad, good)| bad != good && idx == good)
        {
            end = idx + 1;
        }
        TrackRun {
            lbn,
            sectors: (end - idx).max(1),
            pbn: self.pbn_of_index(z, idx),
            zone: zi,
        }
    }

    /// LBN range `[first, end)` of the track holding `lbn`.
    pub fn track_lbn_range(&self, lbn: u64) -> (u64, u64) {
        let zi = self.zone_of_lbn(lbn.min(self.capacity_sectors.saturating_sub(1)));
        let z = &self.zones[zi];
        let idx = self.to_index(z, lbn.saturating_sub(z.first_lbn));
        let bpt = u64::from(z.spec.sectors_per_track);
        let start = idx / bpt * bpt;
        (
            z.first_lbn + self.lbn_at_or_after_index(z, start),
            z.first_lbn + self.lbn_at_or_after_index(z, start + bpt),
        )
    }

    /// LBN range `[first, end)` of the cylinder holding `lbn`.
    pub fn cylinder_lbn_range(&self, lbn: u64) -> (u64, u64) {
        let zi = self.zone_of_lbn(lbn.min(self.capacity_sectors.saturating_sub(1)));
        let z = &self.zones[zi];
        let idx = self.to_index(z, lbn.saturating_sub(z.first_lbn));
        let per_cyl = u64::from(z.spec.sectors_per_track) * u64::from(self.surfaces);
        let start = idx / per_cyl * per_cyl;
        (
            z.first_lbn + self.lbn_at_or_after_index(z, start),
            z.first_lbn + self.lbn_at_or_after_index(z, start + per_cyl),
        )
    }

    /// Angular position (in revolutions, [0, 1)) where physical `sector` of
    /// track (cyl, head) begins. Each track switch shifts the start by the
    /// track skew and each cylinder switch by the cylinder skew, so that a
    /// sequential transfer finds the next track's first block just after the
    /// switch completes.
    pub fn sector_angle(&self, zone: usize, pbn: Pbn) -> f64 {
        let z = &self.zones[zone].spec;
        let cyl_in_zone = f64::from(pbn.cyl - z.first_cyl);
        let track_switches = f64::from(pbn.head) + f64::from(self.surfaces - 1) * cyl_in_zone;
        let sectors = z.first_block_offset_sectors
            + track_switches * z.track_skew_sectors
            + cyl_in_zone * z.cyl_skew_sectors
            + f64::from(pbn.sector);
        (sectors / f64::from(z.sectors_per_track)).rem_euclid(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(first: u32, last: u32, bpt: u32, spares: u64, slips: Vec<u64>) -> ZoneSpec {
        ZoneSpec {
            first_cyl: first,
            last_cyl: last,
            sectors_per_track: bpt,
            first_block_offset_sectors: 0.0,
            dead_space_sectors: 0,
            track_skew_sectors: 2.0,
            cyl_skew_sectors: 3.0,
            spares,
            slips,
            defects: vec![],
        }
    }

    #[test]
    fn slips_shift_later_blocks() {
        let g = Geometry::new(&GeometrySpec {
            surfaces: 2,
            sparing: Sparing::SectorsPerZone,
            zones: vec![zone(0, 9, 10, 5, vec![3]), zone(10, 19, 8, 0, vec![])],
        })
        .unwrap();
        assert_eq!(g.capacity_sectors(), 195 + 160);
        assert_eq!(
            g.lbn_to_pbn(2).unwrap(),
            Pbn {
                cyl: 0,
                head: 0,
                sector: 2
            }
        );
        // Physical sector 3 is slipped: LBN 3 lives in sector 4.
        assert_eq!(
            g.lbn_to_pbn(3).unwrap(),
            Pbn {
                cyl: 0,
                head: 0,
                sector: 4
            }
        );
        assert_eq!(g.run_at(0, 100).sectors, 3);
        assert_eq!(g.run_at(3, 100).sectors, 6);
        assert_eq!(g.track_lbn_range(5), (0, 9));
        assert_eq!(
            g.lbn_to_pbn(195).unwrap(),
            Pbn {
                cyl: 10,
                head: 0,
                sector: 0
            }
        );
        assert_eq!(g.lbn_to_pbn(195 + 160), None);
    }

    #[test]
    fn skew_moves_track_start() {
        let g = Geometry::new(&GeometrySpec {
            surfaces: 2,
            sparing: Sparing::None,
            zones: vec![zone(0, 9, 10, 0, vec![])],
        })
        .unwrap();
        assert_eq!(
            g.sector_angle(
                0,
                Pbn {
                    cyl: 0,
                    head: 0,
                    sector: 0
                }
            ),
            0.0
        );
        assert!(
            (g.sector_angle(
                0,
                Pbn {
                    cyl: 0,
                    head: 1,
                    sector: 0
                }
            ) - 0.2)
                .abs()
                < 1e-12
        );
        // Next cylinder: one more track switch plus the cylinder skew.
        assert!(
            (g.sector_angle(
                0,
                Pbn {
                    cyl: 1,
                    head: 0,
                    sector: 0
                }
            ) - 0.5)
                .abs()
                < 1e-12
        );
    }
}

//! Zoned layout: logical block numbers to (cylinder, head, sector) and the
//! angular position of every physical sector, following DiskSim's
//! `dm_layout_g1` (zones with track and cylinder skew, every sparing scheme,
//! slipped sectors or tracks, remapped defects, serpentine track orders).

mod zone_map;

use super::config::{GeometrySpec, Sparing, TrackOrder, ZoneSpec};
use zone_map::ZoneMap;

/// A physical block address (`head` is the physical surface).
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
    map: ZoneMap,
    first_lbn: u64,
}

#[derive(Debug, Clone)]
pub struct Geometry {
    surfaces: u32,
    sparing: Sparing,
    track_order: TrackOrder,
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
        let mut zones: Vec<Zone> = Vec::with_capacity(spec.zones.len());
        let mut first_lbn = 0;
        for (i, z) in spec.zones.iter().enumerate() {
            if z.last_cyl < z.first_cyl || z.sectors_per_track == 0 {
                return Err(GeometryError::BadZone(
                    i,
                    "empty cylinder range or zero sectors per track".into(),
                ));
            }
            if zones.last().is_some_and(|p| p.spec.last_cyl >= z.first_cyl) {
                return Err(GeometryError::BadZone(
                    i,
                    "zones must be in ascending, non-overlapping cylinder order".into(),
                ));
            }
            let map = ZoneMap::new(spec.sparing, z, spec.surfaces)
                .map_err(|m| GeometryError::BadZone(i, m))?;
            let blocks = map.blocks;
            zones.push(Zone {
                spec: z.clone(),
                map,
                first_lbn,
            });
            first_lbn += blocks;
        }
        let cylinders = spec.zones.iter().map(|z| z.last_cyl + 1).max().unwrap_or(0);
        Ok(Geometry {
            surfaces: spec.surfaces,
            sparing: spec.sparing,
            track_order: spec.track_order,
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
            .partition_point(|z| z.first_lbn + z.map.blocks <= lbn)
            .min(self.zones.len() - 1)
    }

    /// Physical surface of logical track `head` of cylinder `cyl` (the
    /// mapping is its own inverse).
    fn surface(&self, z: &ZoneSpec, cyl: u32, head: u32) -> u32 {
        let reversed = match self.track_order {
            TrackOrder::Normal => false,
            TrackOrder::SerpentinePerZone => (cyl - z.first_cyl) % 2 == 1,
            TrackOrder::Serpentine => cyl % 2 == 1,
        };
        if reversed {
            self.surfaces - 1 - head
        } else {
            head
        }
    }

    fn pbn_of_index(&self, z: &ZoneSpec, idx: u64) -> Pbn {
        let bpt = u64::from(z.sectors_per_track);
        let per_cyl = bpt * u64::from(self.surfaces);
        let cyl = z.first_cyl + (idx / per_cyl) as u32;
        Pbn {
            cyl,
            head: self.surface(z, cyl, ((idx % per_cyl) / bpt) as u32),
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
        let idx = z.map.sector_of(zl);
        let bpt = u64::from(z.spec.sectors_per_track);
        let to_track_end = (idx / bpt + 1) * bpt - idx;
        let sectors = z
            .map
            .contiguous_from(zl, idx, to_track_end.min(max_sectors.max(1)));
        TrackRun {
            lbn,
            sectors,
            pbn: self.pbn_of_index(&z.spec, idx),
            zone: zi,
        }
    }

    /// LBN range `[first, end)` of the track holding `lbn`.
    pub fn track_lbn_range(&self, lbn: u64) -> (u64, u64) {
        self.lbn_range_around(lbn, |z| u64::from(z.sectors_per_track))
    }

    /// LBN range `[first, end)` of the cylinder holding `lbn`.
    pub fn cylinder_lbn_range(&self, lbn: u64) -> (u64, u64) {
        let surfaces = u64::from(self.surfaces);
        self.lbn_range_around(lbn, |z| u64::from(z.sectors_per_track) * surfaces)
    }

    /// LBNs stored in the `span(zone)`-sector piece of the zone holding `lbn`.
    fn lbn_range_around(&self, lbn: u64, span: impl Fn(&ZoneSpec) -> u64) -> (u64, u64) {
        let zi = self.zone_of_lbn(lbn.min(self.capacity_sectors.saturating_sub(1)));
        let z = &self.zones[zi];
        let idx = z.map.sector_of(lbn.saturating_sub(z.first_lbn));
        let span = span(&z.spec);
        let start = idx / span * span;
        (
            z.first_lbn + z.map.lbns_before(start),
            z.first_lbn + z.map.lbns_before(start + span),
        )
    }

    /// Angular position (in revolutions, [0, 1)) where physical `sector` of
    /// track (cyl, head) begins. Each track switch shifts the start by the
    /// track skew and each cylinder switch by the cylinder skew, so that a
    /// sequential transfer finds the next track's first block just after the
    /// switch completes. In the per-track and per-cylinder sparing schemes
    /// every slip before the track (before its cylinder, per cylinder) also
    /// moves it on by a sector, as in DiskSim.
    pub fn sector_angle(&self, zone: usize, pbn: Pbn) -> f64 {
        let zn = &self.zones[zone];
        let z = &zn.spec;
        let cyl_in_zone = pbn.cyl - z.first_cyl;
        let head = self.surface(z, pbn.cyl, pbn.head);
        let bpt = u64::from(z.sectors_per_track);
        let slipped = match self.sparing {
            Sparing::SectorsPerTrack => {
                let track = u64::from(cyl_in_zone) * u64::from(self.surfaces) + u64::from(head);
                zn.map.slips_before(track * bpt)
            }
            Sparing::SectorsPerCylinder { .. } => {
                let track = u64::from(cyl_in_zone) * u64::from(self.surfaces);
                zn.map.slips_before(track * bpt)
            }
            _ => 0,
        };
        let cyl_in_zone = f64::from(cyl_in_zone);
        let track_switches = f64::from(head) + f64::from(self.surfaces - 1) * cyl_in_zone;
        let sectors = z.first_block_offset_sectors
            + track_switches * z.track_skew_sectors
            + cyl_in_zone * z.cyl_skew_sectors
            + slipped as f64
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
            track_order: TrackOrder::Normal,
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
            track_order: TrackOrder::Normal,
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

    fn pbn(cyl: u32, head: u32, sector: u32) -> Pbn {
        Pbn { cyl, head, sector }
    }

    #[test]
    fn serpentine_orders_reverse_odd_cylinders() {
        // Zone 0: cylinders 0-1, zone 1: cylinders 2-4; 3 surfaces, 10 spt.
        let spec = |track_order| GeometrySpec {
            surfaces: 3,
            sparing: Sparing::None,
            track_order,
            zones: vec![zone(0, 1, 10, 0, vec![]), zone(2, 4, 10, 0, vec![])],
        };
        let normal = Geometry::new(&spec(TrackOrder::Normal)).unwrap();
        let per_zone = Geometry::new(&spec(TrackOrder::SerpentinePerZone)).unwrap();
        let global = Geometry::new(&spec(TrackOrder::Serpentine)).unwrap();
        // LBN 30 opens cylinder 1: surface 0 normally, the last surface in
        // a serpentine order (no head switch at the cylinder switch).
        assert_eq!(normal.lbn_to_pbn(30).unwrap(), pbn(1, 0, 0));
        assert_eq!(per_zone.lbn_to_pbn(30).unwrap(), pbn(1, 2, 0));
        assert_eq!(global.lbn_to_pbn(30).unwrap(), pbn(1, 2, 0));
        // Cylinder 3 is odd in absolute terms but the second of its zone.
        assert_eq!(per_zone.lbn_to_pbn(60).unwrap(), pbn(2, 0, 0));
        assert_eq!(global.lbn_to_pbn(60).unwrap(), pbn(2, 0, 0));
        assert_eq!(per_zone.lbn_to_pbn(90).unwrap(), pbn(3, 2, 0));
        assert_eq!(global.lbn_to_pbn(90).unwrap(), pbn(3, 2, 0));
        assert_eq!(per_zone.lbn_to_pbn(120).unwrap(), pbn(4, 0, 0));
        assert_eq!(global.lbn_to_pbn(120).unwrap(), pbn(4, 0, 0));
        // The skew follows the LBN order: the first track of cylinder 1 is
        // two track skews (2 of 10 sectors each) and one cylinder skew (3)
        // on, whichever surface holds it.
        let a = per_zone.sector_angle(0, pbn(1, 2, 0));
        assert!((a - 0.7).abs() < 1e-12, "{a}");
        // Its second track (surface 1) is one track skew further.
        let b = per_zone.sector_angle(0, pbn(1, 1, 0));
        assert!((b - 0.9).abs() < 1e-12, "{b}");
        // A zone boundary that is not in cylinder order is refused.
        let mut bad = spec(TrackOrder::Normal);
        bad.zones[1].first_cyl = 1;
        assert!(Geometry::new(&bad).is_err());
    }

    #[test]
    fn per_track_slips_move_later_tracks_on() {
        // Per-track sparing, 1 spare sector per 10-sector track, a slip on
        // track 0: later tracks start one sector further round.
        let g = Geometry::new(&GeometrySpec {
            surfaces: 2,
            sparing: Sparing::SectorsPerTrack,
            track_order: TrackOrder::Normal,
            zones: vec![zone(0, 9, 10, 1, vec![4])],
        })
        .unwrap();
        assert_eq!(g.capacity_sectors(), 20 * 9);
        assert_eq!(g.lbn_to_pbn(4).unwrap(), pbn(0, 0, 5));
        assert_eq!(g.lbn_to_pbn(9).unwrap(), pbn(0, 1, 0));
        assert_eq!(g.run_at(0, 100).sectors, 4);
        assert_eq!(g.run_at(4, 100).sectors, 5);
        let track0 = g.sector_angle(0, pbn(0, 0, 0));
        let track1 = g.sector_angle(0, pbn(0, 1, 0));
        // Track skew 2 plus the slip: 3 sectors of 10.
        assert!((track1 - track0 - 0.3).abs() < 1e-12, "{track0} {track1}");
    }
}

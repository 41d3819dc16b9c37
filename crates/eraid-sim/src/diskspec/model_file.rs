//! The `dm_disk` block of a DiskSim `.model` file: layout (`dm_layout_g1`)
//! and mechanics (`dm_mech_g1`).

use super::fields::Fields;
use super::seek_table::parse_seek_table;
use super::syntax::{Block, Value};
use super::{Resolver, SpecError};
use crate::disk::{
    Geometry, GeometryError, GeometrySpec, HplSeek, MechanicsSpec, SeekCurve, Sparing, TrackOrder,
    ZoneSpec,
};

pub fn read_model(
    file: &str,
    block: &Block,
    resolve: &mut Resolver<'_>,
) -> Result<(GeometrySpec, MechanicsSpec), SpecError> {
    let f = Fields::new(file, block);
    let surfaces = f.count("Number of data surfaces")?;
    if surfaces == 0 || surfaces > 1024 {
        return Err(f.err(
            f.param("Number of data surfaces")?,
            "surfaces must be between 1 and 1024",
        ));
    }
    let geometry = read_layout(file, f.block("Layout Model")?, surfaces as u32)?;
    let mechanics = read_mech(file, f.block("Mechanical Model")?, resolve)?;
    Ok((geometry, mechanics))
}

fn read_layout(file: &str, block: &Block, surfaces: u32) -> Result<GeometrySpec, SpecError> {
    let f = Fields::new(file, block);
    let mapping = f.param("LBN-to-PBN mapping scheme")?;
    let track_order = match f.count("LBN-to-PBN mapping scheme")? {
        0 => TrackOrder::Normal,
        1 => TrackOrder::SerpentinePerZone,
        2 => TrackOrder::Serpentine,
        n => {
            return Err(f.err(
                mapping,
                format!("LBN-to-PBN mapping scheme {n} is not 0, 1 or 2"),
            ))
        }
    };
    let sp = f.param("Sparing scheme used")?;
    let per_cylinder = |at_front, slip_to_end| Sparing::SectorsPerCylinder {
        at_front,
        slip_to_end,
    };
    let sparing = match f.count("Sparing scheme used")? {
        0 => Sparing::None,
        1 => Sparing::TracksPerZone,
        2 => per_cylinder(false, false),
        3 => Sparing::SectorsPerTrack,
        4 => per_cylinder(false, true),
        5 => per_cylinder(true, false),
        6 => per_cylinder(true, true),
        7 => Sparing::SectorsAtDiskEnd,
        8 => {
            let range = f.count("Rangesize for sparing")?;
            if range == 0 || range > u64::from(u32::MAX) {
                return Err(f.err(
                    f.param("Rangesize for sparing")?,
                    "'Rangesize for sparing' must be a positive number of cylinders",
                ));
            }
            Sparing::SectorsPerRange {
                cylinders: range as u32,
            }
        }
        9 => Sparing::SectorsPerZone,
        10 => Sparing::SectorsPerZoneSlipToEnd,
        n => return Err(f.err(sp, format!("sparing scheme {n} is not 0..10"))),
    };
    let revolutions = match block.get("Skew units").map(|p| &p.value) {
        Some(Value::Word(w)) => w.eq_ignore_ascii_case("revolutions"),
        _ => false,
    };
    let zones_param = f.param("Zones")?;
    let Value::List(items) = &zones_param.value else {
        return Err(f.err(zones_param, "'Zones' must be a list of zone blocks"));
    };
    let mut zones = Vec::with_capacity(items.len());
    for (v, line) in items {
        let Value::Block(zb) = v else {
            return Err(SpecError::new(
                file,
                *line,
                "each zone must be a 'dm_layout_g1_zone { ... }' block",
            ));
        };
        let zone = read_zone(file, zb, revolutions)?;
        if let Some(prev) = zones.last().map(|z: &ZoneSpec| z.last_cyl) {
            if zone.first_cyl <= prev {
                return Err(SpecError::new(
                    file,
                    zb.line,
                    "zones must be in ascending cylinder order",
                ));
            }
        }
        zones.push(zone);
    }
    if zones.is_empty() {
        return Err(f.err(zones_param, "no zones"));
    }
    let spec = GeometrySpec {
        surfaces,
        sparing,
        track_order,
        zones,
    };
    // Spares, slips and defects must fit their zones; say which zone if not.
    if let Err(e) = Geometry::new(&spec) {
        let line = match &e {
            GeometryError::BadZone(i, _) => items.get(*i).map_or(zones_param.line, |z| z.1),
            GeometryError::NoZones => zones_param.line,
        };
        return Err(SpecError::new(file, line, e.to_string()));
    }
    Ok(spec)
}

fn read_zone(file: &str, block: &Block, revolutions: bool) -> Result<ZoneSpec, SpecError> {
    let f = Fields::new(file, block);
    let revolutions = match block.get("Skew units").map(|p| &p.value) {
        Some(Value::Word(w)) => w.eq_ignore_ascii_case("revolutions"),
        _ => revolutions,
    };
    let first_cyl = f.count("First cylinder number")?;
    let last_cyl = f.count("Last cylinder number")?;
    let bpt = f.count("Blocks per track")?;
    if last_cyl < first_cyl || last_cyl > u64::from(u32::MAX) || bpt == 0 || bpt > 1 << 20 {
        return Err(SpecError::new(
            file,
            block.line,
            "zone needs first <= last cylinder and a positive blocks per track",
        ));
    }
    // Skews and offset are in sectors unless "Skew units = revolutions".
    let unit = if revolutions { bpt as f64 } else { 1.0 };
    let defects_flat = f.int_list("defects")?;
    if defects_flat.len() % 2 != 0 {
        return Err(f.err(
            f.param("defects")?,
            "defects must come in (defective, replacement) pairs",
        ));
    }
    Ok(ZoneSpec {
        first_cyl: first_cyl as u32,
        last_cyl: last_cyl as u32,
        sectors_per_track: bpt as u32,
        first_block_offset_sectors: f.number("Offset of first block")? * unit,
        dead_space_sectors: f.count("Empty space at zone front")?,
        track_skew_sectors: f.number_or("Skew for track switch", 0.0)? * unit,
        cyl_skew_sectors: f.number_or("Skew for cylinder switch", 0.0)? * unit,
        spares: f.count("Number of spares")?,
        slips: f.int_list("slips")?,
        defects: defects_flat.chunks(2).map(|c| (c[0], c[1])).collect(),
    })
}

fn read_mech(
    file: &str,
    block: &Block,
    resolve: &mut Resolver<'_>,
) -> Result<MechanicsSpec, SpecError> {
    let f = Fields::new(file, block);
    let rpm = f.number("Rotation speed (in rpms)")?;
    if rpm <= 0.0 {
        return Err(f.err(
            f.param("Rotation speed (in rpms)")?,
            "rotation speed must be positive",
        ));
    }
    let seek = read_seek(&f, resolve)?;
    Ok(MechanicsSpec {
        rpm,
        head_switch_ms: f.non_negative("Head switch time")?,
        write_settle_ms: f.number_or("Add. write settling delay", 0.0)?,
        seek,
    })
}

/// The seek curve. As in DiskSim, a `Full seek curve` file makes the seek
/// type `extracted` whatever `Seek type` says.
fn read_seek(f: &Fields<'_>, resolve: &mut Resolver<'_>) -> Result<SeekCurve, SpecError> {
    let seek_type = f.word("Seek type")?;
    if let Some(p) = f.block.get("Full seek curve") {
        let name = match &p.value {
            Value::Word(w) | Value::Source(w) => w.clone(),
            _ => return Err(f.err(p, "'Full seek curve' must name a .seek file")),
        };
        let text = resolve(&name)
            .map_err(|m| f.err(p, format!("cannot read seek curve '{name}': {m}")))?;
        return Ok(SeekCurve::Table(parse_seek_table(&name, &text)?));
    }
    let plus_ten = match seek_type.to_ascii_lowercase().as_str() {
        "extracted" => {
            return Err(f.err(
                f.param("Seek type")?,
                "seek type 'extracted' needs a 'Full seek curve' file",
            ))
        }
        "hpl" => false,
        "hplplus10" => true,
        other => {
            return Err(f.err(
                f.param("Seek type")?,
                format!(
                    "seek type '{other}' is not supported ('extracted', 'hpl' and 'hplplus10' are)"
                ),
            ))
        }
    };
    let key = "HPL seek equation values";
    let v = f.number_list(key)?;
    if v.len() != 6 {
        return Err(f.err(
            f.param(key)?,
            format!("'{key}' needs 6 values, not {}", v.len()),
        ));
    }
    let bad = |i: usize, what: &str| {
        SpecError::new(f.file, v[i].1, format!("'{key}' V{}: {what}", i + 1))
    };
    if v[0].0 < 0.0 || v[0].0.fract() != 0.0 || v[0].0 > f64::from(u32::MAX) {
        return Err(bad(0, "must be a whole number of cylinders"));
    }
    if let Some(i) = (1..5).find(|&i| v[i].0 < 0.0) {
        return Err(bad(i, "must not be negative"));
    }
    let single_cylinder_ms = match v[5].0 {
        -1.0 => None,
        x if x >= 0.0 => Some(x),
        _ => return Err(bad(5, "must be -1 (none) or a seek time")),
    };
    let first_ten_ms = if plus_ten {
        let key = "First ten seek times";
        let t = f.number_list(key)?;
        if t.len() < 10 {
            return Err(f.err(
                f.param(key)?,
                format!("'{key}' needs 10 values, not {}", t.len()),
            ));
        }
        if let Some((_, line)) = t.iter().find(|x| x.0 < 0.0) {
            return Err(SpecError::new(
                f.file,
                *line,
                format!("'{key}' must not be negative"),
            ));
        }
        let mut ten = [0.0; 10];
        for (slot, (x, _)) in ten.iter_mut().zip(&t) {
            *slot = *x;
        }
        Some(ten)
    } else {
        None
    };
    Ok(SeekCurve::Hpl(HplSeek {
        short_below_cyls: v[0].0 as u32,
        short_base_ms: v[1].0,
        short_sqrt_ms: v[2].0,
        long_base_ms: v[3].0,
        long_per_cyl_ms: v[4].0,
        single_cylinder_ms,
        first_ten_ms,
    }))
}

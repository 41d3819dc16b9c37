//! The `dm_disk` block of a DiskSim `.model` file: layout (`dm_layout_g1`)
//! and mechanics (`dm_mech_g1`).

use super::fields::Fields;
use super::seek_table::parse_seek_table;
use super::syntax::{Block, Value};
use super::{Resolver, SpecError};
use crate::disk::{GeometrySpec, MechanicsSpec, SeekCurve, Sparing, ZoneSpec};

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
    if f.count("LBN-to-PBN mapping scheme")? != 0 {
        return Err(f.err(
            mapping,
            "only LBN-to-PBN mapping scheme 0 (normal) is supported",
        ));
    }
    let sp = f.param("Sparing scheme used")?;
    let sparing = match f.count("Sparing scheme used")? {
        0 => Sparing::None,
        1 => Sparing::TracksPerZone,
        9 => Sparing::SectorsPerZone,
        10 => Sparing::SectorsPerZoneSlipToEnd,
        n => {
            return Err(f.err(
                sp,
                format!("sparing scheme {n} is not supported (0, 1, 9 and 10 are)"),
            ))
        }
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
    Ok(GeometrySpec {
        surfaces,
        sparing,
        zones,
    })
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
    let seek_type = f.word("Seek type")?;
    let seek = match seek_type.to_ascii_lowercase().as_str() {
        "extracted" => {
            let p = f.param("Full seek curve")?;
            let name = match &p.value {
                Value::Word(w) | Value::Source(w) => w.clone(),
                _ => return Err(f.err(p, "'Full seek curve' must name a .seek file")),
            };
            let text = resolve(&name)
                .map_err(|m| f.err(p, format!("cannot read seek curve '{name}': {m}")))?;
            SeekCurve::Table(parse_seek_table(&name, &text)?)
        }
        other => {
            return Err(f.err(
                f.param("Seek type")?,
                format!("seek type '{other}' is not supported (only 'extracted')"),
            ));
        }
    };
    Ok(MechanicsSpec {
        rpm,
        head_switch_ms: f.non_negative("Head switch time")?,
        write_settle_ms: f.number_or("Add. write settling delay", 0.0)?.max(0.0),
        seek,
    })
}

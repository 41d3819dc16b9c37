//! DiskSim run files (.parv) and the drive features beyond the Cheetah 9LP's
//! (sparing schemes, track orders, HPL seek curves, buses, water marks):
//! good files load with the values DiskSim uses, bad ones give an error
//! naming the file, the line and the field.

use eraid_sim::disk::{FastWrite, RequestData, SeekCurve, Sparing, TrackOrder};
use eraid_sim::diskspec::{parse_parv, SpecError};

fn read(drive: &str, name: &str) -> String {
    let path = format!(
        "{}/../../data/disk-models/{drive}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Loads `drive` through its run file with `file`'s text replaced by
/// `patch(text)`.
fn load_patched(
    drive: &str,
    file: &str,
    patch: impl Fn(String) -> String,
) -> Result<eraid_sim::disk::DiskSpec, SpecError> {
    let get = |name: &str| {
        let text = read(drive, name);
        if name == file {
            patch(text)
        } else {
            text
        }
    };
    let parv = format!("{drive}.parv");
    let mut resolve = |name: &str| Ok(get(name));
    parse_parv(&parv, &get(&parv), &mut resolve)
}

fn error(drive: &str, file: &str, patch: impl Fn(String) -> String) -> SpecError {
    match load_patched(drive, file, patch) {
        Ok(_) => panic!("{drive}: the patched {file} loaded"),
        Err(e) => e,
    }
}

#[test]
fn run_files_bring_the_bus_and_every_layout_feature() {
    let hp = load_patched("hp_c2247a", "", |t| t).unwrap();
    // The disk declares no transfer time of its own; its bus does.
    assert_eq!(hp.bus_read_ms_per_sector, 0.17010);
    assert_eq!(hp.bus_write_ms_per_sector, 0.18686);
    assert_eq!(hp.geometry.sparing, Sparing::TracksPerZone);
    let SeekCurve::Hpl(h) = &hp.mechanics.seek else {
        panic!("not an HPL curve: {:?}", hp.mechanics.seek);
    };
    assert_eq!(h.short_below_cyls, 300);
    assert_eq!(h.single_cylinder_ms, None);
    assert_eq!(h.first_ten_ms.map(|t| t[0]), Some(2.89));
    assert_eq!(hp.cache.read_high_water, 0.75);
    assert_eq!(hp.overheads.reselect_ms, 0.16249);
    assert_eq!(hp.overheads.min_write_position_ms, 0.6);
    assert!(hp.cache.partial_hits);
    assert!(hp.cache.segments_wrap);
    let no_partial = load_patched("hp_c2247a", "hp_c2247a.diskspecs", |t| {
        t.replace(
            "Immed transfer partial hit = 1",
            "Immed transfer partial hit = 0",
        )
    })
    .unwrap();
    assert!(!no_partial.cache.partial_hits);

    let atlas = load_patched("atlas10k", "", |t| t).unwrap();
    assert_eq!(atlas.geometry.track_order, TrackOrder::SerpentinePerZone);
    let barracuda = load_patched("barracuda", "", |t| t).unwrap();
    assert_eq!(
        barracuda.geometry.sparing,
        Sparing::SectorsPerRange { cylinders: 6 }
    );
    // Level 1 reports every buffered write, as DiskSim's code does.
    assert_eq!(barracuda.cache.fast_write, FastWrite::Always);
    assert_eq!(barracuda.cache.request_data, RequestData::Replaceable);
    let st = load_patched("st41601n", "", |t| t).unwrap();
    assert_eq!(
        st.geometry.sparing,
        Sparing::SectorsPerCylinder {
            at_front: false,
            slip_to_end: false
        }
    );
    assert_eq!(st.cache.request_data, RequestData::Dropped);
    let dec = load_patched("dec_rz26", "", |t| t).unwrap();
    // A negative write settling delay is the drive's own figure.
    assert_eq!(dec.mechanics.write_settle_ms, -0.483);
}

#[test]
fn unknown_sparing_scheme_and_track_order() {
    let e = error("hp_c2247a", "hp_c2247a_validate.model", |t| {
        t.replace("Sparing scheme used = 1", "Sparing scheme used = 11")
    });
    assert_eq!(
        (e.file.as_str(), e.line),
        ("hp_c2247a_validate.model", 7),
        "{e}"
    );
    assert!(e.message.contains("sparing scheme 11"), "{e}");
    let e = error("atlas10k", "atlas10k.model", |t| {
        t.replace(
            "LBN-to-PBN mapping scheme = 1",
            "LBN-to-PBN mapping scheme = 3",
        )
    });
    assert!(e.message.contains("mapping scheme 3"), "{e}");
    assert_eq!(e.file, "atlas10k.model");
}

#[test]
fn spares_that_do_not_fit_name_the_zone() {
    // Scheme 7 keeps its spares beyond the last zone.
    let e = error("atlas_III", "atlas_III.model", |t| {
        t.replacen("Number of spares = 0", "Number of spares = 5", 1)
    });
    assert_eq!((e.file.as_str(), e.line), ("atlas_III.model", 10), "{e}");
    assert!(e.message.contains("zone 0"), "{e}");
    assert!(e.message.contains("Number of spares"), "{e}");
    // Seven slips in one cylinder of a drive with 6 spares per cylinder.
    let e = error("st41601n", "st41601n_validate.model", |t| {
        t.replacen(
            "slips = [",
            "slips = [ 100, 101, 102, 103, 104, 105, 106,",
            1,
        )
    });
    assert!(e.message.contains("slips"), "{e}");
    assert!(e.message.contains("zone 0"), "{e}");
}

#[test]
fn bad_seek_equations() {
    let model = "hp_c2247a_validate.model";
    let e = error("hp_c2247a", model, |t| {
        t.replace("         -1.000000\n", "")
    });
    assert!(e.message.contains("needs 6 values, not 5"), "{e}");
    assert_eq!(e.file, model);
    let e = error("hp_c2247a", model, |t| {
        t.replacen("         3.810000,\n", "         -3.810000,\n", 1)
    });
    assert!(e.message.contains("'HPL seek equation values' V2"), "{e}");
    let e = error("hp_c2247a", model, |t| {
        t.replace("         4.990000\n", "         -4.990000\n")
    });
    assert!(e.message.contains("First ten seek times"), "{e}");
    let e = error("hp_c2247a", model, |t| {
        t.replace("Seek type = hplplus10", "Seek type = linear")
    });
    assert!(e.message.contains("seek type 'linear'"), "{e}");
    let e = error("hp_c2247a", model, |t| {
        t.replace("Seek type = hplplus10", "Seek type = extracted")
    });
    assert!(e.message.contains("Full seek curve"), "{e}");
}

#[test]
fn bad_cache_settings() {
    let specs = "hp_c2247a.diskspecs";
    let e = error("hp_c2247a", specs, |t| {
        t.replace(
            "Read-ahead over requested = 1",
            "Read-ahead over requested = 2",
        )
    });
    assert!(e.message.contains("Read-ahead over requested"), "{e}");
    assert_eq!(e.file, specs);
    let e = error("hp_c2247a", specs, |t| {
        t.replace(
            "High (read) water mark = 0.750000",
            "High (read) water mark = 1.5",
        )
    });
    assert!(e.message.contains("High (read) water mark"), "{e}");
    let e = error("hp_c2247a", specs, |t| {
        t.replace("Minimum seek delay = 0.600000", "Minimum seek delay = -1")
    });
    assert!(e.message.contains("Minimum seek delay"), "{e}");
}

#[test]
fn bad_run_files() {
    let parv = "hp_c2247a.parv";
    let e = error("hp_c2247a", parv, |t| {
        t[..t.find("topology").unwrap()].to_string()
    });
    assert_eq!(
        (e.file.as_str(), e.message.as_str()),
        (parv, "no 'topology' in the run file")
    );
    let e = error("hp_c2247a", parv, |t| {
        t.replace("instantiate [ disk0 ] as  HP_C2247A_validate", "")
    });
    assert!(e.message.contains("'disk0' is never instantiated"), "{e}");
    let e = error("hp_c2247a", parv, |t| {
        t.replace("as  HP_C2247A_validate", "as  HP_C2247A_elsewhere")
    });
    assert!(
        e.message.contains("no 'disksim_disk HP_C2247A_elsewhere'"),
        "{e}"
    );
    let e = error("hp_c2247a", parv, |t| {
        t.replace("Read block transfer time = 0.17010,", "")
    });
    assert!(e.message.contains("Read block transfer time"), "{e}");
    let e = error("hp_c2247a", parv, |t| {
        t.replace(
            "topology disksim_iodriver driver0 [",
            "topology disksim_iodriver driver0 ",
        )
    });
    assert_eq!(e.file, parv);
    // A run file that sources itself.
    let e = error("hp_c2247a", parv, |t| format!("source {parv}\n{t}"));
    assert!(e.message.contains("nests too deep"), "{e}");
}

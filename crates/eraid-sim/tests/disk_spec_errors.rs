//! Bad DiskSim files give errors naming the file and the line; good ones load.

use eraid_sim::disk::presets::simple_ssd;
use eraid_sim::disk::{Device, DiskRequest, SsdModel};
use eraid_sim::diskspec::parse_diskspecs;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/disk-models/cheetah9LP/"
);

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}{name}")).unwrap()
}

/// Loads the Cheetah 9LP with one file's text replaced by `patch(text)`.
fn load_patched(
    file: &str,
    patch: impl Fn(String) -> String,
) -> Result<(), eraid_sim::diskspec::SpecError> {
    let get = |name: &str| {
        if name == file {
            patch(read(name))
        } else {
            read(name)
        }
    };
    let mut resolve = |name: &str| Ok(get(name));
    parse_diskspecs(
        "cheetah9LP.diskspecs",
        &get("cheetah9LP.diskspecs"),
        &mut resolve,
    )
    .map(|_| ())
}

#[test]
fn pristine_files_load() {
    load_patched("none", |t| t).unwrap();
}

#[test]
fn bad_number_in_diskspecs() {
    let e = load_patched("cheetah9LP.diskspecs", |t| {
        t.replace(
            "Bulk sector transfer time = 0.105000",
            "Bulk sector transfer time = fast",
        )
    })
    .unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line),
        ("cheetah9LP.diskspecs", 5),
        "{e}"
    );
}

#[test]
fn bad_zone_in_model() {
    let e = load_patched("cheetah9LP.model", |t| {
        t.replacen("Blocks per track = 245", "Blocks per track = -3", 1)
    })
    .unwrap_err();
    assert_eq!(e.file, "cheetah9LP.model", "{e}");
    assert_eq!(e.line, 60, "{e}");
}

#[test]
fn bad_seek_line() {
    let e = load_patched("cheetah9LP.seek", |t| {
        t.replacen("5,\t1.26800", "5;\t1.26800", 1)
    })
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("cheetah9LP.seek", 6), "{e}");
}

#[test]
fn unterminated_block() {
    let e = load_patched("cheetah9LP.diskspecs", |t| {
        t.replace("} # end of SEAGATE_ST39102LW_validate spec", "")
    })
    .unwrap_err();
    assert_eq!(e.file, "cheetah9LP.diskspecs", "{e}");
    assert!(e.message.contains("not closed"), "{e}");
}

#[test]
fn missing_referenced_file() {
    let text = read("cheetah9LP.diskspecs");
    let mut resolve = |_: &str| Err("no such file".to_string());
    let e = parse_diskspecs("x.diskspecs", &text, &mut resolve).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("x.diskspecs", 2), "{e}");
}

#[test]
fn ssd_serves_in_parallel_on_its_channels() {
    let spec = simple_ssd(1 << 30);
    let mut ssd = Device::Ssd(SsdModel::new(spec));
    for id in 0..16 {
        ssd.submit(
            0,
            DiskRequest {
                id,
                lbn: id * 8,
                sectors: 8,
                is_read: true,
            },
        )
        .unwrap();
    }
    let mut done = Vec::new();
    while let Some(t) = ssd.next_event_ns() {
        done.extend(ssd.advance(t));
    }
    assert_eq!(done.len(), 16);
    // 8 channels: 16 reads take two rounds of (60 us + 4096 B at 60 MB/s).
    let round_ns = 60_000 + (4096.0_f64 / 60.0 * 1e3).ceil() as u64;
    assert_eq!(done.iter().map(|c| c.finish_ns).max(), Some(2 * round_ns));
}

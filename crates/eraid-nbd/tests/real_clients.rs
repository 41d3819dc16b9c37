//! Real NBD clients (libnbd's nbdinfo/nbdcopy, qemu-img) against a served
//! MemExport over a Unix socket.

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{have_tool, random_bytes, run, serve_mem};
use eraid_nbd::MemExport;

const SIZE_BYTES: usize = 8 * 1024 * 1024;

/// Pulls `"key": number` out of nbdinfo's JSON without a JSON dependency.
fn json_number(json: &str, key: &str) -> Option<u64> {
    let after = &json[json.find(&format!("\"{key}\""))? + key.len() + 2..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[test]
fn nbdinfo_reports_size_and_block_sizes() {
    if !have_tool("nbdinfo") {
        return;
    }
    // A 3 x 64 KiB stripe: the advertised preferred size is 64 KiB.
    let export =
        Arc::new(MemExport::new("disk0", SIZE_BYTES).with_preferred_block_bytes(3 * 65536));
    let served = serve_mem(&export);
    let json = run(Command::new("nbdinfo").arg("--json").arg(&served.uri));
    assert_eq!(
        json_number(&json, "export-size"),
        Some(SIZE_BYTES as u64),
        "{json}"
    );
    assert_eq!(
        json_number(&json, "block_size_minimum"),
        Some(512),
        "{json}"
    );
    assert_eq!(
        json_number(&json, "block_size_preferred"),
        Some(65536),
        "{json}"
    );
    assert_eq!(
        json_number(&json, "block_size_maximum"),
        Some(32 * 1024 * 1024),
        "{json}"
    );
    assert!(json.contains("\"can_flush\": true"), "{json}");
    assert!(json.contains("\"can_multi_conn\": true"), "{json}");
    assert!(
        json.contains("in-memory export disk0"),
        "description missing: {json}"
    );
}

#[test]
fn nbdinfo_lists_the_export() {
    if !have_tool("nbdinfo") {
        return;
    }
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&export);
    let listing = run(Command::new("nbdinfo")
        .arg("--list")
        .arg("--json")
        .arg(&served.uri));
    assert!(listing.contains("\"export-name\": \"disk0\""), "{listing}");
}

#[test]
fn nbdcopy_round_trip() {
    if !have_tool("nbdcopy") {
        return;
    }
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&export);
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.img");
    let copy = dir.path().join("copy.img");
    let data = random_bytes(SIZE_BYTES, 1);
    std::fs::write(&source, &data).unwrap();
    std::fs::write(&copy, []).unwrap();

    // Several connections and requests in flight: nbdcopy's defaults.
    run(Command::new("nbdcopy").arg(&source).arg(&served.uri));
    assert!(
        export.contents() == data,
        "export differs from the source after nbdcopy in"
    );
    run(Command::new("nbdcopy").arg(&served.uri).arg(&copy));
    assert!(
        std::fs::read(&copy).unwrap() == data,
        "nbdcopy out differs from the source"
    );
}

#[test]
fn qemu_img_info_convert_and_compare() {
    if !have_tool("qemu-img") {
        return;
    }
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&export);
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.img");
    let copy = dir.path().join("copy.img");
    let mut data = random_bytes(SIZE_BYTES, 2);
    // A zero run lets qemu use WRITE_ZEROES / TRIM on the way in.
    data[SIZE_BYTES / 2..SIZE_BYTES / 2 + 1024 * 1024].fill(0);
    std::fs::write(&source, &data).unwrap();

    let info = run(Command::new("qemu-img")
        .args(["info", "--output=json", "-f", "raw"])
        .arg(&served.uri));
    assert_eq!(
        json_number(&info, "virtual-size"),
        Some(SIZE_BYTES as u64),
        "{info}"
    );

    run(Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "-O", "raw"])
        .arg(&source)
        .arg(&served.uri));
    assert!(
        export.contents() == data,
        "export differs from the source after qemu-img convert"
    );
    run(Command::new("qemu-img")
        .args(["compare", "-f", "raw", "-F", "raw"])
        .arg(&source)
        .arg(&served.uri));

    run(Command::new("qemu-img")
        .args(["convert", "-f", "raw", "-O", "raw"])
        .arg(&served.uri)
        .arg(&copy));
    assert!(
        std::fs::read(&copy).unwrap() == data,
        "qemu-img convert out differs"
    );

    // compare must notice a difference, or the check above proves nothing.
    export
        .execute(eraid_nbd::ExportCommand::Write {
            offset_bytes: 4096,
            data: vec![0xAA; 512].into(),
            fua: false,
        })
        .unwrap();
    let status = Command::new("qemu-img")
        .args(["compare", "-q", "-f", "raw", "-F", "raw"])
        .arg(&source)
        .arg(&served.uri)
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "qemu-img compare must report the difference"
    );
}

#[test]
fn qemu_io_unaligned_discard_succeeds_and_rounds_inward() {
    if !have_tool("qemu-io") {
        return;
    }
    let data = random_bytes(SIZE_BYTES, 6);
    let export = Arc::new(MemExport::with_contents("disk0", data.clone()));
    let served = serve_mem(&export);
    // qemu passes a 511-byte discard through as it is (issue 20).
    let out = run(Command::new("qemu-io")
        .args(["-f", "raw", &served.uri])
        .args(["-c", "discard 0 511", "-c", "discard 100 5000"]));
    assert!(!out.contains("failed"), "qemu-io reported a failure: {out}");
    let contents = export.contents();
    // Only whole blocks inside [100, 5100) were trimmed (MemExport zeroes them).
    assert_eq!(
        contents[..512],
        data[..512],
        "bytes outside whole blocks kept"
    );
    assert!(
        contents[512..4608].iter().all(|&b| b == 0),
        "inner blocks trimmed"
    );
    assert_eq!(
        contents[4608..],
        data[4608..],
        "the partial tail block kept"
    );
}

#[test]
fn nbdinfo_map_reports_the_whole_export_as_data() {
    if !have_tool("nbdinfo") {
        return;
    }
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&export);
    let map = run(Command::new("nbdinfo")
        .args(["--map=base:allocation"])
        .arg(&served.uri));
    // One line: offset, length, type 0 = data (the export tracks no holes).
    let fields: Vec<&str> = map.split_whitespace().collect();
    assert_eq!(fields[..3], ["0", &SIZE_BYTES.to_string(), "0"], "{map}");
    assert_eq!(map.lines().count(), 1, "{map}");
}

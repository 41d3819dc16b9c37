//! Superblock and bitmap decoding, and assembly from damaged members.
//! First byte: 0 = raw metadata-area bytes; otherwise the rest is split at
//! "\n--\n" into superblock JSON bodies, each framed (valid checksum) into
//! its own member, which are then assembled (past the checksum, into the
//! field checks).
#![no_main]
use eraid_core::geometry::METADATA_BYTES;
use eraid_core::metadata::assemble::{assemble, MemberProbe};
use eraid_core::metadata::bitmap::{IntentBitmap, BITMAP_KIND};
use eraid_core::metadata::record;
use eraid_core::metadata::superblock::{Superblock, SUPERBLOCK_KIND};
use eraid_core::metadata::{BITMAP_SLOTS_BYTES, SUPERBLOCK_SLOTS_BYTES};
use libfuzzer_sys::fuzz_target;

fn split_bodies(text: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.windows(4).position(|w| w == b"\n--\n") {
        parts.push(&rest[..at]);
        rest = &rest[at + 4..];
    }
    parts.push(rest);
    parts
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        let _ = Superblock::decode_newest(rest);
        let _ = IntentBitmap::decode_newest(rest, rest.len() as u64 % 5000);
        let _ = record::decode(&SUPERBLOCK_KIND, rest);
        return;
    }
    let probes: Vec<MemberProbe> = split_bodies(rest)
        .into_iter()
        .take(6)
        .enumerate()
        .map(|(i, body)| {
            let mut area = vec![0u8; METADATA_BYTES as usize];
            let framed = record::encode(&SUPERBLOCK_KIND, 1 + (mode as u64 >> 1), body);
            let at = SUPERBLOCK_SLOTS_BYTES[(mode & 1) as usize] as usize;
            let end = (at + framed.len()).min(area.len());
            area[at..end].copy_from_slice(&framed[..end - at]);
            // A bitmap record whose body is the same bytes: its checks too.
            let bitmap = record::encode(&BITMAP_KIND, 1, body);
            let at = BITMAP_SLOTS_BYTES[0] as usize;
            let end = (at + bitmap.len()).min(area.len());
            area[at..end].copy_from_slice(&bitmap[..end - at]);
            MemberProbe {
                path: format!("fuzz{i}"),
                metadata: Ok(area),
                size_bytes: METADATA_BYTES + (64 << 20),
            }
        })
        .collect();
    let _ = assemble(&probes);
});

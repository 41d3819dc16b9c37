//! What a superblock may hold and what assembly accepts from one: the
//! largest array with the longest paths never outgrows its slot, and
//! members whose metadata is inconsistent (a crash between a growth's two
//! superblock writes, or crafted fields) are refused naming the member,
//! never a panic later in the engine.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, MEMBER_COUNT_MAX, METADATA_BYTES};
use eraid_core::growth::config::ReshapeStrategy;
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::metadata::assemble::{assemble, AssemblyError, MemberProbe};
use eraid_core::metadata::bitmap::{IntentBitmap, BITMAP_KIND};
use eraid_core::metadata::record;
use eraid_core::metadata::superblock::{Superblock, SUPERBLOCK_KIND};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use serde_json::{json, Value};

const MEMBER_CHUNKS: u64 = 12;

fn long_path(index: usize) -> String {
    format!("/{}/member-{index}", "a-long-directory-name/".repeat(180))
}

/// A RAID-0 grown from 3 members to the most an array may have, every new
/// member named by a 4000-byte path: each superblock write fits, the data
/// survives, and the grown array reassembles.
#[test]
fn growing_to_the_most_members_with_long_paths_fits_the_superblock() {
    let g = geometry(Level::Raid0, ParityLayout::None, 3, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, 5);
    let mut array = open(&mut h);
    let data: Vec<u8> = (0..array.capacity_bytes())
        .map(|i| (i % 253) as u8)
        .collect();
    let write = UserOp::Write {
        offset_bytes: 0,
        data: data.clone().into(),
        fua: true,
    };
    call(&mut h, &mut array, 1, write).unwrap();
    let mut added = h.add_blank_members(MEMBER_COUNT_MAX - 3, member_bytes);
    for (i, member) in added.iter_mut().enumerate() {
        member.path_hint = long_path(i + 3);
    }
    let reply = array.handle_admin(
        h.now,
        AdminCommand::StartGrow {
            members: added,
            config: growth_config(ReshapeStrategy::FastScale, 24 * CHUNK),
        },
    );
    assert!(reply.get("error").is_none(), "growth started: {reply}");
    h.run(&mut array);
    assert_eq!(array.status_json()["reshape"]["state"], "done");
    let read = UserOp::Read {
        offset_bytes: 0,
        len_bytes: data.len(),
    };
    assert_eq!(call(&mut h, &mut array, 2, read).unwrap().unwrap(), data);
    close(&mut h, &mut array);
    let assembly = h.assemble().expect("the grown array assembles");
    assert_eq!(assembly.slots.len(), MEMBER_COUNT_MAX);
    let hint = &assembly.superblock.members[MEMBER_COUNT_MAX - 1].path_hint;
    assert!(
        hint.ends_with(&format!("/member-{}", MEMBER_COUNT_MAX - 1)),
        "{hint}"
    );
}

/// A growth's new member gets its superblock before the old members do. A
/// crash in between, then serving the old members alone (their events move
/// past the new member's), leaves a member whose slot the array does not
/// have: assembly names it instead of indexing past the member table.
#[test]
fn a_member_of_a_growth_never_recorded_on_the_others_is_named() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 3, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, 9);
    let mut array = open(&mut h);
    let members = h.add_blank_members(1, member_bytes);
    let before: Vec<Vec<u8>> = h.members[..3]
        .iter()
        .map(|m| m.as_ref().unwrap().durable.clone())
        .collect();
    let reply = array.handle_admin(
        h.now,
        AdminCommand::StartGrow {
            members,
            config: growth_config(ReshapeStrategy::Alv, 24 * CHUNK),
        },
    );
    assert!(reply.get("error").is_none(), "growth started: {reply}");
    // Step until the joining member's superblock is durable, then lose
    // power with the old members as they were before the growth.
    let joined = |h: &MemHarness| {
        let m = h.members[3].as_ref().expect("member 3");
        Superblock::decode_newest(&m.durable[..METADATA_BYTES as usize]).is_ok()
    };
    while !joined(&h) {
        assert!(h.step(&mut array), "the joining write never landed");
    }
    h.crash();
    drop(array);
    for (m, image) in h.members.iter_mut().zip(&before) {
        let m = m.as_mut().unwrap();
        m.current = image.clone();
        m.durable = image.clone();
    }
    let joined_image = h.members[3].as_ref().unwrap().durable.clone();
    h.members[3].as_mut().unwrap().current = joined_image;
    let old_events = Superblock::decode_newest(
        &h.members[0].as_ref().unwrap().current[..METADATA_BYTES as usize],
    )
    .unwrap()
    .events;
    // Right after the crash, all four assemble as the growing array.
    let assembly = h.assemble().expect("assembles as the grown array");
    assert_eq!(assembly.slots.len(), 4, "{:?}", assembly.report);
    // The operator serves the three old members alone.
    let joined_member = h.members[3].take();
    let mut array = open(&mut h);
    close(&mut h, &mut array);
    h.members[3] = joined_member;
    let newest = Superblock::decode_newest(
        &h.members[0].as_ref().unwrap().current[..METADATA_BYTES as usize],
    )
    .unwrap();
    assert!(newest.events > old_events + 1 && newest.geometry.member_count == 3);
    match h.assemble() {
        Err(
            error @ AssemblyError::SlotBeyondArray {
                slot: 3,
                member_count: 3,
                ..
            },
        ) => {
            let message = error.to_string();
            assert!(message.contains("mem3"), "{message}");
        }
        other => panic!("expected the joined member to be named, got {other:?}"),
    }
}

/// The newest superblock of a metadata area as JSON, with its events.
fn superblock_json(area: &[u8]) -> (Value, u64) {
    let sb = Superblock::decode_newest(area).expect("valid before crafting");
    let slot = Superblock::slot_offset_bytes(sb.events) as usize;
    let (sequence, body) = record::decode(&SUPERBLOCK_KIND, &area[slot..]).unwrap();
    (serde_json::from_slice(body).unwrap(), sequence)
}

/// Rewrites the newest superblock of every area after `craft`, as a
/// well-formed record (a valid checksum): only validation can catch it.
fn craft_all(areas: &mut [Vec<u8>], craft: &dyn Fn(&mut Value)) {
    for area in areas.iter_mut() {
        let (mut value, events) = superblock_json(area);
        craft(&mut value);
        let body = serde_json::to_vec(&value).unwrap();
        let bytes = record::encode(&SUPERBLOCK_KIND, events, &body);
        let at = Superblock::slot_offset_bytes(events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
    }
}

fn probes(areas: &[Vec<u8>], size_bytes: u64) -> Vec<MemberProbe> {
    areas
        .iter()
        .enumerate()
        .map(|(i, area)| MemberProbe {
            path: format!("mem{i}"),
            metadata: Ok(area.clone()),
            size_bytes,
        })
        .collect()
}

/// Metadata areas of a RAID-5 growing from 3 to 4 members, paused by the
/// operator and shut down: a valid superblock with a growth record.
fn paused_growth_areas() -> (Vec<Vec<u8>>, u64) {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 3, MEMBER_CHUNKS);
    let member_bytes = g.data_offset_bytes + g.member_data_bytes;
    let mut h = MemHarness::create(g, 21);
    let mut array = open(&mut h);
    let members = h.add_blank_members(1, member_bytes);
    let reply = array.handle_admin(
        h.now,
        AdminCommand::StartGrow {
            members,
            config: growth_config(ReshapeStrategy::Alv, 24 * CHUNK),
        },
    );
    assert!(reply.get("error").is_none(), "growth started: {reply}");
    let reply = array.handle_admin(h.now, AdminCommand::PauseGrow);
    assert!(reply.get("error").is_none(), "paused: {reply}");
    h.run(&mut array);
    close(&mut h, &mut array);
    let areas = h
        .members
        .iter()
        .map(|m| m.as_ref().unwrap().current[..METADATA_BYTES as usize].to_vec())
        .collect();
    (areas, member_bytes)
}

/// Fields a well-formed record can carry that the engine would index,
/// allocate or count with: each is refused at assembly, naming the member
/// and the field, and a valid array assembles and opens.
#[test]
fn crafted_superblock_fields_are_refused_naming_the_member() {
    let (areas, member_bytes) = paused_growth_areas();
    let assembly = assemble(&probes(&areas, member_bytes)).expect("valid areas assemble");
    let mut array = Array::open(assembly, ArrayOptions::default(), Default::default());
    assert!(array.status_json()["reshape"]["state"] == "paused");
    array.handle_close(Default::default());
    type Craft = (&'static str, &'static str, Box<dyn Fn(&mut Value)>);
    let cases: Vec<Craft> = vec![
        (
            "backup longer than its window",
            "backup",
            Box::new(|v| {
                let checkpoint = v["reshape"]["checkpoint_chunk"].clone();
                let chunk = v["geometry"]["chunk_bytes"].as_u64().unwrap();
                let member_chunks = v["geometry"]["member_data_bytes"].as_u64().unwrap() / chunk;
                v["reshape"]["backup"] = json!({
                    "start_chunk": checkpoint, "end_chunk": 3, "member": 3,
                    "offset_bytes": METADATA_BYTES + (member_chunks - 3) * chunk,
                    "len_bytes": 6 * chunk, "crc32c": 0,
                });
            }),
        ),
        (
            "backup ending before it starts",
            "backup",
            Box::new(|v| {
                v["reshape"]["backup"] = json!({
                    "start_chunk": 0, "end_chunk": u64::MAX, "member": 3,
                    "offset_bytes": 0, "len_bytes": 0, "crc32c": 0,
                });
            }),
        ),
        (
            "old geometry larger than the new",
            "old geometry",
            Box::new(|v| v["reshape"]["old_geometry"]["member_count"] = json!(10)),
        ),
        (
            "checkpoint past the end",
            "checkpoint",
            Box::new(|v| {
                let total = v["reshape"]["total_chunks"].as_u64().unwrap();
                v["reshape"]["checkpoint_chunk"] = json!(total + 3);
            }),
        ),
        (
            "total chunks not the geometry's",
            "total chunks",
            Box::new(|v| v["reshape"]["total_chunks"] = json!(u64::MAX)),
        ),
        (
            "RAID-0 strategy on RAID-5",
            "does not grow RAID-5",
            Box::new(|v| v["reshape"]["config"]["strategy"] = json!("fastscale")),
        ),
        (
            "event counter at its limit",
            "event count",
            Box::new(|v| v["events"] = json!(u64::MAX)),
        ),
        (
            "two members with one uuid",
            "same uuid",
            Box::new(|v| v["members"][1]["uuid"] = v["members"][0]["uuid"].clone()),
        ),
        (
            "placement on RAID-5",
            "placement",
            Box::new(|v| {
                v["placement"] = json!({"strategy": "fast-scale",
                    "history": {"initial_disks": 9, "additions": [], "chunks_per_disk": 1}})
            }),
        ),
        (
            "a uuid with a quote",
            "uuid",
            Box::new(|v| v["array_uuid"] = json!("a\"b")),
        ),
    ];
    for (what, expected, craft) in cases {
        let mut crafted = areas.clone();
        craft_all(&mut crafted, craft.as_ref());
        // The events field is the record's sequence too: keep them equal.
        if what == "event counter at its limit" {
            for area in &mut crafted {
                let (value, events) = superblock_json_unchecked(area);
                let body = serde_json::to_vec(&value).unwrap();
                let bytes = record::encode(&SUPERBLOCK_KIND, u64::MAX, &body);
                let at = Superblock::slot_offset_bytes(events) as usize;
                area[at..at + bytes.len()].copy_from_slice(&bytes);
            }
        }
        match assemble(&probes(&crafted, member_bytes)) {
            Err(error @ AssemblyError::NotAMember { .. }) => {
                let message = error.to_string();
                assert!(
                    message.contains("mem0") && message.contains(expected),
                    "{what}: {message}"
                );
            }
            other => panic!(
                "{what}: expected a refusal, got {:?}",
                other.map(|a| a.report)
            ),
        }
    }
}

/// The newest superblock of an area as JSON, without validating it.
fn superblock_json_unchecked(area: &[u8]) -> (Value, u64) {
    let slots = [&area[..64 << 10], &area[64 << 10..128 << 10]];
    let (index, sequence, body) = record::newest(&SUPERBLOCK_KIND, slots).unwrap();
    let _ = index;
    (serde_json::from_slice(body).unwrap(), sequence)
}

/// A member larger than any bitmap can describe at the recorded
/// granularity is refused (the bitmap would not fit its slot), and a
/// bitmap with bits past its last region is not trusted.
#[test]
fn bitmap_fields_are_bounded() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 3, MEMBER_CHUNKS);
    let h = MemHarness::create(g, 4);
    let areas: Vec<Vec<u8>> = h
        .members
        .iter()
        .map(|m| m.as_ref().unwrap().current[..METADATA_BYTES as usize].to_vec())
        .collect();
    // Huge members (the probes say so), one stripe per bitmap region.
    let mut huge = areas.clone();
    let data_bytes = 1u64 << 40;
    craft_all(&mut huge, &|v| {
        v["geometry"]["member_data_bytes"] = json!(data_bytes);
        v["bitmap_stripes_per_region"] = json!(1);
    });
    match assemble(&probes(&huge, METADATA_BYTES + data_bytes)) {
        Err(error @ AssemblyError::NotAMember { .. }) => {
            assert!(error.to_string().contains("bitmap"), "{error}")
        }
        other => panic!("expected a refusal, got {:?}", other.map(|a| a.report)),
    }
    // Bits past the last region: the bitmap is unreadable, so (the array
    // being dirty) every real region is marked, and none beyond.
    let mut padded = areas.clone();
    craft_all(&mut padded, &|v| v["state"] = json!("dirty"));
    let assembly = assemble(&probes(&padded, METADATA_BYTES + g.member_data_bytes)).unwrap();
    let regions = assembly.bitmap.region_count();
    assert!(
        !regions.is_multiple_of(64),
        "the test needs a partial last word"
    );
    for area in &mut padded {
        let mut body = regions.to_le_bytes().to_vec();
        body.extend_from_slice(&(1u64 << 63).to_le_bytes());
        let bytes = record::encode(&BITMAP_KIND, 7, &body);
        let at = IntentBitmap::slot_offset_bytes(7) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
    }
    let assembly = assemble(&probes(&padded, METADATA_BYTES + g.member_data_bytes)).unwrap();
    let dirty: Vec<u64> = assembly.bitmap.dirty_regions().collect();
    assert_eq!(dirty, (0..regions).collect::<Vec<_>>());
    assert!(
        assembly.report.iter().any(|l| l.contains("past region")),
        "{:?}",
        assembly.report
    );
}

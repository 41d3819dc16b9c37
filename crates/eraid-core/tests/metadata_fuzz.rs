//! A fuzz-style property test of superblock decoding and assembly: member
//! sets taken from real arrays (clean, degraded, dirty after a crash, in
//! the middle of a growth), then mutated: JSON fields replaced or removed
//! in well-formed records, bytes flipped, bitmaps crafted, members dropped,
//! duplicated, swapped, shrunk, truncated or taken from another array.
//!
//! Whatever the mutation, decoding and assembly never panic and never make
//! an allocation larger than `ASSEMBLY_ALLOCATION_BYTES_MAX`; an error
//! names the member at fault; an assembled array re-encodes within its
//! slot, opens, serves a read of its whole capacity and closes without a
//! panic. When the mutations cannot have changed what the array is (members
//! dropped within its redundancy, probes reordered, bitmaps damaged, a
//! member unreadable...), it assembles and reads back exactly the data
//! written. `ERAID_METADATA_FUZZ_CASES` sets the number of cases (default
//! 256, a few seconds).

mod common;
use common::*;
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::growth::config::ReshapeStrategy;
use eraid_core::io::{AdminCommand, Machine, UserError, UserOp};
use eraid_core::metadata::assemble::{
    assemble, assemble_with, AssembleOptions, Assembly, AssemblyError, MemberProbe, SlotState,
};
use eraid_core::metadata::bitmap::{IntentBitmap, BITMAP_KIND};
use eraid_core::metadata::record;
use eraid_core::metadata::superblock::{Superblock, SUPERBLOCK_KIND};
use eraid_core::metadata::{BITMAP_SLOTS_BYTES, SUPERBLOCK_SLOTS_BYTES, SUPERBLOCK_SLOT_BYTES};
use eraid_core::testing::{MemHarness, MemMember};
use eraid_core::Array;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The largest single allocation decoding and assembly may make: a bitmap
/// (384 KiB) and a few superblock bodies (64 KiB) fit well below it; a
/// crafted length or count used as a size would not.
const ASSEMBLY_ALLOCATION_BYTES_MAX: usize = 2 << 20;
/// Opening and serving the (small) test arrays: their whole capacity is
/// under 1 MiB, so buffers sized from a lying field would show.
const SERVING_ALLOCATION_BYTES_MAX: usize = 8 << 20;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// Records the largest allocation a thread makes while tracking.
struct LargestAllocation;

fn note_allocation(bytes: usize) {
    if TRACKING.try_with(|t| t.get()).unwrap_or(false) {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(bytes)));
    }
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Runs `f` and returns its result with the largest allocation it made.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|t| t.set(true));
    let result = f();
    TRACKING.with(|t| t.set(false));
    (result, LARGEST.with(|l| l.get()))
}

#[derive(Clone, Copy, Debug)]
enum BaseKind {
    Clean,
    /// One member failed while writes went on: it is stale.
    Degraded,
    /// Powered off after a flush: dirty, bitmap regions set.
    Dirty,
    /// A growth by one member, `steps` I/Os in, then paused and shut down
    /// (`crash: false`) or powered off.
    Growing {
        steps: usize,
        crash: bool,
    },
    /// Power lost right after a growth's joining member got its superblock,
    /// then the old members served alone: the joined member claims a slot
    /// the array no longer has.
    JoinedElsewhere,
}

#[derive(Clone, Debug)]
struct BaseSpec {
    level: Level,
    layout: ParityLayout,
    members: usize,
    member_chunks: u64,
    kind: BaseKind,
    seed: u64,
}

fn base_spec() -> impl Strategy<Value = BaseSpec> {
    let shape = prop_oneof![
        (2usize..5).prop_map(|n| (Level::Raid0, ParityLayout::None, n)),
        (3usize..6, 0usize..4).prop_map(|(n, l)| (Level::Raid5, parity_layout(l), n)),
        (4usize..6, 0usize..4).prop_map(|(n, l)| (Level::Raid6, parity_layout(l), n)),
        (2usize..5).prop_map(|n| (Level::Raid10, ParityLayout::Near2, n)),
        // CRS: m of 1..=3 on 3 to 6 members, at Jerasure's default w.
        (3usize..7, 1usize..4).prop_map(|(n, m)| {
            let level = Level::Crs {
                parity_members: m.min(n - 1),
                w: eraid_core::geometry::crs_default_w(n).expect("small arrays fit"),
            };
            (level, ParityLayout::LeftSymmetric, n)
        }),
    ];
    let kind = prop_oneof![
        1 => Just(BaseKind::Clean),
        1 => Just(BaseKind::Degraded),
        1 => Just(BaseKind::Dirty),
        4 => (0usize..400, any::<bool>()).prop_map(|(steps, crash)| BaseKind::Growing { steps, crash }),
        1 => Just(BaseKind::JoinedElsewhere),
    ];
    (shape, 8u64..17, kind, any::<u64>()).prop_map(
        |((level, layout, members), member_chunks, kind, seed)| BaseSpec {
            level,
            layout,
            members,
            member_chunks: member_chunks & !1,
            kind,
            seed,
        },
    )
}

fn parity_layout(index: usize) -> ParityLayout {
    [
        ParityLayout::LeftAsymmetric,
        ParityLayout::LeftSymmetric,
        ParityLayout::RightAsymmetric,
        ParityLayout::RightSymmetric,
    ][index]
}

/// A real array's members (whole images) and the data it holds.
struct Base {
    geometry: Geometry,
    images: Vec<Vec<u8>>,
    model: Vec<u8>,
    /// Members the base itself leaves stale or missing.
    absent: usize,
    /// A member that must be left out for the array to assemble.
    extra: Option<usize>,
}

/// Every member's durable image.
fn durable_images(h: &MemHarness) -> Vec<Vec<u8>> {
    h.members
        .iter()
        .map(|m| m.as_ref().unwrap().durable.clone())
        .collect()
}

/// Runs until the joining member's superblock is durable, then loses
/// power with the old members as they were before the growth (`before`):
/// the instant between the growth's two superblock writes.
fn crash_once_joined(h: &mut MemHarness, array: &mut Array, before: &[Vec<u8>]) {
    let joining = before.len();
    let joined = |h: &MemHarness| {
        let area = &h.members[joining].as_ref().unwrap().durable;
        Superblock::decode_newest(&area[..METADATA_BYTES as usize]).is_ok()
    };
    while !joined(h) {
        assert!(h.step(array), "the joining write never landed");
    }
    h.crash();
    for (member, image) in h.members.iter_mut().enumerate() {
        let m = member_mut(member, image);
        let image = before
            .get(member)
            .cloned()
            .unwrap_or_else(|| m.durable.clone());
        m.current = image.clone();
        m.durable = image;
    }
}

fn member_mut(_: usize, member: &mut Option<MemMember>) -> &mut MemMember {
    member.as_mut().expect("member")
}

fn write_all(h: &mut MemHarness, array: &mut Array, model: &[u8], id: u64) {
    let write = UserOp::Write {
        offset_bytes: 0,
        data: model.to_vec().into(),
        fua: false,
    };
    call(h, array, id, write).expect("write");
    call(h, array, id + 1, UserOp::Flush).expect("flush");
}

fn build_base(spec: &BaseSpec) -> Base {
    let g = geometry(spec.level, spec.layout, spec.members, spec.member_chunks);
    let mut h = MemHarness::create(g, spec.seed);
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut array = open(&mut h);
    let mut model: Vec<u8> = (0..array.capacity_bytes()).map(|_| rng.gen()).collect();
    write_all(&mut h, &mut array, &model, 1);
    let mut absent = 0;
    let mut extra = None;
    let growable = matches!(spec.level, Level::Raid0 | Level::Raid5);
    match spec.kind {
        BaseKind::Degraded if spec.level != Level::Raid0 => {
            let victim = rng.gen_range(0..spec.members);
            h.members[victim].as_mut().unwrap().failed = true;
            model.iter_mut().for_each(|b| *b = b.wrapping_add(1));
            write_all(&mut h, &mut array, &model, 3);
            close(&mut h, &mut array);
            h.members[victim].as_mut().unwrap().failed = false;
            absent = 1;
        }
        BaseKind::Dirty => h.crash(),
        BaseKind::Growing { steps, crash } if growable => {
            let member_bytes = g.data_offset_bytes + g.member_data_bytes;
            let members = h.add_blank_members(1, member_bytes);
            let strategy = match spec.level {
                Level::Raid0 => ReshapeStrategy::FastScale,
                _ => ReshapeStrategy::Alv,
            };
            let reply = array.handle_admin(
                h.now,
                AdminCommand::StartGrow {
                    members,
                    config: growth_config(strategy, 24 * CHUNK),
                },
            );
            assert!(reply.get("error").is_none(), "growth started: {reply}");
            for _ in 0..steps {
                if !h.step(&mut array) {
                    break;
                }
            }
            if crash {
                h.crash();
            } else {
                array.handle_admin(h.now, AdminCommand::PauseGrow);
                h.run(&mut array);
                close(&mut h, &mut array);
            }
        }
        BaseKind::JoinedElsewhere if growable => {
            let member_bytes = g.data_offset_bytes + g.member_data_bytes;
            let members = h.add_blank_members(1, member_bytes);
            let config = match spec.level {
                Level::Raid0 => growth_config(ReshapeStrategy::FastScale, 24 * CHUNK),
                _ => growth_config(ReshapeStrategy::Alv, 24 * CHUNK),
            };
            let before = durable_images(&h);
            let reply = array.handle_admin(h.now, AdminCommand::StartGrow { members, config });
            assert!(reply.get("error").is_none(), "growth started: {reply}");
            crash_once_joined(&mut h, &mut array, &before[..spec.members]);
            let joined_member = h.members[spec.members].take();
            let mut old = open(&mut h);
            close(&mut h, &mut old);
            h.members[spec.members] = joined_member;
            extra = Some(spec.members);
        }
        _ => close(&mut h, &mut array),
    }
    // A member a crash left before its growth's joining write is not a
    // member yet: the operator would not give it.
    let images = h
        .members
        .iter()
        .map(|m| m.as_ref().expect("member").current.clone())
        .filter(|image| Superblock::decode_newest(&image[..METADATA_BYTES as usize]).is_ok())
        .collect();
    Base {
        geometry: g,
        images,
        model,
        absent,
        extra,
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace a JSON leaf of a member's newest superblock (well-formed);
    /// with `all`, the same leaf of every member's (a consistent lie, as a
    /// buggy writer would leave).
    JsonLeaf {
        member: usize,
        leaf: usize,
        value: usize,
        all: bool,
    },
    /// Remove the field (or array element) holding a JSON leaf.
    JsonRemove {
        member: usize,
        leaf: usize,
        all: bool,
    },
    /// Add or remove an entry of the member table.
    MembersResize {
        member: usize,
        grow: bool,
        all: bool,
    },
    /// Replace one of the fields the engine indexes, allocates or counts
    /// with (`NAMED_FIELDS`).
    JsonNamed {
        member: usize,
        field: usize,
        value: usize,
        all: bool,
    },
    /// Record a growth backup with arbitrary extent and place.
    CraftBackup {
        member: usize,
        numbers: [usize; 5],
        all: bool,
    },
    /// Flip a bit: region 0 and 1 are the superblock slots, 2 and 3 the
    /// bitmap slots, 4 anywhere in the metadata area.
    FlipBit {
        member: usize,
        region: usize,
        offset: usize,
        bit: u8,
    },
    /// A well-formed bitmap record with arbitrary contents.
    CraftBitmap {
        member: usize,
        regions: usize,
        word: u64,
        sequence: usize,
    },
    DropProbe {
        member: usize,
    },
    Unreadable {
        member: usize,
    },
    Truncate {
        member: usize,
        len: usize,
    },
    Shrink {
        member: usize,
        by: u64,
    },
    Duplicate {
        from: usize,
        to: usize,
    },
    Foreign {
        member: usize,
    },
    Swap {
        a: usize,
        b: usize,
    },
}

impl Mutation {
    /// Whether the mutation leaves what the array is intact: the set then
    /// either assembles to the very data written, or is refused.
    fn benign(&self) -> bool {
        match self {
            Mutation::JsonLeaf { .. }
            | Mutation::JsonRemove { .. }
            | Mutation::MembersResize { .. }
            | Mutation::CraftBackup { .. }
            | Mutation::JsonNamed { .. } => false,
            Mutation::FlipBit { region, .. } => *region == 2 || *region == 3,
            // Short of the superblock slots, an older copy may be the newest.
            Mutation::Truncate { len, .. } => *len >= 2 * SUPERBLOCK_SLOT_BYTES,
            // Enough foreign members make another array the majority.
            Mutation::Foreign { .. } => false,
            _ => true,
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let m = 0usize..8;
    prop_oneof![
        4 => (m.clone(), any::<usize>(), any::<usize>(), any::<bool>())
            .prop_map(|(member, leaf, value, all)| Mutation::JsonLeaf { member, leaf, value, all }),
        1 => (m.clone(), any::<usize>(), any::<bool>())
            .prop_map(|(member, leaf, all)| Mutation::JsonRemove { member, leaf, all }),
        1 => (m.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(member, grow, all)| Mutation::MembersResize { member, grow, all }),
        4 => (m.clone(), any::<usize>(), any::<usize>(), any::<bool>())
            .prop_map(|(member, field, value, all)| Mutation::JsonNamed { member, field, value, all }),
        3 => (m.clone(), any::<[usize; 5]>(), any::<bool>())
            .prop_map(|(member, numbers, all)| Mutation::CraftBackup { member, numbers, all }),
        2 => (m.clone(), 0usize..5, any::<usize>(), 0u8..8)
            .prop_map(|(member, region, offset, bit)| Mutation::FlipBit { member, region, offset, bit }),
        1 => (m.clone(), any::<usize>(), any::<u64>(), any::<usize>()).prop_map(
            |(member, regions, word, sequence)| Mutation::CraftBitmap { member, regions, word, sequence }),
        1 => m.clone().prop_map(|member| Mutation::DropProbe { member }),
        1 => m.clone().prop_map(|member| Mutation::Unreadable { member }),
        1 => (m.clone(), 0usize..(METADATA_BYTES as usize)).prop_map(|(member, len)| Mutation::Truncate { member, len }),
        1 => (m.clone(), 1u64..(1 << 20)).prop_map(|(member, by)| Mutation::Shrink { member, by }),
        1 => (m.clone(), m.clone()).prop_map(|(from, to)| Mutation::Duplicate { from, to }),
        1 => m.clone().prop_map(|member| Mutation::Foreign { member }),
        1 => (m.clone(), m).prop_map(|(a, b)| Mutation::Swap { a, b }),
    ]
}

/// Superblock fields the engine indexes, allocates or counts with.
const NAMED_FIELDS: &[&[&str]] = &[
    &["this_member"],
    &["events"],
    &["state"],
    &["geometry", "member_count"],
    &["geometry", "member_data_bytes"],
    &["geometry", "chunk_bytes"],
    &["geometry", "data_offset_bytes"],
    &["geometry", "level"],
    &["bitmap_stripes_per_region"],
    &["members", "0", "uuid"],
    &["members", "1", "state"],
    &["placement"],
    &["reshape"],
    &["reshape", "checkpoint_chunk"],
    &["reshape", "total_chunks"],
    &["reshape", "old_capacity_chunks"],
    &["reshape", "old_geometry", "member_count"],
    &["reshape", "old_geometry", "member_data_bytes"],
    &["reshape", "old_placement"],
    &["reshape", "config", "aggregation_bytes"],
    &["reshape", "config", "md_window_bytes"],
    &["reshape", "config", "strategy"],
    &["reshape", "state"],
    &["reshape", "held"],
    &["reshape", "counters", "metadata_writes"],
];

/// Every path to a leaf of `value` (object keys and array indices).
fn leaves(value: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                path.push(json!(key));
                leaves(child, path, out);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (index, child) in items.iter().enumerate() {
                path.push(json!(index));
                leaves(child, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

/// The value at `path`, if `value` has it.
fn at_path_checked<'a>(value: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, key| match key {
        Value::String(k) => v.get_mut(k.as_str()),
        Value::Number(n) => v.get_mut(n.as_u64()? as usize),
        _ => None,
    })
}

/// The path of leaf number `leaf` (modulo their count) of candidate
/// `member`'s newest superblock.
fn leaf_path(candidates: &[Candidate], member: usize, leaf: usize) -> Option<Vec<Value>> {
    let (value, _) = newest_json(candidates[member].metadata.as_ref().ok()?)?;
    let mut all = Vec::new();
    leaves(&value, &mut Vec::new(), &mut all);
    Some(all[leaf % all.len()].clone())
}

/// Applies `edit` to candidate `member`'s newest superblock, or with `all`
/// to every candidate's.
fn edit_members(candidates: &mut [Candidate], member: usize, all: bool, edit: impl Fn(&mut Value)) {
    for (index, candidate) in candidates.iter_mut().enumerate() {
        if index == member || all {
            if let Ok(area) = &mut candidate.metadata {
                edit_json(area, &edit);
            }
        }
    }
}

/// A value to put in place of `old`: boundary numbers, neighbours of the
/// old value, wrong types, long and hostile strings.
fn replacement(old: &Value, choice: usize) -> Value {
    let n = old.as_u64();
    let strategy = ["fast-scale", "semi-rr", "round-robin"][choice % 3];
    let chunks_per_disk = [4u64, 8, 16, 1 << 40][choice % 4];
    let options = [
        json!(0),
        json!(1),
        json!(2),
        json!(3),
        json!(63),
        json!(64),
        json!(65),
        json!(4096),
        json!(1u64 << 20),
        json!(u32::MAX),
        json!(1u64 << 56),
        json!(1u64 << 62),
        json!(u64::MAX),
        json!(-1),
        json!(0.5),
        json!(""),
        json!("x"),
        json!("\"\\\u{1}"),
        json!("d".repeat(3000)),
        Value::Null,
        json!(true),
        json!([]),
        json!({}),
        json!([0, 1]),
        json!(n.map_or(1, |n| n.wrapping_add(1))),
        json!(n.map_or(0, |n| n.wrapping_sub(1))),
        json!(n.map_or(2, |n| n.wrapping_mul(2))),
        json!(n.map_or(7, |n| n / 2)),
        json!("alv"),
        json!("md-reshape"),
        json!("fastscale"),
        json!("round-robin"),
        json!("5"),
        json!("0"),
        json!("running"),
        json!("done"),
        json!("faulty"),
        json!("dirty"),
        json!({"strategy": strategy, "history": {"initial_disks": 1 + choice % 5,
               "additions": [1], "chunks_per_disk": chunks_per_disk}}),
        json!({"strategy": "fast-scale",
               "history": {"initial_disks": 2, "additions": [], "chunks_per_disk": 8}}),
    ];
    options[choice % options.len()].clone()
}

/// The newest superblock of `area` as JSON with its record sequence, if
/// one is well-formed (validation aside).
fn newest_json(area: &[u8]) -> Option<(Value, u64)> {
    let slot = |i: usize| {
        let start = (SUPERBLOCK_SLOTS_BYTES[i] as usize).min(area.len());
        &area[start..(start + SUPERBLOCK_SLOT_BYTES).min(area.len())]
    };
    let (_, sequence, body) = record::newest(&SUPERBLOCK_KIND, [slot(0), slot(1)]).ok()?;
    Some((serde_json::from_slice(body).ok()?, sequence))
}

/// Writes `value` as the newest superblock of `area` (its events become the
/// record's sequence when they are a number).
fn put_json(area: &mut [u8], value: &Value, sequence: u64) {
    let sequence = value["events"].as_u64().unwrap_or(sequence);
    let bytes = record::encode(
        &SUPERBLOCK_KIND,
        sequence,
        &serde_json::to_vec(value).unwrap(),
    );
    let at = Superblock::slot_offset_bytes(sequence) as usize;
    let end = (at + bytes.len()).min(area.len());
    if at < end {
        area[at..end].copy_from_slice(&bytes[..end - at]);
    }
}

fn edit_json(area: &mut [u8], edit: impl FnOnce(&mut Value)) {
    if let Some((mut value, sequence)) = newest_json(area) {
        edit(&mut value);
        put_json(area, &value, sequence);
    }
}

/// The member set a test assembles: one probe per entry.
struct Candidate {
    path: String,
    metadata: Result<Vec<u8>, String>,
    size_bytes: u64,
    /// Which base member's data this probe is (None: another array's).
    image: Option<usize>,
}

fn apply(candidates: &mut Vec<Candidate>, mutation: &Mutation, foreign: &[Vec<u8>]) {
    if candidates.is_empty() {
        return;
    }
    let count = candidates.len();
    let pick = |i: usize| i % count;
    match *mutation {
        Mutation::JsonLeaf {
            member,
            leaf,
            value,
            all,
        } => {
            let path = leaf_path(candidates, pick(member), leaf);
            edit_members(candidates, pick(member), all, |v| {
                if let Some(target) = path.as_deref().and_then(|p| at_path_checked(v, p)) {
                    *target = replacement(target, value);
                }
            });
        }
        Mutation::JsonRemove { member, leaf, all } => {
            let path = leaf_path(candidates, pick(member), leaf);
            edit_members(candidates, pick(member), all, |v| {
                let Some((last, parent)) = path.as_deref().and_then(|p| p.split_last()) else {
                    return;
                };
                match (at_path_checked(v, parent), last) {
                    (Some(Value::Object(map)), Value::String(key)) => {
                        map.remove(key);
                    }
                    (Some(Value::Array(items)), Value::Number(i)) => {
                        let i = i.as_u64().unwrap() as usize;
                        if i < items.len() {
                            items.remove(i);
                        }
                    }
                    _ => {}
                }
            });
        }
        Mutation::MembersResize { member, grow, all } => {
            edit_members(candidates, pick(member), all, |v| {
                if let Some(members) = v["members"].as_array_mut() {
                    if grow {
                        let mut extra = members.last().cloned().unwrap_or(Value::Null);
                        extra["uuid"] = json!("extra-member");
                        members.push(extra);
                    } else {
                        members.pop();
                    }
                }
            });
        }
        Mutation::JsonNamed {
            member,
            field,
            value,
            all,
        } => {
            let path: Vec<Value> = NAMED_FIELDS[field % NAMED_FIELDS.len()]
                .iter()
                .map(|key| match key.parse::<u64>() {
                    Ok(index) => json!(index),
                    Err(_) => json!(key),
                })
                .collect();
            edit_members(candidates, pick(member), all, |v| {
                if let Some(target) = at_path_checked(v, &path) {
                    *target = replacement(target, value);
                }
            });
        }
        Mutation::CraftBackup {
            member,
            numbers,
            all,
        } => {
            edit_members(candidates, pick(member), all, |v| {
                if !v["reshape"].is_object() {
                    return;
                }
                // Near the backup the engine would record (the window at
                // the checkpoint, at the tail of the first new member), or
                // off by a row, a chunk, or wildly (crafted fields may be
                // anything: the arithmetic wraps).
                let number = |value: &Value| value.as_u64().unwrap_or(0);
                let g = &v["geometry"];
                let chunk = number(&g["chunk_bytes"]).max(1);
                let member_chunks = number(&g["member_data_bytes"]) / chunk;
                let members = number(&g["member_count"]);
                let row = match g["level"].as_str() {
                    Some("0") => members,
                    _ => members.saturating_sub(1),
                }
                .max(1);
                let start = number(&v["reshape"]["checkpoint_chunk"]);
                let old_members = number(&v["reshape"]["old_geometry"]["member_count"]);
                let chunks = [
                    start,
                    start.wrapping_add(row),
                    start.wrapping_add(row.wrapping_mul(2)),
                    start.wrapping_add(1),
                    0,
                    u64::MAX,
                ];
                let end = chunks[numbers[1] % chunks.len()];
                let rows = end.wrapping_sub(start);
                let tail = member_chunks
                    .wrapping_sub(rows)
                    .wrapping_mul(chunk)
                    .wrapping_add(METADATA_BYTES);
                let slots = [old_members, old_members.wrapping_add(1), 0, u64::MAX];
                let offsets = [tail, tail.wrapping_add(chunk), 0, u64::MAX];
                let lengths = [
                    rows.wrapping_mul(chunk),
                    rows.wrapping_add(1).wrapping_mul(chunk),
                    0,
                    u64::MAX,
                ];
                let pick_from = |options: &[u64], n: usize| options[n % options.len()];
                v["reshape"]["backup"] = json!({
                    "start_chunk": pick_from(&[start, start.wrapping_add(row), 0, u64::MAX], numbers[0]),
                    "end_chunk": end,
                    "member": pick_from(&slots, numbers[2]),
                    "offset_bytes": pick_from(&offsets, numbers[3]),
                    "len_bytes": pick_from(&lengths, numbers[4]),
                    "crc32c": 0,
                });
            });
        }
        Mutation::FlipBit {
            member,
            region,
            offset,
            bit,
        } => {
            if let Ok(area) = &mut candidates[pick(member)].metadata {
                let (start, len) = match region {
                    0 | 1 => (SUPERBLOCK_SLOTS_BYTES[region] as usize, 4096),
                    2 | 3 => (BITMAP_SLOTS_BYTES[region - 2] as usize, 4096),
                    _ => (0, area.len()),
                };
                let at = start + offset % len.max(1);
                if at < area.len() {
                    area[at] ^= 1 << bit;
                }
            }
        }
        Mutation::CraftBitmap {
            member,
            regions,
            word,
            sequence,
        } => {
            if let Ok(area) = &mut candidates[pick(member)].metadata {
                let real = Superblock::decode_newest(area)
                    .map(|sb| {
                        sb.geometry
                            .stripe_count()
                            .div_ceil(sb.bitmap_stripes_per_region)
                    })
                    .unwrap_or(1);
                let region_count = [real, 0, 63, 64, 65, u64::MAX, 1 << 40][regions % 7];
                let sequence = [0u64, 1, 2, 1 << 62, u64::MAX, 100][sequence % 6];
                let mut body = region_count.to_le_bytes().to_vec();
                body.extend_from_slice(&word.to_le_bytes());
                let bytes = record::encode(&BITMAP_KIND, sequence, &body);
                let at = IntentBitmap::slot_offset_bytes(sequence) as usize;
                if at + bytes.len() <= area.len() {
                    area[at..at + bytes.len()].copy_from_slice(&bytes);
                }
            }
        }
        Mutation::DropProbe { member } => {
            candidates.remove(pick(member));
        }
        Mutation::Unreadable { member } => {
            candidates[pick(member)].metadata = Err("Input/output error (injected)".into());
        }
        Mutation::Truncate { member, len } => {
            if let Ok(area) = &mut candidates[pick(member)].metadata {
                area.truncate(len);
            }
        }
        Mutation::Shrink { member, by } => {
            let c = &mut candidates[pick(member)];
            c.size_bytes = c.size_bytes.saturating_sub(by);
        }
        Mutation::Duplicate { from, to } => {
            let (from, to) = (pick(from), pick(to));
            if from != to {
                candidates[to].metadata = candidates[from].metadata.clone();
                candidates[to].image = candidates[from].image;
            }
        }
        Mutation::Foreign { member } => {
            let c = &mut candidates[pick(member)];
            c.metadata = Ok(foreign[member % foreign.len()][..METADATA_BYTES as usize].to_vec());
            c.image = None;
        }
        Mutation::Swap { a, b } => {
            let (a, b) = (pick(a), pick(b));
            candidates.swap(a, b);
        }
    }
}

/// Whether an error names the member at fault.
fn check_error(error: &AssemblyError, probes: &[MemberProbe]) {
    let named = |path: &str| probes.iter().any(|p| p.path == path);
    let message = error.to_string();
    assert!(!message.is_empty());
    match error {
        AssemblyError::NoMembers => assert!(probes.is_empty(), "{message}"),
        AssemblyError::Unreadable { path, .. }
        | AssemblyError::NotAMember { path, .. }
        | AssemblyError::ForeignMember { path, .. }
        | AssemblyError::DuplicateSlot { path, .. }
        | AssemblyError::ReplacedMember { path, .. }
        | AssemblyError::Retired { path, .. }
        | AssemblyError::TooSmall { path, .. }
        | AssemblyError::SlotBeyondArray { path, .. }
        | AssemblyError::Disagreement { path, .. } => {
            assert!(named(path), "{message} names no probe")
        }
        AssemblyError::MissingMember { .. }
        | AssemblyError::TooManyMissing { .. }
        | AssemblyError::MirrorLost { .. } => {}
        // Names every member it left out, each by its own error.
        AssemblyError::FailedWithLeftOut { failed, left_out } => {
            check_error(failed, probes);
            assert!(
                probes.iter().any(|p| left_out.contains(&p.path)),
                "{message} names no probe left out"
            );
        }
    }
}

/// What holds for every assembly, whatever the input.
fn check_assembly(assembly: &Assembly, probes: &[MemberProbe]) {
    let sb = &assembly.superblock;
    assert_eq!(assembly.slots.len(), sb.geometry.member_count);
    let mut used = vec![false; probes.len()];
    for (slot, state) in assembly.slots.iter().enumerate() {
        if let SlotState::Present { probe } | SlotState::Stale { probe, .. } = *state {
            assert!(!used[probe], "probe {probe} in two slots");
            used[probe] = true;
            let area = probes[probe]
                .metadata
                .as_ref()
                .expect("a used probe was read");
            let copy = Superblock::decode_newest(area).expect("a used probe decodes");
            assert_eq!(copy.this_member, slot);
            assert_eq!(copy.array_uuid, sb.array_uuid);
        }
    }
    let regions = assembly.bitmap.region_count();
    assert!(assembly.bitmap.dirty_regions().all(|r| r < regions));
    // Whatever was accepted can be written back, and reads back the same.
    for member in 0..sb.geometry.member_count {
        let bytes = sb.encode_for(member);
        let mut area = vec![0u8; METADATA_BYTES as usize];
        let at = Superblock::slot_offset_bytes(sb.events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        let mut expected = sb.clone();
        expected.this_member = member;
        assert_eq!(Superblock::decode_newest(&area).unwrap(), expected);
    }
}

/// A forced assembly of a set too degraded to run: it takes back only
/// members given, runs or says why not, and never panics.
fn check_forced(probes: &[MemberProbe]) {
    let (result, largest) = largest_allocation(|| {
        assemble_with(
            probes,
            AssembleOptions {
                force: true,
                ..Default::default()
            },
        )
    });
    assert!(largest <= ASSEMBLY_ALLOCATION_BYTES_MAX);
    match result {
        Ok(assembly) => {
            assert!(!assembly.forced.is_empty());
            for forced in &assembly.forced {
                assert!(probes.iter().any(|p| p.path == forced.path));
                assert!(matches!(
                    assembly.slots[forced.slot],
                    SlotState::Present { .. }
                ));
            }
            check_assembly(&assembly, probes);
        }
        Err(error) => check_error(&error, probes),
    }
}

fn run_case(spec: &BaseSpec, mutations: &[Mutation]) {
    let base = build_base(spec);
    let foreign_spec = BaseSpec {
        seed: spec.seed ^ 0xf0f0,
        kind: BaseKind::Clean,
        ..spec.clone()
    };
    let foreign = build_base(&foreign_spec).images;
    let mut candidates: Vec<Candidate> = base
        .images
        .iter()
        .enumerate()
        .map(|(i, image)| Candidate {
            path: format!("mem{i}"),
            metadata: Ok(image[..METADATA_BYTES as usize].to_vec()),
            size_bytes: image.len() as u64,
            image: Some(i),
        })
        .collect();
    for m in mutations {
        apply(&mut candidates, m, &foreign);
    }
    let probes: Vec<MemberProbe> = candidates
        .iter()
        .map(|c| MemberProbe {
            path: c.path.clone(),
            metadata: c.metadata.clone(),
            size_bytes: c.size_bytes,
        })
        .collect();
    let (result, largest) = largest_allocation(|| {
        for probe in &probes {
            if let Ok(area) = &probe.metadata {
                let _ = Superblock::decode_newest(area);
            }
        }
        assemble(&probes)
    });
    assert!(
        largest <= ASSEMBLY_ALLOCATION_BYTES_MAX,
        "assembly allocated {largest} bytes at once"
    );
    // Given only out-of-date members, nothing can tell they are: the data
    // is checked when an up-to-date member is given, as it was.
    let events = |area: &[u8]| Superblock::decode_newest(area).map_or(0, |sb| sb.events);
    let newest_events = base.images.iter().map(|i| events(i)).max().unwrap_or(0);
    let newest_given = candidates.iter().any(|c| {
        c.image.is_some_and(|i| {
            let original = &base.images[i][..METADATA_BYTES as usize];
            events(original) == newest_events && c.metadata.as_deref() == Ok(original)
        })
    });
    let benign = newest_given && mutations.iter().all(Mutation::benign);
    let only_dropped = mutations
        .iter()
        .all(|m| matches!(m, Mutation::DropProbe { .. } | Mutation::Swap { .. }))
        && candidates
            .iter()
            .all(|c| c.image.is_none() || c.image != base.extra);
    let missing = base.absent + (base.images.len() - candidates.len());
    let tolerated = match spec.level {
        Level::Raid10 => 1.min(base.geometry.member_count / 2),
        level => level.redundancy(),
    };
    let assembly = match result {
        Err(error) => {
            check_error(&error, &probes);
            if matches!(
                error,
                AssemblyError::TooManyMissing { .. }
                    | AssemblyError::MissingMember { .. }
                    | AssemblyError::MirrorLost { .. }
            ) {
                check_forced(&probes);
            }
            assert!(
                !(only_dropped && missing <= tolerated && !candidates.is_empty()),
                "{} of {} members missing (tolerated {tolerated}) must assemble: {error}",
                missing,
                base.images.len()
            );
            return;
        }
        Ok(assembly) => assembly,
    };
    check_assembly(&assembly, &probes);
    // Serve it: members as the probes say (another array's data for a
    // foreign probe), every slot's image by the probe it was assembled from.
    let mut h = MemHarness::create(base.geometry, spec.seed);
    h.members = (0..assembly.slots.len())
        .map(|slot| {
            let image = match assembly.slots[slot] {
                SlotState::Present { probe } | SlotState::Stale { probe, .. } => {
                    match candidates[probe].image {
                        Some(i) => base.images[i].clone(),
                        None => foreign[slot % foreign.len()].clone(),
                    }
                }
                SlotState::Missing => return None,
            };
            let mut image = image;
            let needed = (assembly.superblock.geometry.data_offset_bytes
                + assembly.superblock.geometry.member_data_bytes) as usize;
            image.resize(image.len().max(needed), 0);
            Some(MemMember {
                durable: image.clone(),
                current: image,
                unflushed: Vec::new(),
                failed: false,
            })
        })
        .collect();
    let missing_slots: Vec<usize> = (0..assembly.slots.len())
        .filter(|&slot| matches!(assembly.slots[slot], SlotState::Missing))
        .collect();
    let (read, largest) = largest_allocation(|| {
        let mut array = Array::open(assembly, options(), h.now);
        h.run(&mut array);
        let capacity = array.capacity_bytes() as usize;
        let read = call(
            &mut h,
            &mut array,
            1,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes: capacity,
            },
        );
        array.handle_close(h.now);
        h.run(&mut array);
        read
    });
    assert!(
        largest <= SERVING_ALLOCATION_BYTES_MAX,
        "serving allocated {largest} bytes at once"
    );
    if benign {
        // A crash mid-window plus the loss of the member holding that
        // window's backup is a double fault: the read must refuse (never
        // serve the half-overwritten old places), naming the member.
        if let Err(UserError::Unavailable(why)) = &read {
            let backup_missing = missing_slots
                .iter()
                .any(|slot| why.contains(&format!("the backup on member {slot}, is missing")));
            assert!(backup_missing, "a benign member set reads: {why}");
            return;
        }
        let data = read.expect("a benign member set reads").expect("data");
        // A growth resumed at open may have finished: the capacity grew.
        assert!(
            data.len() >= base.model.len() && data[..base.model.len()] == base.model[..],
            "a benign member set read other data"
        );
    }
}

fn cases() -> u32 {
    std::env::var("ERAID_METADATA_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_member_sets_never_panic_and_assemble_right_or_refuse(
        spec in base_spec(),
        mutations in prop::collection::vec(mutation(), 0..5),
    ) {
        run_case(&spec, &mutations);
    }
}

/// Found by the fuzz: a growth crashed mid-window with its backup on the
/// new member, then that member is left out. Reads of the window must be
/// refused naming the backup's member; the rest of the case must hold.
#[test]
fn crashed_window_with_its_backup_member_missing_refuses_reads() {
    let spec = BaseSpec {
        level: Level::Raid5,
        layout: ParityLayout::LeftAsymmetric,
        members: 5,
        member_chunks: 8,
        kind: BaseKind::Growing {
            steps: 120,
            crash: true,
        },
        seed: 15115860468416781,
    };
    run_case(&spec, &[Mutation::DropProbe { member: 5 }]);
}

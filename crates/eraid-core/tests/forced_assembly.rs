//! An array with more members failed than it survives: its status says
//! "failed", plain assembly refuses it, and a forced assembly (MD's
//! `--assemble --force`) takes back the most recent failed members, as few
//! as make it run, marks every region for resync, and serves every write
//! acknowledged before the array failed.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::UserOp;
use eraid_core::metadata::assemble::{assemble_with, AssembleOptions, AssemblyError, SlotState};
use eraid_core::testing::MemHarness;
use eraid_core::Array;

const MEMBER_CHUNKS: u64 = 24;

fn write(h: &mut MemHarness, array: &mut Array, id: u64, offset_bytes: u64, data: &[u8]) -> bool {
    let op = UserOp::Write {
        offset_bytes,
        data: data.to_vec().into(),
        fua: false,
    };
    call(h, array, id, op).is_ok() && call(h, array, id + 1, UserOp::Flush).is_ok()
}

fn read(h: &mut MemHarness, array: &mut Array, id: u64, offset_bytes: u64, len: usize) -> Vec<u8> {
    let op = UserOp::Read {
        offset_bytes,
        len_bytes: len,
    };
    call(h, array, id, op).expect("read").expect("data")
}

/// RAID-5 of 4: member 2 fails, writes go on degraded, member 3 fails;
/// the array is failed from then on, and its status says so.
fn raid5_with_two_failed() -> (MemHarness, Vec<u8>, Vec<u8>, u64) {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let stripe_bytes = g.stripe_data_bytes();
    let mut h = MemHarness::create(g, 7);
    let mut array = open(&mut h);
    // Whole stripes, so a write torn by a failure shares no stripe with
    // the data checked afterwards (the write hole is the caveat).
    let before: Vec<u8> = (0..4 * stripe_bytes).map(|i| (i % 241) as u8).collect();
    assert!(write(&mut h, &mut array, 1, 0, &before));
    h.members[2].as_mut().unwrap().failed = true;
    let degraded: Vec<u8> = (0..4 * stripe_bytes).map(|i| (i % 239) as u8).collect();
    let degraded_at = 4 * stripe_bytes;
    assert!(write(&mut h, &mut array, 3, degraded_at, &degraded));
    assert_eq!(array.status_json()["state"], "active");
    h.members[3].as_mut().unwrap().failed = true;
    let doomed = vec![0xee; 2 * stripe_bytes as usize];
    assert!(!write(&mut h, &mut array, 5, 12 * stripe_bytes, &doomed));
    let status = array.status_json();
    assert_eq!(status["state"], "failed", "{status}");
    close(&mut h, &mut array);
    // The space is back (ENOSPC freed): both members answer again.
    for m in [2, 3] {
        h.members[m].as_mut().unwrap().failed = false;
    }
    (h, before, degraded, degraded_at)
}

#[test]
fn a_raid5_with_two_failed_members_is_failed_and_refused() {
    let (h, ..) = raid5_with_two_failed();
    match h.assemble() {
        Err(AssemblyError::TooManyMissing {
            missing: 2,
            tolerated: 1,
            ..
        }) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn forced_assembly_takes_back_the_most_recent_failed_member() {
    let (mut h, before, degraded, degraded_at) = raid5_with_two_failed();
    let assembly = assemble_with(
        &h.probes(),
        AssembleOptions {
            force: true,
            ..Default::default()
        },
    )
    .expect("forced assembly runs");
    assert_eq!(assembly.forced.len(), 1, "{:?}", assembly.report);
    let forced = &assembly.forced[0];
    // Member 3 failed last: its superblock is the more recent.
    assert_eq!((forced.slot, forced.path.as_str()), (3, "mem3"));
    assert!(forced.events < forced.array_events);
    assert!(matches!(assembly.slots[2], SlotState::Stale { .. }));
    assert!(matches!(assembly.slots[3], SlotState::Present { .. }));
    let regions = assembly.bitmap.region_count();
    assert_eq!(assembly.bitmap.dirty_regions().count() as u64, regions);
    assert!(assembly.report.iter().any(|l| l.contains("forced back")));
    let mut array = Array::open(assembly, options(), h.now);
    h.run(&mut array);
    let status = array.status_json();
    assert_eq!(status["state"], "active", "{status}");
    assert_eq!(status["members"][3]["state"], "active");
    assert_eq!(status["members"][3]["failure"], serde_json::Value::Null);
    assert_eq!(read(&mut h, &mut array, 10, 0, before.len()), before);
    assert_eq!(
        read(&mut h, &mut array, 11, degraded_at, degraded.len()),
        degraded
    );
    close(&mut h, &mut array);
    // Served once, the array assembles without force (degraded, member 2
    // stale), still dirty: parity could not be resynced without member 2.
    let assembly = h.assemble().expect("assembles without force now");
    assert!(assembly.forced.is_empty());
    assert!(matches!(assembly.slots[2], SlotState::Stale { .. }));
    assert!(assembly.bitmap.dirty_regions().count() > 0);
}

/// RAID-10 of 4 (mirrors 0+1 and 2+3): member 2 fails, then 0, then 1;
/// only one member of the lost mirror is needed back: the most recent, 1.
#[test]
fn forced_raid10_takes_back_one_member_of_the_lost_mirror() {
    let g = geometry(Level::Raid10, ParityLayout::Near2, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 8);
    let mut array = open(&mut h);
    let chunk = g.chunk_bytes as usize;
    let data: Vec<u8> = (0..8 * chunk).map(|i| (i % 233) as u8).collect();
    for (step, member) in [2usize, 0, 1].into_iter().enumerate() {
        if step == 0 {
            assert!(write(&mut h, &mut array, 1, 0, &data));
        }
        h.members[member].as_mut().unwrap().failed = true;
        let id = 10 + 2 * step as u64;
        write(&mut h, &mut array, id, 0, &data);
    }
    assert_eq!(array.status_json()["state"], "failed");
    close(&mut h, &mut array);
    for m in [0, 1, 2] {
        h.members[m].as_mut().unwrap().failed = false;
    }
    assert!(matches!(
        h.assemble(),
        Err(AssemblyError::MirrorLost { .. })
    ));
    let assembly = assemble_with(
        &h.probes(),
        AssembleOptions {
            force: true,
            ..Default::default()
        },
    )
    .unwrap();
    let forced: Vec<usize> = assembly.forced.iter().map(|f| f.slot).collect();
    assert_eq!(forced, vec![1], "{:?}", assembly.report);
    let mut array = Array::open(assembly, options(), h.now);
    h.run(&mut array);
    assert_eq!(read(&mut h, &mut array, 30, 0, data.len()), data);
    close(&mut h, &mut array);
}

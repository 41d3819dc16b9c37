//! A row rebuilt from the survivors (a degraded write's new parity, a
//! rebuild's missing shards) leaves the core as a recipe, computed by the
//! thread that performs the write, outside the driver's engine lock, like
//! every healthy write's parity. The bytes are still right: degraded reads
//! of the lost chunks (which go through the parity written) and a rebuilt
//! member's contents match the model.

mod common;
use common::lifecycle::*;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{AdminCommand, Bytes, DeviceOp, IoCause, UserError, UserOp};
use eraid_core::testing::{BadSectorKind, BadSectors, MemHarness};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

const MEMBER_CHUNKS: u64 = 16;

/// Steps the harness to idle; per device write of `cause`, whether its
/// bytes were already computed when it was issued.
fn computed_when_issued(
    h: &mut MemHarness,
    array: &mut eraid_core::Array,
    cause: IoCause,
) -> BTreeMap<eraid_core::io::IoId, bool> {
    let mut seen = BTreeMap::new();
    loop {
        for io in h.inflight_ios() {
            if let DeviceOp::Write { data, .. } = &io.op {
                if io.cause == cause {
                    // Only is_encoded(): reading the bytes computes them.
                    seen.entry(io.id).or_insert(data.is_encoded());
                }
            }
        }
        if !h.step(array) {
            return seen;
        }
    }
}

#[test]
fn a_degraded_writes_parity_is_left_for_the_writing_thread_to_compute() {
    // The write covers the second half of data chunk 0 and the first
    // quarter of chunk 1, whose member is gone: read-modify-write needs
    // chunk 1's old bytes and reconstruct-write needs its unwritten part,
    // so the row is rebuilt from every survivor, the new bytes laid over,
    // and the parity encoded afresh.
    let half = CHUNK as usize / 2;
    for (level, members, failed) in [(Level::Raid5, 4, vec![1]), (Level::Raid6, 6, vec![1, 2])] {
        let case = format!("{level:?} x{members} without {failed:?}");
        let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
        let parity_count = if level == Level::Raid6 { 2 } else { 1 };
        let data_chunks = (members - parity_count) as u64;
        let mut h = MemHarness::create(g, 13);
        let mut array = open(&mut h);
        let old: Vec<u8> = (0..data_chunks * CHUNK)
            .map(|i| (i % 239) as u8 ^ 0x3C)
            .collect();
        let written = call(
            &mut h,
            &mut array,
            1,
            UserOp::Write {
                offset_bytes: 0,
                data: old.clone().into(),
                fua: false,
            },
        );
        assert_eq!(written, Ok(None), "{case}");
        for &slot in &failed {
            admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot });
            h.run(&mut array);
        }
        let new: Bytes = (0..half + half / 2)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into();
        h.submit(
            &mut array,
            2,
            UserOp::Write {
                offset_bytes: half as u64,
                data: new.clone(),
                fua: false,
            },
        );
        let writes = computed_when_issued(&mut h, &mut array, IoCause::User);
        assert_eq!(
            h.take_reply(2).expect("answered").result,
            Ok(None),
            "{case}"
        );
        let deferred = writes.values().filter(|&&computed| !computed).count();
        assert_eq!(
            deferred, parity_count,
            "{case}: the row was computed by the core: {writes:?}"
        );
        let mut expected = old;
        expected[half..half + new.len()].copy_from_slice(&new);
        let read = call(
            &mut h,
            &mut array,
            3,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes: expected.len(),
            },
        );
        assert_eq!(
            read.expect("read").expect("bytes"),
            expected,
            "{case}: read back through the parity"
        );
    }
}

#[test]
fn a_rebuilds_rows_are_left_for_the_writing_thread_to_compute() {
    for (level, members, failed) in [(Level::Raid5, 4, 2), (Level::Raid6, 5, 0)] {
        let case = format!("{level:?} x{members}, slot {failed} rebuilt");
        let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, 17);
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let mut array = open_with(&mut h, options());
        let model = fill(&mut h, &mut array, &mut rng);
        fail_and_replace(&mut h, &mut array, failed);
        let writes = computed_when_issued(&mut h, &mut array, IoCause::Rebuild);
        assert_eq!(rebuild_status(&array)["state"], "done", "{case}");
        assert!(
            writes.len() as u64 >= MEMBER_CHUNKS,
            "{case}: {} rebuild writes",
            writes.len()
        );
        assert!(
            writes.values().all(|&computed| !computed),
            "{case}: rows computed by the core: {writes:?}"
        );
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{case}");
        assert_eq!(read_all(&mut h, &mut array, 9), model, "{case}");
    }
}

#[test]
fn a_degraded_reads_lost_chunks_are_left_for_whoever_sends_the_reply() {
    // A read over a lost chunk: the core decides the read can be answered
    // (enough shards survive) and hands out the reply with the lost
    // chunk's piece still to compute; the bytes are right once looked at.
    for (level, members, failed) in [(Level::Raid5, 4, vec![1]), (Level::Raid6, 6, vec![0, 2])] {
        let case = format!("{level:?} x{members} without {failed:?}");
        let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, 19);
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        let mut array = open(&mut h);
        let model = fill(&mut h, &mut array, &mut rng);
        for &slot in &failed {
            admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot });
            h.run(&mut array);
        }
        // Half of chunk 0 through half of chunk 2 of the first stripe.
        let (at, len) = (CHUNK as usize / 2, 2 * CHUNK as usize);
        h.submit(
            &mut array,
            2,
            UserOp::Read {
                offset_bytes: at as u64,
                len_bytes: len,
            },
        );
        h.run(&mut array);
        let data = h
            .take_reply(2)
            .expect("answered")
            .result
            .expect("read")
            .expect("bytes");
        assert!(
            !data.is_computed(),
            "{case}: the lost chunk was rebuilt inside the core"
        );
        assert_eq!(data.len(), len, "{case}");
        assert_eq!(data.to_vec(), model[at..at + len], "{case}");
        assert!(data.is_computed(), "{case}");
    }
    // Too few survivors (a lost member and a latent error on another):
    // the core answers with an error itself, nothing is left to compute.
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 23);
    let mut array = open(&mut h);
    admin_ok(&mut h, &mut array, AdminCommand::FailMember { slot: 1 });
    h.run(&mut array);
    h.bad_sectors = vec![BadSectors {
        device: 0,
        offset_bytes: g.data_offset_bytes,
        len_bytes: g.chunk_bytes,
        kind: BadSectorKind::Persists,
    }];
    let read = call(
        &mut h,
        &mut array,
        3,
        UserOp::Read {
            offset_bytes: CHUNK,
            len_bytes: CHUNK as usize,
        },
    );
    assert!(
        matches!(read, Err(UserError::Unavailable(_))),
        "chunk 1 with its member gone and chunk 0 unreadable: {read:?}"
    );
}

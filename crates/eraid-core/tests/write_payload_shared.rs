//! A user write's payload reaches the members without being copied: the
//! core splits it over chunks (and a mirror's copies) as slices of the one
//! buffer the driver handed in. Only parity is new memory, and a full
//! stripe's comes from the array's pool of aligned buffers. Before this, a
//! 128 KiB write was copied three times inside the core.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{Bytes, DeviceOp, IoCause, UserOp};
use eraid_core::testing::MemHarness;
use std::collections::BTreeMap;

const MEMBER_CHUNKS: u64 = 16;

/// Runs one write to completion; returns, per user-caused member write,
/// whether its bytes are a slice of `payload` (true) or other memory.
fn member_writes(level: Level, layout: ParityLayout, members: usize, payload: &Bytes) -> Vec<bool> {
    let g = geometry(level, layout, members, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 7);
    let mut array = open(&mut h);
    let span = payload.as_ptr() as usize..payload.as_ptr() as usize + payload.len();
    h.submit(
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: CHUNK,
            data: payload.clone(),
            fua: false,
        },
    );
    let mut seen = BTreeMap::new();
    loop {
        for io in h.inflight_ios() {
            if let (DeviceOp::Write { data, .. }, IoCause::User) = (&io.op, io.cause) {
                let at = data.as_ptr() as usize;
                seen.insert(io.id, span.contains(&at) && at + data.len() <= span.end);
            }
        }
        if !h.step(&mut array) {
            break;
        }
    }
    let reply = h.take_reply(1).expect("answered").result;
    assert_eq!(reply, Ok(None), "the write succeeded");
    let read = call(
        &mut h,
        &mut array,
        2,
        UserOp::Read {
            offset_bytes: CHUNK,
            len_bytes: payload.len(),
        },
    );
    assert_eq!(
        read.expect("read").expect("bytes"),
        payload[..],
        "read back"
    );
    seen.into_values().collect()
}

fn payload(chunks: u64) -> Bytes {
    (0..chunks * CHUNK)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into()
}

#[test]
fn raid0_writes_every_chunk_from_the_users_buffer() {
    let shared = member_writes(Level::Raid0, ParityLayout::None, 4, &payload(6));
    assert_eq!(shared.len(), 6, "one write per chunk");
    assert!(shared.iter().all(|&s| s), "a chunk was copied: {shared:?}");
}

#[test]
fn raid10_writes_both_copies_from_the_users_buffer() {
    let shared = member_writes(Level::Raid10, ParityLayout::Near2, 4, &payload(4));
    assert_eq!(shared.len(), 8, "two copies of four chunks");
    assert!(shared.iter().all(|&s| s), "a copy was copied: {shared:?}");
}

#[test]
fn raid5_writes_data_from_the_users_buffer_and_only_parity_is_new() {
    // Chunks 1..7 of a 4-member RAID-5: stripe 0 partly (two chunks, one
    // parity), stripe 1 whole (three chunks, one parity), stripe 2 partly.
    let shared = member_writes(Level::Raid5, ParityLayout::LeftSymmetric, 4, &payload(6));
    let from_user = shared.iter().filter(|&&s| s).count();
    assert_eq!(
        from_user, 6,
        "every data chunk from the user's buffer: {shared:?}"
    );
    assert_eq!(shared.len() - from_user, 3, "one parity write per stripe");
}

/// Runs one write of `payload` at `offset_bytes` to completion; returns
/// its member writes that are not a slice of the payload (its parity), as
/// (address, length).
fn parity_writes(
    h: &mut MemHarness,
    array: &mut eraid_core::array::Array,
    id: u64,
    offset_bytes: u64,
    payload: &Bytes,
) -> Vec<(usize, usize)> {
    let span = payload.as_ptr() as usize..payload.as_ptr() as usize + payload.len();
    h.submit(
        array,
        id,
        UserOp::Write {
            offset_bytes,
            data: payload.clone(),
            fua: false,
        },
    );
    let mut parity = BTreeMap::new();
    loop {
        for io in h.inflight_ios() {
            if let (DeviceOp::Write { data, .. }, IoCause::User) = (&io.op, io.cause) {
                let at = data.as_ptr() as usize;
                if !span.contains(&at) {
                    parity.insert(io.id, (at, data.len()));
                }
            }
        }
        if !h.step(array) {
            break;
        }
    }
    assert_eq!(h.take_reply(id).expect("answered").result, Ok(None));
    parity.into_values().collect()
}

#[test]
fn full_stripe_parity_goes_into_aligned_buffers_that_are_reused() {
    // A 4-member RAID-5 stripe holds three data chunks: chunks 3..6 are
    // all of stripe 1, written twice with different bytes.
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 7);
    let mut array = open(&mut h);
    let first = parity_writes(&mut h, &mut array, 1, 3 * CHUNK, &payload(3));
    let again: Bytes = vec![0x5a; 3 * CHUNK as usize].into();
    let second = parity_writes(&mut h, &mut array, 2, 3 * CHUNK, &again);
    for parity in [&first, &second] {
        assert_eq!(parity.len(), 1, "one parity write per stripe: {parity:?}");
        let (at, len) = parity[0];
        assert_eq!(len, CHUNK as usize);
        assert_eq!(
            at % eraid_buffers::DIRECT_ALIGN_BYTES,
            0,
            "parity at {at:#x} is not aligned for O_DIRECT"
        );
    }
    assert_eq!(
        first[0].0, second[0].0,
        "the second stripe's parity reuses the first's buffer"
    );
    // And a reused buffer's old bytes did not leak into the parity: a
    // check of every stripe finds parity consistent with the data.
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

#[test]
fn full_stripe_parity_is_left_for_the_writing_thread_to_encode() {
    // A 6-member RAID-6 stripe holds four data chunks: chunks 4..8 are
    // all of stripe 1. Its P and Q leave the core as a recipe (encoded by
    // whoever performs the write, outside the driver's engine lock), and
    // what the members end up holding is still consistent parity.
    let g = geometry(Level::Raid6, ParityLayout::LeftSymmetric, 6, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 7);
    let mut array = open(&mut h);
    let data = payload(4);
    h.submit(
        &mut array,
        1,
        UserOp::Write {
            offset_bytes: 4 * CHUNK,
            data: data.clone(),
            fua: false,
        },
    );
    let mut encoded_when_issued = BTreeMap::new();
    loop {
        for io in h.inflight_ios() {
            if let (DeviceOp::Write { data, .. }, IoCause::User) = (&io.op, io.cause) {
                // Only is_encoded(): reading the bytes would encode them.
                encoded_when_issued
                    .entry(io.id)
                    .or_insert(data.is_encoded());
            }
        }
        if !h.step(&mut array) {
            break;
        }
    }
    assert_eq!(h.take_reply(1).expect("answered").result, Ok(None));
    let deferred = encoded_when_issued.values().filter(|&&e| !e).count();
    assert_eq!(encoded_when_issued.len(), 6, "four data chunks, P and Q");
    assert_eq!(
        deferred, 2,
        "P and Q left unencoded by the core: {encoded_when_issued:?}"
    );
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
    let read = call(
        &mut h,
        &mut array,
        2,
        UserOp::Read {
            offset_bytes: 4 * CHUNK,
            len_bytes: data.len(),
        },
    );
    assert_eq!(read.expect("read").expect("bytes"), data[..]);
}

#[test]
fn reconstruct_write_parity_goes_into_aligned_pooled_buffers() {
    // Two of a 4-member RAID-5 stripe's three chunks plus half the third
    // (chunks 3, 4 and half of 5): reconstruct-write reads the rest of
    // chunk 5 and encodes from the user's bytes and that read, into the
    // array's pooled buffers, not into a row rebuilt in fresh vectors.
    // RAID-6 the same, with P and Q.
    for (level, members, data_chunks) in [(Level::Raid5, 4, 3), (Level::Raid6, 6, 4)] {
        let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, 9);
        let mut array = open(&mut h);
        let written =
            payload(data_chunks).slice(..(data_chunks as usize * 2 - 1) * CHUNK as usize / 2);
        let first = parity_writes(&mut h, &mut array, 1, data_chunks * CHUNK, &written);
        let again = Bytes::from(vec![0xC3; written.len()]);
        let second = parity_writes(&mut h, &mut array, 2, data_chunks * CHUNK, &again);
        let parity_members = members - data_chunks as usize;
        for parity in [&first, &second] {
            assert_eq!(parity.len(), parity_members, "{level:?}: {parity:?}");
            for &(at, len) in parity {
                assert_eq!(len, CHUNK as usize, "{level:?}");
                assert_eq!(
                    at % eraid_buffers::DIRECT_ALIGN_BYTES,
                    0,
                    "{level:?}: {at:#x}"
                );
                assert!(
                    !h.read_buffer_spans.iter().any(|s| s.contains(&at)),
                    "{level:?}: parity is not the read buffer"
                );
            }
        }
        assert!(
            second.iter().any(|p| first.contains(p)),
            "{level:?}: the second write's parity reuses a pooled buffer"
        );
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{level:?}");
        let read = call(
            &mut h,
            &mut array,
            3,
            UserOp::Read {
                offset_bytes: data_chunks * CHUNK,
                len_bytes: again.len(),
            },
        );
        assert_eq!(read.expect("read").expect("bytes"), again[..], "{level:?}");
    }
}

#[test]
fn partial_stripe_parity_is_left_for_the_writing_thread_to_compute() {
    // Read-modify-write's parity update and reconstruct-write's encode
    // leave the core as recipes too (computed by whoever performs the
    // parity write, outside the driver's engine lock), for RAID-5 and
    // RAID-6; the members still end up consistent and the data reads back.
    // (level, members, chunks written whole, bytes written, reads the
    // method needs: 1 + parity for read-modify-write, the data shards not
    // written for reconstruct-write.)
    let half = CHUNK as usize / 2;
    for (level, members, bytes, reads) in [
        (Level::Raid5, 6, half, 2),                      // read-modify-write
        (Level::Raid6, 8, half, 3),                      // read-modify-write
        (Level::Raid5, 4, 2 * CHUNK as usize, 1),        // reconstruct-write
        (Level::Raid6, 6, 3 * CHUNK as usize + half, 1), // reconstruct-write
    ] {
        let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
        let parity_count = if level == Level::Raid6 { 2 } else { 1 };
        let data_chunks = (members - parity_count) as u64;
        let mut h = MemHarness::create(g, 11);
        let mut array = open(&mut h);
        // Old contents first, so the update has something to change.
        let old: Bytes = (0..data_chunks * CHUNK)
            .map(|i| (i % 241) as u8 ^ 0xA5)
            .collect::<Vec<u8>>()
            .into();
        let written = call(
            &mut h,
            &mut array,
            1,
            UserOp::Write {
                offset_bytes: 0,
                data: old.clone(),
                fua: false,
            },
        );
        assert_eq!(written, Ok(None));
        let new = payload(4).slice(..bytes);
        h.submit(
            &mut array,
            2,
            UserOp::Write {
                offset_bytes: 0,
                data: new.clone(),
                fua: false,
            },
        );
        let mut encoded_when_issued = BTreeMap::new();
        let mut member_reads = std::collections::BTreeSet::new();
        loop {
            for io in h.inflight_ios() {
                match (&io.op, io.cause) {
                    (DeviceOp::Write { data, .. }, IoCause::User) => {
                        // Only is_encoded(): reading the bytes computes them.
                        encoded_when_issued
                            .entry(io.id)
                            .or_insert(data.is_encoded());
                    }
                    (DeviceOp::Read { .. }, IoCause::User) => {
                        member_reads.insert(io.id);
                    }
                    _ => {}
                }
            }
            if !h.step(&mut array) {
                break;
            }
        }
        let case = format!("{level:?} x{members}, {bytes} bytes");
        assert_eq!(
            h.take_reply(2).expect("answered").result,
            Ok(None),
            "{case}"
        );
        assert_eq!(member_reads.len(), reads, "{case}: not the method meant");
        let deferred = encoded_when_issued.values().filter(|&&e| !e).count();
        assert_eq!(
            deferred, parity_count,
            "{case}: parity computed by the core: {encoded_when_issued:?}"
        );
        assert_eq!(check(&mut h, &mut array, false), (0, 0), "{case}");
        let mut expected = old.to_vec();
        expected[..bytes].copy_from_slice(&new);
        let read = call(
            &mut h,
            &mut array,
            3,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes: expected.len(),
            },
        );
        assert_eq!(read.expect("read").expect("bytes"), expected[..], "{case}");
    }
}

/// A finished op's box and read slots are kept for the next op (see
/// `create_op`), but nothing of what it wrote: once a write is answered,
/// the caller's buffer is the caller's alone again (so its pool can take
/// it back), on every level and for whole and partial stripes. The array
/// is driven by hand here: members that take writes without keeping them.
#[test]
fn an_answered_write_leaves_no_slice_of_the_users_buffer_in_the_array() {
    use eraid_core::io::{IoCompletion, Machine, RequestId, UserRequest};
    for (level, layout) in [
        (Level::Raid0, ParityLayout::None),
        (Level::Raid10, ParityLayout::Near2),
        (Level::Raid5, ParityLayout::LeftSymmetric),
        (Level::Raid6, ParityLayout::LeftSymmetric),
    ] {
        let g = geometry(level, layout, 4, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, 13);
        let mut array = open(&mut h);
        let now = h.now;
        for (id, chunks, offset_bytes) in [(1, 6, 0), (2, 1, CHUNK + 1024)] {
            let bytes = if chunks == 1 {
                Bytes::from(payload(1)[..2048].to_vec())
            } else {
                payload(chunks)
            };
            array.handle_request(
                now,
                UserRequest {
                    id: RequestId(id),
                    op: UserOp::Write {
                        offset_bytes,
                        data: bytes.clone(),
                        fua: false,
                    },
                },
            );
            let mut answered = false;
            while !answered {
                let io = array.poll_io().expect("the write waits for device I/O");
                let completion = match io.op {
                    DeviceOp::Read { len_bytes, .. } => {
                        IoCompletion::Read(vec![0u8; len_bytes].into())
                    }
                    _ => IoCompletion::Done,
                };
                array.handle_completion(now, io.id, completion);
                while let Some(reply) = array.poll_reply() {
                    assert_eq!(reply.id, RequestId(id));
                    assert_eq!(reply.result, Ok(None), "{level:?}: write {id} succeeded");
                    answered = true;
                }
            }
            assert!(
                bytes.is_unique(),
                "{level:?}: the array still holds a slice of write {id}'s buffer after answering it"
            );
        }
    }
}

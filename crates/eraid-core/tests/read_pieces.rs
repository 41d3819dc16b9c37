//! A read's bytes reach the user without being copied: the reply is made of
//! the buffers the members' reads landed in (pooled and aligned in a real
//! driver, as in the harness), one piece per chunk, never joined. And a
//! read-modify-write turns the old parity's read buffer into the new
//! parity in place, so an O_DIRECT member writes it with no bounce copy.
//! Before, a read spanning chunks or stripes was joined by a copy, and
//! parity went out in an unaligned vector. A degraded read passes the
//! surviving members' buffers on too; only the missing chunk is new bytes.

mod common;
use common::lifecycle::admin_ok;
use common::*;
use eraid_buffers::DIRECT_ALIGN_BYTES;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{AdminCommand, Bytes, DeviceOp, IoCause, UserOp};
use eraid_core::testing::MemHarness;

const MEMBER_CHUNKS: u64 = 16;

fn pattern(len_bytes: usize, seed: u8) -> Bytes {
    (0..len_bytes)
        .map(|i| (i % 251) as u8 ^ seed)
        .collect::<Vec<u8>>()
        .into()
}

/// Reads and returns the reply's bytes, as pieces.
fn read_pieces_of(
    h: &mut MemHarness,
    array: &mut eraid_core::Array,
    offset_bytes: u64,
    len_bytes: usize,
) -> eraid_core::io::ReadData {
    h.submit(
        array,
        2,
        UserOp::Read {
            offset_bytes,
            len_bytes,
        },
    );
    h.run(array);
    h.take_reply(2)
        .expect("read answered")
        .result
        .expect("read succeeded")
        .expect("bytes")
}

fn within_a_read_buffer(h: &MemHarness, piece: &[u8]) -> bool {
    let start = piece.as_ptr() as usize;
    h.read_buffer_spans
        .iter()
        .any(|span| span.start <= start && start + piece.len() <= span.end)
}

#[test]
fn a_read_over_chunks_and_stripes_is_the_members_buffers_not_a_copy() {
    for (level, layout) in [
        (Level::Raid0, ParityLayout::None),
        (Level::Raid5, ParityLayout::LeftSymmetric),
        (Level::Raid6, ParityLayout::LeftSymmetric),
    ] {
        let g = geometry(level, layout, 5, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, 11);
        let mut array = open(&mut h);
        // Seven chunks from the middle of chunk 1: eight pieces, over
        // several stripes at every level here.
        let offset_bytes = CHUNK + CHUNK / 2;
        let data = pattern(7 * CHUNK as usize, 0x5A);
        let wrote = call(
            &mut h,
            &mut array,
            1,
            UserOp::Write {
                offset_bytes,
                data: data.clone(),
                fua: false,
            },
        );
        assert_eq!(wrote, Ok(None), "{level:?}: the write");
        let read = read_pieces_of(&mut h, &mut array, offset_bytes, data.len());
        assert_eq!(read, data[..], "{level:?}: read back");
        assert_eq!(
            read.pieces().len(),
            8,
            "{level:?}: one piece per chunk touched"
        );
        for piece in read.pieces() {
            assert!(
                within_a_read_buffer(&h, piece),
                "{level:?}: a piece of {} bytes was copied, not passed on",
                piece.len()
            );
        }
    }
}

#[test]
fn read_modify_write_parity_goes_out_in_its_aligned_read_buffer() {
    for (level, parity_members) in [(Level::Raid5, 1), (Level::Raid6, 2)] {
        // Eight members: read-modify-write reads fewer than reconstruct-write.
        let g = geometry(level, ParityLayout::LeftSymmetric, 8, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, 5);
        let mut array = open(&mut h);
        // One sector of one chunk: read-modify-write.
        let data = pattern(512, 0x33);
        h.submit(
            &mut array,
            1,
            UserOp::Write {
                offset_bytes: 0,
                data: data.clone(),
                fua: false,
            },
        );
        let user_span = data.as_ptr() as usize..data.as_ptr() as usize + data.len();
        let mut parity_writes = Vec::new();
        loop {
            for io in h.inflight_ios() {
                if let (DeviceOp::Write { data, .. }, IoCause::User) = (&io.op, io.cause) {
                    let at = data.as_ptr() as usize;
                    if !user_span.contains(&at) {
                        parity_writes.push((io.id, at, data.len(), within_a_read_buffer(&h, data)));
                    }
                }
            }
            if !h.step(&mut array) {
                break;
            }
        }
        assert_eq!(h.take_reply(1).expect("answered").result, Ok(None));
        parity_writes.sort();
        parity_writes.dedup();
        assert_eq!(
            parity_writes.len(),
            parity_members,
            "{level:?}: {parity_writes:?}"
        );
        for (_, at, len_bytes, in_read_buffer) in parity_writes {
            assert!(
                in_read_buffer,
                "{level:?}: parity of {len_bytes} bytes was copied"
            );
            assert_eq!(at % DIRECT_ALIGN_BYTES, 0, "{level:?}: parity is aligned");
        }
        let read = call(
            &mut h,
            &mut array,
            2,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes: 512,
            },
        );
        assert_eq!(read, Ok(Some(data.to_vec())), "{level:?}: read back");
        assert_eq!(
            check(&mut h, &mut array, false),
            (0, 0),
            "{level:?}: parity consistent"
        );
    }
}

#[test]
fn a_degraded_read_passes_the_surviving_members_buffers_on() {
    for (level, members) in [(Level::Raid5, 5), (Level::Raid6, 6)] {
        let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
        let data_chunks = members - if level == Level::Raid5 { 1 } else { 2 };
        let mut h = MemHarness::create(g, 13);
        let mut array = open(&mut h);
        // Stripe 0's data; the member of its chunk 0 fails.
        let failed = eraid_core::layout::layout_for(&g).stripe_map(0).data[0].member;
        let data = pattern(data_chunks * CHUNK as usize, 0x6C);
        let wrote = call(
            &mut h,
            &mut array,
            1,
            UserOp::Write {
                offset_bytes: 0,
                data: data.clone(),
                fua: false,
            },
        );
        assert_eq!(wrote, Ok(None), "{level:?}: the write");
        admin_ok(
            &mut h,
            &mut array,
            AdminCommand::FailMember { slot: failed },
        );
        h.run(&mut array);
        let read = read_pieces_of(&mut h, &mut array, 0, data.len());
        assert_eq!(read, data[..], "{level:?}: read back, chunk 0 rebuilt");
        assert_eq!(
            read.pieces().len(),
            data_chunks,
            "{level:?}: one piece per chunk"
        );
        for (chunk, piece) in read.pieces().iter().enumerate() {
            assert_eq!(
                within_a_read_buffer(&h, piece),
                chunk != 0,
                "{level:?}: chunk {chunk} (member {failed} failed, holding chunk 0): \
                 a surviving member's piece must be its read buffer, the rebuilt one new"
            );
        }
    }
}

//! The write-intent bit of a region must be on disk before a write lands
//! there. A bitmap write that clears the bit (lazy clearing after idle) may
//! reach the disk at any moment while it is in flight: a write arriving
//! meanwhile must wait for the bit to be written again, however many
//! writes arrive. (Found by the rebuild crash test: the second of two such
//! writes went ahead, and a crash tore it with no bit to resync it.)

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{DeviceIo, DeviceOp, IoCause, Machine, UserOp};
use eraid_core::metadata::BITMAP_SLOTS_BYTES;
use eraid_core::testing::MemHarness;

fn is_bitmap_write(io: &DeviceIo) -> bool {
    matches!(&io.op, DeviceOp::Write { offset_bytes, .. }
        if io.cause == IoCause::Metadata && BITMAP_SLOTS_BYTES.contains(offset_bytes))
}

fn write(offset_bytes: u64, byte: u8) -> UserOp {
    UserOp::Write {
        offset_bytes,
        data: vec![byte; 4096].into(),
        fua: false,
    }
}

#[test]
fn writes_wait_while_a_bitmap_write_clearing_their_region_is_in_flight() {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, 32);
    let mut h = MemHarness::create(g, 7);
    let mut array = open(&mut h);
    call(&mut h, &mut array, 1, write(0, 1)).expect("first write");
    // Idle past the clearing delay: the clean cycle flushes, then writes
    // the bitmap with the region cleared. Hold those bitmap writes.
    h.now = h.now.plus_ms(200);
    array.handle_tick(h.now);
    h.collect(&mut array);
    while !h.inflight_ios().iter().any(is_bitmap_write) {
        assert!(h.step(&mut array), "the clean cycle writes the bitmap");
    }
    while h.step_where(&mut array, |io| !is_bitmap_write(io)) {}
    assert!(
        array.status_json()["dirty_regions"] == 0,
        "cleared in memory"
    );
    // Two writes to the region arrive while the clearing write is out.
    h.submit(&mut array, 2, write(8192, 2));
    h.submit(&mut array, 3, write(16384, 3));
    while h.step_where(&mut array, |io| !is_bitmap_write(io)) {}
    let user_writes_out = h
        .inflight_ios()
        .iter()
        .filter(|io| io.cause == IoCause::User)
        .count();
    assert_eq!(user_writes_out, 0, "no user I/O may be issued yet");
    assert!(
        h.take_reply(2).is_none() && h.take_reply(3).is_none(),
        "a write went ahead while its bit was being cleared on disk"
    );
    // Once the clearing write is done, the bit is set again (and flushed)
    // before either write goes on.
    h.run(&mut array);
    for id in [2, 3] {
        h.take_reply(id)
            .expect("answered")
            .result
            .expect("write ok");
    }
    let back = call(
        &mut h,
        &mut array,
        4,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: 20480,
        },
    )
    .unwrap()
    .unwrap();
    assert!(back[..4096].iter().all(|&b| b == 1));
    assert!(back[8192..12288].iter().all(|&b| b == 2));
    assert!(back[16384..20480].iter().all(|&b| b == 3));
}

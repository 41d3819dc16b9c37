//! The write-back cache keeps user writes in order with a destage that
//! read a block from disk while newer writes replaced it in the cache
//! (DST seed 20575: a trim and a later write were undone by older data).
//! The destage must not cache what it read as a clean copy then: a later
//! partial write would merge into that stale copy and its destage would
//! put the old data back over the trim.

mod common;
use common::*;
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES, SECTOR_BYTES};
use eraid_core::io::{DeviceOp, IoCause, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};

const CACHE_CHUNK: u64 = 32 * 1024;
const BLOCK: u64 = 4096;
/// The first block of the stripe's second data chunk: a destage of the
/// first block reads it (reconstruct-write) and caches it clean.
const READ_BLOCK_AT: u64 = CACHE_CHUNK;

fn cached_options(policy: CachePolicy, geometry: &Geometry) -> ArrayOptions {
    let cache = CacheConfig {
        policy,
        size_bytes: 2 * geometry.member_count as u64 * CACHE_CHUNK + 256 * 1024,
        ..CacheConfig::default()
    };
    cache.validate(geometry).expect("valid cache config");
    ArrayOptions { cache, ..options() }
}

fn write(offset_bytes: u64, len_bytes: u64, byte: u8) -> UserOp {
    UserOp::Write {
        offset_bytes,
        data: vec![byte; len_bytes as usize].into(),
        fua: false,
    }
}

fn trim_during_destage_read_stays_trimmed(policy: CachePolicy) {
    let geometry = Geometry::new(
        Level::Raid5,
        ParityLayout::LeftSymmetric,
        3,
        CACHE_CHUNK,
        METADATA_BYTES + 8 * CACHE_CHUNK,
    )
    .unwrap();
    let mut h = MemHarness::create(geometry, 3);
    // Old data on disk under the block, not cached.
    let mut array = open(&mut h);
    call(&mut h, &mut array, 1, write(READ_BLOCK_AT, BLOCK, 0x11)).expect("old data written");
    call(&mut h, &mut array, 2, UserOp::Flush).expect("flushed");
    close(&mut h, &mut array);
    let options = cached_options(policy, &geometry);
    let mut array = Array::open(h.assemble().unwrap(), options, h.now);
    h.run(&mut array);
    // A cached write to the stripe's first block; the flush destages it,
    // reading the other data block from disk.
    call_cached(&mut h, &mut array, 3, write(0, BLOCK, 0x22));
    h.submit(&mut array, 4, UserOp::Flush);
    let is_destage_read = |io: &eraid_core::io::DeviceIo| {
        io.cause == IoCause::Destage && matches!(io.op, DeviceOp::Read { .. })
    };
    loop {
        h.collect(&mut array);
        if h.inflight_ios().iter().any(is_destage_read) {
            break;
        }
        assert!(
            h.step_where(&mut array, |io| !is_destage_read(io)),
            "the destage reads the other block"
        );
    }
    // While that read is in flight: the block is written (cached), then
    // trimmed (written through, waiting for the destage's stripe lock).
    call_cached(&mut h, &mut array, 5, write(READ_BLOCK_AT, BLOCK, 0x33));
    h.submit(
        &mut array,
        6,
        UserOp::Trim {
            offset_bytes: READ_BLOCK_AT,
            len_bytes: BLOCK,
        },
    );
    while h.step_where(&mut array, is_destage_read) {}
    // The read is in; a partial write to the block before the trim lands
    // (cached only if the destage cached the block it read).
    h.submit(&mut array, 7, write(READ_BLOCK_AT, SECTOR_BYTES, 0x44));
    h.run(&mut array);
    for id in [4, 6, 7] {
        h.take_reply(id)
            .expect("answered")
            .result
            .expect("succeeded");
    }
    call(&mut h, &mut array, 8, UserOp::Flush).expect("flushed");
    let read = UserOp::Read {
        offset_bytes: READ_BLOCK_AT,
        len_bytes: BLOCK as usize,
    };
    let block = call(&mut h, &mut array, 9, read).unwrap().unwrap();
    let sector = SECTOR_BYTES as usize;
    assert!(block[..sector].iter().all(|&b| b == 0x44), "the last write");
    assert!(
        block[sector..].iter().all(|&b| b == 0),
        "the trim, not older data: {:?}",
        &block[sector..sector + 8]
    );
    // And on the members, read without the cache.
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    let read = UserOp::Read {
        offset_bytes: READ_BLOCK_AT,
        len_bytes: BLOCK as usize,
    };
    let on_disk = call(&mut h, &mut array, 10, read).unwrap().unwrap();
    assert_eq!(on_disk, block);
    close(&mut h, &mut array);
}

/// Submits a write the cache acknowledges at once (no device I/O needed).
fn call_cached(h: &mut MemHarness, array: &mut Array, id: u64, op: UserOp) {
    h.submit(array, id, op);
    h.collect(array);
    h.take_reply(id)
        .unwrap_or_else(|| panic!("cached write {id} is acknowledged at once"))
        .result
        .expect("cached write ok");
}

#[test]
fn a_trim_while_a_stripe_destage_reads_is_not_undone_by_the_read_data() {
    trim_during_destage_read_stays_trimmed(CachePolicy::Sc);
}

#[test]
fn a_trim_while_a_page_group_destage_reads_is_not_undone_by_the_read_data() {
    trim_during_destage_read_stays_trimmed(CachePolicy::Pbgc);
}

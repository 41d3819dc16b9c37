//! A read repair rewrites only the sectors that fail (DST seeds 11339 and
//! 17853, CRS m=2). A crash while degraded may leave a stripe's parity
//! stale (the write hole); a write acknowledged after it updates the data
//! chunk and the parity by difference, so the parity stays stale. A read
//! error elsewhere in that chunk was repaired by reconstructing the range
//! from the stale parity and rewriting all of it (for CRS, whose parity
//! mixes whole chunks, the whole chunk): the acknowledged write's readable
//! sectors were overwritten. The member's readable sectors are the newest
//! it has; only the failing ones may be rebuilt from parity.

mod common;
use common::*;
use eraid_core::geometry::{Level, SECTOR_BYTES};
use eraid_core::io::{AdminCommand, UserOp};
use eraid_core::testing::{BadSectorKind, BadSectors, MemHarness};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 8;
const SECTOR: usize = SECTOR_BYTES as usize;

#[test]
fn a_read_repair_from_stale_parity_keeps_the_readable_sectors() {
    let parity_shapes = shapes()
        .into_iter()
        .filter(|(level, _, _)| level.redundancy() > 0 && *level != Level::Raid10);
    for (seed, (level, layout, members)) in parity_shapes.enumerate() {
        let seed = seed as u64;
        let what = format!("{} {layout:?} on {members}", level.name());
        let g = geometry(level, layout, members, MEMBER_CHUNKS);
        let mut h = MemHarness::create(g, seed);
        let mut array = open(&mut h);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut model = fill(&mut h, &mut array, &mut rng);
        // A write acknowledged, into data chunk 0's first 2 sectors.
        let written: Vec<u8> = (0..2 * SECTOR).map(|_| rng.gen()).collect();
        call(
            &mut h,
            &mut array,
            2,
            UserOp::Write {
                offset_bytes: 0,
                data: written.clone().into(),
                fua: true,
            },
        )
        .expect("write");
        model[..written.len()].copy_from_slice(&written);
        // Then stripe 0's first parity shard goes stale, as a crash while
        // degraded leaves it when a write's data landed and its parity did
        // not (a write by difference since keeps it stale; one that
        // recomputes the parity, as the level may choose, would not).
        let map = eraid_core::layout::layout_for(&g).stripe_map(0);
        let chunk = g.chunk_bytes as usize;
        let parity = map.parity[0];
        let parity_at = (g.data_offset_bytes + parity.member_chunk * g.chunk_bytes) as usize;
        let stale: Vec<u8> = (0..chunk).map(|_| rng.gen()).collect();
        let member = h.members[parity.member].as_mut().expect("parity member");
        member.current[parity_at..parity_at + chunk].copy_from_slice(&stale);
        member.durable[parity_at..parity_at + chunk].copy_from_slice(&stale);
        // Sectors 4..7 of data chunk 0 fail their reads from now on.
        let data0 = map.data[0];
        let bad_sectors = 4..7;
        h.bad_sectors = vec![BadSectors {
            device: data0.member,
            offset_bytes: g.data_offset_bytes
                + data0.member_chunk * g.chunk_bytes
                + bad_sectors.start as u64 * SECTOR_BYTES,
            len_bytes: bad_sectors.len() as u64 * SECTOR_BYTES,
            kind: BadSectorKind::HealsOnWrite,
        }];
        let first = read_range(&mut h, &mut array, 3, 0, chunk);
        let bad_bytes = bad_sectors.start * SECTOR..bad_sectors.end * SECTOR;
        // What the failing sectors held is lost to the stale parity (the
        // write hole); every other sector reads what was written.
        for sector in (0..chunk / SECTOR).filter(|s| !bad_sectors.contains(s)) {
            let bytes = sector * SECTOR..(sector + 1) * SECTOR;
            assert!(
                first[bytes.clone()] == model[bytes],
                "{what}: readable sector {sector} of data chunk 0 was overwritten by the repair"
            );
        }
        assert!(
            h.bad_sectors.is_empty(),
            "{what}: the bad sectors were not rewritten"
        );
        // What the read returned is what the member now holds.
        let again = read_range(&mut h, &mut array, 4, 0, chunk);
        assert!(
            again == first,
            "{what}: a second read differs from the repaired one"
        );
        assert!(
            first[bad_bytes.clone()] != model[bad_bytes],
            "{what}: the test did not make the parity stale"
        );
        let status = array.status_json()["members"][data0.member].clone();
        assert_eq!(status["state"], "active", "{what}: {status}");
        assert_eq!(status["read_errors_corrected"], 1, "{what}: {status}");
        // The sectors probed one by one are the same error, counted once.
        assert_eq!(status["read_errors_recent"], 1, "{what}: {status}");
        close(&mut h, &mut array);
    }
}

/// DST seed 353 (found with the sector probes): a read error's member is
/// failed, and a spare takes its slot, before the repair starts. The
/// spare holds none of the stripe yet, so its sectors must not be probed
/// as the bad shard's: the op plans again without it.
#[test]
fn a_repair_whose_member_a_spare_replaced_plans_again() {
    let g = geometry(
        Level::Raid5,
        eraid_core::geometry::ParityLayout::LeftSymmetric,
        4,
        MEMBER_CHUNKS,
    );
    let mut h = MemHarness::create(g, 353);
    let mut array = open(&mut h);
    let mut rng = ChaCha8Rng::seed_from_u64(353);
    let model = fill(&mut h, &mut array, &mut rng);
    common::lifecycle::add_spare(&mut h, &mut array);
    h.run(&mut array);
    let map = eraid_core::layout::layout_for(&g).stripe_map(0);
    let data0 = map.data[0];
    h.bad_sectors = vec![BadSectors {
        device: data0.member,
        offset_bytes: g.data_offset_bytes + data0.member_chunk * g.chunk_bytes,
        len_bytes: g.chunk_bytes,
        kind: BadSectorKind::HealsOnWrite,
    }];
    // Stripe 0's data: one read per data member.
    let len_bytes = g.data_per_stripe() * g.chunk_bytes as usize;
    h.submit(
        &mut array,
        2,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes,
        },
    );
    assert!(h.step_where(&mut array, |io| io.member == data0.member));
    assert!(h.inflight() > 0, "the other data reads are still in flight");
    common::lifecycle::admin_ok(
        &mut h,
        &mut array,
        AdminCommand::FailMember { slot: data0.member },
    );
    h.run(&mut array);
    let got = h
        .take_reply(2)
        .expect("read answered")
        .result
        .expect("read ok")
        .expect("read data");
    assert!(
        got == model[..len_bytes],
        "the read returned other bytes than stripe 0 holds"
    );
    assert_eq!(read_all(&mut h, &mut array, 3), model);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

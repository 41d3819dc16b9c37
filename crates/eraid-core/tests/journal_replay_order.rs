//! Requests that arrive while the journal's replayed writes are still in
//! flight wait for them (DST seed 802 and ten others, cached seeds with a
//! journal and crashes). The replay submits the acknowledged writes the
//! crash caught in the cache again, through the journal; a read that
//! arrived just after the array opened was served from the members before
//! the replayed write was in the cache, and returned the old data.

mod common;
use common::*;
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::UserOp;
use eraid_core::testing::{MemHarness, MemJournal};
use eraid_core::{Array, ArrayOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CHUNK_BYTES: u64 = 16 * 1024;
const WRITTEN_BYTES: usize = 240 * 1024;

fn cached_options(h: &mut MemHarness, geometry: &Geometry, policy: CachePolicy) -> ArrayOptions {
    let cache = CacheConfig {
        policy,
        size_bytes: 2 * geometry.member_count as u64 * CHUNK_BYTES + 256 * 1024,
        destage_window_units: 4,
        ..CacheConfig::default()
    };
    cache.validate(geometry).expect("valid cache config");
    journaled_options(h, cache)
}

/// A 4-member RAID-5 filled, then served with a small journal and `policy`,
/// written `WRITTEN_BYTES` at offset 0 (acknowledged, mostly only in the
/// cache), and crashed: the harness, its geometry, the data the array
/// must hold, and what was written last.
fn written_then_crashed(
    seed: u64,
    policy: CachePolicy,
) -> (MemHarness, Geometry, Vec<u8>, Vec<u8>) {
    let geometry = Geometry::new(
        Level::Raid5,
        ParityLayout::LeftSymmetric,
        4,
        CHUNK_BYTES,
        METADATA_BYTES + 16 * CHUNK_BYTES,
    )
    .unwrap();
    let mut h = MemHarness::create(geometry, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut array = open(&mut h);
    let mut model = fill(&mut h, &mut array, &mut rng);
    close(&mut h, &mut array);
    // Small: the replay's records do not fit beside the old ones until a
    // checkpoint retires those, so the replayed writes wait a while.
    h.journal = Some(MemJournal::fresh(512 << 10, 7, &format!("array-{seed}")));
    let options = cached_options(&mut h, &geometry, policy);
    let mut array = Array::open(h.assemble().unwrap(), options, h.now);
    h.run(&mut array);
    let written: Vec<u8> = (0..WRITTEN_BYTES).map(|_| rng.gen()).collect();
    for (n, block) in written.chunks(4096).enumerate() {
        h.submit(
            &mut array,
            10 + n as u64,
            UserOp::Write {
                offset_bytes: n as u64 * 4096,
                data: block.to_vec().into(),
                fua: false,
            },
        );
    }
    h.run(&mut array);
    for n in 0..written.len() / 4096 {
        let reply = h.take_reply(10 + n as u64).expect("write answered");
        reply.result.expect("write");
    }
    model[..written.len()].copy_from_slice(&written);
    h.crash();
    drop(array);
    (h, geometry, model, written)
}

#[test]
fn a_request_after_the_restart_sees_the_replayed_writes() {
    for (seed, policy) in [CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt]
        .into_iter()
        .enumerate()
    {
        let (mut h, geometry, model, written) = written_then_crashed(seed as u64, policy);
        let options = cached_options(&mut h, &geometry, policy);
        let mut array = Array::open(h.assemble().unwrap(), options, h.now);
        // A read arrives as soon as the array serves.
        while array.status_json()["phase"] == "opening" {
            assert!(h.step(&mut array), "stuck opening");
        }
        let replayed = array.journal_counters().expect("journal").replayed_records;
        assert!(replayed > 0, "{policy:?}: nothing replayed");
        let got = call(
            &mut h,
            &mut array,
            3,
            UserOp::Read {
                offset_bytes: 0,
                len_bytes: written.len(),
            },
        )
        .expect("read")
        .expect("bytes");
        assert!(
            got == written,
            "{policy:?}: a read after the restart missed the replayed write"
        );
        assert_eq!(read_all(&mut h, &mut array, 4), model, "{policy:?}");
        close(&mut h, &mut array);
    }
}

/// DST seed 5292: a second crash during the replay loses nothing. The
/// replay appended each replayed write again; with the log more than half
/// full of their old records a checkpoint ran meanwhile and retired old
/// records whose new copies still waited for room, so a crash then lost
/// acknowledged writes. Replayed writes now keep their records.
#[test]
fn a_crash_during_the_replay_loses_no_acknowledged_write() {
    let mut lost = Vec::new();
    for steps in (0..60).step_by(3) {
        let seed = steps as u64;
        let policy = [CachePolicy::Pbgc, CachePolicy::Sc, CachePolicy::MscCt][steps % 3];
        let (mut h, geometry, model, _) = written_then_crashed(seed, policy);
        // Restart, and crash again `steps` I/Os into the replay.
        let options = cached_options(&mut h, &geometry, policy);
        let mut array = Array::open(h.assemble().unwrap(), options, h.now);
        for _ in 0..steps {
            if !h.step(&mut array) {
                break;
            }
        }
        h.crash();
        drop(array);
        let options = cached_options(&mut h, &geometry, policy);
        let mut array = Array::open(h.assemble().unwrap(), options, h.now);
        h.run(&mut array);
        if read_all(&mut h, &mut array, 3) != model {
            lost.push(steps);
        }
        close(&mut h, &mut array);
    }
    assert!(
        lost.is_empty(),
        "acknowledged writes lost crashing after {lost:?} steps"
    );
}

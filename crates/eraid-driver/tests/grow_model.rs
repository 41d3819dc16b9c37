//! Model-based test on the real driver: threads issue random reads, writes
//! and flushes against a reference model while each strategy grows real
//! member files (RAID-0 4 -> 5 and 4 -> 6; RAID-5 3 -> 4 and 4 -> 6 over the
//! four parity layouts); every read matches, parity checks clean afterwards,
//! and the grown array reassembles with the same bytes.

mod grow_support;
use grow_support::*;

use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::{ReshapeConfig, ReshapeStrategy};
use eraid_core::io::AdminCommand;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BLOCK: u64 = 16 << 10;
const THREADS: u64 = 4;

fn config(strategy: ReshapeStrategy) -> ReshapeConfig {
    ReshapeConfig {
        // Small windows: many windows and checkpoints in a 9 MiB member.
        aggregation_bytes: 128 << 10,
        md_window_bytes: 512 << 10,
        sliding_window_bytes_max: 1 << 20,
        ..fast(strategy)
    }
}

fn model_during_growth(
    level: Level,
    layout: ParityLayout,
    from: usize,
    add: usize,
    strategy: ReshapeStrategy,
    seed: u64,
) {
    let dir = tempfile::tempdir().unwrap();
    let paths = create_with(dir.path(), level, layout, from);
    let engine = start(&paths);
    let handle = engine.handle();
    wait_until_open(&handle);
    let capacity = status(&handle)["capacity_bytes"].as_u64().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let initial: Vec<u8> = (0..capacity).map(|_| rng.gen()).collect();
    handle.write(0, initial.clone()).unwrap();
    let model = Arc::new(Mutex::new(initial));
    let added: Vec<_> = (0..add)
        .map(|i| blank(dir.path(), &format!("new{i}"), MEMBER_BYTES))
        .collect();
    let joining = added
        .iter()
        .enumerate()
        .map(|(i, path)| grow_member(path, &format!("new-{i}")))
        .collect();
    handle
        .grow(joining, config(strategy))
        .expect("growth starts");
    let done = Arc::new(AtomicBool::new(false));
    let blocks = capacity / BLOCK;
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let handle = handle.clone();
            let model = Arc::clone(&model);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(seed * 31 + t);
                let mut ops = 0u64;
                let mut ops_during = 0u64;
                // Each thread owns the blocks b with b % THREADS == t, so the
                // model is well defined under concurrency.
                while !done.load(Ordering::Relaxed) || ops < 50 {
                    let block = rng.gen_range(0..blocks / THREADS) * THREADS + t;
                    let sectors = BLOCK / SECTOR_BYTES;
                    let first = rng.gen_range(0..sectors);
                    let count = rng.gen_range(1..=sectors - first);
                    let offset = block * BLOCK + first * SECTOR_BYTES;
                    let len = (count * SECTOR_BYTES) as usize;
                    match rng.gen_range(0..10) {
                        0..=4 => {
                            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                            handle
                                .write(offset, data.clone())
                                .expect("write during growth");
                            model.lock().unwrap()[offset as usize..offset as usize + len]
                                .copy_from_slice(&data);
                        }
                        5..=8 => {
                            let got = handle.read(offset, len).expect("read during growth");
                            let want = model.lock().unwrap()
                                [offset as usize..offset as usize + len]
                                .to_vec();
                            assert!(
                                got == want,
                                "{strategy:?}: read {offset}+{len} differs during growth"
                            );
                        }
                        _ => handle.flush().expect("flush during growth"),
                    }
                    ops += 1;
                    ops_during += u64::from(!done.load(Ordering::Relaxed));
                }
                ops_during
            })
        })
        .collect();
    let grown = wait_done(&handle);
    done.store(true, Ordering::Relaxed);
    let ops_during: u64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    assert!(ops_during > 0, "no user I/O overlapped the growth");
    assert_eq!(grown["member_count"], (from + add) as u64, "{grown:#}");
    let expected = model.lock().unwrap().clone();
    assert!(
        handle.read(0, capacity as usize).unwrap() == expected,
        "{strategy:?}: data after growth"
    );
    if level == Level::Raid5 {
        handle
            .admin(AdminCommand::StartCheck { repair: false })
            .unwrap();
        let started = Instant::now();
        loop {
            let s = status(&handle);
            if s["activity"]["state"] == "done" {
                assert_eq!(
                    s["activity"]["mismatches"], 0,
                    "{strategy:?} {layout:?}: parity after growth"
                );
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "check did not finish"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    assert_eq!(engine.close(), eraid_driver::CloseOutcome::Closed);
    let mut all = paths;
    all.extend(added);
    let engine = start(&all);
    let handle = engine.handle();
    wait_until_open(&handle);
    assert!(
        handle.read(0, capacity as usize).unwrap() == expected,
        "reassembled after growth"
    );
    assert_eq!(engine.close(), eraid_driver::CloseOutcome::Closed);
}

#[test]
fn raid0_strategies_under_concurrent_load() {
    for (i, strategy) in [
        ReshapeStrategy::RoundRobin,
        ReshapeStrategy::SemiRr,
        ReshapeStrategy::FastScale,
    ]
    .into_iter()
    .enumerate()
    {
        for add in [1, 2] {
            model_during_growth(
                Level::Raid0,
                ParityLayout::None,
                4,
                add,
                strategy,
                i as u64 * 10 + add as u64,
            );
        }
    }
}

#[test]
fn raid5_strategies_under_concurrent_load() {
    let layouts = [
        ParityLayout::LeftAsymmetric,
        ParityLayout::LeftSymmetric,
        ParityLayout::RightAsymmetric,
        ParityLayout::RightSymmetric,
    ];
    for (i, strategy) in [ReshapeStrategy::Alv, ReshapeStrategy::MdReshape]
        .into_iter()
        .enumerate()
    {
        for (j, layout) in layouts.into_iter().enumerate() {
            // Alternate the shapes over the layouts to keep the run short.
            let (from, add) = if j % 2 == 0 { (3, 1) } else { (4, 2) };
            model_during_growth(
                Level::Raid5,
                layout,
                from,
                add,
                strategy,
                (i * 10 + j) as u64,
            );
        }
    }
}

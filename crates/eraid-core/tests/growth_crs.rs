//! Scale-CRS and EPU growth of CRS arrays: random concurrent reads and
//! writes against a flat model during the growth (in-memory driver with
//! random completion order), then every byte, a clean check and every set
//! of m missing members; crashes at random instants then resumption; and
//! the I/O the two strategies spend on the same growth.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout, SECTOR_BYTES};
use eraid_core::growth::config::ReshapeStrategy;
use eraid_core::growth::scale_crs::CrsMatrix;
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::testing::{MemHarness, MemMember};
use eraid_core::Array;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 48;
const STRATEGIES: [ReshapeStrategy; 2] = [ReshapeStrategy::ScaleCrs, ReshapeStrategy::Epu];

/// (members before, parity members, w, members added).
const SHAPES: [(usize, usize, usize, usize); 3] = [(6, 2, 3, 1), (6, 3, 4, 2), (9, 3, 4, 1)];

fn crs_level(parity_members: usize, w: usize) -> Level {
    Level::Crs { parity_members, w }
}

fn reshape_field(array: &Array, field: &str) -> serde_json::Value {
    array.status_json()["reshape"][field].clone()
}

fn state(array: &Array) -> String {
    reshape_field(array, "state")
        .as_str()
        .unwrap_or("none")
        .to_string()
}

fn read_everything(h: &mut MemHarness, array: &mut Array, id: u64, len: usize) -> Vec<u8> {
    call(
        h,
        array,
        id,
        UserOp::Read {
            offset_bytes: 0,
            len_bytes: len,
        },
    )
    .expect("read")
    .expect("bytes")
}

/// A CRS array of `from` members holding random data, growing onto `add`
/// blank members with `strategy`.
fn filled_and_growing(
    seed: u64,
    (from, m, w, add): (usize, usize, usize, usize),
    strategy: ReshapeStrategy,
    matrix: CrsMatrix,
    aggregation_chunks: u64,
    member_chunks: u64,
) -> (MemHarness, Array, Vec<u8>, ChaCha8Rng) {
    let level = crs_level(m, w);
    let g = geometry(level, ParityLayout::LeftSymmetric, from, member_chunks);
    let mut h = MemHarness::create(g, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc45);
    let mut array = open(&mut h);
    let model: Vec<u8> = (0..array.capacity_bytes()).map(|_| rng.gen()).collect();
    let write = UserOp::Write {
        offset_bytes: 0,
        data: model.clone().into(),
        fua: true,
    };
    call(&mut h, &mut array, 1, write).expect("initial data");
    start_growth(
        &mut h,
        &mut array,
        add,
        strategy,
        matrix,
        aggregation_chunks * chunk_bytes(level),
    );
    (h, array, model, rng)
}

/// Starts growing the open array onto `add` blank members.
fn start_growth(
    h: &mut MemHarness,
    array: &mut Array,
    add: usize,
    strategy: ReshapeStrategy,
    matrix: CrsMatrix,
    aggregation_bytes: u64,
) {
    let member_bytes = h.members[0].as_ref().expect("present").current.len() as u64;
    let members = h.add_blank_members(add, member_bytes);
    let config = eraid_core::growth::config::ReshapeConfig {
        aggregation_bytes,
        crs_matrix: matrix,
        ..growth_config(strategy, 1 << 30)
    };
    let reply = array.handle_admin(h.now, AdminCommand::StartGrow { members, config });
    assert!(reply.get("error").is_none(), "growth started: {reply}");
}

fn snapshot(h: &MemHarness) -> Vec<(Vec<u8>, Vec<u8>)> {
    h.members
        .iter()
        .map(|m| {
            let m = m.as_ref().expect("present");
            (m.durable.clone(), m.current.clone())
        })
        .collect()
}

fn restore(h: &mut MemHarness, saved: &[(Vec<u8>, Vec<u8>)]) {
    h.members = saved
        .iter()
        .map(|(durable, current)| {
            Some(MemMember {
                durable: durable.clone(),
                current: current.clone(),
                unflushed: Vec::new(),
                failed: false,
            })
        })
        .collect();
}

/// Every set of `m` members missing (closed array on `h`): the array opens
/// degraded and every byte reads as `model` says.
fn any_m_missing_reads_back(h: &mut MemHarness, m: usize, model: &[u8], what: &str) {
    let saved = snapshot(h);
    let n = saved.len();
    let mut missing = vec![0usize; m];
    let mut sets = 0;
    // Lexicographic m-subsets of 0..n.
    for (i, slot) in missing.iter_mut().enumerate() {
        *slot = i;
    }
    loop {
        restore(h, &saved);
        for &i in &missing {
            h.members[i] = None;
        }
        let mut array = open(h);
        let got = read_everything(h, &mut array, 1, model.len());
        assert!(
            got == model,
            "{what}: data differs with members {missing:?} missing"
        );
        sets += 1;
        drop(array);
        let Some(i) = (0..m).rev().find(|&i| missing[i] < n - m + i) else {
            break;
        };
        missing[i] += 1;
        for j in i + 1..m {
            missing[j] = missing[j - 1] + 1;
        }
    }
    assert!(sets >= n, "{what}: only {sets} member sets tried");
    restore(h, &saved);
}

/// A second growth after the first: members added, strategy, matrix.
type Then = Option<(usize, ReshapeStrategy, CrsMatrix)>;

/// A growth under random load (and then, if `then` says so, a second one
/// over the grown layout, the first growth's added space filled first):
/// every read mid-growth and every byte after equal the model, parity
/// checks clean, the array reopens, and any m members may be missing.
fn grow_under_load(
    seed: u64,
    shape: (usize, usize, usize, usize),
    strategy: ReshapeStrategy,
    matrix: CrsMatrix,
    then: Then,
) {
    let what = format!(
        "seed {seed} {shape:?} {} {} then {then:?}",
        strategy.name(),
        matrix.name()
    );
    let (mut h, mut array, mut model, mut rng) =
        filled_and_growing(seed, shape, strategy, matrix, 6, MEMBER_CHUNKS);
    let mut id = 10u64;
    let (from, m, w, add) = shape;
    load_until_done(
        &mut h, &mut array, &mut model, &mut rng, &mut id, shape, strategy, &what,
    );
    assert_eq!(array.status_json()["crs_matrix"], matrix.name(), "{what}");
    fill_added_space(
        &mut h,
        &mut array,
        &mut model,
        &mut rng,
        &mut id,
        &format!("{what}, first growth"),
    );
    if let Some((add2, strategy2, matrix2)) = then {
        let aggregation = 6 * chunk_bytes(crs_level(m, w));
        start_growth(&mut h, &mut array, add2, strategy2, matrix2, aggregation);
        let second = (from + add, m, w, add2);
        load_until_done(
            &mut h, &mut array, &mut model, &mut rng, &mut id, second, strategy2, &what,
        );
        let status = array.status_json();
        assert_eq!(status["crs_matrix"], matrix2.name(), "{what}");
        assert_eq!(
            status["crs_growths"].as_array().unwrap().len(),
            2,
            "{status}"
        );
        fill_added_space(
            &mut h,
            &mut array,
            &mut model,
            &mut rng,
            &mut id,
            &format!("{what}, second growth"),
        );
    }
    close(&mut h, &mut array);
    let mut array = open(&mut h);
    assert_eq!(array.capacity_bytes(), model.len() as u64);
    let got = read_everything(&mut h, &mut array, id + 1, model.len());
    assert!(got == model, "{what}: data differs after reopening");
    close(&mut h, &mut array);
    any_m_missing_reads_back(&mut h, m, &model, &what);
}

/// After a growth: the old data reads back, the added space holds what
/// users write there (the model grows by it), parity checks clean.
fn fill_added_space(
    h: &mut MemHarness,
    array: &mut Array,
    model: &mut Vec<u8>,
    rng: &mut ChaCha8Rng,
    id: &mut u64,
    what: &str,
) {
    let capacity = model.len() as u64;
    let got = read_everything(h, array, *id + 1, model.len());
    assert!(got == *model, "{what}: data differs after the growth");
    let tail: Vec<u8> = (0..array.capacity_bytes() - capacity)
        .map(|_| rng.gen())
        .collect();
    let op = UserOp::Write {
        offset_bytes: capacity,
        data: tail.clone().into(),
        fua: false,
    };
    call(h, array, *id + 2, op).expect("write the added space");
    *id += 3;
    model.extend_from_slice(&tail);
    assert_eq!(check(h, array, false), (0, 0), "{what}: parity clean");
}

/// Random reads and writes (checked against `model`) while the growth of
/// `shape` runs, until it is done; then its counters and capacity.
#[allow(clippy::too_many_arguments)]
fn load_until_done(
    h: &mut MemHarness,
    array: &mut Array,
    model: &mut [u8],
    rng: &mut ChaCha8Rng,
    id: &mut u64,
    shape: (usize, usize, usize, usize),
    strategy: ReshapeStrategy,
    what: &str,
) {
    let capacity = array.capacity_bytes();
    assert_eq!(
        capacity,
        model.len() as u64,
        "{what}: the model is the array"
    );
    let mut rounds = 0;
    while state(array) == "running" {
        rounds += 1;
        assert!(rounds < 20_000, "{what}: growth does not finish");
        let mut batch = Vec::new();
        let mut taken: Vec<(u64, u64)> = Vec::new();
        for _ in 0..rng.gen_range(1..5) {
            let len =
                rng.gen_range(1..=(2 * chunk_bytes(crs_level(shape.1, shape.2)) / SECTOR_BYTES));
            let start = rng.gen_range(0..capacity / SECTOR_BYTES - len);
            let range = (start * SECTOR_BYTES, len * SECTOR_BYTES);
            if taken.iter().any(|&t| overlaps(t, range)) {
                continue;
            }
            taken.push(range);
            *id += 1;
            if rng.gen_bool(0.5) {
                let data: Vec<u8> = (0..range.1).map(|_| rng.gen()).collect();
                model[range.0 as usize..(range.0 + range.1) as usize].copy_from_slice(&data);
                let op = UserOp::Write {
                    offset_bytes: range.0,
                    data: data.into(),
                    fua: false,
                };
                h.submit(array, *id, op);
                batch.push((*id, None));
            } else {
                let op = UserOp::Read {
                    offset_bytes: range.0,
                    len_bytes: range.1 as usize,
                };
                h.submit(array, *id, op);
                batch.push((*id, Some(range)));
            }
        }
        let ids: Vec<u64> = batch.iter().map(|(i, _)| *i).collect();
        let mut steps = 0;
        while !ids.iter().all(|i| h.replies.iter().any(|r| r.id.0 == *i)) {
            steps += 1;
            assert!(
                steps < 1_000_000 && h.step(array),
                "{what}: requests stuck: {}",
                array.status_json()
            );
        }
        for (rid, read) in batch {
            let reply = h.take_reply(rid).expect("answered").result;
            let bytes = reply.unwrap_or_else(|e| panic!("{what}: request fails: {e:?}"));
            if let Some((o, l)) = read {
                assert!(
                    bytes.expect("bytes") == model[o as usize..(o + l) as usize],
                    "{what}: read {o}+{l} differs mid-growth"
                );
            }
        }
    }
    let status = array.status_json();
    assert_eq!(state(array), "done", "{what}: {status}");
    let (from, m, _, add) = shape;
    assert_eq!(status["member_count"], (from + add) as u64);
    let counters = &status["reshape"];
    assert!(
        counters["moved_bytes"].as_u64().unwrap() > 0,
        "{what}: {counters}"
    );
    if strategy == ReshapeStrategy::ScaleCrs {
        assert_eq!(counters["rcw_units"], 0, "{what}: Scale-CRS uses RMW only");
    }
    assert_eq!(
        array.capacity_bytes() * (from - m) as u64,
        capacity * (from + add - m) as u64
    );
}

fn seeds(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn crs_strategies_grow_under_load() {
    for seed in 0..seeds("ERAID_GROWTH_SEEDS", 2) {
        for shape in SHAPES {
            for strategy in STRATEGIES {
                grow_under_load(seed, shape, strategy, CrsMatrix::Jerasure, None);
            }
        }
    }
}

/// The optimised post-scaling matrix (Table II of the EPU paper's [25]) in
/// the array: the same growths under load, data equal, check clean, any m
/// members missing.
#[test]
fn crs_strategies_grow_with_the_optimized_matrix() {
    for seed in 0..seeds("ERAID_GROWTH_SEEDS", 1) {
        for shape in SHAPES {
            for strategy in STRATEGIES {
                grow_under_load(seed, shape, strategy, CrsMatrix::Optimized, None);
            }
        }
    }
}

/// A CRS array grows twice: the second growth runs over the first one's
/// layout (its added space filled with data first), under load, with each
/// matrix and strategy mixed.
#[test]
fn a_grown_crs_array_grows_again() {
    let cases = [
        (
            (6, 2, 3, 1),
            ReshapeStrategy::Epu,
            CrsMatrix::Jerasure,
            (1, ReshapeStrategy::ScaleCrs, CrsMatrix::Jerasure),
        ),
        (
            (6, 3, 4, 1),
            ReshapeStrategy::ScaleCrs,
            CrsMatrix::Optimized,
            (2, ReshapeStrategy::Epu, CrsMatrix::Optimized),
        ),
        (
            (5, 3, 4, 2),
            ReshapeStrategy::Epu,
            CrsMatrix::Optimized,
            (1, ReshapeStrategy::Epu, CrsMatrix::Jerasure),
        ),
    ];
    for seed in 0..seeds("ERAID_GROWTH_SEEDS", 1) {
        for (shape, strategy, matrix, then) in cases {
            grow_under_load(seed, shape, strategy, matrix, Some(then));
        }
    }
}

/// The same growth, no users: Scale-CRS updates parity by read-modify-write
/// only; EPU picks reconstruct-write where it reads fewer blocks (every
/// unit of (6,3,1,4): 144 blocks against 228, the paper's Fig. 4 21 and 33
/// per stripe), so it reads fewer blocks and issues fewer reads.
#[test]
fn epu_reads_less_than_scale_crs_where_the_study_says_so() {
    let mut reads = Vec::new();
    for strategy in STRATEGIES {
        // 49 rows: 7 whole units of 7 rows.
        let (mut h, mut array, model, _) =
            filled_and_growing(1, (9, 3, 4, 1), strategy, CrsMatrix::Jerasure, 7, 49);
        h.run(&mut array);
        assert_eq!(state(&array), "done");
        let r = array.status_json()["reshape"].clone();
        let got = read_everything(&mut h, &mut array, 5, model.len());
        assert!(got == model, "{}: data after the growth", strategy.name());
        assert_eq!(
            check(&mut h, &mut array, false),
            (0, 0),
            "{}",
            strategy.name()
        );
        reads.push(r);
    }
    let (scale, epu) = (&reads[0], &reads[1]);
    let u = |v: &serde_json::Value, f: &str| v[f].as_u64().unwrap();
    assert_eq!(
        (u(scale, "rmw_units"), u(scale, "rcw_units")),
        (7, 0),
        "{scale}"
    );
    assert_eq!((u(epu, "rmw_units"), u(epu, "rcw_units")), (0, 7), "{epu}");
    assert_eq!(u(scale, "moved_bytes"), u(epu, "moved_bytes"));
    // Per unit: 24 moved blocks, then 228 (Scale-CRS) or 144 (EPU).
    assert_eq!(u(scale, "scaling_read_blocks"), 7 * (24 + 228), "{scale}");
    assert_eq!(u(epu, "scaling_read_blocks"), 7 * (24 + 144), "{epu}");
    assert!(u(epu, "redistribution_reads") < u(scale, "redistribution_reads"));
}

/// Crashes at random instants of a Scale-CRS or EPU growth: every write
/// acknowledged before a completed flush reads back after the array is
/// reassembled and the growth resumed and finished; parity checks clean;
/// any m members may then be missing. Crashes land inside windows between
/// their two write phases often enough to matter (asserted).
#[test]
fn crashes_during_crs_growth_lose_nothing() {
    let mut redone = 0;
    for seed in 0..seeds("ERAID_GROWTH_CRASH_SEEDS", 10) {
        for strategy in STRATEGIES {
            let shape = SHAPES[(seed % 3) as usize];
            // Odd seeds grow with the optimised post-scaling matrix.
            let matrix = CrsMatrix::ALL[(seed % 2) as usize];
            redone += crash_once(seed, shape, strategy, matrix, false);
        }
    }
    assert!(
        redone >= 3,
        "only {redone} crashes fell between a window's two phases"
    );
}

/// Crashes during a second growth (over the first one's layout, its added
/// space holding data): the same guarantees.
#[test]
fn crashes_during_a_second_crs_growth_lose_nothing() {
    let mut redone = 0;
    for seed in 0..seeds("ERAID_GROWTH_CRASH_SEEDS", 10) {
        let strategy = STRATEGIES[(seed % 2) as usize];
        let matrix = CrsMatrix::ALL[(seed / 2 % 2) as usize];
        let shape = [(6, 2, 3, 1), (5, 3, 4, 1)][(seed % 2) as usize];
        redone += crash_once(seed, shape, strategy, matrix, true);
    }
    assert!(
        redone >= 2,
        "only {redone} crashes fell between a window's two phases"
    );
}

/// Returns 1 if the crash left a recorded window to redo.
/// `again`: the crash is in a second growth by one member (the first,
/// `shape`'s, finished and its added space filled first).
fn crash_once(
    seed: u64,
    shape: (usize, usize, usize, usize),
    strategy: ReshapeStrategy,
    matrix: CrsMatrix,
    again: bool,
) -> u64 {
    let what = format!(
        "seed {seed} {shape:?} {} {} again {again}",
        strategy.name(),
        matrix.name()
    );
    let (mut h, mut array, mut initial, mut rng) =
        filled_and_growing(seed, shape, strategy, matrix, 3, MEMBER_CHUNKS);
    // Members before the growth the crash hits, and their parity members.
    let mut members_before = shape.0;
    if again {
        h.run(&mut array);
        assert_eq!(state(&array), "done", "{what}: the first growth");
        let tail: Vec<u8> = (0..array.capacity_bytes() - initial.len() as u64)
            .map(|_| rng.gen())
            .collect();
        let op = UserOp::Write {
            offset_bytes: initial.len() as u64,
            data: tail.clone().into(),
            fua: true,
        };
        call(&mut h, &mut array, 3, op).expect("fill the added space");
        initial.extend_from_slice(&tail);
        let aggregation = 3 * chunk_bytes(crs_level(shape.1, shape.2));
        start_growth(&mut h, &mut array, 1, strategy, matrix, aggregation);
        members_before += shape.3;
    }
    let capacity = array.capacity_bytes();
    let mut acked = initial.clone();
    let mut flushed = initial;
    let mut touched = vec![false; (capacity / SECTOR_BYTES) as usize];
    let crash_round = rng.gen_range(1..30);
    let mut id = 10u64;
    for round in 0..=crash_round {
        let flush = rng.gen_bool(0.3);
        let mut batch = Vec::new();
        id += 1;
        if flush {
            h.submit(&mut array, id, UserOp::Flush);
        } else {
            let len = rng.gen_range(1..=8u64) * SECTOR_BYTES;
            let offset = rng.gen_range(0..(capacity - len) / SECTOR_BYTES) * SECTOR_BYTES;
            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            acked[offset as usize..(offset + len) as usize].copy_from_slice(&data);
            for s in offset / SECTOR_BYTES..(offset + len) / SECTOR_BYTES {
                touched[s as usize] = true;
            }
            let op = UserOp::Write {
                offset_bytes: offset,
                data: data.into(),
                fua: false,
            };
            h.submit(&mut array, id, op);
        }
        batch.push(id);
        let budget = if round == crash_round {
            rng.gen_range(0..80)
        } else {
            usize::MAX
        };
        let mut steps = 0;
        while !h.replies.iter().any(|r| r.id.0 == id) && steps < budget {
            assert!(h.step(&mut array), "{what}: stuck: {}", array.status_json());
            steps += 1;
        }
        if flush && h.replies.iter().any(|r| r.id.0 == id) {
            flushed.copy_from_slice(&acked);
            touched.fill(false);
        }
        if let Some(reply) = h.take_reply(id) {
            reply.result.expect("request succeeds");
        }
        if round == crash_round {
            break;
        }
        for _ in 0..rng.gen_range(0..30) {
            if !h.step(&mut array) {
                break;
            }
        }
    }
    let pending_record = reshape_field(&array, "pending_backup").is_object()
        || array.status_json()["reshape"]["window"]["stage"]
            .as_str()
            .is_some_and(|s| s.starts_with("RecordingBackup") || s == "Writing");
    h.crash();
    drop(array);
    let assembly = match h.assemble() {
        Ok(a) => a,
        // The crash came before the growth's first superblock reached the
        // new members: the array is the old one.
        Err(_) => {
            h.members.truncate(members_before);
            h.assemble()
                .unwrap_or_else(|e| panic!("{what}: reassembly failed: {e}"))
        }
    };
    let mut array = Array::open(assembly, options(), h.now);
    h.run(&mut array);
    let grown = h.members.len() > members_before;
    if grown {
        assert_eq!(state(&array), "done", "{what}: {}", array.status_json());
        assert_eq!(array.status_json()["crs_matrix"], matrix.name(), "{what}");
    }
    assert_flushed_sectors_survive(&mut h, &mut array, &flushed, &touched, &what);
    assert_eq!(
        check(&mut h, &mut array, false).0,
        0,
        "{what}: parity after"
    );
    let model = read_everything(&mut h, &mut array, 2, capacity as usize);
    close(&mut h, &mut array);
    if grown && seed.is_multiple_of(3) {
        any_m_missing_reads_back(&mut h, shape.1, &model, &what);
    }
    u64::from(pending_record)
}

/// The EPU paper's rate control: with at most 30 blocks of 4 KiB per
/// second of device I/O, the growth's device I/O (counted in the code's
/// packets here, 8 KiB) cannot finish in less time than that budget
/// allows; without it the same growth takes no simulated time at all.
#[test]
fn the_io_rate_budget_paces_the_growth() {
    let mut took_ns = Vec::new();
    for rate in [0, 30] {
        let shape = (6, 2, 4, 1);
        let level = crs_level(shape.1, shape.2);
        let g = geometry(level, ParityLayout::LeftSymmetric, shape.0, 24);
        let member_bytes = g.data_offset_bytes + g.member_data_bytes;
        let mut h = MemHarness::create(g, 7);
        let mut array = open(&mut h);
        let members = h.add_blank_members(1, member_bytes);
        let config = eraid_core::growth::config::ReshapeConfig {
            aggregation_bytes: 5 * chunk_bytes(level),
            io_rate_max_blocks_s: rate,
            ..growth_config(ReshapeStrategy::Epu, 1 << 30)
        };
        let started = h.now;
        let reply = array.handle_admin(h.now, AdminCommand::StartGrow { members, config });
        assert!(reply.get("error").is_none(), "{reply}");
        h.run(&mut array);
        let mut idles = 0;
        while state(&array) == "running" {
            idles += 1;
            assert!(idles < 100_000, "the growth does not finish");
            h.idle(&mut array, 50);
        }
        assert_eq!(state(&array), "done");
        let r = array.status_json()["reshape"].clone();
        let packet = chunk_bytes(level) / 4;
        let blocks = r["scaling_read_blocks"].as_u64().unwrap()
            + r["scaling_write_blocks"].as_u64().unwrap();
        let device_bytes = blocks * packet + r["zeroed_bytes"].as_u64().unwrap();
        took_ns.push((h.now.0 - started.0, device_bytes));
    }
    let (free_ns, _) = took_ns[0];
    let (paced_ns, device_bytes) = took_ns[1];
    let budget_bytes_s = 30 * 4096;
    // Each whole slot passed paid one budget; the last window may overrun.
    let slots_needed = device_bytes / budget_bytes_s;
    assert!(slots_needed >= 3, "the growth is too small to show pacing");
    assert!(
        paced_ns >= (slots_needed - 1) * 1_000_000_000,
        "{device_bytes} device bytes at {budget_bytes_s} B/s took only {paced_ns} ns"
    );
    assert!(free_ns < 1_000_000_000, "unpaced: {free_ns} ns");
}

/// An EPU growth of (6,3,4) + 1 on 49 rows (7 whole units) with
/// `overlap_bytes` of I/O overlap buffer. Before its first window a user
/// reads the whole array (the read, checked, leaves its blocks behind);
/// then, if `rewrite`, users write over `rewrite` chunks spread over the
/// array and wait for them. The growth then runs alone. Returns the
/// growth's counters, after checking every byte and the parity.
fn overlap_run(overlap_bytes: u64, rewrite: usize) -> serde_json::Value {
    let shape = (9, 3, 4, 1);
    let level = crs_level(shape.1, shape.2);
    let g = geometry(level, ParityLayout::LeftSymmetric, shape.0, 49);
    let mut h = MemHarness::create(g, 11);
    let mut rng = ChaCha8Rng::seed_from_u64(0x0e9);
    let mut array = open(&mut h);
    let mut model: Vec<u8> = (0..array.capacity_bytes()).map(|_| rng.gen()).collect();
    let write = UserOp::Write {
        offset_bytes: 0,
        data: model.clone().into(),
        fua: true,
    };
    call(&mut h, &mut array, 1, write).expect("initial data");
    let chunk = chunk_bytes(level);
    let member_bytes = h.members[0].as_ref().expect("present").current.len() as u64;
    let members = h.add_blank_members(1, member_bytes);
    let config = eraid_core::growth::config::ReshapeConfig {
        aggregation_bytes: 7 * chunk,
        overlap_buffer_bytes: overlap_bytes,
        ..growth_config(ReshapeStrategy::Epu, 1 << 30)
    };
    let reply = array.handle_admin(h.now, AdminCommand::StartGrow { members, config });
    assert!(reply.get("error").is_none(), "{reply}");
    // The read and the writes after it go in together, before the first
    // window (which waits for them: they touch its chunks).
    let read = UserOp::Read {
        offset_bytes: 0,
        len_bytes: model.len(),
    };
    h.submit(&mut array, 2, read);
    let before = model.clone();
    let chunks = model.len() as u64 / chunk;
    for i in 0..rewrite as u64 {
        // Part of a chunk (two packets' worth from its middle), spread.
        let at = (i * 7 + 3) % chunks * chunk + chunk / 4;
        let data: Vec<u8> = (0..chunk / 2).map(|_| rng.gen()).collect();
        model[at as usize..(at + chunk / 2) as usize].copy_from_slice(&data);
        let op = UserOp::Write {
            offset_bytes: at,
            data: data.into(),
            fua: false,
        };
        h.submit(&mut array, 10 + i, op);
    }
    h.run(&mut array);
    let got = h.take_reply(2).expect("read answered").result;
    assert!(
        got.expect("read").expect("bytes") == before,
        "the read before the writes"
    );
    for i in 0..rewrite as u64 {
        let reply = h.take_reply(10 + i).expect("write answered");
        reply.result.expect("write");
    }
    h.run(&mut array);
    assert_eq!(state(&array), "done", "{}", array.status_json());
    let counters = array.status_json()["reshape"].clone();
    let got = read_everything(&mut h, &mut array, 5, model.len());
    assert!(
        got == model,
        "overlap {overlap_bytes} B, {rewrite} rewrites: data after the growth"
    );
    assert_eq!(
        check(&mut h, &mut array, false),
        (0, 0),
        "overlap {overlap_bytes} B, {rewrite} rewrites: parity"
    );
    counters
}

/// EPU's I/O overlap: blocks a user read brought in are not read again.
/// Every block the growth took from memory is one fewer read, and with
/// the whole array read just before, the growth reads only what the
/// read did not bring (nothing: EPU reconstructs parity here).
#[test]
fn epu_overlap_takes_blocks_a_user_read_brought_in() {
    let u = |v: &serde_json::Value, f: &str| v[f].as_u64().unwrap();
    let off = overlap_run(0, 0);
    let on = overlap_run(64 << 20, 0);
    assert_eq!(u(&off, "overlap_blocks"), 0, "{off}");
    assert_eq!(u(&off, "scaling_read_blocks"), 7 * (24 + 144), "{off}");
    assert!(u(&on, "overlap_blocks") > 0, "{on}");
    assert_eq!(
        u(&on, "scaling_read_blocks") + u(&on, "overlap_blocks"),
        u(&off, "scaling_read_blocks"),
        "{on}"
    );
    assert_eq!(u(&on, "scaling_read_blocks"), 0, "{on}");
    assert!(u(&on, "redistribution_reads") < u(&off, "redistribution_reads"));
    assert_eq!(u(&on, "moved_bytes"), u(&off, "moved_bytes"));
}

/// A write after the user read makes the blocks it touched stale: the
/// growth reads them again and no written byte is lost (every rewritten
/// chunk is one the growth moves or reconstructs from).
#[test]
fn a_write_after_the_user_read_is_never_lost() {
    let u = |v: &serde_json::Value, f: &str| v[f].as_u64().unwrap();
    let on = overlap_run(64 << 20, 40);
    assert!(u(&on, "overlap_blocks") > 0, "{on}");
    assert!(
        u(&on, "scaling_read_blocks") > 0,
        "{on}: the rewritten blocks are read"
    );
    // Blocks in memory between blocks read anyway are read with them: the
    // overlap never adds a device I/O.
    let off = overlap_run(0, 40);
    assert_eq!(
        u(&on, "scaling_read_blocks") + u(&on, "overlap_blocks"),
        u(&off, "scaling_read_blocks")
    );
    assert!(u(&on, "redistribution_reads") <= u(&off, "redistribution_reads"));
}

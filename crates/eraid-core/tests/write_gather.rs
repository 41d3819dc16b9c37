//! Gathering sequential writes' partial stripes into full ones
//! (`ArrayOptions::write_gather_window_us`): the data and parity come out
//! right, gathered stripes read nothing, a tail nothing joins starts when
//! its window ends (four windows for a stream whose tails were joined),
//! a client that waits for each reply loses the window once, not on every
//! write, and only its own stream cools down.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{DeviceOp, IoCause, Machine, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};

const MEMBER_CHUNKS: u64 = 64;
/// Long against the harness's clock (each I/O takes up to 2 ms of it), so
/// a tail waits until the test moves time on.
const WINDOW_US: u64 = 1_000_000;

fn open_gathering(level: Level, members: usize) -> (MemHarness, Array) {
    let g = geometry(level, ParityLayout::LeftSymmetric, members, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 11);
    let options = ArrayOptions {
        write_gather_window_us: WINDOW_US,
        ..options()
    };
    let assembly = h.assemble().expect("assembles");
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    (h, array)
}

fn gathered(array: &Array) -> (u64, u64) {
    let status = array.status_json();
    (
        status["write_gather"]["stripes_waited"].as_u64().unwrap(),
        status["write_gather"]["stripes_completed"]
            .as_u64()
            .unwrap(),
    )
}

fn bytes_for(id: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u64 * 31 + id * 7) as u8).collect()
}

/// Submits write `id`: `chunks` chunks of `bytes_for(id, ..)` from chunk
/// `chunk` on (not run).
fn submit_write(h: &mut MemHarness, array: &mut Array, id: u64, chunk: u64, chunks: u64) {
    h.submit(
        array,
        id,
        UserOp::Write {
            offset_bytes: chunk * CHUNK,
            data: bytes_for(id, (chunks * CHUNK) as usize).into(),
            fua: false,
        },
    );
}

/// User reads issued while the writes ran (none, if every stripe went out
/// whole).
fn run_counting_user_reads(h: &mut MemHarness, array: &mut Array) -> usize {
    let mut reads = std::collections::BTreeSet::new();
    loop {
        for io in h.inflight_ios() {
            if io.cause == IoCause::User && matches!(io.op, DeviceOp::Read { .. }) {
                reads.insert(io.id);
            }
        }
        if !h.step(array) {
            return reads.len();
        }
    }
}

#[test]
fn pipelined_sequential_writes_go_out_as_full_stripes_with_right_parity() {
    for (level, members) in [(Level::Raid5, 4), (Level::Raid6, 5)] {
        let (mut h, mut array) = open_gathering(level, members);
        // Two chunks per write, three data chunks per stripe: every write
        // but the first ends inside a stripe the next one finishes.
        let write_bytes = 2 * CHUNK as usize;
        let writes = 12u64;
        let mut model = vec![0u8; (writes as usize) * write_bytes];
        for i in 0..writes {
            let data = bytes_for(i, write_bytes);
            model[i as usize * write_bytes..][..write_bytes].copy_from_slice(&data);
            h.submit(
                &mut array,
                100 + i,
                UserOp::Write {
                    offset_bytes: i * write_bytes as u64,
                    data: data.into(),
                    fua: false,
                },
            );
        }
        let user_reads = run_counting_user_reads(&mut h, &mut array);
        // The last write's tail waits for a request that never comes.
        h.idle(&mut array, 1_100);
        for i in 0..writes {
            let reply = h
                .take_reply(100 + i)
                .unwrap_or_else(|| panic!("{level:?}: write {i} answered"));
            assert_eq!(reply.result, Ok(None), "{level:?}: write {i}");
        }
        let (waited, completed) = gathered(&array);
        // Stripes 1..8 each start as one write's tail and end as the next
        // one's head.
        assert_eq!(
            (waited, completed),
            (7, 7),
            "{level:?}: stripes waited, completed"
        );
        // Only the first write's head and the last tail were partial.
        assert!(
            user_reads <= 2 * members,
            "{level:?}: {user_reads} reads for partial stripes"
        );
        let read = read_range(&mut h, &mut array, 1, 0, model.len());
        assert!(read == model, "{level:?}: data read back");
        assert_eq!(
            check(&mut h, &mut array, false),
            (0, 0),
            "{level:?}: parity consistent"
        );
    }
}

#[test]
fn a_tail_nothing_joins_starts_when_its_window_ends_and_the_next_ones_do_not_wait() {
    let (mut h, mut array) = open_gathering(Level::Raid5, 4);
    let write_bytes = 2 * CHUNK as usize;
    // A client that sends each write after the previous reply.
    // The i-th write of two chunks, run until it waits or is answered.
    let write = |h: &mut MemHarness, array: &mut Array, i: u64| {
        submit_write(h, array, i, 2 * i, 2);
        h.run(array);
    };
    write(&mut h, &mut array, 0);
    assert!(
        h.take_reply(0).is_some(),
        "a first write does not continue a stream"
    );
    write(&mut h, &mut array, 1);
    assert!(
        h.take_reply(1).is_none(),
        "the second's tail waits for the rest of its stripe"
    );
    let deadline = array
        .poll_timeout()
        .expect("a deadline for the waiting tail");
    assert!(
        deadline.0 <= h.now.0 + WINDOW_US * 1_000,
        "within the window"
    );
    h.idle(&mut array, 1_100);
    assert_eq!(
        h.take_reply(1).expect("answered after the window").result,
        Ok(None)
    );
    for i in 2..10 {
        write(&mut h, &mut array, i);
        assert!(
            h.take_reply(i).is_some(),
            "write {i} did not wait after a wait in vain"
        );
    }
    assert_eq!(gathered(&array), (1, 0));
    let model: Vec<u8> = (0..10).flat_map(|i| bytes_for(i, write_bytes)).collect();
    assert!(read_range(&mut h, &mut array, 99, 0, model.len()) == model);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

#[test]
fn a_wait_in_vain_cools_down_only_its_own_stream() {
    let (mut h, mut array) = open_gathering(Level::Raid5, 4);
    let write_bytes = 2 * CHUNK as usize;
    let write = |h: &mut MemHarness, array: &mut Array, id: u64, chunk: u64| {
        submit_write(h, array, id, chunk, 2);
    };
    // Stream A, a client that waits for each reply: its second write's
    // tail waits in vain.
    write(&mut h, &mut array, 1, 0);
    h.run(&mut array);
    write(&mut h, &mut array, 2, 2);
    h.run(&mut array);
    h.idle(&mut array, 1_100);
    assert!(h.take_reply(2).is_some(), "answered after the window");
    assert_eq!(gathered(&array), (1, 0));
    // Stream B, pipelined, far from A: six writes of two chunks from
    // chunk 60 (a stripe boundary). Writes 1, 3 and 4 end inside a stripe
    // the next write finishes: all three gather, A's cooldown
    // notwithstanding.
    for i in 0..6 {
        write(&mut h, &mut array, 10 + i, 60 + 2 * i);
    }
    h.run(&mut array);
    for i in 0..6 {
        assert_eq!(h.take_reply(10 + i).expect("answered").result, Ok(None));
    }
    assert_eq!(
        gathered(&array),
        (4, 3),
        "stream B's partial stripes gathered"
    );
    let model: Vec<u8> = (0..6)
        .flat_map(|i| bytes_for(10 + i, write_bytes))
        .collect();
    assert!(read_range(&mut h, &mut array, 99, 60 * CHUNK, model.len()) == model);
    // And A still does not wait: its next write goes out at once.
    write(&mut h, &mut array, 3, 4);
    h.run(&mut array);
    assert!(h.take_reply(3).is_some(), "stream A is still cooling down");
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

#[test]
fn a_pipelined_stream_whose_next_write_was_late_still_gathers() {
    let (mut h, mut array) = open_gathering(Level::Raid5, 4);
    let write_bytes = 2 * CHUNK as usize;
    let write = |h: &mut MemHarness, array: &mut Array, i: u64| {
        submit_write(h, array, i, 2 * i, 2);
    };
    // Writes 0..=3 sent together: 1's tail waits and 2 joins it (a client
    // that waits for each reply never could); 3's tail waits, and the
    // client is late with 4.
    for i in 0..4 {
        write(&mut h, &mut array, i);
    }
    h.run(&mut array);
    h.idle(&mut array, 4_100);
    for i in 0..4 {
        let reply = h.take_reply(i);
        assert_eq!(reply.map(|r| r.result), Some(Ok(None)), "write {i}");
    }
    assert_eq!(gathered(&array), (2, 1));
    // Then 4 and 5 together. 4's tail waits (no cooldown) and 5 joins it.
    for i in 4..6 {
        write(&mut h, &mut array, i);
    }
    h.run(&mut array);
    for i in 4..6 {
        let reply = h.take_reply(i);
        assert_eq!(reply.map(|r| r.result), Some(Ok(None)), "write {i}");
    }
    assert_eq!(gathered(&array), (3, 2), "the late stream gathers again");
    let model: Vec<u8> = (0..6).flat_map(|i| bytes_for(i, write_bytes)).collect();
    assert!(read_range(&mut h, &mut array, 99, 0, model.len()) == model);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

#[test]
fn a_stream_whose_tail_was_joined_waits_longer() {
    let (mut h, mut array) = open_gathering(Level::Raid5, 4);
    // The i-th write of two chunks, run until it waits or is answered.
    let write = |h: &mut MemHarness, array: &mut Array, i: u64| {
        submit_write(h, array, i, 2 * i, 2);
        h.run(array);
    };
    // 1's tail waits the plain window; 2 joins it (chunk 4 completes
    // stripe 3..=5) and ends at a stripe's end.
    write(&mut h, &mut array, 0);
    write(&mut h, &mut array, 1);
    write(&mut h, &mut array, 2);
    // 3's tail then waits longer than one window: the client has shown
    // it does not wait for each reply.
    write(&mut h, &mut array, 3);
    h.idle(&mut array, 1_100);
    assert!(h.take_reply(3).is_none(), "3 waits past one window");
    h.idle(&mut array, 3_000);
    for i in 0..4 {
        assert!(h.take_reply(i).is_some(), "write {i} answered");
    }
    assert_eq!(gathered(&array), (2, 1));
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

#[test]
fn a_write_that_ends_its_stripe_does_not_wait_for_a_missing_head() {
    let (mut h, mut array) = open_gathering(Level::Raid5, 4);
    // Chunks 0 and 1, then chunk 2 (the stripe's last) continuing them.
    for (id, chunk, chunks) in [(1u64, 0u64, 2u64), (2, 2, 1)] {
        submit_write(&mut h, &mut array, id, chunk, chunks);
        h.run(&mut array);
        assert!(
            h.take_reply(id).is_some(),
            "write {id} answered without a wait: nothing could complete its stripe"
        );
    }
    assert_eq!(gathered(&array), (0, 0));
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

#[test]
fn closing_starts_a_waiting_tail() {
    let (mut h, mut array) = open_gathering(Level::Raid5, 4);
    let write_bytes = 2 * CHUNK as usize;
    for i in 0..2u64 {
        h.submit(
            &mut array,
            i,
            UserOp::Write {
                offset_bytes: i * write_bytes as u64,
                data: bytes_for(i, write_bytes).into(),
                fua: false,
            },
        );
        h.run(&mut array);
    }
    assert!(h.take_reply(1).is_none(), "waiting");
    array.handle_close(h.now);
    h.run(&mut array);
    assert_eq!(h.take_reply(1).expect("answered at close").result, Ok(None));
    assert!(array.is_closed());
}

#[test]
fn off_by_default() {
    assert_eq!(ArrayOptions::default().write_gather_window_us, 0);
}

/// Writes of a quarter chunk: pieces of one chunk from several writes join
/// one op and become one piece (an op plans one range per shard; several
/// pieces of one shard broke a read-modify-write plan's assertion in the
/// DST: `cargo run -p eraid-dst -- --seed 150` is the reproducer, this
/// test checks the joined pieces' data and parity). The last stripe stays
/// partial and goes out at the end of its window.
#[test]
fn pieces_of_one_chunk_from_several_writes_become_one() {
    // Five data chunks a stripe: a stripe left partial is written by
    // read-modify-write (fewer reads than reconstruct-write).
    let (mut h, mut array) = open_gathering(Level::Raid5, 6);
    let piece = CHUNK / 4;
    let stripe = 5 * CHUNK;
    // The stream starts with the last piece of stripe 0, done before the
    // others come; the next twenty pieces fill stripe 1 (gathered whole),
    // the last five a chunk and a piece of stripe 2 (its wait ends in vain).
    let start = stripe - piece;
    let writes = 1 + 20 + 5;
    for i in 0..writes {
        if i == 1 {
            h.run(&mut array);
        }
        h.submit(
            &mut array,
            100 + i,
            UserOp::Write {
                offset_bytes: start + i * piece,
                data: bytes_for(i, piece as usize).into(),
                fua: false,
            },
        );
    }
    h.run(&mut array);
    h.idle(&mut array, 4_100);
    for i in 0..writes {
        assert_eq!(h.take_reply(100 + i).expect("answered").result, Ok(None));
    }
    assert_eq!(
        gathered(&array),
        (2, 1),
        "stripe 1 completed, stripe 2 timed out"
    );
    let model: Vec<u8> = (0..writes)
        .flat_map(|i| bytes_for(i, piece as usize))
        .collect();
    assert!(read_range(&mut h, &mut array, 1, start, model.len()) == model);
    assert_eq!(check(&mut h, &mut array, false), (0, 0));
}

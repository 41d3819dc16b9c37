//! Which member a user read goes to: RAID-10 balances reads over the two
//! copies as MD's read_balance does, and during a rebuild a replacement's
//! rebuilt chunks are read from it unless `redirect_reads` is off (MD
//! 2.6.11's PR, which reconstructs every read until the rebuild is done).
//! Every read is checked against the data written.

mod common;
use common::*;
use eraid_core::geometry::{Level, ParityLayout};
use eraid_core::io::{AdminCommand, DeviceOp, IoCause, Machine, UserOp};
use eraid_core::rebuild::config::{RebuildConfig, RebuildStrategy};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const MEMBER_CHUNKS: u64 = 32;

fn open_with(h: &mut MemHarness, options: ArrayOptions) -> Array {
    let assembly = h.arrange_for_assembly().expect("assembles");
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    array
}

fn admin_ok(h: &mut MemHarness, array: &mut Array, command: AdminCommand) {
    let answer = array.handle_admin(h.now, command.clone());
    h.collect(array);
    assert!(answer.get("error").is_none(), "{command:?}: {answer}");
}

/// Submits a read of one chunk and returns the devices its I/Os went to
/// (the I/Os stay in flight).
fn read_chunk_devices(h: &mut MemHarness, array: &mut Array, id: u64, chunk: u64) -> Vec<usize> {
    let before: Vec<_> = h.inflight_ios().iter().map(|io| io.id).collect();
    h.submit(
        array,
        id,
        UserOp::Read {
            offset_bytes: chunk * CHUNK,
            len_bytes: CHUNK as usize,
        },
    );
    h.inflight_ios()
        .iter()
        .filter(|io| !before.contains(&io.id) && matches!(io.op, DeviceOp::Read { .. }))
        .map(|io| io.member)
        .collect()
}

fn reply_is(h: &mut MemHarness, id: u64, model: &[u8], chunk: u64) {
    let reply = h.take_reply(id).expect("answered").result;
    let start = (chunk * CHUNK) as usize;
    assert_eq!(
        reply.expect("read ok").expect("data"),
        &model[start..start + CHUNK as usize],
        "chunk {chunk}"
    );
}

/// RAID-10 of 4 (near2: even chunks on members 0 and 1): with member 0
/// busy, a read of a chunk it holds goes to its idle mirror, member 1.
/// Without read balancing it queued behind member 0 and member 1 served no
/// reads.
#[test]
fn a_raid10_read_goes_to_the_idle_copy() {
    let g = geometry(Level::Raid10, ParityLayout::Near2, 4, MEMBER_CHUNKS);
    let mut h = MemHarness::create(g, 3);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut array = open_with(&mut h, options());
    let model = fill(&mut h, &mut array, &mut rng);
    let far = 2 * (MEMBER_CHUNKS - 1);
    assert_eq!(
        read_chunk_devices(&mut h, &mut array, 10, far),
        vec![0],
        "both idle: the first copy"
    );
    assert_eq!(
        read_chunk_devices(&mut h, &mut array, 11, 0),
        vec![1],
        "member 0 is busy: its mirror"
    );
    h.run(&mut array);
    reply_is(&mut h, 10, &model, far);
    reply_is(&mut h, 11, &model, 0);
}

fn rebuild_options(redirect_reads: bool) -> ArrayOptions {
    ArrayOptions {
        rebuild: RebuildConfig {
            strategy: RebuildStrategy::Pr,
            speed_min_kib_s: u64::MAX / 4096,
            speed_max_kib_s: u64::MAX / 4096,
            window_stripes: 2,
            checkpoint_bytes: 4 * CHUNK,
            redirect_reads,
            ..RebuildConfig::default()
        },
        ..options()
    }
}

/// A RAID-5 of 4 (left-symmetric: stripe 0's data chunks 0, 1, 2 on
/// members 0, 1, 2, its parity on member 3) filled with random data, whose
/// member 2 failed and is being rebuilt onto a new device, paused past
/// stripe 0. Returns the array, the data and the replacement's device.
fn paused_past_stripe_0(h: &mut MemHarness, redirect_reads: bool) -> (Array, Vec<u8>, usize) {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut array = open_with(h, rebuild_options(redirect_reads));
    let model = fill(h, &mut array, &mut rng);
    admin_ok(h, &mut array, AdminCommand::FailMember { slot: 2 });
    h.run(&mut array);
    let size = h.members[0].as_ref().expect("member 0").current.len() as u64;
    let member = h.add_blank_members(1, size).remove(0);
    let replacement = h.members.len() - 1;
    admin_ok(
        h,
        &mut array,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
    );
    for _ in 0..30 {
        h.step(&mut array);
    }
    admin_ok(h, &mut array, AdminCommand::PauseRebuild);
    h.run(&mut array);
    let rebuild = array.status_json()["rebuild"].clone();
    assert_eq!(rebuild["state"], "paused", "{rebuild}");
    let position = rebuild["position_stripes"].as_u64().unwrap();
    assert!(
        position > 0 && position < g.stripe_count(),
        "stripe 0 rebuilt, not all: {rebuild}"
    );
    (array, model, replacement)
}

fn rebuild_harness() -> MemHarness {
    let g = geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4, MEMBER_CHUNKS);
    MemHarness::create(g, 5)
}

/// The devices reads of stripe 0's data chunks go to while the rebuild is
/// paused past stripe 0, and the replacement's device.
fn reads_of_a_rebuilt_stripe(redirect_reads: bool) -> (Vec<Vec<usize>>, usize) {
    let mut h = rebuild_harness();
    let (mut array, model, replacement) = paused_past_stripe_0(&mut h, redirect_reads);
    let mut devices = Vec::new();
    for chunk in 0..3 {
        let id = 20 + chunk;
        devices.push(read_chunk_devices(&mut h, &mut array, id, chunk));
        h.run(&mut array);
        reply_is(&mut h, id, &model, chunk);
    }
    (devices, replacement)
}

/// Writes new bytes over `chunk` (of stripe 0, rebuilt) while the rebuild
/// is paused past it; returns the devices the write read, sorted, and the
/// devices it wrote, sorted. Then resumes the rebuild to its end and
/// checks every byte (read from the members, the replacement now in sync)
/// and the parity.
fn write_of_a_rebuilt_stripe(redirect_reads: bool, chunk: u64) -> (Vec<usize>, Vec<usize>, usize) {
    let mut h = rebuild_harness();
    let (mut array, mut model, replacement) = paused_past_stripe_0(&mut h, redirect_reads);
    let data: Vec<u8> = (0..CHUNK).map(|i| (i % 251) as u8 ^ 0x5a).collect();
    let start = (chunk * CHUNK) as usize;
    model[start..start + CHUNK as usize].copy_from_slice(&data);
    let before: Vec<_> = h.inflight_ios().iter().map(|io| io.id).collect();
    h.submit(
        &mut array,
        30,
        UserOp::Write {
            offset_bytes: chunk * CHUNK,
            data: data.into(),
            fua: false,
        },
    );
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    let mut seen = before;
    loop {
        for io in h.inflight_ios() {
            if seen.contains(&io.id) || io.cause != IoCause::User {
                continue;
            }
            seen.push(io.id);
            match io.op {
                DeviceOp::Read { .. } => reads.push(io.member),
                DeviceOp::Write { .. } | DeviceOp::WriteZeroes { .. } => writes.push(io.member),
                DeviceOp::Flush => {}
            }
        }
        if !h.step(&mut array) {
            break;
        }
    }
    assert!(h.take_reply(30).expect("answered").result.is_ok());
    reads.sort();
    writes.sort();
    admin_ok(&mut h, &mut array, AdminCommand::ResumeRebuild);
    h.run(&mut array);
    assert_eq!(array.status_json()["rebuild"]["state"], "done");
    assert!(
        read_all(&mut h, &mut array, 40) == model,
        "data after the rebuild"
    );
    assert_eq!(check(&mut h, &mut array, false), (0, 0), "parity clean");
    (reads, writes, replacement)
}

#[test]
fn a_rebuilt_chunk_is_read_from_the_replacement_unless_redirect_is_off() {
    let (redirected, replacement) = reads_of_a_rebuilt_stripe(true);
    assert_eq!(
        redirected,
        vec![vec![0], vec![1], vec![replacement]],
        "one read each, member 2's chunk from the replacement"
    );
    let (reconstructed, replacement) = reads_of_a_rebuilt_stripe(false);
    assert_eq!(reconstructed[..2], [vec![0], vec![1]]);
    let mut from = reconstructed[2].clone();
    from.sort();
    assert_eq!(
        from,
        vec![0, 1, 3],
        "member 2's chunk reconstructed from the others, replacement device {replacement} unread"
    );
}

/// MD 2.6.11 (`redirect_reads` off) never reads a recovering member for a
/// write's parity either (`R5_Insync` unset for it on every stripe), yet
/// writes it: a write of chunk 0 reads the old data and parity
/// (read-modify-write) rather than chunks 1 and 2 (reconstruct-write, 2 on
/// the replacement), and a write of chunk 2 lands on the replacement with
/// its parity computed from chunks 0 and 1. With redirection the
/// replacement's rebuilt chunk is read like any in-sync member's.
#[test]
fn a_write_reads_a_rebuilt_replacement_for_parity_only_with_redirection() {
    let (reads, writes, replacement) = write_of_a_rebuilt_stripe(true, 0);
    assert_eq!(reads, vec![1, replacement], "reconstruct-write");
    assert_eq!(writes, vec![0, 3]);
    let (reads, writes, replacement) = write_of_a_rebuilt_stripe(false, 0);
    assert_eq!(
        reads,
        vec![0, 3],
        "read-modify-write, replacement {replacement} unread"
    );
    assert_eq!(writes, vec![0, 3]);
    let (reads, writes, replacement) = write_of_a_rebuilt_stripe(false, 2);
    assert_eq!(reads, vec![0, 1], "reconstruct-write");
    assert_eq!(
        writes,
        vec![3, replacement],
        "the data lands on the replacement"
    );
}

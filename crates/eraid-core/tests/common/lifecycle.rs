//! Shared helpers for the member-lifecycle tests (rebuild, replace, rebuild
//! beside a growth): opening with options, admin commands, blank members,
//! and batches of concurrent user requests checked against a flat model.

use eraid_core::growth::config::NewMember;
use eraid_core::io::{AdminCommand, Machine, UserOp};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::{overlaps, random_range, CHUNK};

/// ERAID_REBUILD_SEEDS, else `default`.
pub fn rebuild_seeds(default: u64) -> u64 {
    std::env::var("ERAID_REBUILD_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub fn open_with(h: &mut MemHarness, options: ArrayOptions) -> Array {
    let assembly = h.arrange_for_assembly().expect("assembles");
    let mut array = Array::open(assembly, options, h.now);
    h.run(&mut array);
    array
}

pub fn admin(h: &mut MemHarness, array: &mut Array, command: AdminCommand) -> Value {
    let answer = array.handle_admin(h.now, command);
    h.collect(array);
    answer
}

pub fn admin_ok(h: &mut MemHarness, array: &mut Array, command: AdminCommand) -> Value {
    let answer = admin(h, array, command.clone());
    assert!(answer.get("error").is_none(), "{command:?}: {answer}");
    answer
}

pub fn member_size(h: &MemHarness) -> u64 {
    h.members[0].as_ref().expect("member 0").current.len() as u64
}

/// A blank member of `size_bytes`, described as a driver would.
pub fn blank_member_of(h: &mut MemHarness, size_bytes: u64) -> NewMember {
    h.add_blank_members(1, size_bytes).remove(0)
}

/// A blank member as large as member 0.
pub fn blank_member(h: &mut MemHarness) -> NewMember {
    let size = member_size(h);
    blank_member_of(h, size)
}

/// Fails member `slot`, then adds a blank member in its place; the
/// rebuild's I/O is left for the caller to run.
pub fn fail_and_replace(h: &mut MemHarness, array: &mut Array, slot: usize) {
    admin_ok(h, array, AdminCommand::FailMember { slot });
    h.run(array);
    let member = blank_member(h);
    admin_ok(
        h,
        array,
        AdminCommand::AddMember {
            member,
            spare: false,
        },
    );
}

/// Adds a blank member as large as member 0 as a hot spare (the array
/// must accept it); its I/O is left for the caller to run.
pub fn add_spare(h: &mut MemHarness, array: &mut Array) -> Value {
    let member = blank_member(h);
    admin_ok(
        h,
        array,
        AdminCommand::AddMember {
            member,
            spare: true,
        },
    )
}

pub fn rebuild_status(array: &Array) -> Value {
    array.status_json()["rebuild"].clone()
}

/// Every member's durable image (None where a member is absent).
pub fn durable_images(h: &MemHarness) -> Vec<Option<Vec<u8>>> {
    h.members
        .iter()
        .map(|m| m.as_ref().map(|m| m.durable.clone()))
        .collect()
}

/// One batch of concurrent requests that never overlap one another (up to
/// five, each up to `5 * CHUNK` bytes), stepped (background I/O completing
/// among them) until all are answered; reads are checked against the
/// model, writes applied to it.
pub fn user_batch(
    h: &mut MemHarness,
    array: &mut Array,
    rng: &mut ChaCha8Rng,
    model: &mut [u8],
    next_id: &mut u64,
    what: &str,
) {
    let capacity = array.capacity_bytes();
    let mut batch: Vec<(u64, UserOp)> = Vec::new();
    let mut taken: Vec<(u64, u64)> = Vec::new();
    for _ in 0..rng.gen_range(1..6) {
        let range = random_range(rng, capacity, 5 * CHUNK);
        if taken.iter().any(|&t| overlaps(t, range)) {
            continue;
        }
        taken.push(range);
        let op = if rng.gen_bool(0.5) {
            UserOp::Read {
                offset_bytes: range.0,
                len_bytes: range.1 as usize,
            }
        } else {
            UserOp::Write {
                offset_bytes: range.0,
                data: (0..range.1).map(|_| rng.gen()).collect(),
                fua: rng.gen_bool(0.1),
            }
        };
        batch.push((*next_id, op));
        *next_id += 1;
    }
    for (id, op) in &batch {
        h.submit(array, *id, op.clone());
    }
    let mut answered = 0;
    while answered < batch.len() {
        for (id, op) in &batch {
            let Some(reply) = h.take_reply(*id) else {
                continue;
            };
            answered += 1;
            let result = reply
                .result
                .unwrap_or_else(|e| panic!("{what}: request {id} failed: {e}"));
            match op {
                UserOp::Read {
                    offset_bytes,
                    len_bytes,
                } => {
                    let at = *offset_bytes as usize;
                    assert!(
                        result
                            .as_ref()
                            .is_some_and(|d| *d == model[at..at + len_bytes]),
                        "{what}: read {offset_bytes}+{len_bytes} differs from the model"
                    );
                }
                UserOp::Write {
                    offset_bytes, data, ..
                } => {
                    let at = *offset_bytes as usize;
                    model[at..at + data.len()].copy_from_slice(data);
                }
                _ => unreachable!("batches hold reads and writes only"),
            }
        }
        if answered < batch.len() {
            assert!(
                h.step(array),
                "{what}: requests unanswered with nothing in flight"
            );
        }
    }
}

//! The core's stack depth does not grow with the array's size nor with how
//! many steps complete at once: every activity runs over an array of more
//! than a million stripes with a member failed at its first step (so every
//! later step finishes without device I/O, inside the handler that started
//! it), on a thread with a 256 KiB stack.
//!
//! Members are sparse: the metadata area is kept, data reads return zeroes
//! (consistent parity for every code) and data writes are dropped; these
//! tests are about the engine's control flow, not the bytes.

use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::growth::config::{ReshapeConfig, ReshapeStrategy};
use eraid_core::io::*;
use eraid_core::metadata::assemble::{assemble, MemberProbe};
use eraid_core::metadata::create::{initial_writes, new_superblock, NewMember};
use eraid_core::{Array, ArrayOptions};
use std::collections::VecDeque;

const CHUNK_BYTES: u64 = 4096;
const STRIPES: u64 = 1 << 20;
const STACK_BYTES: usize = 256 << 10;

struct SparseMember {
    metadata: Vec<u8>,
    size_bytes: u64,
    failed: bool,
}

/// A FIFO driver over sparse members; `fail_at` fails a member when the
/// n-th I/O of a cause completes (that I/O included).
struct SparseDriver {
    members: Vec<SparseMember>,
    inflight: VecDeque<DeviceIo>,
    replies: Vec<UserReply>,
    events: Vec<ArrayEvent>,
    now: TimeNs,
    completions_by_cause: std::collections::HashMap<IoCause, u64>,
    fail_at: Vec<(IoCause, u64, usize)>,
}

impl SparseDriver {
    fn create(geometry: Geometry) -> SparseDriver {
        let size_bytes = geometry.data_offset_bytes + geometry.member_data_bytes;
        let superblock = new_superblock(
            geometry,
            "deep".into(),
            (0..geometry.member_count)
                .map(|i| NewMember {
                    uuid: format!("deep-{i}"),
                    path_hint: format!("sparse{i}"),
                })
                .collect(),
            0,
        );
        let mut driver = SparseDriver {
            members: (0..geometry.member_count)
                .map(|_| SparseMember {
                    metadata: vec![0; METADATA_BYTES as usize],
                    size_bytes,
                    failed: false,
                })
                .collect(),
            inflight: VecDeque::new(),
            replies: Vec::new(),
            events: Vec::new(),
            now: TimeNs(0),
            completions_by_cause: Default::default(),
            fail_at: Vec::new(),
        };
        for (member, offset_bytes, bytes) in initial_writes(&superblock, false) {
            driver.write(member, offset_bytes, &bytes);
        }
        driver
    }

    fn write(&mut self, member: usize, offset_bytes: u64, data: &[u8]) {
        let m = &mut self.members[member];
        assert!(
            offset_bytes + data.len() as u64 <= m.size_bytes,
            "write past the member's end"
        );
        if offset_bytes < METADATA_BYTES {
            let at = offset_bytes as usize;
            let end = (at + data.len()).min(METADATA_BYTES as usize);
            m.metadata[at..end].copy_from_slice(&data[..end - at]);
        }
    }

    fn probes(&self) -> Vec<MemberProbe> {
        self.members
            .iter()
            .enumerate()
            .map(|(i, m)| MemberProbe {
                path: format!("sparse{i}"),
                metadata: Ok(m.metadata.clone()),
                size_bytes: m.size_bytes,
            })
            .collect()
    }

    fn open(&mut self, options: ArrayOptions) -> Array {
        let assembly = assemble(&self.probes()).expect("assembles");
        let mut array = Array::open(assembly, options, self.now);
        self.run(&mut array);
        array
    }

    fn collect(&mut self, array: &mut Array) {
        while let Some(io) = array.poll_io() {
            self.inflight.push_back(io);
        }
        while let Some(reply) = array.poll_reply() {
            self.replies.push(reply);
        }
        while let Some(event) = array.poll_event() {
            self.events.push(event);
        }
    }

    fn perform(&mut self, io: &DeviceIo) -> IoCompletion {
        let m = &self.members[io.member];
        if m.failed {
            return IoCompletion::Failed(format!("member {} failed (injected EIO)", io.member));
        }
        match &io.op {
            DeviceOp::Read {
                offset_bytes,
                len_bytes,
            } => {
                assert!(*offset_bytes + *len_bytes as u64 <= m.size_bytes);
                let mut bytes = vec![0u8; *len_bytes];
                if *offset_bytes < METADATA_BYTES {
                    let at = *offset_bytes as usize;
                    let end = (at + len_bytes).min(METADATA_BYTES as usize);
                    bytes[..end - at].copy_from_slice(&m.metadata[at..end]);
                }
                IoCompletion::Read(bytes.into())
            }
            DeviceOp::Write { offset_bytes, data } => {
                let (member, offset_bytes, data) = (io.member, *offset_bytes, data.clone());
                self.write(member, offset_bytes, &data);
                IoCompletion::Done
            }
            DeviceOp::WriteZeroes {
                offset_bytes,
                len_bytes,
            } => {
                let (member, offset_bytes) = (io.member, *offset_bytes);
                self.write(member, offset_bytes, &vec![0; *len_bytes as usize]);
                IoCompletion::Done
            }
            DeviceOp::Flush => IoCompletion::Done,
        }
    }

    /// Delivers every completion, oldest first, until nothing is in flight.
    fn run(&mut self, array: &mut Array) {
        self.collect(array);
        while let Some(io) = self.inflight.pop_front() {
            let seen = self.completions_by_cause.entry(io.cause).or_default();
            *seen += 1;
            for &(cause, nth, member) in &self.fail_at {
                if cause == io.cause && *seen == nth {
                    self.members[member].failed = true;
                }
            }
            self.now = TimeNs(self.now.0 + 100_000);
            let completion = self.perform(&io);
            array.handle_completion(self.now, io.id, completion);
            if array.poll_timeout().is_some_and(|t| t <= self.now) {
                array.handle_tick(self.now);
            }
            self.collect(array);
        }
    }

    fn answered(&self, id: u64) -> Option<&UserReply> {
        self.replies.iter().find(|r| r.id == RequestId(id))
    }
}

fn geometry(level: Level, layout: ParityLayout, members: usize) -> Geometry {
    Geometry::new(
        level,
        layout,
        members,
        CHUNK_BYTES,
        METADATA_BYTES + STRIPES * CHUNK_BYTES,
    )
    .expect("geometry")
}

fn options() -> ArrayOptions {
    ArrayOptions {
        bitmap_clean_delay_ms: 50,
        scrub_window_stripes: 16,
        resync_on_open: true,
        write_intent_bitmap: true,
        ..ArrayOptions::default()
    }
}

/// Runs `body` on a thread with a 256 KiB stack (an overflow aborts the
/// test binary, which fails the run).
fn on_small_stack(body: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name("small-stack".into())
        .stack_size(STACK_BYTES)
        .spawn(body)
        .expect("spawn")
        .join()
        .expect("the run finished");
}

fn member_state(array: &Array, member: usize) -> String {
    array.status_json()["members"][member]["state"]
        .as_str()
        .expect("state")
        .to_string()
}

fn read_works(driver: &mut SparseDriver, array: &mut Array, id: u64, offset_bytes: u64) {
    array.handle_request(
        driver.now,
        UserRequest {
            id: RequestId(id),
            op: UserOp::Read {
                offset_bytes,
                len_bytes: 8192,
            },
        },
    );
    driver.run(array);
    let reply = driver.answered(id).expect("read answered");
    assert_eq!(
        reply.result,
        Ok(Some(vec![0u8; 8192].into())),
        "degraded read"
    );
}

#[test]
fn resync_of_a_million_stripes_goes_on_degraded_after_a_member_fails() {
    on_small_stack(|| {
        let mut driver =
            SparseDriver::create(geometry(Level::Raid5, ParityLayout::LeftSymmetric, 4));
        // Without a bitmap an unclean shutdown makes every region suspect.
        let options = ArrayOptions {
            write_intent_bitmap: false,
            ..options()
        };
        let array = driver.open(options.clone());
        drop(array); // power loss: the superblocks stay dirty
        driver.inflight.clear();
        driver.fail_at = vec![(IoCause::Resync, 8, 3)];
        let mut array = driver.open(options);
        let status = array.status_json();
        assert_eq!(status["activity"]["kind"], "resync", "{status}");
        assert_eq!(status["activity"]["state"], "done", "{status}");
        assert_eq!(status["activity"]["stripes_done"], STRIPES, "{status}");
        let skipped = status["activity"]["skipped_degraded_stripes"]
            .as_u64()
            .unwrap();
        assert!(skipped + 64 >= STRIPES, "skipped {skipped}: {status}");
        let note = status["activity"]["on_member_failure"]
            .as_str()
            .unwrap_or("");
        assert!(
            note.contains("member 3 failed") && note.contains("continued degraded"),
            "{status}"
        );
        // The regions it could not resync stay marked for a rebuild.
        assert!(
            status["unresynced_regions"].as_u64().unwrap() > 0,
            "{status}"
        );
        assert_eq!(member_state(&array, 3), "faulty");
        let failure = status["members"][3]["failure"].as_str().unwrap_or("");
        assert!(failure.contains("injected EIO"), "{status}");
        read_works(&mut driver, &mut array, 1, 5 << 20);
    });
}

fn check_a_million_stripes_with_a_member_failed(repair: bool) {
    on_small_stack(move || {
        let mut driver =
            SparseDriver::create(geometry(Level::Raid6, ParityLayout::LeftSymmetric, 5));
        let mut array = driver.open(options());
        driver.fail_at = vec![(IoCause::Scrub, 5, 1)];
        let reply = array.handle_admin(driver.now, AdminCommand::StartCheck { repair });
        assert!(reply.get("error").is_none(), "{reply}");
        driver.run(&mut array);
        let status = array.status_json();
        assert_eq!(status["activity"]["state"], "done", "{status}");
        assert_eq!(status["activity"]["repair"], repair, "{status}");
        assert_eq!(status["activity"]["stripes_done"], STRIPES, "{status}");
        assert_eq!(status["activity"]["mismatches"], 0, "{status}");
        assert!(status["activity"]["on_member_failure"]
            .as_str()
            .is_some_and(|n| n.contains("member 1 failed")));
        assert_eq!(member_state(&array, 1), "faulty");
        read_works(&mut driver, &mut array, 1, 3 << 20);
    });
}

#[test]
fn check_of_a_million_stripes_goes_on_degraded_after_a_member_fails() {
    check_a_million_stripes_with_a_member_failed(false);
}

#[test]
fn check_with_repair_of_a_million_stripes_goes_on_degraded_after_a_member_fails() {
    check_a_million_stripes_with_a_member_failed(true);
}

/// A long queue of writes waiting on one stripe lock; the array then loses
/// more members than it survives, so each waiter, once granted the lock,
/// is refused without device I/O and hands the lock to the next.
fn lock_queue_drains(level: Level, layout: ParityLayout, members: usize, fail: &'static [usize]) {
    on_small_stack(move || {
        let waiters = 50_000u64;
        let mut driver = SparseDriver::create(geometry(level, layout, members));
        let mut array = driver.open(options());
        for id in 0..waiters {
            array.handle_request(
                driver.now,
                UserRequest {
                    id: RequestId(id),
                    op: UserOp::Write {
                        offset_bytes: 0,
                        data: vec![id as u8; 512].into(),
                        fua: false,
                    },
                },
            );
        }
        driver.fail_at = fail.iter().map(|&m| (IoCause::User, 1, m)).collect();
        driver.run(&mut array);
        for id in 0..waiters {
            let reply = driver
                .answered(id)
                .unwrap_or_else(|| panic!("write {id} never answered"));
            if let Err(error) = &reply.result {
                assert!(matches!(error, UserError::Unavailable(_)), "{error}");
            }
        }
        let refused = driver.replies.iter().filter(|r| r.result.is_err()).count();
        assert!(
            refused as u64 + 2 >= waiters,
            "{refused} of {waiters} refused"
        );
    });
}

#[test]
fn a_long_lock_queue_drains_when_a_raid5_fails() {
    lock_queue_drains(Level::Raid5, ParityLayout::LeftSymmetric, 4, &[0, 1, 2, 3]);
}

#[test]
fn a_long_lock_queue_drains_when_a_raid0_member_fails() {
    lock_queue_drains(Level::Raid0, ParityLayout::None, 4, &[0, 1, 2, 3]);
}

fn growth_with_a_member_failed_at_the_first_step(level: Level, strategy: ReshapeStrategy) {
    on_small_stack(move || {
        let layout = match level {
            Level::Raid0 => ParityLayout::None,
            _ => ParityLayout::LeftSymmetric,
        };
        let mut driver = SparseDriver::create(geometry(level, layout, 4));
        let mut array = driver.open(options());
        let size_bytes = driver.members[0].size_bytes;
        driver.members.push(SparseMember {
            metadata: vec![0; METADATA_BYTES as usize],
            size_bytes,
            failed: false,
        });
        let config = ReshapeConfig {
            speed_min_kib_s: u64::MAX / 4096,
            speed_max_kib_s: u64::MAX / 4096,
            ..ReshapeConfig::with_strategy(strategy)
        };
        let reply = array.handle_admin(
            driver.now,
            AdminCommand::StartGrow {
                members: vec![eraid_core::growth::config::NewMember {
                    uuid: "deep-new".into(),
                    path_hint: "sparse4".into(),
                    size_bytes,
                }],
                config,
            },
        );
        assert!(reply.get("error").is_none(), "{reply}");
        // The joining metadata goes out first; the member fails under the
        // first window.
        driver.fail_at = vec![(IoCause::Redistribution, 1, 2)];
        driver.run(&mut array);
        for _ in 0..20 {
            driver.now = driver.now.plus_ms(100);
            array.handle_tick(driver.now);
            driver.run(&mut array);
        }
        let status = array.status_json();
        let reshape = &status["reshape"];
        assert_eq!(reshape["state"], "paused", "{status}");
        assert!(
            reshape["pause_reason"]
                .as_str()
                .is_some_and(|r| r.contains("member 2")),
            "{status}"
        );
        assert_eq!(member_state(&array, 2), "faulty");
        if level == Level::Raid5 {
            read_works(&mut driver, &mut array, 1, 64 << 20);
        }
        array.handle_close(driver.now);
        driver.run(&mut array);
        assert!(array.is_closed());
    });
}

#[test]
fn alv_growth_pauses_when_a_member_fails_at_its_first_step() {
    growth_with_a_member_failed_at_the_first_step(Level::Raid5, ReshapeStrategy::Alv);
}

#[test]
fn md_reshape_growth_pauses_when_a_member_fails_at_its_first_step() {
    growth_with_a_member_failed_at_the_first_step(Level::Raid5, ReshapeStrategy::MdReshape);
}

#[test]
fn round_robin_growth_pauses_when_a_member_fails_at_its_first_step() {
    growth_with_a_member_failed_at_the_first_step(Level::Raid0, ReshapeStrategy::RoundRobin);
}

#[test]
fn semi_rr_growth_pauses_when_a_member_fails_at_its_first_step() {
    growth_with_a_member_failed_at_the_first_step(Level::Raid0, ReshapeStrategy::SemiRr);
}

#[test]
fn fastscale_growth_pauses_when_a_member_fails_at_its_first_step() {
    growth_with_a_member_failed_at_the_first_step(Level::Raid0, ReshapeStrategy::FastScale);
}

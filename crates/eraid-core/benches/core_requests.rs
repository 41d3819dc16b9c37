//! Requests per second the array core alone handles on one core: the
//! ceiling of the engine lock, under which the core runs one thread at a
//! time (README, "Threads of a served array"). The driver here does no
//! I/O: a read is answered with an unfilled pooled buffer, a write or a
//! flush at once. What is timed is the core's work per request: planning,
//! stripe locks and the write-intent bitmap. Parity is not: the core hands
//! it out as a recipe that the thread performing the parity write computes,
//! outside the engine lock (`WriteData`), and this driver writes nothing.
//!
//! Four members, 64 KiB chunks, 4 KiB requests at random offsets, 32 in
//! flight; criterion's throughput figure is requests per second. The
//! degraded case runs RAID-5 without its last member.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eraid_buffers::BufferPool;
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::io::{
    Bytes, DeviceOp, IoCompletion, Machine, RequestId, TimeNs, UserOp, UserRequest,
};
use eraid_core::testing::MemHarness;
use eraid_core::{Array, ArrayOptions};
use std::time::Duration;

const CHUNK_BYTES: u64 = 64 * 1024;
const MEMBER_CHUNKS: u64 = 256;
const REQUEST_BYTES: usize = 4096;
const IN_FLIGHT: u64 = 32;
const BATCH: u64 = 4096;

/// An open array and a driver that completes its I/O at once.
struct Bench {
    array: Array,
    now: TimeNs,
    read_buffers: BufferPool,
    payload: Bytes,
    capacity_blocks: u64,
    next_id: u64,
    rng: u64,
}

impl Bench {
    /// `missing_members`: how many members, the last ones, the array is
    /// assembled without (degraded).
    fn open(level: Level, layout: ParityLayout, missing_members: usize) -> Bench {
        let geometry = Geometry::new(
            level,
            layout,
            4,
            CHUNK_BYTES,
            METADATA_BYTES + MEMBER_CHUNKS * CHUNK_BYTES,
        )
        .expect("geometry");
        let mut h = MemHarness::create(geometry, 1);
        let mut kept = 0;
        h.retain_devices(|_| {
            kept += 1;
            kept <= 4 - missing_members
        });
        let assembly = h.assemble().expect("assembles");
        // `eraid serve`'s defaults, bar the member timeout (no clock here).
        let mut array = Array::open(assembly, ArrayOptions::default(), h.now);
        h.run(&mut array);
        let capacity_blocks = geometry.capacity_bytes() / REQUEST_BYTES as u64;
        Bench {
            array,
            now: h.now,
            read_buffers: BufferPool::new(16 << 20),
            payload: Bytes::from(vec![0x5A; REQUEST_BYTES]),
            capacity_blocks,
            next_id: 1,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn random_offset_bytes(&mut self) -> u64 {
        // xorshift64: deterministic and cheap beside what is timed.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % self.capacity_blocks) * REQUEST_BYTES as u64
    }

    fn submit(&mut self, write: bool) {
        let offset_bytes = self.random_offset_bytes();
        let op = if write {
            UserOp::Write {
                offset_bytes,
                data: self.payload.clone(),
                fua: false,
            }
        } else {
            UserOp::Read {
                offset_bytes,
                len_bytes: REQUEST_BYTES,
            }
        };
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.array.handle_request(self.now, UserRequest { id, op });
    }

    /// `count` requests, `IN_FLIGHT` at a time, each answered.
    fn run(&mut self, count: u64, write: bool) {
        let mut submitted = 0;
        let mut answered = 0;
        while answered < count {
            while submitted < count && submitted - answered < IN_FLIGHT {
                self.submit(write);
                submitted += 1;
            }
            self.now = TimeNs(self.now.0 + 1_000);
            if self.array.poll_timeout().is_some_and(|at| at <= self.now) {
                self.array.handle_tick(self.now);
            }
            while let Some(io) = self.array.poll_io() {
                let completion = match io.op {
                    DeviceOp::Read { len_bytes, .. } => {
                        IoCompletion::Read(self.read_buffers.take(len_bytes).into())
                    }
                    _ => IoCompletion::Done,
                };
                self.array.handle_completion(self.now, io.id, completion);
            }
            if let Some(batch) = self.array.poll_journal() {
                panic!("no journal here: {batch:?}");
            }
            while let Some(reply) = self.array.poll_reply() {
                assert!(reply.result.is_ok(), "{reply:?}");
                answered += 1;
            }
            while self.array.poll_event().is_some() {}
        }
    }
}

fn core_requests(c: &mut Criterion) {
    let mut group = c.benchmark_group("core_requests");
    group
        .throughput(Throughput::Elements(BATCH))
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    for (name, level, layout, missing_members) in [
        ("raid0", Level::Raid0, ParityLayout::None, 0),
        ("raid5", Level::Raid5, ParityLayout::LeftSymmetric, 0),
        ("raid6", Level::Raid6, ParityLayout::LeftSymmetric, 0),
        // A member gone: writes and reads of its chunks rebuild the row.
        (
            "raid5_degraded",
            Level::Raid5,
            ParityLayout::LeftSymmetric,
            1,
        ),
    ] {
        for (rw, write) in [("randread_4k", false), ("randwrite_4k", true)] {
            let mut bench = Bench::open(level, layout, missing_members);
            group.bench_function(BenchmarkId::new(name, rw), |b| {
                b.iter(|| bench.run(BATCH, write))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, core_requests);
criterion_main!(benches);

//! Parity throughput on 64 KiB shards, each beside a plain memcpy of the
//! same number of bytes in the same run: absolute numbers on a shared
//! machine mean little, the ratio to memcpy is the figure to read.
//!
//! Group `rmw/k=..`: one read-modify-write of one 64 KiB data shard, from
//! the old data, the new data and the old parity to the new parity. Its
//! throughput counts the shard's bytes (the data changed per call); two
//! memcpy baselines run beside it: `memcpy` copies one shard (the bytes the
//! write changes, the "memcpy of the same bytes"), `memcpy_inputs`
//! copies every shard the update reads (old data, new data, each parity:
//! 2 + m shards), the least memory traffic any RMW kernel has. `*_delta`
//! is the path the core took before `update_parity` (a delta buffer and a
//! parity copy allocated per call, then `apply_delta`); `*_two_mad` is what
//! `update_parity` ran until it got fused kernels (ISA-L's
//! `ec_encode_data_update` into the parity in place, once over the old data
//! and once over the new); `*_update_parity` is the path the core takes now;
//! `*_one_pass` writes new parity out of place in one ISA-L pass over all
//! inputs (xor_gen for RAID-5, ec_encode_data for RAID-6), measured as the
//! alternative.
//!
//! `raid6_encode` takes ISA-L's pq_gen (aligned buffers);
//! `raid6_encode_unaligned` shifts the buffers by one byte to force the
//! general ec_encode_data path, and `raid6_ec_encode_data` calls that
//! kernel directly on the aligned buffers, so both kernels are visible.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use eraid_codes::{isal, xor_into, MatrixCode};
use std::time::Duration;

const SHARD_BYTES: usize = 64 * 1024;

/// `count` buffers of SHARD_BYTES at `misalign` bytes past a 64-byte boundary.
struct Buffers {
    raw: Vec<Vec<u8>>,
    start: Vec<usize>,
}

impl Buffers {
    fn new(count: usize, misalign: usize, seed: u8) -> Self {
        let mut raw = Vec::new();
        let mut start = Vec::new();
        for i in 0..count {
            let mut v = vec![0u8; SHARD_BYTES + 128];
            let s = v.as_ptr().align_offset(64) + misalign;
            for (j, b) in v.iter_mut().enumerate() {
                *b = (j as u8)
                    .wrapping_mul(31)
                    .wrapping_add(seed)
                    .wrapping_add(i as u8);
            }
            raw.push(v);
            start.push(s);
        }
        Self { raw, start }
    }

    fn refs(&self) -> Vec<&[u8]> {
        self.raw
            .iter()
            .zip(&self.start)
            .map(|(v, &s)| &v[s..s + SHARD_BYTES])
            .collect()
    }

    fn muts(&mut self) -> Vec<&mut [u8]> {
        self.raw
            .iter_mut()
            .zip(&self.start)
            .map(|(v, &s)| &mut v[s..s + SHARD_BYTES])
            .collect()
    }
}

fn bench_encode(c: &mut Criterion) {
    for k in [4usize, 8] {
        let mut group = c.benchmark_group(format!("encode/k={k}"));
        // Bytes of data consumed per call: k shards.
        group.throughput(Throughput::Bytes((k * SHARD_BYTES) as u64));

        let data = Buffers::new(k, 0, 1);
        let mut copies = Buffers::new(k, 0, 2);
        group.bench_function("memcpy", |b| {
            b.iter(|| {
                for (dst, src) in copies.muts().into_iter().zip(data.refs()) {
                    dst.copy_from_slice(black_box(src));
                }
            })
        });

        let raid5 = MatrixCode::raid5(k);
        let mut p = Buffers::new(1, 0, 3);
        group.bench_function("raid5_encode", |b| {
            b.iter(|| {
                raid5
                    .encode(black_box(&data.refs()), &mut p.muts())
                    .unwrap()
            })
        });

        let raid6 = MatrixCode::raid6_pq(k);
        let mut pq = Buffers::new(2, 0, 4);
        group.bench_function("raid6_encode", |b| {
            b.iter(|| {
                raid6
                    .encode(black_box(&data.refs()), &mut pq.muts())
                    .unwrap()
            })
        });

        // The same P+Q through the general kernel on the same aligned
        // buffers: what the pq_gen fast path buys.
        let tables = isal::EcTables::new(k, 2, raid6.coding_rows());
        group.bench_function("raid6_ec_encode_data", |b| {
            b.iter(|| isal::ec_encode_data(&tables, black_box(&data.refs()), &mut pq.muts()))
        });

        let data_unaligned = Buffers::new(k, 1, 1);
        let mut pq_unaligned = Buffers::new(2, 1, 4);
        group.bench_function("raid6_encode_unaligned", |b| {
            b.iter(|| {
                raid6
                    .encode(black_box(&data_unaligned.refs()), &mut pq_unaligned.muts())
                    .unwrap()
            })
        });
        group.finish();

        let mut group = c.benchmark_group(format!("apply_delta/k={k}"));
        // Bytes of delta consumed per call: one shard.
        group.throughput(Throughput::Bytes(SHARD_BYTES as u64));
        let delta = Buffers::new(1, 0, 5);
        let mut copy = Buffers::new(1, 0, 6);
        group.bench_function("memcpy", |b| {
            b.iter(|| copy.muts()[0].copy_from_slice(black_box(delta.refs()[0])))
        });
        group.bench_function("raid6_apply_delta", |b| {
            b.iter(|| {
                raid6
                    .apply_delta(k / 2, black_box(delta.refs()[0]), &mut pq.muts())
                    .unwrap()
            })
        });
        group.finish();

        bench_rmw(c, k, &raid5, &raid6);
    }
}

/// One read-modify-write of data shard `k / 2`: see the module comment.
fn bench_rmw(c: &mut Criterion, k: usize, raid5: &MatrixCode, raid6: &MatrixCode) {
    let mut group = c.benchmark_group(format!("rmw/k={k}"));
    group.throughput(Throughput::Bytes(SHARD_BYTES as u64));
    let index = k / 2;
    let old = Buffers::new(1, 0, 7);
    let new = Buffers::new(1, 0, 8);
    let mut parity = Buffers::new(2, 0, 9);
    let mut out = Buffers::new(2, 0, 10);
    let (old, new) = (old.refs()[0], new.refs()[0]);

    group.bench_function("memcpy", |b| {
        b.iter(|| out.muts()[0].copy_from_slice(black_box(old)))
    });
    for (name, m) in [("raid5", 1), ("raid6", 2)] {
        group.bench_function(format!("memcpy_inputs_{name}"), |b| {
            b.iter(|| {
                let dst = &mut out.muts()[0];
                dst.copy_from_slice(black_box(old));
                dst.copy_from_slice(black_box(new));
                for p in &parity.refs()[..m] {
                    dst.copy_from_slice(black_box(p));
                }
            })
        });
    }

    for (name, code) in [("raid5", raid5), ("raid6", raid6)] {
        let m = code.parity_count();
        group.bench_function(format!("{name}_delta"), |b| {
            b.iter(|| {
                let mut delta = black_box(old).to_vec();
                xor_into(&mut delta, black_box(new));
                let mut copies: Vec<Vec<u8>> =
                    parity.refs()[..m].iter().map(|p| p.to_vec()).collect();
                let mut refs: Vec<&mut [u8]> = copies.iter_mut().map(|p| &mut p[..]).collect();
                code.apply_delta(index, &delta, &mut refs).unwrap();
                black_box(copies)
            })
        });
        let tables = isal::EcTables::new(k, m, code.coding_rows());
        group.bench_function(format!("{name}_two_mad"), |b| {
            b.iter(|| {
                let mut refs = parity.muts();
                isal::ec_encode_data_update(&tables, index, black_box(old), &mut refs[..m]);
                isal::ec_encode_data_update(&tables, index, black_box(new), &mut refs[..m]);
            })
        });
        group.bench_function(format!("{name}_update_parity"), |b| {
            b.iter(|| {
                code.update_parity(
                    index,
                    black_box(old),
                    black_box(new),
                    &mut parity.muts()[..m],
                )
                .unwrap()
            })
        });
    }

    group.bench_function("raid5_one_pass", |b| {
        b.iter(|| {
            let sources = [black_box(old), black_box(new), parity.refs()[0]];
            assert!(isal::xor_gen(&sources, out.muts()[0]));
        })
    });
    // New P = old ^ new ^ P, new Q = g*old ^ g*new ^ Q, with g the
    // data shard's Q coefficient: one pass over four sources.
    let g = raid6.coding_rows()[k + index];
    let tables = isal::EcTables::new(4, 2, &[1, 1, 1, 0, g, g, 0, 1]);
    group.bench_function("raid6_one_pass", |b| {
        b.iter(|| {
            let p = parity.refs();
            let sources = [black_box(old), black_box(new), p[0], p[1]];
            isal::ec_encode_data(&tables, &sources, &mut out.muts())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = bench_encode
}
criterion_main!(benches);

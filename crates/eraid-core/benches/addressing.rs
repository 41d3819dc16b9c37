//! Addressing time per chunk after 0..=10 additions, the FastScale paper's
//! "Comparison in Calculation Overhead" (FAST'11: a 4-disk array,
//! one disk added at a time, 2M blocks per disk; round-robin about
//! 0.014 us per block, FastScale at most 0.24 us, on a 2.53 GHz T9400).
//!
//! Each iteration addresses the same 4096 chunks, spread over the whole
//! logical space (so chunks of every age are included); criterion's
//! throughput figure is chunks per second, and time / 4096 is the time per
//! chunk. Round-robin is the baseline to read the others against: absolute
//! times on a shared machine mean little.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eraid_core::growth::fastscale::{GrowthStrategy, ScalingHistory};
use std::time::Duration;

const CHUNKS_PER_DISK: u64 = 2 << 20;
const BATCH: u64 = 4096;

fn addressing(c: &mut Criterion) {
    let mut group = c.benchmark_group("addressing");
    group
        .throughput(Throughput::Elements(BATCH))
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    for additions in 0..=10usize {
        let history =
            ScalingHistory::with_additions(4, CHUNKS_PER_DISK, &vec![1; additions]).unwrap();
        let capacity = history.capacity_chunks();
        // An odd stride near capacity / BATCH visits chunks of every age.
        let stride = (capacity / BATCH) | 1;
        let chunks: Vec<u64> = (0..BATCH).map(|i| (i * stride) % capacity).collect();
        for strategy in GrowthStrategy::ALL {
            group.bench_with_input(
                BenchmarkId::new(strategy.name(), additions),
                &chunks,
                |b, chunks| {
                    b.iter(|| {
                        let mut sum = 0u64;
                        for &chunk in chunks {
                            let at = strategy.locate(black_box(&history), black_box(chunk));
                            sum = sum.wrapping_add(u64::from(at.disk) ^ at.offset_chunks);
                        }
                        sum
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, addressing);
criterion_main!(benches);

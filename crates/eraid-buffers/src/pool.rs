//! A pool of aligned buffers, so the data path neither allocates nor zeroes
//! a buffer per request.
//!
//! Buffers come in power-of-two size classes; a request gets the smallest
//! class that holds it and sees exactly its length. A buffer dropped (the
//! last `Bytes` slice of it, once frozen) goes back to its class while the
//! pool caches less than its bound, and is freed otherwise, so the pool
//! never holds more than `cached_bytes_max` of idle memory.

use crate::aligned::AlignedBuf;
use bytes::Bytes;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The smallest class: one page, the O_DIRECT alignment.
const CLASS_MIN_BYTES: usize = 4096;
/// Classes up to 64 MiB; a longer buffer is allocated and freed alone.
const CLASS_COUNT: usize = 15;

/// Hands out [`PooledBuf`]s. Cloning shares the pool.
#[derive(Clone)]
pub struct BufferPool {
    shared: Arc<Shared>,
}

struct Shared {
    classes: Vec<Mutex<Vec<AlignedBuf>>>,
    cached_bytes: AtomicU64,
    cached_bytes_max: u64,
    taken: AtomicU64,
    reused: AtomicU64,
}

/// How the pool has been used (for tests and statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounters {
    /// Buffers handed out.
    pub taken: u64,
    /// Of those, how many came from the cache rather than the allocator.
    pub reused: u64,
    /// Idle bytes the pool holds now.
    pub cached_bytes: u64,
}

fn class_of(len_bytes: usize) -> usize {
    let block = len_bytes.max(CLASS_MIN_BYTES).next_power_of_two();
    (block / CLASS_MIN_BYTES).trailing_zeros() as usize
}

impl BufferPool {
    /// A pool that keeps at most `cached_bytes_max` bytes of idle buffers.
    pub fn new(cached_bytes_max: u64) -> BufferPool {
        BufferPool {
            shared: Arc::new(Shared {
                classes: (0..CLASS_COUNT).map(|_| Mutex::new(Vec::new())).collect(),
                cached_bytes: AtomicU64::new(0),
                cached_bytes_max,
                taken: AtomicU64::new(0),
                reused: AtomicU64::new(0),
            }),
        }
    }

    /// A buffer of `len_bytes`, aligned to `DIRECT_ALIGN_BYTES`. Its bytes
    /// are whatever an earlier user left (zeroes if new): the caller fills
    /// all of it before anyone reads it.
    pub fn take(&self, len_bytes: usize) -> PooledBuf {
        let shared = &self.shared;
        shared.taken.fetch_add(1, Ordering::Relaxed);
        let class = class_of(len_bytes);
        let cached = shared.classes.get(class).and_then(|free| {
            free.lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pop()
        });
        let block = match cached {
            Some(block) => {
                shared.reused.fetch_add(1, Ordering::Relaxed);
                shared
                    .cached_bytes
                    .fetch_sub(block.len() as u64, Ordering::Relaxed);
                block
            }
            None if class < CLASS_COUNT => AlignedBuf::zeroed(CLASS_MIN_BYTES << class),
            None => AlignedBuf::zeroed(len_bytes),
        };
        assert!(block.len() >= len_bytes, "a class smaller than its request");
        PooledBuf {
            block: Some(block),
            len_bytes,
            class,
            shared: Arc::clone(&self.shared),
        }
    }

    pub fn counters(&self) -> PoolCounters {
        PoolCounters {
            taken: self.shared.taken.load(Ordering::Relaxed),
            reused: self.shared.reused.load(Ordering::Relaxed),
            cached_bytes: self.shared.cached_bytes.load(Ordering::Relaxed),
        }
    }
}

/// One buffer from a [`BufferPool`], `len_bytes` long; back to the pool
/// when dropped.
pub struct PooledBuf {
    block: Option<AlignedBuf>,
    len_bytes: usize,
    class: usize,
    shared: Arc<Shared>,
}

impl PooledBuf {
    /// Shares the filled buffer as `Bytes`: slices of it cost no copy, and
    /// it returns to the pool when the last slice is dropped.
    pub fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl Deref for PooledBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.block.as_ref().expect("held until dropped")[..self.len_bytes]
    }
}

impl DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.block.as_mut().expect("held until dropped")[..self.len_bytes]
    }
}

impl AsRef<[u8]> for PooledBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        let Some(block) = self.block.take() else {
            return;
        };
        let Some(free) = self.shared.classes.get(self.class) else {
            return;
        };
        let block_bytes = block.len() as u64;
        // Reserve room first, so racing drops cannot overshoot the bound.
        let reserved = self
            .shared
            .cached_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cached| {
                (cached + block_bytes <= self.shared.cached_bytes_max)
                    .then_some(cached + block_bytes)
            })
            .is_ok();
        if reserved {
            free.lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DIRECT_ALIGN_BYTES;

    #[test]
    fn a_buffer_has_its_length_and_is_aligned() {
        let pool = BufferPool::new(1 << 20);
        for len_bytes in [0, 1, 512, 4096, 4097, 131_072, 200_000] {
            let buf = pool.take(len_bytes);
            assert_eq!(buf.len(), len_bytes);
            assert_eq!(buf.as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
        }
    }

    #[test]
    fn a_dropped_buffer_is_reused_by_its_class() {
        let pool = BufferPool::new(1 << 20);
        let first = pool.take(128 * 1024);
        let at = first.as_ptr();
        drop(first);
        assert_eq!(pool.counters().cached_bytes, 128 * 1024);
        // 100 KiB rounds up to the same 128 KiB class.
        let second = pool.take(100 * 1024);
        assert_eq!(second.as_ptr(), at);
        assert_eq!(pool.counters().reused, 1);
        assert_eq!(pool.counters().cached_bytes, 0);
        // Another class does not take it.
        drop(second);
        let other = pool.take(64 * 1024);
        assert_ne!(other.as_ptr(), at);
        assert_eq!(pool.counters().reused, 1);
    }

    #[test]
    fn frozen_slices_keep_the_buffer_until_the_last_is_dropped() {
        let pool = BufferPool::new(1 << 20);
        let mut buf = pool.take(8192);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let at = buf.as_ptr();
        let whole = buf.freeze();
        let tail = whole.slice(4096..);
        drop(whole);
        assert_eq!(pool.counters().cached_bytes, 0, "a slice still holds it");
        assert_eq!(tail.as_ptr(), at.wrapping_add(4096), "sliced, not copied");
        assert_eq!(tail[0], (4096 % 251) as u8);
        drop(tail);
        assert_eq!(pool.counters().cached_bytes, 8192);
    }

    #[test]
    fn the_pool_never_caches_more_than_its_bound() {
        let pool = BufferPool::new(3 * 64 * 1024);
        let held: Vec<_> = (0..5).map(|_| pool.take(64 * 1024)).collect();
        drop(held);
        assert_eq!(pool.counters().cached_bytes, 3 * 64 * 1024);
        let huge = pool.take(128 << 20);
        assert_eq!(huge.len(), 128 << 20);
        drop(huge);
        assert_eq!(pool.counters().cached_bytes, 3 * 64 * 1024);
    }
}

//! The bytes of one device read, owned and writable.

use crate::pool::PooledBuf;
use bytes::Bytes;
use std::ops::{Deref, DerefMut};

/// One device read's bytes. A real member reads into a pooled buffer
/// aligned for O_DIRECT; the simulator and tests hand plain vectors. The
/// array core may update it in place (read-modify-write turns the old
/// parity into the new) and then share it as [`Bytes`] without a copy:
/// a pooled one is still aligned when a member writes it back.
pub struct ReadBuf {
    storage: Storage,
}

enum Storage {
    Pooled(PooledBuf),
    Heap(Vec<u8>),
}

impl ReadBuf {
    /// Shares the bytes without copying them.
    pub fn freeze(self) -> Bytes {
        match self.storage {
            Storage::Pooled(buf) => buf.freeze(),
            Storage::Heap(vec) => Bytes::from(vec),
        }
    }

    /// The bytes as a vector: free for a heap buffer, one copy for a
    /// pooled one (which goes back to its pool).
    pub fn into_vec(self) -> Vec<u8> {
        match self.storage {
            Storage::Pooled(buf) => buf.to_vec(),
            Storage::Heap(vec) => vec,
        }
    }

    /// True when the bytes live in a pooled, aligned buffer.
    pub fn is_pooled(&self) -> bool {
        matches!(self.storage, Storage::Pooled(_))
    }
}

impl From<Vec<u8>> for ReadBuf {
    fn from(vec: Vec<u8>) -> ReadBuf {
        ReadBuf {
            storage: Storage::Heap(vec),
        }
    }
}

impl From<PooledBuf> for ReadBuf {
    fn from(buf: PooledBuf) -> ReadBuf {
        ReadBuf {
            storage: Storage::Pooled(buf),
        }
    }
}

impl Default for ReadBuf {
    fn default() -> ReadBuf {
        ReadBuf::from(Vec::new())
    }
}

impl Deref for ReadBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.storage {
            Storage::Pooled(buf) => buf,
            Storage::Heap(vec) => vec,
        }
    }
}

impl DerefMut for ReadBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.storage {
            Storage::Pooled(buf) => buf,
            Storage::Heap(vec) => vec,
        }
    }
}

impl AsRef<[u8]> for ReadBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// A copy on the heap: a pooled buffer is not taken from the pool again.
impl Clone for ReadBuf {
    fn clone(&self) -> ReadBuf {
        ReadBuf::from(self.to_vec())
    }
}

/// Equal when the bytes are, wherever they live.
impl PartialEq for ReadBuf {
    fn eq(&self, other: &ReadBuf) -> bool {
        **self == **other
    }
}

impl Eq for ReadBuf {}

impl PartialEq<[u8]> for ReadBuf {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for ReadBuf {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for ReadBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuf")
            .field("len_bytes", &self.len())
            .field("pooled", &self.is_pooled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BufferPool, DIRECT_ALIGN_BYTES};

    #[test]
    fn a_pooled_read_updated_in_place_is_shared_aligned_and_uncopied() {
        let pool = BufferPool::new(1 << 20);
        let mut read = ReadBuf::from(pool.take(8192));
        read.fill(7);
        read[0] = 1;
        let at = read.as_ptr();
        let shared = read.freeze();
        assert_eq!(shared.as_ptr(), at, "frozen without a copy");
        assert_eq!(shared.as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
        assert_eq!((shared[0], shared[8191]), (1, 7));
        drop(shared);
        assert_eq!(pool.counters().cached_bytes, 8192, "back in its pool");
    }

    #[test]
    fn heap_and_pooled_reads_of_the_same_bytes_are_equal() {
        let pool = BufferPool::new(1 << 20);
        let mut pooled = ReadBuf::from(pool.take(3));
        pooled.copy_from_slice(&[1, 2, 3]);
        let heap = ReadBuf::from(vec![1, 2, 3]);
        assert_eq!(pooled, heap);
        assert_eq!(pooled, vec![1, 2, 3]);
        assert!(pooled.clone() == heap && !pooled.clone().is_pooled());
        assert_eq!(pooled.into_vec(), vec![1, 2, 3]);
        assert_ne!(heap, ReadBuf::from(vec![1, 2, 4]));
    }
}

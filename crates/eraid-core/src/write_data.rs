//! A device write's bytes: ready, or a stripe's parity that is computed
//! on first access, by whichever thread performs the write.
//!
//! Why deferred: the core runs behind the driver's engine lock, one thread
//! at a time, so parity computed inside it serialises every connection on
//! the XOR. What parity needs is immutable once the core has it (the
//! user's [`Bytes`], the members' read buffers, which nothing else holds),
//! so the core hands out the recipe instead and the thread that writes a
//! parity shard (outside the lock) computes it: a full stripe's encode, a
//! read-modify-write's update of the old parity, a reconstruct-write's
//! encode over the row. The simulator looks at the bytes only when its
//! members keep their contents, so a timing-only run never computes;
//! whoever does look (that simulator, the tests, the journal) gets the
//! same bytes, computed then.

use crate::stripe_code::StripeCode;
use bytes::Bytes;
use eraid_buffers::Deferred;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The bytes a [`crate::io::DeviceOp::Write`] writes. Derefs to `[u8]`;
/// [`WriteData::len`] never computes.
#[derive(Clone)]
pub struct WriteData(Source);

#[derive(Clone)]
enum Source {
    Ready(Bytes),
    Parity {
        stripe: Arc<StripeParity>,
        index: usize,
    },
}

/// One stripe row's parity shards, computed once by the first of its
/// parity writes to need them.
pub struct StripeParity {
    parity_count: usize,
    len_bytes: usize,
    parity: Deferred,
}

impl StripeParity {
    /// The parity of `data` (every data shard of the stripe, each
    /// `len_bytes` long) under `code`, encoded later into buffers from
    /// `buffers`.
    pub fn new(
        code: Arc<StripeCode>,
        data: Vec<Bytes>,
        parity_count: usize,
        buffers: eraid_buffers::BufferPool,
    ) -> Arc<StripeParity> {
        let len_bytes = data.first().map_or(0, Bytes::len);
        assert!(
            data.iter().all(|d| d.len() == len_bytes),
            "a stripe's data shards differ in length"
        );
        StripeParity::deferred(
            parity_count,
            len_bytes,
            Box::new(move || {
                let data_refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
                encode_into_pool(&code, &data_refs, parity_count, &buffers)
            }),
        )
    }

    /// `parity_count` shards of `len_bytes` each, computed later by
    /// `recipe` (which must return exactly that).
    pub fn deferred(
        parity_count: usize,
        len_bytes: usize,
        recipe: eraid_buffers::Recipe,
    ) -> Arc<StripeParity> {
        assert!(parity_count > 0, "a stripe without parity");
        Arc::new(StripeParity {
            parity_count,
            len_bytes,
            parity: Deferred::new(recipe),
        })
    }

    /// Parity shard `index` (0 = P) as a write's bytes.
    pub fn shard(self: &Arc<Self>, index: usize) -> WriteData {
        assert!(
            index < self.parity_count,
            "parity shard {index} of {}",
            self.parity_count
        );
        WriteData(Source::Parity {
            stripe: Arc::clone(self),
            index,
        })
    }

    fn encoded(&self) -> &[Bytes] {
        let parity = self.parity.get();
        assert!(
            parity.len() == self.parity_count && parity.iter().all(|p| p.len() == self.len_bytes),
            "a parity recipe returned the wrong shapes"
        );
        parity
    }
}

/// The parity of `data` (equal-length shards) under `code`, encoded into
/// `parity_count` buffers from `buffers` (aligned, reused once warm).
pub(crate) fn encode_into_pool(
    code: &StripeCode,
    data: &[&[u8]],
    parity_count: usize,
    buffers: &eraid_buffers::BufferPool,
) -> Vec<Bytes> {
    let len_bytes = data.first().map_or(0, |d| d.len());
    // Every byte of each buffer is written by the encode, so a reused
    // buffer's old bytes never leak.
    let mut parity: Vec<eraid_buffers::PooledBuf> =
        (0..parity_count).map(|_| buffers.take(len_bytes)).collect();
    let mut parity_refs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
    code.encode(data, &mut parity_refs)
        .expect("a stripe's shards have matching shapes");
    parity
        .into_iter()
        .map(eraid_buffers::PooledBuf::freeze)
        .collect()
}

impl WriteData {
    pub fn len(&self) -> usize {
        match &self.0 {
            Source::Ready(bytes) => bytes.len(),
            Source::Parity { stripe, .. } => stripe.len_bytes,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, encoding the stripe's parity first if no other write of
    /// it has.
    pub fn bytes(&self) -> &Bytes {
        match &self.0 {
            Source::Ready(bytes) => bytes,
            Source::Parity { stripe, index } => &stripe.encoded()[*index],
        }
    }

    /// False for parity not encoded yet (what the core hands out for a full
    /// stripe); true once encoded, and always for other bytes.
    pub fn is_encoded(&self) -> bool {
        match &self.0 {
            Source::Ready(_) => true,
            Source::Parity { stripe, .. } => stripe.parity.is_computed(),
        }
    }
}

impl Deref for WriteData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl From<Bytes> for WriteData {
    fn from(bytes: Bytes) -> WriteData {
        WriteData(Source::Ready(bytes))
    }
}

impl From<Vec<u8>> for WriteData {
    fn from(bytes: Vec<u8>) -> WriteData {
        WriteData(Source::Ready(bytes.into()))
    }
}

impl PartialEq for WriteData {
    fn eq(&self, other: &WriteData) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for WriteData {}

impl fmt::Debug for WriteData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::Ready(bytes) => bytes.fmt(f),
            Source::Parity { index, .. } if !self.is_encoded() => {
                write!(
                    f,
                    "parity shard {index} of {} bytes, not encoded yet",
                    self.len()
                )
            }
            Source::Parity { .. } => self.bytes().fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Geometry;

    fn raid6_code() -> Arc<StripeCode> {
        let geometry = Geometry::new(
            crate::geometry::Level::Raid6,
            crate::geometry::ParityLayout::LeftSymmetric,
            6,
            4096,
            8 << 20,
        )
        .expect("geometry");
        Arc::new(
            StripeCode::for_geometry(&geometry)
                .expect("code")
                .expect("parity"),
        )
    }

    #[test]
    fn parity_is_encoded_once_on_first_access_and_matches_an_eager_encode() {
        let code = raid6_code();
        let data: Vec<Bytes> = (0..4u8)
            .map(|i| Bytes::from(vec![i * 37 + 1; 4096]))
            .collect();
        let stripe = StripeParity::new(
            Arc::clone(&code),
            data.clone(),
            2,
            eraid_buffers::BufferPool::new(1 << 20),
        );
        let p = stripe.shard(0);
        let q = stripe.shard(1);
        assert_eq!(p.len(), 4096);
        assert!(!p.is_encoded() && !q.is_encoded(), "len() must not encode");
        let mut expected = vec![vec![0u8; 4096]; 2];
        let refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
        let mut out: Vec<&mut [u8]> = expected.iter_mut().map(|e| &mut e[..]).collect();
        code.encode(&refs, &mut out).expect("encode");
        assert_eq!(&p[..], &expected[0][..]);
        assert!(q.is_encoded(), "one encode gives every shard of the stripe");
        let q_ptr = q.as_ptr();
        assert_eq!(&q[..], &expected[1][..]);
        assert_eq!(q.as_ptr(), q_ptr, "encoded once, not per access");
    }

    #[test]
    fn parity_encoded_on_another_thread_is_the_same() {
        let code = raid6_code();
        let data: Vec<Bytes> = (0..4u8)
            .map(|i| Bytes::from(vec![i ^ 0x5a; 4096]))
            .collect();
        let pool = eraid_buffers::BufferPool::new(1 << 20);
        let on_thread = StripeParity::new(Arc::clone(&code), data.clone(), 2, pool.clone());
        let here = StripeParity::new(code, data, 2, pool);
        let shard = on_thread.shard(1);
        let encoded = std::thread::spawn(move || shard.to_vec())
            .join()
            .expect("thread");
        assert_eq!(encoded, here.shard(1).to_vec());
    }
}

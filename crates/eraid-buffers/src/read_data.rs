//! A user read's result: pieces shared without copying.

use crate::deferred::Deferred;
use bytes::Bytes;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// A read's bytes, in order, as the pieces the members returned: a read
/// spanning several chunks is not joined by a copy. A server sends the
/// pieces one after another (`writev`). A piece may be computed later (a
/// chunk rebuilt from the members that survive, [`Deferred`]): then the
/// first to look at the pieces computes it, which is whoever sends the
/// reply, not the array core.
#[derive(Clone, Default)]
pub struct ReadData {
    /// A deferred piece's slot holds an empty placeholder. Inline for two
    /// pieces: a read's result is made per request, under the engine lock.
    pieces: smallvec::SmallVec<[Bytes; 2]>,
    /// Empty for a read with nothing to compute (no allocation).
    deferred: Vec<DeferredPiece>,
    /// `pieces` with the deferred ones filled in, once computed.
    resolved: OnceLock<Vec<Bytes>>,
    len_bytes: usize,
}

#[derive(Clone)]
struct DeferredPiece {
    slot: usize,
    source: Arc<Deferred>,
    index: usize,
    range: Range<usize>,
}

impl ReadData {
    /// No bytes yet.
    pub fn new() -> ReadData {
        ReadData::default()
    }

    /// Appends `piece` (an empty one is dropped).
    pub fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.len_bytes += piece.len();
            self.pieces.push(piece);
            self.resolved = OnceLock::new();
        }
    }

    /// Appends `range` of piece `index` of `source`, computed when the
    /// pieces are first looked at (an empty range is dropped).
    pub fn push_deferred(&mut self, source: Arc<Deferred>, index: usize, range: Range<usize>) {
        if !range.is_empty() {
            self.len_bytes += range.len();
            self.deferred.push(DeferredPiece {
                slot: self.pieces.len(),
                source,
                index,
                range,
            });
            self.pieces.push(Bytes::new());
            self.resolved = OnceLock::new();
        }
    }

    pub fn len(&self) -> usize {
        self.len_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.len_bytes == 0
    }

    /// The pieces in order, computing deferred ones first; none is empty.
    pub fn pieces(&self) -> &[Bytes] {
        if self.deferred.is_empty() {
            return &self.pieces;
        }
        self.resolved.get_or_init(|| {
            let mut pieces = self.pieces.to_vec();
            for d in &self.deferred {
                let piece = d.source.get()[d.index].slice(d.range.clone());
                assert_eq!(piece.len(), d.range.len(), "a deferred piece's length");
                pieces[d.slot] = piece;
            }
            pieces
        })
    }

    /// Whether every piece is computed (never computes).
    pub fn is_computed(&self) -> bool {
        self.deferred.iter().all(|d| d.source.is_computed())
    }

    /// The bytes joined (a copy unless there is one piece or none).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len_bytes);
        for piece in self.pieces() {
            out.extend_from_slice(piece);
        }
        out
    }

    /// The bytes as one `Bytes`: free for one piece, a copy for several.
    pub fn into_bytes(self) -> Bytes {
        match self.pieces() {
            [] => Bytes::new(),
            [one] => one.clone(),
            _ => Bytes::from(self.to_vec()),
        }
    }

    /// Every byte in order.
    pub fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.pieces().iter().flat_map(|p| p.iter().copied())
    }
}

impl From<Bytes> for ReadData {
    fn from(piece: Bytes) -> ReadData {
        let mut data = ReadData::new();
        data.push(piece);
        data
    }
}

impl From<Vec<u8>> for ReadData {
    fn from(vec: Vec<u8>) -> ReadData {
        ReadData::from(Bytes::from(vec))
    }
}

/// Equal when the bytes are, however they are split into pieces.
impl PartialEq for ReadData {
    fn eq(&self, other: &ReadData) -> bool {
        self.len_bytes == other.len_bytes && self.bytes().eq(other.bytes())
    }
}

impl Eq for ReadData {}

impl PartialEq<[u8]> for ReadData {
    fn eq(&self, other: &[u8]) -> bool {
        self.len_bytes == other.len() && self.bytes().eq(other.iter().copied())
    }
}

impl PartialEq<&[u8]> for ReadData {
    fn eq(&self, other: &&[u8]) -> bool {
        *self == **other
    }
}

impl PartialEq<Vec<u8>> for ReadData {
    fn eq(&self, other: &Vec<u8>) -> bool {
        *self == **other
    }
}

impl std::fmt::Debug for ReadData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN_BYTES_MAX: usize = 32;
        // Debug output does not compute deferred pieces.
        let head: Vec<u8> = if self.is_computed() {
            self.bytes().take(SHOWN_BYTES_MAX).collect()
        } else {
            Vec::new()
        };
        f.debug_struct("ReadData")
            .field("len_bytes", &self.len_bytes)
            .field("pieces", &self.pieces.len())
            .field("deferred", &self.deferred.len())
            .field("head", &head)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_kept_not_joined() {
        let first = Bytes::from(vec![1u8; 4096]);
        let at = first.as_ptr();
        let mut data = ReadData::new();
        data.push(first);
        data.push(Bytes::new());
        data.push(Bytes::from(vec![2u8; 100]));
        assert_eq!(data.len(), 4196);
        assert_eq!(data.pieces().len(), 2, "the empty piece is dropped");
        assert_eq!(data.pieces()[0].as_ptr(), at, "not copied");
        let joined = data.to_vec();
        assert_eq!((joined[4095], joined[4096]), (1, 2));
    }

    #[test]
    fn equal_bytes_are_equal_however_split() {
        let mut split = ReadData::new();
        split.push(Bytes::from_static(b"ab"));
        split.push(Bytes::from_static(b"cd"));
        assert_eq!(split, ReadData::from(b"abcd".to_vec()));
        assert_eq!(split, b"abcd".to_vec());
        assert_ne!(split, ReadData::from(b"abce".to_vec()));
        assert_ne!(split, ReadData::from(b"abc".to_vec()));
        assert_eq!(split.clone().into_bytes(), Bytes::from_static(b"abcd"));
        let one = Bytes::from(vec![9u8; 10]);
        let at = one.as_ptr();
        assert_eq!(ReadData::from(one).into_bytes().as_ptr(), at);
    }

    #[test]
    fn a_deferred_piece_is_computed_when_the_pieces_are_first_looked_at() {
        let source = Arc::new(Deferred::new(Box::new(|| {
            vec![Bytes::from_static(b"xyzw")]
        })));
        let mut data = ReadData::new();
        data.push(Bytes::from_static(b"ab"));
        data.push_deferred(Arc::clone(&source), 0, 1..3);
        data.push_deferred(Arc::clone(&source), 0, 2..2);
        data.push(Bytes::from_static(b"c"));
        assert_eq!(data.len(), 5, "lengths need no computing");
        assert!(!data.is_computed() && !source.is_computed());
        let copy = data.clone();
        assert_eq!(data.pieces().len(), 3, "the empty range is dropped");
        assert!(source.is_computed() && copy.is_computed());
        assert_eq!(data, b"abyzc".to_vec());
        assert_eq!(copy.into_bytes(), Bytes::from_static(b"abyzc"));
    }
}

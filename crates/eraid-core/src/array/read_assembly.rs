//! A user read's result as its ops complete: the members' buffers, kept
//! as pieces and joined only when they do not tile the result.

use crate::io::{Bytes, ReadData};
use eraid_buffers::Deferred;
use std::ops::Range;
use std::sync::Arc;

/// The pieces of one user read, with their offsets in the result. Ops of
/// a request complete in any order; each puts the bytes of its segments.
/// (A vector sorted once at the end: most reads have one or two pieces.)
#[derive(Debug)]
pub(super) struct ReadAssembly {
    len_bytes: usize,
    /// Inline for two pieces: made per user read, under the engine lock.
    parts: smallvec::SmallVec<[(usize, Piece); 2]>,
}

/// Bytes as read, or a range of a piece computed later (a chunk rebuilt
/// from the members that survive, outside the engine lock).
#[derive(Debug)]
enum Piece {
    Ready(Bytes),
    Deferred {
        source: Arc<Deferred>,
        index: usize,
        range: Range<usize>,
    },
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Ready(bytes) => bytes.len(),
            Piece::Deferred { range, .. } => range.len(),
        }
    }

    /// The bytes, computing them if no one has.
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Ready(bytes) => bytes,
            Piece::Deferred {
                source,
                index,
                range,
            } => &source.get()[*index][range.clone()],
        }
    }
}

impl ReadAssembly {
    pub(super) fn new(len_bytes: usize) -> ReadAssembly {
        ReadAssembly {
            len_bytes,
            parts: smallvec::SmallVec::new(),
        }
    }

    /// The result's bytes from `at` on are `bytes` (shared, not copied).
    pub(super) fn put(&mut self, at: usize, bytes: Bytes) {
        self.put_piece(at, Piece::Ready(bytes));
    }

    /// The result's bytes from `at` on are `range` of piece `index` of
    /// `source`, computed by whoever first looks at them.
    pub(super) fn put_deferred(
        &mut self,
        at: usize,
        source: Arc<Deferred>,
        index: usize,
        range: Range<usize>,
    ) {
        self.put_piece(
            at,
            Piece::Deferred {
                source,
                index,
                range,
            },
        );
    }

    fn put_piece(&mut self, at: usize, piece: Piece) {
        assert!(
            at + piece.len() <= self.len_bytes,
            "a read's piece at {at} of {} bytes ends past its {} bytes",
            piece.len(),
            self.len_bytes
        );
        self.parts.push((at, piece));
    }

    /// The bytes of the piece last put at `at`, if one was (computed now
    /// if it was deferred).
    pub(super) fn piece_at(&self, at: usize) -> Option<&[u8]> {
        self.parts
            .iter()
            .rev()
            .find(|(start, _)| *start == at)
            .map(|(_, piece)| piece.bytes())
    }

    /// The result with `overlay` (newer bytes, by offset) laid over it.
    /// Pieces that tile it in order are passed on as they are; otherwise
    /// (a gap, an overlap or an overlay) the result is joined by a copy,
    /// and a range no piece covers reads as zeroes.
    pub(super) fn finish(mut self, overlay: &[(usize, Vec<u8>)]) -> ReadData {
        // Stable: of pieces put at one offset, the later stays later.
        self.parts.sort_by_key(|(at, _)| *at);
        let mut tiled_to = 0;
        let tiles = self.parts.iter().all(|(at, piece)| {
            let in_order = *at == tiled_to;
            tiled_to = at + piece.len();
            in_order
        }) && tiled_to == self.len_bytes;
        if tiles && overlay.is_empty() {
            let mut data = ReadData::new();
            for (_, piece) in self.parts {
                match piece {
                    Piece::Ready(bytes) => data.push(bytes),
                    Piece::Deferred {
                        source,
                        index,
                        range,
                    } => data.push_deferred(source, index, range),
                }
            }
            return data;
        }
        // Joined here, in the core: deferred pieces are computed now.
        let mut joined = vec![0u8; self.len_bytes];
        for (at, piece) in &self.parts {
            joined[*at..*at + piece.len()].copy_from_slice(piece.bytes());
        }
        for (at, bytes) in overlay {
            joined[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        ReadData::from(joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_that_tile_are_passed_on_uncopied_in_order() {
        let mut read = ReadAssembly::new(6);
        let second = Bytes::from(vec![4, 5, 6]);
        let at = second.as_ptr();
        read.put(3, second);
        read.put(0, Bytes::from(vec![1, 2, 3]));
        assert_eq!(read.piece_at(3), Some(&[4, 5, 6][..]));
        let data = read.finish(&[]);
        assert_eq!(data, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(data.pieces().len(), 2);
        assert_eq!(data.pieces()[1].as_ptr(), at);
    }

    #[test]
    fn a_gap_reads_as_zeroes_and_an_overlay_wins() {
        let mut read = ReadAssembly::new(6);
        read.put(0, Bytes::from(vec![1, 2]));
        read.put(4, Bytes::from(vec![5, 6]));
        assert_eq!(read.finish(&[]), vec![1, 2, 0, 0, 5, 6]);
        let mut read = ReadAssembly::new(4);
        read.put(0, Bytes::from(vec![1, 2, 3, 4]));
        assert_eq!(read.finish(&[(1, vec![9, 9])]), vec![1, 9, 9, 4]);
        assert_eq!(ReadAssembly::new(3).finish(&[]), vec![0, 0, 0]);
    }
}

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

    /// The result with `overlay` (newer bytes, by offset) laid over it,
    /// as pieces: nothing is copied here, under the engine lock. Where
    /// pieces overlap, the one later in offset order wins (of pieces put
    /// at one offset, the one put later); an overlay wins over every
    /// piece, a later overlay over an earlier one; a range nothing covers
    /// reads as zeroes.
    pub(super) fn finish(mut self, overlay: Vec<(usize, Bytes)>) -> ReadData {
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
                push_piece(&mut data, &piece, 0..piece.len());
            }
            return data;
        }
        let mut canvas = Canvas::new(self.len_bytes);
        for (index, (at, piece)) in self.parts.iter().enumerate() {
            canvas.paint(*at, piece.len(), Layer::Part(index));
        }
        for (index, (at, bytes)) in overlay.iter().enumerate() {
            assert!(
                at + bytes.len() <= self.len_bytes,
                "a read's overlay at {at} of {} bytes ends past its {} bytes",
                bytes.len(),
                self.len_bytes
            );
            canvas.paint(*at, bytes.len(), Layer::Overlay(index));
        }
        let mut data = ReadData::new();
        for stroke in canvas.strokes {
            let within = |origin: usize| stroke.start - origin..stroke.end - origin;
            match stroke.layer {
                Layer::Zeroes => push_zeroes(&mut data, stroke.end - stroke.start),
                Layer::Part(index) => {
                    let (at, piece) = &self.parts[index];
                    push_piece(&mut data, piece, within(*at));
                }
                Layer::Overlay(index) => {
                    let (at, bytes) = &overlay[index];
                    data.push(bytes.slice(within(*at)));
                }
            }
        }
        data
    }
}

/// `range` of `piece` onto `data`, shared (a deferred piece stays deferred).
fn push_piece(data: &mut ReadData, piece: &Piece, range: Range<usize>) {
    match piece {
        Piece::Ready(bytes) => data.push(bytes.slice(range)),
        Piece::Deferred {
            source,
            index,
            range: whole,
        } => data.push_deferred(
            Arc::clone(source),
            *index,
            whole.start + range.start..whole.start + range.end,
        ),
    }
}

/// Zeroes for a range no piece covers, from one static page of them.
fn push_zeroes(data: &mut ReadData, mut len_bytes: usize) {
    static ZEROES: [u8; 64 << 10] = [0; 64 << 10];
    while len_bytes > 0 {
        let part = len_bytes.min(ZEROES.len());
        data.push(Bytes::from_static(&ZEROES[..part]));
        len_bytes -= part;
    }
}

/// What shows in a range of the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Zeroes,
    Part(usize),
    Overlay(usize),
}

#[derive(Clone, Copy, Debug)]
struct Stroke {
    start: usize,
    end: usize,
    layer: Layer,
}

/// The result's ranges and what shows in each: sorted, disjoint, and
/// covering it whole. A read has a few pieces, so painting is a rebuild
/// of a short list.
struct Canvas {
    strokes: Vec<Stroke>,
}

impl Canvas {
    fn new(len_bytes: usize) -> Canvas {
        let strokes = if len_bytes == 0 {
            Vec::new()
        } else {
            vec![Stroke {
                start: 0,
                end: len_bytes,
                layer: Layer::Zeroes,
            }]
        };
        Canvas { strokes }
    }

    /// `layer` shows in `at..at + len_bytes` from now on.
    fn paint(&mut self, at: usize, len_bytes: usize, layer: Layer) {
        if len_bytes == 0 {
            return;
        }
        let end = at + len_bytes;
        let mut strokes = Vec::with_capacity(self.strokes.len() + 2);
        // The strokes cover the whole result, so one overlaps the new
        // range and places it (the order stays sorted).
        let mut placed = false;
        for stroke in self.strokes.drain(..) {
            if stroke.end <= at || stroke.start >= end {
                strokes.push(stroke);
                continue;
            }
            if stroke.start < at {
                strokes.push(Stroke { end: at, ..stroke });
            }
            if !placed {
                strokes.push(Stroke {
                    start: at,
                    end,
                    layer,
                });
                placed = true;
            }
            if stroke.end > end {
                strokes.push(Stroke {
                    start: end,
                    ..stroke
                });
            }
        }
        assert!(placed, "a read's piece at {at} lies past its end");
        self.strokes = strokes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pieces_that_tile_are_passed_on_uncopied_in_order() {
        let mut read = ReadAssembly::new(6);
        let second = Bytes::from(vec![4, 5, 6]);
        let at = second.as_ptr();
        read.put(3, second);
        read.put(0, Bytes::from(vec![1, 2, 3]));
        assert_eq!(read.piece_at(3), Some(&[4, 5, 6][..]));
        let data = read.finish(Vec::new());
        assert_eq!(data, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(data.pieces().len(), 2);
        assert_eq!(data.pieces()[1].as_ptr(), at);
    }

    #[test]
    fn a_gap_reads_as_zeroes_and_an_overlay_wins() {
        let mut read = ReadAssembly::new(6);
        read.put(0, Bytes::from(vec![1, 2]));
        read.put(4, Bytes::from(vec![5, 6]));
        assert_eq!(read.finish(Vec::new()), vec![1, 2, 0, 0, 5, 6]);
        let mut read = ReadAssembly::new(4);
        read.put(0, Bytes::from(vec![1, 2, 3, 4]));
        assert_eq!(
            read.finish(vec![(1, Bytes::from(vec![9, 9]))]),
            vec![1, 9, 9, 4]
        );
        assert_eq!(ReadAssembly::new(3).finish(Vec::new()), vec![0, 0, 0]);
    }

    #[test]
    fn an_overlay_is_laid_over_without_copying_the_members_bytes() {
        let member = Bytes::from(vec![1u8; 8192]);
        let cached = Bytes::from(vec![9u8; 4096]);
        let mut read = ReadAssembly::new(8192);
        read.put(0, member.clone());
        let data = read.finish(vec![(2048, cached.clone())]);
        let pieces = data.pieces();
        assert_eq!(pieces.len(), 3);
        // Slices of the buffers given, not copies of them.
        assert_eq!(pieces[0].as_ptr(), member.as_ptr());
        assert_eq!(pieces[1].as_ptr(), cached.as_ptr());
        assert_eq!(pieces[2].as_ptr(), member[6144..].as_ptr());
        let mut expected = vec![1u8; 8192];
        expected[2048..6144].fill(9);
        assert_eq!(data, expected);
    }

    #[test]
    fn a_deferred_piece_under_an_overlay_stays_deferred() {
        let source = Arc::new(Deferred::new(Box::new(|| {
            vec![Bytes::from(vec![7u8; 100])]
        })));
        let mut read = ReadAssembly::new(60);
        read.put_deferred(0, Arc::clone(&source), 0, 20..80);
        let data = read.finish(vec![(10, Bytes::from(vec![3u8; 10]))]);
        assert!(!source.is_computed(), "finish computed a deferred piece");
        let mut expected = vec![7u8; 60];
        expected[10..20].fill(3);
        assert_eq!(data, expected);
    }

    /// The pieces `finish` lays equal a join by copies in the same order.
    fn joined_by_copies(
        len: usize,
        parts: &[(usize, Vec<u8>)],
        overlay: &[(usize, Vec<u8>)],
    ) -> Vec<u8> {
        let mut sorted: Vec<&(usize, Vec<u8>)> = parts.iter().collect();
        sorted.sort_by_key(|(at, _)| *at);
        let mut joined = vec![0u8; len];
        for (at, bytes) in sorted.into_iter().chain(overlay) {
            joined[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        joined
    }

    fn placed(len: usize) -> impl Strategy<Value = (usize, Vec<u8>)> {
        (0..len).prop_flat_map(move |at| {
            (
                Just(at),
                proptest::collection::vec(any::<u8>(), 0..=len - at),
            )
        })
    }

    proptest! {
        #[test]
        fn laid_pieces_equal_a_join_by_copies(
            (len, parts, overlay) in (1usize..64).prop_flat_map(|len| (
                Just(len),
                proptest::collection::vec(placed(len), 0..5),
                proptest::collection::vec(placed(len), 0..4),
            ))
        ) {
            let mut read = ReadAssembly::new(len);
            for (at, bytes) in &parts {
                read.put(*at, Bytes::from(bytes.clone()));
            }
            let laid = read.finish(
                overlay.iter().map(|(at, b)| (*at, Bytes::from(b.clone()))).collect(),
            );
            prop_assert_eq!(laid.len(), len);
            prop_assert_eq!(laid.to_vec(), joined_by_copies(len, &parts, &overlay));
        }
    }
}

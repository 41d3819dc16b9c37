//! A user read's result: pieces shared without copying.

use bytes::Bytes;

/// A read's bytes, in order, as the pieces the members returned: a read
/// spanning several chunks is not joined by a copy. A server sends the
/// pieces one after another (`writev`).
#[derive(Clone, Default)]
pub struct ReadData {
    pieces: Vec<Bytes>,
    len_bytes: usize,
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
        }
    }

    pub fn len(&self) -> usize {
        self.len_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.len_bytes == 0
    }

    /// The pieces in order; none is empty.
    pub fn pieces(&self) -> &[Bytes] {
        &self.pieces
    }

    /// The bytes joined (a copy unless there is one piece or none).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len_bytes);
        for piece in &self.pieces {
            out.extend_from_slice(piece);
        }
        out
    }

    /// The bytes as one `Bytes`: free for one piece, a copy for several.
    pub fn into_bytes(mut self) -> Bytes {
        match self.pieces.len() {
            0 => Bytes::new(),
            1 => self.pieces.pop().expect("one piece"),
            _ => Bytes::from(self.to_vec()),
        }
    }

    /// Every byte in order.
    pub fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.pieces.iter().flat_map(|p| p.iter().copied())
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
        let head: Vec<u8> = self.bytes().take(SHOWN_BYTES_MAX).collect();
        f.debug_struct("ReadData")
            .field("len_bytes", &self.len_bytes)
            .field("pieces", &self.pieces.len())
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
}

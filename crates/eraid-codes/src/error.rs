//! The one error type of the crate: what a caller can get wrong or what the
//! erased set makes impossible, never an internal invariant (those panic).

/// Why an encode, update or reconstruction could not be done.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodeError {
    /// Fewer than `needed` (= data count) shards hold valid bytes, so the
    /// stripe cannot be recovered.
    #[error("too few shards to reconstruct: {present} present, {needed} needed")]
    TooFewShards { present: usize, needed: usize },
    /// The rows of the surviving shards are linearly dependent. Cannot happen
    /// for an MDS code (Cauchy, RAID-5, RAID-6 P+Q within limits), only for
    /// hand-made matrices or Reed-Solomon outside ISA-L's safe (k, m) range.
    #[error("surviving shards' generator rows form a singular matrix")]
    SingularMatrix,
    /// Wrong shard count, unequal shard lengths, bad index or bad matrix size.
    #[error("bad shape: {0}")]
    BadShape(String),
}

//! Reconstruct-write's parity straight from the row's buffers: no row
//! rebuilt into fresh vectors, parity encoded into pooled aligned buffers,
//! outside the engine lock by the thread that writes a parity shard.

use super::execute::sub;
use super::op::StripeOp;
use crate::io::{Bytes, ReadBuf};
use crate::stripe_code::StripeCode;
use crate::write_data::StripeParity;
use std::ops::Range;
use std::sync::Arc;

/// One data shard of the row after the write.
enum RowShard {
    /// Overwritten whole by a segment: the user's bytes (None: zeroes).
    Written(Option<Bytes>),
    /// Read whole; these segments' new bytes go over it first (bytes
    /// within the row, None: zeroes).
    Read(ReadBuf, Vec<(Range<usize>, Option<Bytes>)>),
}

/// A row's data shards: inline for up to 8 (made per reconstruct-write,
/// under the driver's engine lock).
type RowShards = smallvec::SmallVec<[RowShard; 8]>;

/// The parity of `op`'s row after its writes, when every data shard of the
/// row is either overwritten whole by a segment or was read whole (the
/// read buffers are taken from `op`). The encode is deferred: it lays the
/// segments' new bytes over the read buffers in place and encodes from
/// them and the user's bytes into `parity_buffers` (aligned: an O_DIRECT
/// member writes it as it is). None, touching nothing, when a shard is
/// neither (a degraded row, which must be rebuilt).
pub(super) fn parity_from_row_buffers(
    op: &mut StripeOp,
    code: &Arc<StripeCode>,
    parity_buffers: &eraid_buffers::BufferPool,
) -> Option<Arc<StripeParity>> {
    let k = op.map.data.len();
    let m = op.map.parity.len();
    let row = op.row.clone();
    let row_len = (row.end - row.start) as usize;
    let overwritten_whole: crate::layout::ShardVec<Option<usize>> = (0..k)
        .map(|i| {
            op.segments
                .iter()
                .position(|s| s.data_index == i && s.intra == row)
        })
        .collect();
    let read_whole = |i: usize| matches!(&op.reads[i], Some((r, _)) if *r == row);
    if !(0..k).all(|i| overwritten_whole[i].is_some() || read_whole(i)) {
        return None;
    }
    for s in &op.segments {
        assert!(s.data.is_some() || s.zeroes, "a write segment without data");
    }
    let shards: RowShards = (0..k)
        .map(|i| match overwritten_whole[i] {
            Some(s) => RowShard::Written(op.segments[s].data.clone()),
            None => {
                let (_, read) = op.reads[i].take().expect("read whole");
                let laid_over = op
                    .segments
                    .iter()
                    .filter(|s| s.data_index == i)
                    .map(|s| (sub(&s.intra, &row), s.data.clone()))
                    .collect();
                RowShard::Read(read, laid_over)
            }
        })
        .collect();
    let code = Arc::clone(code);
    let buffers = parity_buffers.clone();
    Some(StripeParity::deferred(
        m,
        row_len,
        Box::new(move || encode_row(&code, shards, m, row_len, &buffers)),
    ))
}

fn encode_row(
    code: &StripeCode,
    mut shards: RowShards,
    parity_count: usize,
    row_len: usize,
    buffers: &eraid_buffers::BufferPool,
) -> Vec<Bytes> {
    for shard in &mut shards {
        if let RowShard::Read(read, laid_over) = shard {
            for (window, bytes) in laid_over.drain(..) {
                match bytes {
                    Some(bytes) => read[window].copy_from_slice(&bytes),
                    None => read[window].fill(0),
                }
            }
        }
    }
    // Only a row with a shard zeroed whole needs zeroes to encode from.
    let zero_row = shards
        .iter()
        .any(|s| matches!(s, RowShard::Written(None)))
        .then(|| vec![0u8; row_len]);
    let data: Vec<&[u8]> = shards
        .iter()
        .map(|shard| match shard {
            RowShard::Written(Some(bytes)) => &bytes[..],
            RowShard::Written(None) => zero_row.as_deref().expect("made above"),
            RowShard::Read(read, _) => &read[..],
        })
        .collect();
    crate::write_data::encode_into_pool(code, &data, parity_count, buffers)
}

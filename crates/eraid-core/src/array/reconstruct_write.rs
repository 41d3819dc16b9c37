//! Reconstruct-write's parity straight from the row's buffers: no row
//! rebuilt into fresh vectors, parity encoded into pooled aligned buffers.

use super::execute::sub;
use super::op::StripeOp;
use crate::io::Bytes;
use crate::stripe_code::StripeCode;
use std::borrow::Cow;

/// The parity of `op`'s row after its writes, when every data shard of the
/// row is either overwritten whole by a segment or was read whole: a read
/// shard gets the segments' new bytes laid over it in place, and parity is
/// encoded from the user's bytes and the read buffers into `parity_buffers`
/// (aligned: an O_DIRECT member writes it as it is). None, touching
/// nothing, when a shard is neither (a degraded row, which must be rebuilt).
pub(super) fn parity_from_row_buffers(
    op: &mut StripeOp,
    code: &StripeCode,
    parity_buffers: &eraid_buffers::BufferPool,
) -> Option<Vec<Bytes>> {
    let k = op.map.data.len();
    let m = op.map.parity.len();
    let row = op.row.clone();
    let row_len = (row.end - row.start) as usize;
    let overwritten_whole: Vec<Option<usize>> = (0..k)
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
        if overwritten_whole[s.data_index].is_none() {
            let (_, read) = op.reads[s.data_index].as_mut().expect("read whole");
            read[sub(&s.intra, &row)].copy_from_slice(&s.write_bytes());
        }
    }
    let segment_bytes: Vec<Option<Cow<'_, [u8]>>> = overwritten_whole
        .iter()
        .map(|s| s.map(|s| op.segments[s].write_bytes()))
        .collect();
    let data: Vec<&[u8]> = (0..k)
        .map(|i| match &segment_bytes[i] {
            Some(bytes) => &bytes[..],
            None => &op.reads[i].as_ref().expect("read whole").1[..],
        })
        .collect();
    let mut parity: Vec<eraid_buffers::PooledBuf> =
        (0..m).map(|_| parity_buffers.take(row_len)).collect();
    let mut parity_refs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
    code.encode(&data, &mut parity_refs).expect("shapes match");
    Some(parity.into_iter().map(|p| p.freeze()).collect())
}

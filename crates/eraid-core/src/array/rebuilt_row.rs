//! A stripe row rebuilt from the shards that survive: a degraded write's
//! new parity (and the data of a rebuild target it covers), and a rebuild's
//! missing shards. What the core must decide under the engine lock is
//! decided from counts alone (whether enough shards survive, which writes
//! go out); the bytes are computed later, outside the lock, by the thread
//! that performs one of the writes (`WriteData`), as every healthy write's
//! parity is.

use super::execute::sub;
use super::op::StripeOp;
use crate::io::{Bytes, ReadBuf};
use crate::stripe_code::StripeCode;
use crate::write_data::StripeParity;
use std::ops::Range;
use std::sync::Arc;

/// A row's shards as the op has them: the survivors read whole, the data
/// shards a write overwrites whole, and the new bytes to lay over.
pub(super) struct RowRebuild {
    data_count: usize,
    row_len: usize,
    /// Data then parity: the buffer a whole-row read filled (None: lost, or
    /// overwritten whole, or read only in part).
    read: Vec<Option<ReadBuf>>,
    /// Known before the rebuild: read whole, or overwritten whole.
    present: Vec<bool>,
    /// Each segment's bytes within the row (None: zeroes), by data shard.
    overlays: Vec<(usize, Range<usize>, Option<Bytes>)>,
}

/// Whether the row's data must be rebuilt (some data shard is not
/// `present`), decided from counts alone: Err, naming why, when it cannot
/// be (no redundancy, or fewer than `data_count` shards survive; every
/// code here is MDS, so any `data_count` shards rebuild the rest).
pub(super) fn needs_rebuild(
    present: &[bool],
    data_count: usize,
    has_redundancy: bool,
) -> Result<bool, String> {
    if present[..data_count].iter().all(|&p| p) {
        return Ok(false);
    }
    if !has_redundancy {
        return Err("no redundancy to rebuild from".to_string());
    }
    let present_count = present.iter().filter(|&&p| p).count();
    if present_count < data_count {
        return Err(eraid_codes::CodeError::TooFewShards {
            present: present_count,
            needed: data_count,
        }
        .to_string());
    }
    Ok(true)
}

impl RowRebuild {
    /// Takes the row's whole reads out of `op` (an op with redundancy).
    /// `overwritten` marks data shards the write replaces entirely (their
    /// old bytes are not needed); with `overlay`, `op`'s segments are laid
    /// over the rebuilt data. Err, with `op` untouched, when too few
    /// shards survive to rebuild.
    pub(super) fn take(
        op: &mut StripeOp,
        overwritten: &[bool],
        overlay: bool,
    ) -> Result<RowRebuild, String> {
        let k = op.map.data.len();
        let m = op.map.parity.len();
        let row = op.row.clone();
        let whole: Vec<bool> = (0..k + m)
            .map(|i| matches!(&op.reads[i], Some((range, _)) if *range == row))
            .collect();
        let present: Vec<bool> = (0..k + m)
            .map(|i| whole[i] || (i < k && overwritten[i]))
            .collect();
        needs_rebuild(&present, k, true)?;
        let read = (0..k + m)
            .map(|i| whole[i].then(|| op.reads[i].take().expect("read whole").1))
            .collect();
        let overlays = if overlay {
            op.segments
                .iter()
                .map(|s| {
                    assert!(s.data.is_some() || s.zeroes, "a write segment without data");
                    (s.data_index, sub(&s.intra, &row), s.data.clone())
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(RowRebuild {
            data_count: k,
            row_len: (row.end - row.start) as usize,
            read,
            present,
            overlays,
        })
    }

    /// Every shard of the row after the write, data then parity: the lost
    /// ones rebuilt, the segments laid over, the parity encoded afresh.
    pub(super) fn compute(self, code: &StripeCode) -> Vec<ReadBuf> {
        let k = self.data_count;
        let row_len = self.row_len;
        let mut shards: Vec<ReadBuf> = self
            .read
            .into_iter()
            .map(|read| read.unwrap_or_else(|| ReadBuf::from(vec![0u8; row_len])))
            .collect();
        if !self.present[..k].iter().all(|&p| p) {
            let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| &mut s[..]).collect();
            code.reconstruct(&mut refs, &self.present)
                .expect("enough shards survive: counted when the op was computed");
        }
        for (i, window, bytes) in self.overlays {
            match bytes {
                Some(bytes) => shards[i][window].copy_from_slice(&bytes),
                None => shards[i][window].fill(0),
            }
        }
        let (data, parity) = shards.split_at_mut(k);
        let data: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
        let mut parity: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
        code.encode(&data, &mut parity).expect("shapes match");
        shards
    }

    /// The shards `wanted` (indexes, data then parity, at least one), in
    /// that order, computed on first access by whichever thread writes one.
    pub(super) fn deferred(self, code: Arc<StripeCode>, wanted: Vec<usize>) -> Arc<StripeParity> {
        let row_len = self.row_len;
        StripeParity::deferred(
            wanted.len(),
            row_len,
            Box::new(move || {
                let mut shards: Vec<Option<ReadBuf>> =
                    self.compute(&code).into_iter().map(Some).collect();
                wanted
                    .iter()
                    .map(|&i| shards[i].take().expect("each shard wanted once").freeze())
                    .collect()
            }),
        )
    }
}

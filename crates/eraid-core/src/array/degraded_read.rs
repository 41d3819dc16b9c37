//! A degraded read's row: the data shards a read needs, the missing ones
//! rebuilt from the surviving members' reads, outside the engine lock.
//!
//! The surviving reads are handed to the code in place and then passed on
//! to the user as they were read (pooled and aligned in a real driver);
//! only the shards that were not read get a new buffer. Before, every
//! shard of the row was copied into a fresh zeroed vector first, so a
//! degraded read copied the whole row once more than it needed.

use std::ops::Range;

use crate::io::ReadBuf;
use crate::stripe_code::StripeCode;
use eraid_buffers::Deferred;
use std::sync::Arc;

/// The row's `data_shards` data shards, in order: each a member's read of
/// the whole row, taken out of `reads` and shared, or rebuilt. A read
/// that covers less than the row counts as missing, as in planning.
/// Whether enough shards survive is decided now, from their count (every
/// code here rebuilds from any k); the rebuild itself is deferred to
/// whoever first looks at the reply's bytes, outside the engine lock.
pub(super) fn data_shards_of_row(
    reads: &mut [Option<(Range<u64>, ReadBuf)>],
    row: &Range<u64>,
    data_shards: usize,
    code: Option<&Arc<StripeCode>>,
) -> Result<Arc<Deferred>, String> {
    let row_len_bytes = usize::try_from(row.end - row.start).expect("a row fits in memory");
    let present: Vec<bool> = reads
        .iter()
        .map(|read| matches!(read, Some((range, _)) if range == row))
        .collect();
    assert!(
        present.len() >= data_shards,
        "a row has its data shards' reads"
    );
    let code = match super::rebuilt_row::needs_rebuild(&present, data_shards, code.is_some())? {
        true => code.map(Arc::clone),
        false => None,
    };
    let mut shards: Vec<Option<ReadBuf>> = reads
        .iter_mut()
        .zip(&present)
        .map(|(read, &whole)| {
            if whole {
                read.take().map(|(_, bytes)| bytes)
            } else {
                None
            }
        })
        .collect();
    let rebuild = code.is_some();
    let row = Arc::new(Deferred::new(Box::new(move || {
        let mut shards: Vec<ReadBuf> = shards
            .iter_mut()
            .map(|s| {
                s.take()
                    .unwrap_or_else(|| ReadBuf::from(vec![0u8; row_len_bytes]))
            })
            .collect();
        if let Some(code) = code {
            let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| &mut s[..]).collect();
            code.reconstruct(&mut refs, &present)
                .expect("enough shards survive: counted when the read was computed");
        }
        shards.truncate(data_shards);
        shards.into_iter().map(ReadBuf::freeze).collect()
    })));
    if !rebuild {
        // Every data shard was read whole: nothing to compute, so the
        // buffers are passed on now.
        row.get();
    }
    Ok(row)
}

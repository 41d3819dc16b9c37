//! A degraded read's row: the data shards a read needs, the missing ones
//! rebuilt from the surviving members' reads.
//!
//! The surviving reads are handed to the code in place and then passed on
//! to the user as they were read (pooled and aligned in a real driver);
//! only the shards that were not read get a new buffer. Before, every
//! shard of the row was copied into a fresh zeroed vector first, so a
//! degraded read copied the whole row once more than it needed.

use std::ops::Range;

use crate::io::{Bytes, ReadBuf};
use crate::stripe_code::StripeCode;

/// The row's `data_shards` data shards, in order: each a member's read of
/// the whole row, taken out of `reads` and shared, or rebuilt. A read
/// that covers less than the row counts as missing, as in planning.
pub(super) fn data_shards_of_row(
    reads: &mut [Option<(Range<u64>, ReadBuf)>],
    row: &Range<u64>,
    data_shards: usize,
    code: Option<&StripeCode>,
) -> Result<Vec<Bytes>, String> {
    let row_len_bytes = usize::try_from(row.end - row.start).expect("a row fits in memory");
    let mut present = Vec::with_capacity(reads.len());
    let mut shards: Vec<ReadBuf> = Vec::with_capacity(reads.len());
    for read in reads.iter_mut() {
        match read.take() {
            Some((range, bytes)) if range == *row => {
                present.push(true);
                shards.push(bytes);
            }
            _ => {
                present.push(false);
                shards.push(ReadBuf::from(vec![0u8; row_len_bytes]));
            }
        }
    }
    assert!(
        shards.len() >= data_shards,
        "a row has its data shards' reads"
    );
    if !present[..data_shards].iter().all(|&p| p) {
        let code = code.ok_or("no redundancy to rebuild from")?;
        let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| &mut s[..]).collect();
        code.reconstruct(&mut refs, &present)
            .map_err(|e| e.to_string())?;
    }
    shards.truncate(data_shards);
    Ok(shards.into_iter().map(ReadBuf::freeze).collect())
}

//! Whether users' ops read a replacement's chunks during a rebuild: once
//! rebuilt (redirection of reads, and reads for parity), or, with
//! `redirect_reads` off (Linux MD 2.6.11's PR, the PRO paper's baseline),
//! never until the rebuild is done: reads go to the other members, writes
//! compute parity without it (they still write to it).

use super::super::Array;

impl Array {
    /// Whether a user's read or write op may read `member`'s shard of
    /// `stripe`.
    pub(in crate::array) fn shard_readable_by_users(&self, member: usize, stripe: u64) -> bool {
        let redirect = self
            .rebuild_record()
            .is_none_or(|record| record.config.redirect_reads);
        self.shard_readable(member, stripe) && (redirect || !self.is_rebuild_target(member))
    }
}

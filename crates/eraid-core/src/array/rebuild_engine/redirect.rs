//! Where users read a replacement's chunks during a rebuild: from it once
//! rebuilt (redirection of reads), or, with `redirect_reads` off (Linux MD
//! 2.6.11's PR, the PRO paper's baseline), from the other members until the
//! rebuild is done.

use super::super::Array;

impl Array {
    /// Whether a user read may take `member`'s shard of `stripe`.
    pub(in crate::array) fn shard_readable_by_users(&self, member: usize, stripe: u64) -> bool {
        let redirect = self
            .rebuild_record()
            .is_none_or(|record| record.config.redirect_reads);
        self.shard_readable(member, stripe) && (redirect || !self.is_rebuild_target(member))
    }
}

//! On-disk metadata: superblocks, the write-intent bitmap and assembly.
//!
//! Each member's first `METADATA_BYTES` hold two superblock slots and two
//! bitmap slots. Every record carries a sequence number and a CRC32C, and
//! writers alternate slots, so a torn or interrupted write leaves the other
//! slot intact: the newest valid slot wins.

pub mod assemble;
pub mod bitmap;
pub mod create;
pub mod force;
mod joining;
pub mod lifecycle;
pub mod member_change;
pub mod readd;
pub mod record;
pub mod stride_record;
pub mod superblock;
pub mod text;
pub mod validate;

/// Superblock slot offsets and size within a member.
pub const SUPERBLOCK_SLOTS_BYTES: [u64; 2] = [0, 64 << 10];
pub const SUPERBLOCK_SLOT_BYTES: usize = 64 << 10;
/// Bitmap slot offsets and size within a member.
pub const BITMAP_SLOTS_BYTES: [u64; 2] = [256 << 10, 640 << 10];
pub const BITMAP_SLOT_BYTES: usize = 384 << 10;

/// The most hot spares an array records (the superblock's slot bounds it).
pub const SPARES_MAX: usize = 8;

//! eraid's real driver: runs the sans-IO array core
//! ([`eraid_core::io::Machine`]) against member files or block devices in
//! real time.
//!
//! - [`MemberFile`]: one member, O_DIRECT when the file system allows it;
//!   [`NbdMember`]: one that is an NBD export elsewhere; [`MemberDevice`]:
//!   either, opened by what its name is.
//! - [`IoPool`]: worker threads performing device I/O concurrently.
//! - [`Engine`] / [`EngineHandle`]: the machine under one lock, run by the
//!   threads that submit requests, a few drive threads and the engine
//!   thread, and the cloneable handle callers submit through; a running engine
//!   accepts new members for an online growth ([`EngineHandle::grow`]) and
//!   replacements or hot spares ([`EngineHandle::add_member`]).
//! - [`superblock_io`]: synchronous metadata helpers for create/assemble.
//! - [`journal_file`]: the write-back cache's journal on a file or device.

pub mod device_errors;
pub mod engine;
pub mod handle;
pub mod io_pool;
pub mod journal_file;
pub mod member;
pub mod member_device;
pub mod member_io;
pub mod member_nbd;
pub mod reply;
pub mod stats;
pub mod stride_bench;
pub mod superblock_io;
pub mod zeroing;

pub use engine::{Engine, EngineConfig};
pub use eraid_buffers::DIRECT_ALIGN_BYTES;
pub use handle::{CloseOutcome, EngineHandle, GrowError, GrowMember, MemberChangeError};
pub use io_pool::{default_io_threads, IoPool};
pub use member::{DirectMode, MemberCounters, MemberFile, MemberOptions};
pub use member_device::{is_nbd_uri, MemberDevice};
pub use member_io::{DetachedMember, MemberIo};
pub use member_nbd::NbdMember;
pub use reply::{ReplyFn, UserResult};
pub use stats::{EngineStats, IoCounters, MemberStats};
pub use superblock_io::{read_metadata_area, write_at_sync};

//! The state of one stripe operation: a user read or write's share of one
//! stripe, or one stripe of a check/resync.

use super::locks::LockMode;
use super::plan::WriteMethod;
use crate::io::RequestId;
use crate::layout::StripeMap;
use std::ops::Range;

/// Which layout a stripe op addresses: the array's (new) layout, or while a
/// growth runs, the layout data not yet moved still lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epoch {
    Current,
    Old,
}

/// A stripe of one layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTarget {
    pub epoch: Epoch,
    pub stripe: u64,
}

/// Old-layout stripes lock under keys of their own, so the two layouts'
/// stripe numbers never share a lock.
const OLD_LOCK_BIT: u64 = 1 << 63;

impl OpTarget {
    pub fn current(stripe: u64) -> OpTarget {
        OpTarget {
            epoch: Epoch::Current,
            stripe,
        }
    }

    pub fn lock_key(self) -> u64 {
        assert!(self.stripe < OLD_LOCK_BIT, "stripe number out of range");
        match self.epoch {
            Epoch::Current => self.stripe,
            Epoch::Old => self.stripe | OLD_LOCK_BIT,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    User(RequestId),
    Scrub,
    /// A stripe of rebuild pass `pass` (a restarted pass ignores the
    /// stripes of an earlier one).
    Rebuild {
        pass: u64,
    },
    /// The destage engine writing a cache unit back.
    Destage,
}

/// An op's segments: inline for two (an op is made per stripe a request
/// touches, under the driver's engine lock; most touch one chunk or two).
pub type Segments = smallvec::SmallVec<[Segment; 2]>;

/// A contiguous piece of a user request inside one data chunk.
#[derive(Clone, Debug)]
pub struct Segment {
    pub data_index: usize,
    /// Byte range inside the chunk.
    pub intra: Range<u64>,
    /// Where the piece sits in the user's buffer.
    pub user_offset: usize,
    /// New bytes, for writes (None for a zeroing segment until a plan
    /// needs its bytes: see `zeroes`).
    pub data: Option<crate::io::Bytes>,
    /// The segment writes zeroes (TRIM, WRITE_ZEROES): no buffer is held
    /// for it unless the stripe's parity needs one.
    pub zeroes: bool,
}

/// The byte range inside the chunks that `segments` (at least one) span.
pub fn row_of(segments: &[Segment]) -> Range<u64> {
    let start = segments.iter().map(|s| s.intra.start).min();
    let end = segments.iter().map(|s| s.intra.end).max();
    start.expect("segments")..end.expect("segments")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    /// Verify (and with `repair`, rewrite) one stripe's redundancy.
    Scrub {
        repair: bool,
    },
    /// Reconstruct the rebuild targets' shards of one stripe from the
    /// other members and write them to the replacements.
    Rebuild,
    /// Write a cache unit's dirty blocks back with new parity (planned by
    /// the destage engine's rxw-matrix).
    Destage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpState {
    WaitingLock,
    /// Holds its lock and waits, briefly, for the next request's share of
    /// the stripe (`write_gather`).
    Gathering,
    /// Holds the lock; members absent since the start are being recorded
    /// as faulty before this write goes on without them.
    WaitingAbsentRecord {
        generation: u64,
    },
    WaitingIntent,
    Reading,
    /// A read returned a read error: the range is being rebuilt from the
    /// other shards, rewritten and read back (`read_repair`).
    Repairing,
    Writing,
    /// A member failed during the op: its acknowledgement waits until the
    /// failure is recorded in the superblocks (else a crash could bring the
    /// failed member back as if current).
    WaitingRecord {
        generation: u64,
    },
}

pub struct StripeOp {
    pub parent: Parent,
    /// The stripe's number in its layout (a row of members for parity
    /// levels, whose intent region it selects).
    pub stripe: u64,
    /// What the stripe lock is taken on: distinct for old- and new-layout
    /// stripes while a growth runs.
    pub lock_key: u64,
    pub region: u64,
    pub map: StripeMap,
    pub kind: OpKind,
    pub lock: LockMode,
    pub state: OpState,
    pub segments: Segments,
    /// The intra-chunk range every shard buffer covers.
    pub row: Range<u64>,
    pub method: Option<WriteMethod>,
    /// Per shard (data then parity): the range read and the bytes read.
    pub reads: Vec<Option<(Range<u64>, crate::io::ReadBuf)>>,
    pub pending_ios: usize,
    /// A member failed under this op while reading: re-plan when settled.
    pub read_failed: bool,
    /// A member failed under this op: wait for the superblock record.
    pub member_failed: bool,
    /// Shards whose read returned a read error this round (repaired
    /// before the op goes on).
    pub bad_shards: Vec<usize>,
    /// The read-error repair under way.
    pub repair: Option<Box<super::read_repair::Repair>>,
    pub intent_taken: bool,
    /// A replace's copy op: the source's shard is read and written to this
    /// device (the new member's) only.
    pub copy_to: Option<usize>,
    /// A user write rewriting every rebuild target's whole chunk of an
    /// unrebuilt stripe: the rebuild pass whose map it marks when done.
    pub completes_rebuild: Option<u64>,
    /// A destage op's plan and data.
    pub destage: Option<Box<super::destage_engine::work::DestageWork>>,
    /// Requests whose writes joined this op while it gathered (see
    /// `write_gather`): answered with its parent.
    pub merged_parents: Vec<RequestId>,
    /// On getting its lock, wait for the rest of the stripe first: the
    /// write stream it continues (see `write_gather`).
    pub gather_stream: Option<u64>,
}

impl StripeOp {
    pub fn writes_data(&self) -> bool {
        matches!(
            self.kind,
            OpKind::Write | OpKind::Scrub { repair: true } | OpKind::Destage
        )
    }
}

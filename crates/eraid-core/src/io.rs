//! The values that cross the boundary between the pure core and a driver.
//!
//! The core never performs I/O, reads a clock or sleeps: a driver hands it
//! user requests, device completions and the current time, and collects
//! device I/Os, user replies and the next deadline. The real driver does that
//! against files; the simulator does it against disk models in virtual time.
//!
//! Write payloads are [`Bytes`]: a request's bytes are shared, not copied,
//! by the chunk writes the core splits it into (and by a mirror's copies).

pub use crate::write_data::WriteData;
pub use bytes::Bytes;
pub use eraid_buffers::{ReadBuf, ReadData};

/// A point in time, in nanoseconds since an epoch the driver picks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeNs(pub u64);

impl TimeNs {
    pub fn plus_ms(self, ms: u64) -> TimeNs {
        TimeNs(self.0.saturating_add(ms.saturating_mul(1_000_000)))
    }

    pub fn plus_ns(self, ns: u64) -> TimeNs {
        TimeNs(self.0.saturating_add(ns))
    }
}

/// Identifies one device I/O issued by the core; echoed back on completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IoId(pub u64);

/// Identifies one user request; chosen by the driver, echoed in the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// Why the core issued a device I/O (for accounting in both drivers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoCause {
    User,
    Metadata,
    Resync,
    Scrub,
    Redistribution,
    Rebuild,
    Destage,
}

/// What a device I/O does. Offsets are absolute byte offsets on the member
/// (metadata area included), always multiples of 512, as are lengths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceOp {
    Read {
        offset_bytes: u64,
        len_bytes: usize,
    },
    /// `data` may be a full stripe's parity, encoded on first access by
    /// the thread that performs the write (see [`WriteData`]).
    Write {
        offset_bytes: u64,
        data: WriteData,
    },
    /// Make the range read as zeroes. No data travels: a driver may zero or
    /// punch the range (fallocate, BLKZEROOUT) or write zeroes in pieces.
    WriteZeroes {
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// Make every write completed before this flush was issued durable.
    Flush,
}

impl DeviceOp {
    /// Bytes the op writes (0 for reads and flushes).
    pub fn written_bytes(&self) -> u64 {
        match self {
            DeviceOp::Write { data, .. } => data.len() as u64,
            DeviceOp::WriteZeroes { len_bytes, .. } => *len_bytes,
            DeviceOp::Read { .. } | DeviceOp::Flush => 0,
        }
    }
}

/// How urgently a driver should serve a device I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IoPriority {
    /// Users' I/O and everything competing with it on equal terms.
    #[default]
    Normal,
    /// Served only when no `Normal` I/O waits for the same device (DOR's
    /// rebuild I/O, below users').
    Low,
}

/// One I/O the core asks a driver to perform on one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceIo {
    pub id: IoId,
    /// Index of the member in the array (its slot, as in the superblock).
    pub member: usize,
    pub op: DeviceOp,
    pub cause: IoCause,
    pub priority: IoPriority,
}

/// The outcome of a device I/O, handed back with [`IoId`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoCompletion {
    /// A read's bytes (exactly `len_bytes` of them), in a buffer the core
    /// may update in place and pass on without copying.
    Read(ReadBuf),
    /// A write or flush finished.
    Done,
    /// The device failed this I/O; the core treats the member as failed.
    Failed(String),
    /// A read could not return this range (EIO, EILSEQ, a short read) but
    /// the device may still work: a latent sector error. The core
    /// reconstructs the range from the other members, rewrites it and reads
    /// it back (Linux MD's read-error correction), failing the member only
    /// if that does not work or it has had too many read errors. A driver
    /// reports this only for reads; on another I/O it means `Failed`.
    ReadError(String),
}

/// What a user asks of the array. Offsets and lengths in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserOp {
    Read {
        offset_bytes: u64,
        len_bytes: usize,
    },
    /// `fua`: durable on every member before the reply.
    Write {
        offset_bytes: u64,
        data: Bytes,
        fua: bool,
    },
    /// Reply only once every write acknowledged before it is durable.
    Flush,
    /// Discard hint: the core may treat it as writing zeroes or do nothing
    /// that would break parity; reads of the range afterwards are unspecified
    /// by NBD, eraid returns zeroes.
    Trim {
        offset_bytes: u64,
        len_bytes: u64,
    },
    WriteZeroes {
        offset_bytes: u64,
        len_bytes: u64,
        fua: bool,
    },
}

impl UserOp {
    /// The (offset, length) in bytes the op addresses; None for a flush.
    pub fn byte_range(&self) -> Option<(u64, u64)> {
        match self {
            UserOp::Read {
                offset_bytes,
                len_bytes,
            } => Some((*offset_bytes, *len_bytes as u64)),
            UserOp::Write {
                offset_bytes, data, ..
            } => Some((*offset_bytes, data.len() as u64)),
            UserOp::Trim {
                offset_bytes,
                len_bytes,
            }
            | UserOp::WriteZeroes {
                offset_bytes,
                len_bytes,
                ..
            } => Some((*offset_bytes, *len_bytes)),
            UserOp::Flush => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserRequest {
    pub id: RequestId,
    pub op: UserOp,
}

/// Why a user request failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UserError {
    #[error("range {offset_bytes}+{len_bytes} is beyond the capacity of {capacity_bytes} bytes")]
    OutOfRange {
        offset_bytes: u64,
        len_bytes: u64,
        capacity_bytes: u64,
    },
    #[error("offset {offset_bytes} or length {len_bytes} is not a multiple of 512 bytes")]
    Unaligned { offset_bytes: u64, len_bytes: u64 },
    #[error("too many members failed: the data cannot be read or written ({0})")]
    Unavailable(String),
    #[error("the array is shutting down")]
    ShuttingDown,
    #[error("a write of {len_bytes} bytes is longer than the journal takes at once ({max_bytes} bytes: half its log); send it in smaller pieces or use a larger --journal-size")]
    TooLong { len_bytes: u64, max_bytes: u64 },
}

/// The core's answer to one user request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserReply {
    pub id: RequestId,
    /// `Ok(Some(bytes))` for reads (the members' buffers, not joined),
    /// `Ok(None)` for everything else.
    pub result: Result<Option<ReadData>, UserError>,
}

/// Something a driver may want to log or show; the core keeps running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrayEvent {
    MemberFailed {
        member: usize,
        reason: String,
    },
    ResyncStarted {
        regions: u64,
    },
    ResyncFinished {
        regions: u64,
    },
    /// A growth checkpointed its last window: the array has its new shape.
    ReshapeFinished {
        member_count: usize,
        capacity_bytes: u64,
    },
    /// A growth stopped before the end; user I/O is still served.
    ReshapePaused {
        reason: String,
    },
    /// Replacements (member slots) started being rebuilt.
    RebuildStarted {
        members: Vec<usize>,
    },
    /// The replacements are rebuilt and recorded active.
    RebuildFinished {
        members: Vec<usize>,
    },
    /// A rebuild cannot go on (its replacement failed, or too few members
    /// are left to reconstruct from).
    RebuildStopped {
        reason: String,
    },
    /// A hot spare failed (an I/O error) and is no longer used.
    SpareFailed {
        path_hint: String,
        reason: String,
    },
    /// The journal device failed: writes are no longer acknowledged from
    /// the cache (it destages everything and writes go through), and the
    /// write hole is open again.
    JournalFailed {
        reason: String,
    },
    /// Every member is marked clean on disk; safe to stop the driver.
    Closed,
}

/// Journal writes for a driver: write each `(offset_bytes, bytes)` to the
/// journal, make them durable (fdatasync), then call
/// [`Machine::handle_journal_done`] with `id`. One batch is out at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalBatch {
    pub id: u64,
    /// Records are framed (copied and checksummed) when first looked at,
    /// by whoever writes the batch (see `journal::framed`).
    pub writes: Vec<(u64, crate::journal::framed::JournalBytes)>,
}

/// Administrative commands a driver relays from its operator (CLI, control
/// socket). Answered at once; long work they start shows up in `Status`.
#[derive(Clone, Debug, PartialEq)]
pub enum AdminCommand {
    /// Report the array's state as JSON (level, members, activities...).
    Status,
    /// Start verifying parity / mirror copies of every stripe; with
    /// `repair`, rewrite what does not match.
    StartCheck {
        repair: bool,
    },
    /// Grow the array onto `members` (which the driver has opened and will
    /// serve as slots `member_count..`). Refused, changing nothing, if the
    /// array cannot grow now; the driver then drops the members again.
    StartGrow {
        members: Vec<crate::growth::config::NewMember>,
        config: crate::growth::config::ReshapeConfig,
    },
    /// Pause the running growth (the window in flight finishes and what was
    /// copied is checkpointed); it stays paused across restarts until
    /// `ResumeGrow`. User I/O goes on.
    PauseGrow,
    /// Let a paused growth go on (refused while the array is degraded).
    ResumeGrow,
    /// Change the growth's rate settings; the new ones apply at once and
    /// are recorded in the superblock.
    TuneGrow(crate::growth::config::GrowthTuning),
    /// Add `member`, which the driver has opened and serves as the next
    /// device (`device_count` in the status). With `spare`, it is kept as
    /// a hot spare that takes over a member slot when one fails; without,
    /// it replaces a failed member at once and is rebuilt (refused on an
    /// array with no failed member). Refused, changing nothing, if it
    /// cannot be used; the driver then drops the device again.
    AddMember {
        member: crate::growth::config::NewMember,
        spare: bool,
    },
    /// Fail a member as if its device had failed (a spare takes over if
    /// there is one). Refused if the array would lose data without it.
    FailMember {
        slot: usize,
    },
    /// Replace member `slot` by `member` (which the driver has opened and
    /// serves as the next device): `slot` is copied onto it while it keeps
    /// serving (Linux MD's `--replace`), then `member` takes the slot and
    /// the old member is retired. Refused, changing nothing, if it cannot
    /// be done; the driver then drops the device again.
    ReplaceMember {
        slot: usize,
        member: crate::growth::config::NewMember,
    },
    /// A failed member whose device the driver still serves in `slot`
    /// comes back (Linux MD's `--re-add`, or `--add` of a former member):
    /// `copy` is the superblock read from it. If it left without losing a
    /// write and the bitmap covers what it missed
    /// (`metadata::readd::re_add_refusal`), only the marked regions are
    /// copied onto it; otherwise it is rebuilt in full. Refused, changing
    /// nothing, if it is not this array's member of that slot, is in use,
    /// or a growth or another rebuild is under way.
    ReAddMember {
        slot: usize,
        copy: Box<crate::metadata::superblock::Superblock>,
    },
    /// Forget a failed member (slot below the member count) or drop a
    /// spare (slot `member_count + j` for spare `j`, as in the status).
    RemoveMember {
        slot: usize,
    },
    /// Pause the rebuild (it stays paused across restarts until resumed).
    PauseRebuild,
    ResumeRebuild,
    /// Change the rebuild's rate settings (recorded in the superblock).
    TuneRebuild(crate::rebuild::config::RebuildTuning),
}

/// The sans-IO interface every array engine offers to its drivers.
///
/// Drivers call the `handle_*` methods with the current time and then drain
/// the `poll_*` outputs until they return `None`.
pub trait Machine {
    fn handle_request(&mut self, now: TimeNs, request: UserRequest);
    fn handle_completion(&mut self, now: TimeNs, io: IoId, completion: IoCompletion);
    /// Advance timers (lazy bitmap clearing, rate control, ...).
    fn handle_tick(&mut self, now: TimeNs);
    /// Begin an orderly close: finish in-flight work, flush, mark clean.
    /// `ArrayEvent::Closed` is emitted when done.
    fn handle_close(&mut self, now: TimeNs);
    /// Handle an operator command; the answer is JSON (status, or an error
    /// object `{"error": "..."}`).
    fn handle_admin(&mut self, now: TimeNs, command: AdminCommand) -> serde_json::Value;
    fn poll_io(&mut self) -> Option<DeviceIo>;
    fn poll_reply(&mut self) -> Option<UserReply>;
    fn poll_event(&mut self) -> Option<ArrayEvent>;
    /// The next instant at which `handle_tick` should be called, if any.
    fn poll_timeout(&self) -> Option<TimeNs>;
    /// The next journal batch to write, if the machine keeps a journal.
    fn poll_journal(&mut self) -> Option<JournalBatch> {
        None
    }
    /// A journal batch was written and synced (or failed).
    fn handle_journal_done(&mut self, _now: TimeNs, _batch: u64, _result: Result<(), String>) {}
}

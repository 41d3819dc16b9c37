//! Drive models for the simulator.
//!
//! [`DiskModel`] is a hard disk (zoned geometry, seek curve, rotation,
//! controller overheads, segmented cache with read-ahead and write-back,
//! FCFS / C-LOOK / SPTF queue); [`SsdModel`] a simple multi-channel SSD;
//! [`Device`] wraps either behind the same event interface:
//!
//! ```text
//! submit(now_ns, request)      -> Result<(), SubmitError>
//! next_event_ns()              -> Option<u64>
//! advance(now_ns)              -> Vec<DiskCompletion>
//! ```
//!
//! The models hold no clock, threads or files, and draw no random numbers.

mod cache;
pub mod config;
mod device;
pub mod geometry;
pub mod mechanics;
mod model;
pub mod presets;
pub mod scheduler;
pub mod seek;
mod ssd;
pub mod validate;

pub use config::{
    CacheSpec, Destage, DiskSpec, FastWrite, GeometrySpec, MechanicsSpec, Overheads, ReadAhead,
    RequestData, SchedulerKind, Sparing, TrackOrder, ZoneSpec,
};
pub use device::Device;
pub use geometry::{Geometry, GeometryError, Pbn};
pub use model::{
    DiskCompletion, DiskModel, DiskRequest, ModelError, ReadWaits, SubmitError, WORK_DESTAGE,
    WORK_HOST_WRITE, WORK_READ,
};
pub use seek::{HplSeek, SeekCurve};
pub use ssd::{SsdModel, SsdSpec};

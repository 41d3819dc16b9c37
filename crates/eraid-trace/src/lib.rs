//! Block traces and workloads for the eraid simulator.
//!
//! This crate is pure: parsers read from any [`std::io::BufRead`] and are told
//! the source name only so their errors can point at `file:line`. Nothing here
//! reads a clock, spawns a thread or opens a file, so the simulator stays
//! deterministic.
//!
//! - [`formats`]: streaming parsers for SPC, MSR Cambridge, DiskSim ASCII,
//!   MQSim and `blkparse` text, plus format autodetection.
//! - [`options`]: an iterator adapter that scales time, selects devices, folds
//!   addresses into a capacity, limits count or duration and loops a trace.
//! - [`synthetic`]: seeded open-loop and closed-loop workload generators and
//!   presets that match the papers' published trace statistics.
//! - [`metrics`]: response-time histograms, the papers' local average and
//!   local maximum latency windows, throughput, and a serde summary.
//!
//! Every producer yields the same record, [`TraceRequest`].

pub mod error;
pub mod formats;
pub mod metrics;
pub mod options;
pub mod request;
pub mod synthetic;

mod decimal;

pub use error::TraceError;
pub use formats::{TraceFormat, TraceReader};
pub use options::{Replay, TraceOptions};
pub use request::{TraceRequest, SECTOR_BYTES};

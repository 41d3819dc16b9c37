//! Simulation pieces for eraid.
//!
//! - [`disk`]: a pure, deterministic hard-disk model (and a simple SSD model)
//!   driven in virtual time by a discrete-event simulator.
//! - [`diskspec`]: a reader for DiskSim 4.0 model files (`.diskspecs`,
//!   `.model`, `.seek`) that turns them into a [`disk::DiskSpec`].
//! - [`driver`]: the discrete-event driver running the eraid engine over
//!   those models, fed by traces or synthetic workloads.
//! - [`experiment`]: TOML experiment files, variants run side by side.
//! - [`examination`]: layout-only experiments (the FastScale paper's
//!   migration and uniformity examination), no disk model needed.
//! - [`report`]: results files, plots and Markdown summaries of experiments.

pub mod disk;
pub mod diskspec;
pub mod driver;
pub mod examination;
pub mod experiment;
pub mod report;
pub mod sim_command;
pub mod units;

//! Simulation pieces for eraid.
//!
//! - [`disk`]: a pure, deterministic hard-disk model (and a simple SSD model)
//!   driven in virtual time by a discrete-event simulator.
//! - [`diskspec`]: a reader for DiskSim 4.0 model files (`.diskspecs`,
//!   `.model`, `.seek`) that turns them into a [`disk::DiskSpec`].

pub mod disk;
pub mod diskspec;

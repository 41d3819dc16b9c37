//! The write-back stripe cache (issue 17, after Baek and Park's MSC-CT
//! paper): pure state and pure functions only. `config` holds the settings,
//! `matrix` the paper's status matrix Z and rxw-matrix M with the per-row
//! choice of read-modify-write or reconstruct-write, `transform` the read
//! and write contiguity transforms with the performance rule, `rules` the
//! consistency checks, `runs` turns a matrix into device I/O runs, `store`
//! holds the cached blocks with their management units and LRW order, and
//! `marks` decides when to destage, and `stride_choice` picks S_max from a
//! stride benchmark's timings. The array's `destage_engine` drives them.

pub mod config;
pub mod marks;
pub mod matrix;
pub mod rules;
pub mod runs;
pub mod store;
pub mod stride_choice;
pub mod transform;

/// The cache's block (the paper's page): 4 KiB.
pub const BLOCK_BYTES: u64 = 4096;

//! The EPU paper's numerical study of CRS scaling (Sun et al., "Efficient
//! Parity Update for Scaling RAID-like Storage Systems", Section IV): how
//! many blocks Scale-CRS (read-modify-write only) and Scale-CRS+EPU
//! (Algorithm 1: read-modify-write or reconstruct-write, whichever reads
//! fewer) read to update parity in one scaling unit, when a (k, m, w) CRS
//! array grows to (k + t, m, w).
//!
//! Pure computation over bit-matrices; the model of the scaling unit is in
//! [`unit`], the post-scaling matrices in [`matrices`], Algorithm 1 in
//! [`parity_update`] and the paper's grid of cases in [`study`].

pub mod matrices;
pub mod parity_update;
pub mod study;
pub mod unit;

pub use matrices::MatrixChoice;
pub use parity_update::{count_reads, ParityUpdateReads, UpdateMethod};
pub use study::{run_study, study_case, SavingsRange, StudyCase, StudyReport, StudySummary};
pub use unit::{BlockPlace, ScalingUnit};

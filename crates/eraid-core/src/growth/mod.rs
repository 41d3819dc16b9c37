//! Growth (reshape) math and records: where chunks go when disks are added
//! (pure functions), the operator's choices (`config`) and what the
//! superblock keeps (`record`). The engine that moves data is
//! `array::growth_engine`.

#[cfg(test)]
mod addressing_tests;
pub mod config;
pub mod examination;
pub mod fastscale;
pub mod record;
pub mod reorder_window;
pub mod round_robin;
pub mod scale_crs;
pub mod semi_rr;

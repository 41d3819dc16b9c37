//! Growth (reshape) math: where chunks go when disks are added. Pure
//! functions, shared by the scaling strategies that a later engine drives.

#[cfg(test)]
mod addressing_tests;
pub mod fastscale;
pub mod reorder_window;
pub mod round_robin;
pub mod semi_rr;

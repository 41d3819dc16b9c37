//! Rebuild records and settings: what an operator chooses for a rebuild
//! (`config`) and what the superblock keeps of one (`record`). The engine
//! that reconstructs stripes is `array::rebuild_engine`.

pub mod config;
pub mod record;

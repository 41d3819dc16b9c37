//! eraid's array core: pure, sans-IO. `io` is the driver boundary; `layout`
//! places chunks; `metadata` encodes superblocks and bitmaps and assembles
//! arrays; `array` is the engine that serves requests.
pub mod array;
pub mod cache;
pub mod geometry;
pub mod growth;
pub mod io;
pub mod journal;
pub mod layout;
pub mod metadata;
pub mod rebuild;
pub mod stripe_code;
pub mod testing;
pub mod write_data;

pub use array::{Array, ArrayOptions, PlantedBug};

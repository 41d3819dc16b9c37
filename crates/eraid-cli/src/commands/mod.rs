//! One module per `eraid` verb.
pub mod check;
pub mod create;
pub mod demo;
pub mod detail;
pub mod serve;

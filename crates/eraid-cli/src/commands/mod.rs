//! One module per `eraid` verb.
pub mod add;
pub mod check;
pub mod create;
pub mod crs;
pub mod crs_study;
pub mod demo;
pub mod detail;
pub mod disk;
pub mod experiment;
pub mod fail;
pub mod grow;
pub mod rebuild;
pub mod reshape;
pub mod serve;
pub mod sim;

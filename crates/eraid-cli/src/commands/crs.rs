//! `eraid crs ...`: tools for Cauchy Reed-Solomon arrays.

use clap::Subcommand;

use super::crs_study::StudyArgs;

#[derive(Debug, Subcommand)]
pub enum CrsCommand {
    /// The EPU paper's numerical study: blocks Scale-CRS and Scale-CRS+EPU
    /// read to update parity per scaling unit, beside the paper's Tables I
    /// and II and Fig. 4.
    Study(StudyArgs),
}

impl CrsCommand {
    pub fn run(self) -> anyhow::Result<i32> {
        match self {
            CrsCommand::Study(args) => args.run(),
        }
    }
}

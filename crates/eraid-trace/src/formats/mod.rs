//! Trace formats: one parser per file, a format enum, autodetection and the
//! streaming reader.

mod blkparse;
mod detect;
mod disksim;
mod lines;
mod mqsim;
mod msr;
mod reader;
mod spc;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use blkparse::{device_id as blkparse_device_id, BlkparseParser};
pub use disksim::DiskSimParser;
pub use mqsim::MqSimParser;
pub use msr::MsrParser;
pub use reader::{TraceReader, DETECT_LINES};
pub use spc::SpcParser;

use crate::TraceRequest;

/// Parses one line of one format.
pub trait LineParser {
    /// `Ok(Some(request))` for a request, `Ok(None)` for a line that carries
    /// none (such as a non-queue blkparse event), or a description of what is
    /// wrong. Blank and `#` comment lines never reach the parser.
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String>;
}

/// The supported trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// SPC ASCII: `ASU,LBA,size_bytes,opcode,timestamp_s`.
    Spc,
    /// MSR Cambridge CSV:
    /// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// DiskSim ASCII: `arrival_time_ms device block_number block_count flags`.
    DiskSim,
    /// MQSim: `arrival_time_ns device start_sector size_sectors type`.
    MqSim,
    /// `blkparse` default text output (queue events only).
    Blkparse,
}

impl TraceFormat {
    /// Every format, in the order autodetection tries them.
    pub const ALL: [TraceFormat; 5] = [
        TraceFormat::Msr,
        TraceFormat::Spc,
        TraceFormat::Blkparse,
        TraceFormat::MqSim,
        TraceFormat::DiskSim,
    ];

    /// The name used on command lines and in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Spc => "spc",
            TraceFormat::Msr => "msr",
            TraceFormat::DiskSim => "disksim",
            TraceFormat::MqSim => "mqsim",
            TraceFormat::Blkparse => "blkparse",
        }
    }

    /// A fresh parser for this format.
    pub fn parser(self) -> FormatParser {
        match self {
            TraceFormat::Spc => FormatParser::Spc(SpcParser),
            TraceFormat::Msr => FormatParser::Msr(MsrParser::default()),
            TraceFormat::DiskSim => FormatParser::DiskSim(DiskSimParser),
            TraceFormat::MqSim => FormatParser::MqSim(MqSimParser),
            TraceFormat::Blkparse => FormatParser::Blkparse(BlkparseParser),
        }
    }

    /// Guesses the format from a file's first lines.
    ///
    /// Picks the first format, in [`TraceFormat::ALL`] order, under which
    /// every non-blank, non-comment line parses and at least one line yields
    /// a request. MQSim is tried before DiskSim because an MQSim line is also
    /// a valid DiskSim line; DiskSim writes fractional millisecond times,
    /// which MQSim rejects, so real DiskSim files are told apart. A DiskSim
    /// file with only integral times is taken for MQSim: select the format
    /// explicitly for such files.
    pub fn detect<S: AsRef<str>>(first_lines: &[S]) -> Option<TraceFormat> {
        detect::detect(first_lines)
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let wanted = text.trim().to_ascii_lowercase();
        let alias = match wanted.as_str() {
            "spc-ascii" | "umass" => "spc",
            "msr-cambridge" | "msrc" | "csv" => "msr",
            "disksim-ascii" | "ascii" => "disksim",
            "mqsim-ns" | "ns" => "mqsim",
            "blktrace" => "blkparse",
            other => other,
        };
        TraceFormat::ALL
            .into_iter()
            .find(|format| format.name() == alias)
            .ok_or_else(|| {
                format!(
                    "unknown trace format {text:?}; expected spc, msr, disksim, mqsim or blkparse"
                )
            })
    }
}

/// A parser for any format, chosen at run time.
#[derive(Debug, Clone)]
pub enum FormatParser {
    /// See [`SpcParser`].
    Spc(SpcParser),
    /// See [`MsrParser`].
    Msr(MsrParser),
    /// See [`DiskSimParser`].
    DiskSim(DiskSimParser),
    /// See [`MqSimParser`].
    MqSim(MqSimParser),
    /// See [`BlkparseParser`].
    Blkparse(BlkparseParser),
}

impl LineParser for FormatParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        match self {
            FormatParser::Spc(parser) => parser.parse_line(line),
            FormatParser::Msr(parser) => parser.parse_line(line),
            FormatParser::DiskSim(parser) => parser.parse_line(line),
            FormatParser::MqSim(parser) => parser.parse_line(line),
            FormatParser::Blkparse(parser) => parser.parse_line(line),
        }
    }
}

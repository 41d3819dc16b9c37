//! Errors for trace reading and option validation.

use thiserror::Error;

/// Everything that can go wrong while reading or shaping a trace.
///
/// Line-level errors carry the source name and the 1-based line number so a
/// user can jump straight to the offending line.
#[derive(Debug, Error)]
pub enum TraceError {
    /// A line could not be parsed.
    #[error("{source_name}:{line_number}: {message}")]
    Malformed {
        /// File (or other source) name as given to the reader.
        source_name: String,
        /// 1-based line number.
        line_number: u64,
        /// What was wrong with the line.
        message: String,
    },
    /// The underlying reader failed.
    #[error("{source_name}:{line_number}: read failed: {error}")]
    Io {
        /// File (or other source) name as given to the reader.
        source_name: String,
        /// 1-based number of the line being read when the error happened.
        line_number: u64,
        /// The I/O error.
        #[source]
        error: std::io::Error,
    },
    /// No supported format parses the first lines of the source.
    #[error("{source_name}: cannot detect the trace format from the first {lines_examined} lines")]
    UnknownFormat {
        /// File (or other source) name as given to the reader.
        source_name: String,
        /// How many non-empty lines were examined.
        lines_examined: usize,
    },
    /// A replay option or workload setting is out of range.
    #[error("invalid setting: {0}")]
    InvalidSetting(String),
}

impl TraceError {
    /// The 1-based line number for line-level errors.
    pub fn line_number(&self) -> Option<u64> {
        match self {
            TraceError::Malformed { line_number, .. } | TraceError::Io { line_number, .. } => {
                Some(*line_number)
            }
            _ => None,
        }
    }
}

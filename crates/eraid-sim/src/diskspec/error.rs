//! The one error type of the DiskSim reader: always names a file and a line.

/// A problem in a DiskSim model file, located by file name and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct SpecError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl SpecError {
    pub fn new(file: &str, line: usize, message: impl Into<String>) -> Self {
        SpecError {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }
}

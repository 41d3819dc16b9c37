//! The streaming reader: lines in, requests (or located errors) out.

use std::io::BufRead;

use super::lines::{is_blank_or_comment, LineSource};
use super::{FormatParser, LineParser, TraceFormat};
use crate::{TraceError, TraceRequest};

/// Non-blank lines examined by [`TraceReader::autodetect`].
pub const DETECT_LINES: usize = 64;

/// Streams [`TraceRequest`]s from a text trace.
///
/// Yields `Err` for each malformed line and keeps going, so a caller may
/// either stop at the first error (`collect::<Result<Vec<_>, _>>()`) or skip
/// bad lines. After an I/O error the stream ends.
pub struct TraceReader<R> {
    lines: LineSource<R>,
    parser: FormatParser,
    format: TraceFormat,
    source_name: String,
}

impl<R: BufRead> TraceReader<R> {
    /// Reads `reader` as `format`; `source_name` (usually the path) appears
    /// in every error.
    pub fn new(reader: R, source_name: impl Into<String>, format: TraceFormat) -> Self {
        Self {
            lines: LineSource::new(reader),
            parser: format.parser(),
            format,
            source_name: source_name.into(),
        }
    }

    /// Reads the first [`DETECT_LINES`] non-blank lines, detects the format
    /// with [`TraceFormat::detect`], then streams the whole input, those
    /// lines included.
    pub fn autodetect(reader: R, source_name: impl Into<String>) -> Result<Self, TraceError> {
        let source_name = source_name.into();
        let mut lines = LineSource::new(reader);
        let mut buffered = Vec::new();
        let mut sample = Vec::new();
        while sample.len() < DETECT_LINES {
            let line_number = lines.next_line_number();
            let line = match lines.next_line() {
                None => break,
                Some(Ok(line)) => line,
                Some(Err(error)) => {
                    return Err(TraceError::Io {
                        source_name,
                        line_number,
                        error,
                    })
                }
            };
            // Lossy here only: invalid bytes are reported with their line
            // number when the line is parsed for real.
            let text = String::from_utf8_lossy(&line.bytes).into_owned();
            if !is_blank_or_comment(&text) {
                sample.push(text);
            }
            buffered.push(line);
        }
        let Some(format) = TraceFormat::detect(&sample) else {
            return Err(TraceError::UnknownFormat {
                source_name,
                lines_examined: sample.len(),
            });
        };
        lines.push_back(buffered);
        Ok(Self {
            lines,
            parser: format.parser(),
            format,
            source_name,
        })
    }

    /// The format being parsed.
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// The source name given at construction.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    fn malformed(&self, line_number: u64, message: String) -> TraceError {
        TraceError::Malformed {
            source_name: self.source_name.clone(),
            line_number,
            message,
        }
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceRequest, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let line_number = self.lines.next_line_number();
            let line = match self.lines.next_line()? {
                Ok(line) => line,
                Err(error) => {
                    return Some(Err(TraceError::Io {
                        source_name: self.source_name.clone(),
                        line_number,
                        error,
                    }))
                }
            };
            let Ok(text) = std::str::from_utf8(&line.bytes) else {
                return Some(Err(
                    self.malformed(line.line_number, "line is not valid UTF-8".to_string())
                ));
            };
            if is_blank_or_comment(text) {
                continue;
            }
            match self.parser.parse_line(text) {
                Ok(Some(request)) => return Some(Ok(request)),
                Ok(None) => continue,
                Err(message) => return Some(Err(self.malformed(line.line_number, message))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str, format: TraceFormat) -> Vec<Result<TraceRequest, TraceError>> {
        TraceReader::new(text.as_bytes(), "test.trace", format).collect()
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let text = "# header\n11413000 0 657728 16 1\n\n11565000 1 x 64 1\n11721000 1 5 16 0\n";
        let results = read_all(text, TraceFormat::MqSim);
        assert_eq!(results.len(), 3);
        assert!(results[0].is_ok());
        let error = results[1].as_ref().unwrap_err();
        assert_eq!(error.line_number(), Some(4));
        let shown = error.to_string();
        assert!(shown.starts_with("test.trace:4: "), "{shown}");
        assert!(shown.contains("start sector"), "{shown}");
        assert!(results[2].is_ok());
    }

    #[test]
    fn invalid_utf8_is_a_located_error() {
        let bytes: &[u8] = b"11413000 0 657728 16 1\r\n\xff\xfe 1 2 3 4\r\n";
        let results: Vec<_> = TraceReader::new(bytes, "bin", TraceFormat::MqSim).collect();
        assert!(results[0].is_ok(), "CRLF endings are accepted");
        assert_eq!(results[1].as_ref().unwrap_err().line_number(), Some(2));
    }

    #[test]
    fn autodetect_replays_the_sampled_lines() {
        let text = "\n13.191135\t30\t0\t5\t1\n17.829285\t20\t576560\t6\t1\n";
        let reader = TraceReader::autodetect(text.as_bytes(), "ascii.trace").unwrap();
        assert_eq!(reader.format(), TraceFormat::DiskSim);
        let requests: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].device, 20);
    }

    #[test]
    fn autodetect_reports_unknown_input() {
        let error = TraceReader::autodetect("what is this\n".as_bytes(), "x.txt")
            .err()
            .unwrap();
        assert!(error.to_string().contains("x.txt"));
    }
}

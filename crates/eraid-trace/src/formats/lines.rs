//! Numbered line reading shared by all parsers.

use std::collections::VecDeque;
use std::io::BufRead;

/// One raw line and its 1-based number.
pub(crate) struct NumberedLine {
    pub line_number: u64,
    pub bytes: Vec<u8>,
}

/// Reads lines as bytes so invalid UTF-8 becomes a per-line parse error with
/// a line number instead of an opaque I/O error. Lines already read for
/// format detection are replayed first.
pub(crate) struct LineSource<R> {
    reader: R,
    replay: VecDeque<NumberedLine>,
    lines_read: u64,
    done: bool,
}

impl<R: BufRead> LineSource<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            replay: VecDeque::new(),
            lines_read: 0,
            done: false,
        }
    }

    /// The next line without its terminator, `None` at end of input.
    pub fn next_line(&mut self) -> Option<std::io::Result<NumberedLine>> {
        if let Some(line) = self.replay.pop_front() {
            return Some(Ok(line));
        }
        if self.done {
            return None;
        }
        let mut bytes = Vec::new();
        match self.reader.read_until(b'\n', &mut bytes) {
            Ok(0) => {
                self.done = true;
                None
            }
            Ok(_) => {
                self.lines_read += 1;
                while matches!(bytes.last(), Some(b'\n' | b'\r')) {
                    bytes.pop();
                }
                Some(Ok(NumberedLine {
                    line_number: self.lines_read,
                    bytes,
                }))
            }
            Err(error) => {
                // Stop after an I/O error: retrying a failed reader could loop
                // forever on the same error.
                self.done = true;
                Some(Err(error))
            }
        }
    }

    /// Number of the line that the next fresh read will produce.
    pub fn next_line_number(&self) -> u64 {
        self.lines_read + 1
    }

    /// Puts lines back so they are returned again, in order, before any new
    /// input.
    pub fn push_back(&mut self, lines: Vec<NumberedLine>) {
        for line in lines.into_iter().rev() {
            self.replay.push_front(line);
        }
    }
}

/// Whether a line carries no request in any format: blank or a `#` comment.
pub(crate) fn is_blank_or_comment(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

//! Printing that never stops the program. When stdout or stderr is a pipe
//! whose reader went away (`eraid serve 2>&1 | head`), a write fails with
//! EPIPE (Rust ignores SIGPIPE), and `println!`/`eprintln!` panic on that:
//! a server would die at its next log line, with its array still dirty.
//! These macros drop the line instead.

use std::fmt;
use std::io::Write;

/// Like `eprintln!`, but a failed write is ignored.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line_to_stderr(format_args!($($arg)*))
    };
}

/// Like `println!`, but a failed write is ignored.
macro_rules! say_out {
    ($($arg:tt)*) => {
        $crate::output::line_to_stdout(format_args!($($arg)*))
    };
}

pub(crate) use {say, say_out};

pub fn line_to_stderr(args: fmt::Arguments) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

pub fn line_to_stdout(args: fmt::Arguments) {
    let mut stdout = std::io::stdout().lock();
    // Flushed at once: a URI read by a script must not wait in a buffer.
    let _ = writeln!(stdout, "{args}").and_then(|()| stdout.flush());
}

//! Where the commands write: one way for every command.
//!
//! Data (a report, a disassembly, a program's output, `--stats`) goes
//! through [`out`] or [`diag`]: a failed write is exit status 3 with one
//! line saying so, a closed pipe included (the output ended early), and
//! never hides a verdict or a trap decided before it ([`finish`]).
//! Progress and notes go through [`note`], which drops them when standard
//! error cannot take them: they are not the result. `println!` panics on
//! a failed write, so nothing here uses it.

use std::io::{self, Write};

use toyvm_lab::output;

use crate::status::{Failure, Status};

/// Writes the command's data to standard output.
pub(crate) fn out(text: &str) -> Result<(), Failure> {
    output::stdout(text.as_bytes()).map_err(|e| Failure::write("standard output", &e))
}

/// Writes data asked for on standard error (`--stats`, `--jit-log`,
/// `--candidates`).
pub(crate) fn diag(text: &str) -> Result<(), Failure> {
    output::stderr(text.as_bytes()).map_err(|e| Failure::write("standard error", &e))
}

/// Writes a progress line or a note to standard error, if it can.
pub(crate) fn note(text: &str) {
    let _ = output::stderr(text.as_bytes());
}

/// The exit status of a command whose work ended with `status` and whose
/// output then went as `written`: a failed write fails a command that
/// succeeded, and is said beside a verdict it does not hide.
pub(crate) fn finish(status: Status, written: Result<(), Failure>) -> Result<u8, Failure> {
    match written {
        Ok(()) => Ok(status.code()),
        Err(f) if status == Status::Success => Err(f),
        Err(f) => {
            note(&format!("toyvm: {}\n", f.msg));
            Ok(status.code())
        }
    }
}

/// The program's standard output: remembers its last byte (the statistics'
/// JSON line then starts on a line of its own).
pub(crate) struct GuestOut<W> {
    inner: W,
    last: Option<u8>,
}

impl<W: Write> Write for GuestOut<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        if n > 0 {
            self.last = Some(buf[n - 1]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> GuestOut<W> {
    pub(crate) fn new(inner: W) -> Self {
        GuestOut { inner, last: None }
    }

    /// Whether something was written that did not end a line.
    pub(crate) fn mid_line(&self) -> bool {
        self.last.is_some_and(|b| b != b'\n')
    }
}

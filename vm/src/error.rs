//! The crate's one error type.

use crate::interp::Trap;

/// Everything that can go wrong loading or running a program.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `.bc` image is malformed.
    #[error("bytecode: byte offset {offset}: {msg}")]
    Decode {
        /// The byte offset into the image where decoding failed.
        offset: usize,
        /// What is wrong there.
        msg: String,
    },
    /// Assembly text is malformed.
    #[error("line {line}: {msg}")]
    Asm {
        /// The 1-based line of the source text.
        line: usize,
        /// What is wrong on that line.
        msg: String,
    },
    /// A program breaks an invariant the interpreter relies on.
    #[error("verify: {}: {msg}", verify_location(.function, .offset))]
    Verify {
        /// The name of the offending function, or `<program>` for a
        /// program-wide invariant (memory layout, data segments, entry).
        function: String,
        /// The offending instruction's offset in the function, when the
        /// problem is one instruction's.
        offset: Option<u32>,
        /// Which invariant is broken, and how.
        msg: String,
    },
    /// The program stopped on a trap.
    #[error("{0}")]
    Trap(#[from] Trap),
    /// The program was given the wrong arguments or input.
    #[error("{0}")]
    Usage(String),
    /// Writing the program's output (`putn`, `putc`) failed.
    #[error("writing program output: {0}")]
    Output(#[source] std::io::Error),
}

fn verify_location(function: &str, offset: &Option<u32>) -> String {
    match offset {
        Some(o) => format!("function `{function}`, instruction {o}"),
        None => format!("function `{function}`"),
    }
}

/// The crate's result type: [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The crate's one error type.

use crate::interp::Trap;

/// Everything that can go wrong loading or running a program.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `.bc` image is malformed.
    #[error("bytecode: byte offset {offset}: {msg}")]
    Decode { offset: usize, msg: String },
    /// Assembly text is malformed.
    #[error("line {line}: {msg}")]
    Asm { line: usize, msg: String },
    /// A program breaks an invariant the interpreter relies on.
    #[error("verify: {}: {msg}", verify_location(.function, .offset))]
    Verify {
        function: String,
        offset: Option<u32>,
        msg: String,
    },
    /// The program stopped on a trap.
    #[error("{0}")]
    Trap(#[from] Trap),
    /// The program was given the wrong arguments or input.
    #[error("{0}")]
    Usage(String),
}

fn verify_location(function: &str, offset: &Option<u32>) -> String {
    match offset {
        Some(o) => format!("function `{function}`, instruction {o}"),
        None => format!("function `{function}`"),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

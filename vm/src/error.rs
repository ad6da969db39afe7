//! The crate's one error type.

use crate::trap::Trap;

/// Everything that can go wrong loading or running a program.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The host could not give the program the memory its `.memory` asks
    /// for (up to 1 GiB is allowed; the allocation failed).
    #[error(
        "cannot allocate the program's memory: {words} words ({} MiB, set by `.memory`) are more than this host gives",
        (*.words * 8) >> 20
    )]
    NoMemory {
        /// The words asked for.
        words: u64,
    },
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

/// The most bytes of a message that quotes its input (4,096, as the trace
/// parsers' longest line).
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// `msg` as an error message may show it: control characters (a NUL, a
/// newline) escaped, and cut to [`MAX_MESSAGE_BYTES`] with a note of its
/// length, so a malformed file of any size gives a message of one line.
///
/// ```
/// use toyvm_vm::error::capped;
/// assert_eq!(capped("bad `a\0b`"), "bad `a\\0b`");
/// let long = capped(&"x".repeat(10_000));
/// assert!(long.len() < 4200 && long.ends_with("(10000 bytes in all)"));
/// ```
pub fn capped(msg: &str) -> String {
    let mut out = String::new();
    for c in msg.chars() {
        if out.len() >= MAX_MESSAGE_BYTES {
            out.push_str(&format!("... ({} bytes in all)", msg.len()));
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

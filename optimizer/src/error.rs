//! The optimizer's one error type.

use thiserror::Error;

/// Everything that can go wrong while forming, parsing or compiling a region.
///
/// Profiles are estimates and may name pcs that do not exist; those are
/// ignored, never errors. Errors are for inputs a caller controls: a
/// function index, region IR text, or a region the code generator rejects.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A function index outside the program.
    #[error("function index {func} is out of range (the program has {count} functions)")]
    NoSuchFunction {
        /// The function index asked for.
        func: u32,
        /// The number of functions the program has.
        count: usize,
    },
    /// Region IR text that does not parse.
    #[error("region IR, line {line}: {msg}")]
    Parse {
        /// The 1-based line of the text (1 for empty text).
        line: usize,
        /// What is wrong on that line.
        msg: String,
    },
    /// A region that breaks an invariant the code generator relies on.
    #[error("region {head}: {msg}")]
    InvalidRegion {
        /// The region's head pc, as `fF:OFFSET` (offset 0 for a whole
        /// function compiled as a region).
        head: String,
        /// Which invariant the region breaks.
        msg: String,
    },
    /// Cranelift could not be set up for this host: no backend for the
    /// native ISA, or a code generator setting it refuses (the message).
    #[error("Cranelift does not support this host: {0}")]
    Host(String),
    /// Cranelift rejected or failed to compile a region (verifier errors
    /// included, with the offending IR).
    #[error("compiling region {head}: {msg}")]
    Codegen {
        /// What was being compiled: the region's head pc as `fF:OFFSET`, or
        /// `native function fF` for a closed function's native code.
        head: String,
        /// Cranelift's message (for verifier errors, the offending IR with
        /// the errors marked).
        msg: String,
    },
}

/// The optimizer's result type.
pub type Result<T> = std::result::Result<T, Error>;

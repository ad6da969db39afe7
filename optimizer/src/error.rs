//! The optimizer's one error type.

use thiserror::Error;

/// Everything that can go wrong while forming, parsing or compiling a region.
///
/// Profiles are estimates and may name pcs that do not exist; those are
/// ignored, never errors. Errors are for inputs a caller controls: a
/// function index, region IR text, or a region the code generator rejects.
#[derive(Debug, Error)]
pub enum Error {
    /// A function index outside the program.
    #[error("function index {func} is out of range (the program has {count} functions)")]
    NoSuchFunction { func: u32, count: usize },
    /// Region IR text that does not parse.
    #[error("region IR, line {line}: {msg}")]
    Parse { line: usize, msg: String },
    /// A region that breaks an invariant the code generator relies on.
    #[error("region {head}: {msg}")]
    InvalidRegion { head: String, msg: String },
    /// Cranelift could not be set up for this host.
    #[error("Cranelift does not support this host: {0}")]
    Host(String),
    /// Cranelift rejected or failed to compile a region (verifier errors
    /// included, with the offending IR).
    #[error("compiling region {head}: {msg}")]
    Codegen { head: String, msg: String },
}

/// The optimizer's result type.
pub type Result<T> = std::result::Result<T, Error>;

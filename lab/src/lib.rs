//! toyvm's research tools, as libraries: what the `toyvm` command runs
//! beyond a program.
//!
//! - [`compare`]: every profiler model on every program, side by side
//!   (speedup, profile error, modeled state and overhead), as a table, CSV,
//!   JSON and SVG charts;
//! - [`reproduce`]: the papers' experiments with a verdict per claim;
//! - [`conformance`]: `toyvm verify`, the two-pass verification of a model;
//! - [`synth`]: programs whose tuple stream has chosen properties;
//! - [`fuzzgen`]: the JIT's differential fuzzer (random programs, every
//!   model against the interpreter);
//! - [`suite`]: the program suite and the one parser of its headers.
//!
//! They stand on the embeddable runtime ([`toyvm`]) and never the other way
//! round.
//!
//! ```
//! use toyvm_lab::suite;
//!
//! // A program's header says what it is run with and what it prints.
//! let header = suite::parse_header("# args: 10\n# bench-args: 1_000\n#> 55\n.func main(n)\n ret n\n.end\n")?;
//! assert_eq!(header.args, vec![10]);
//! assert_eq!(header.bench_args, Some(vec![1000]));
//! # Ok::<(), toyvm_lab::suite::BadArgument>(())
//! ```
#![deny(missing_docs)]

pub mod compare;
pub mod conformance;
pub mod files;
pub mod fuzzgen;
pub mod output;
pub mod reproduce;
pub mod suite;
pub mod synth;

/// What can stop a research tool.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A run of the runtime failed (a trap included).
    #[error(transparent)]
    Runtime(#[from] toyvm::Error),
    /// A comparison, or a chart drawn with its code (`toyvm reproduce`'s
    /// figures), failed. Boxed: it is large.
    #[error(transparent)]
    Compare(Box<compare::Error>),
    /// A program given to a tool failed to load, link or run (a trap
    /// included); the path says which.
    #[error("{}: {source}", .path.display())]
    Program {
        /// The program's file.
        path: std::path::PathBuf,
        /// What failed.
        source: toyvm::Error,
    },
    /// A trace given to a tool (`reproduce --trace`) could not be read.
    #[error("--trace {}: {source}", .path.display())]
    Trace {
        /// The trace file.
        path: std::path::PathBuf,
        /// What the trace reader said.
        source: toyvm_profiler::Error,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// An output path cannot be written (checked before the work).
    #[error(transparent)]
    Output(#[from] output::NotWritable),
    /// Writing to standard output failed (a full disk, a closed pipe).
    #[error("writing standard output: {0}")]
    Stdout(#[source] std::io::Error),
    /// A `toyvm verify` reference that cannot be used: malformed, of
    /// another format, or recorded for another run or spec.
    #[error("{0}")]
    Reference(String),
    /// Bad arguments or configuration given by the caller (flags, knobs,
    /// figure names): never an I/O or a conformance failure.
    #[error("{0}")]
    Usage(String),
}

impl From<compare::Error> for Error {
    fn from(e: compare::Error) -> Self {
        Error::Compare(Box::new(e))
    }
}

impl From<toyvm_vm::Error> for Error {
    fn from(e: toyvm_vm::Error) -> Self {
        Error::Runtime(e.into())
    }
}

impl From<toyvm_profiler::Error> for Error {
    fn from(e: toyvm_profiler::Error) -> Self {
        Error::Runtime(e.into())
    }
}

/// The tools' result, with [`Error`] by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! toyvm: a profile-driven dynamic optimizer runtime.
//!
//! This crate ties the VM ([`toyvm_vm`]) to the profiler models
//! ([`toyvm_profiler`]).  Today it offers recording a program's tuple
//! stream; the optimizing runtime builds on the same pieces.
//!
//! ```
//! use toyvm::record::RecordSink;
//! use toyvm_profiler::trace::{read_all, Format};
//! use toyvm_vm::{asm, interp};
//!
//! let program = asm::assemble(
//!     ".func main(n)\n li r1, 0\n top: loop r1, n, top\n ret r1\n.end",
//! )?;
//! let mut sink = RecordSink::new(Vec::new(), Format::Text).unwrap();
//! let input = interp::Input { args: &[3], file: &[] };
//! interp::run_with_sink(&program, input, &mut std::io::sink(), &mut sink, &Default::default())?;
//! let trace = sink.finish().unwrap();
//! // One Value tuple for `n` at entry, then four loop edges (three taken, one not).
//! assert_eq!(read_all(&trace).unwrap().len(), 5);
//! # Ok::<(), toyvm_vm::Error>(())
//! ```

pub mod compare;
pub mod record;
pub mod runtime;
pub mod verify;

pub use runtime::{RunReport, Runtime, Stats};

/// Everything that can go wrong in the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Vm(#[from] toyvm_vm::Error),
    #[error(transparent)]
    Profiler(#[from] toyvm_profiler::Error),
    #[error("{0}")]
    Usage(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use toyvm_profiler as profiler;
pub use toyvm_vm as vm;

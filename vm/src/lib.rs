//! toyvm's bytecode virtual machine.
//!
//! A register machine over 64-bit integers: per-function register files,
//! word-addressed bounds-checked memory, direct and indirect calls, and an
//! interpreter that streams profiling tuples into a sink.
//!
//! Use this crate alone to assemble, verify, load and interpret programs and
//! to collect their tuple streams; it knows nothing of profiler models or the
//! JIT. To run programs with the profile-driven JIT, or to embed the VM in a
//! host, use the `toyvm` crate, which drives this interpreter.
//!
//! ```
//! use toyvm_vm::{asm, interp};
//!
//! let program = asm::assemble(
//!     "
//!     .func main(n)
//!         li r1, 0            # acc
//!         li r2, 1            # i
//!     top:
//!         add r1, r1, r2
//!         loop r2, n, top     # i += 1; while i <= n
//!         putn r1
//!         ret r1
//!     .end
//!     ",
//! )?;
//! let mut out = Vec::new();
//! let mut tuples = Vec::new();
//! let input = interp::Input { args: &[10], file: &[] };
//! let outcome = interp::run_with_sink(&program, input, &mut out, &mut tuples, &Default::default())?;
//! assert_eq!(out, b"55");
//! assert_eq!(outcome.value, 55);
//! // One Value tuple for the argument, one Edge tuple per loop test.
//! assert_eq!(tuples.len(), 1 + 10);
//! # Ok::<(), toyvm_vm::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod asm;
pub mod bytecode;
pub mod dataflow;
pub mod error;
pub mod interp;
pub mod isa;
mod load;
pub mod name;
pub mod program;
pub mod semantics;
mod trap;
pub mod tuple;
pub mod verify;

pub use error::{Error, Result};
pub use program::{Function, Import, Pc, Program};
pub use toyvm_event::parse_int;
pub use tuple::{Candidate, Kind, KindSet, Tuple, TupleSink};

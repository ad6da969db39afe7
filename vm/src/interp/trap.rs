//! Traps: the ways a running program can fail.

use std::fmt;

use crate::program::Pc;

/// Why a program stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrapKind {
    /// A `div`, `divi`, `rem` or `remi` with a zero divisor.
    DivisionByZero,
    /// An `ld` or `st` whose address is outside linear memory.
    OutOfBounds {
        /// The word address accessed (`a + imm`, wrapping), possibly negative.
        addr: i64,
        /// The size of linear memory, in words.
        size: u64,
    },
    /// A call nested deeper than [`Config::max_depth`](super::Config::max_depth).
    StackOverflow {
        /// The configured depth limit that was exceeded.
        depth: usize,
    },
    /// A call whose frame no longer fits on the register stack (every
    /// active frame holds its function's registers), below the depth
    /// limit: what ran out is the register stack, not the depth.
    RegisterStackFull {
        /// The call depth the call would have reached (1: a call from the
        /// entry function).
        depth: usize,
        /// The register stack's size, in words.
        words: usize,
    },
    /// The run executed [`Config::fuel`](super::Config::fuel) instructions
    /// without finishing.
    OutOfFuel {
        /// The step limit that was reached, in executed instructions.
        limit: u64,
    },
    /// A `calli` through a value that is not a function index of the
    /// program (the offending value).
    BadFunctionValue(i64),
    /// A host function called by `hcall` failed.
    Host {
        /// The host function's name (its import).
        name: String,
        /// What the host said.
        message: String,
    },
    /// A `calli` to a function with a different number of parameters than
    /// the arguments it passes.
    ArityMismatch {
        /// The name of the function called.
        callee: String,
        /// The callee's number of parameters.
        expected: u8,
        /// The number of arguments the `calli` passes.
        given: u8,
    },
}

impl fmt::Display for TrapKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrapKind::DivisionByZero => f.write_str("division by zero"),
            TrapKind::OutOfBounds { addr, size } => {
                write!(
                    f,
                    "memory access at address {addr} is out of bounds (memory has {size} words)"
                )
            }
            TrapKind::StackOverflow { depth } => {
                write!(f, "stack overflow: call depth {depth} exceeded")
            }
            TrapKind::RegisterStackFull { depth, words } => {
                write!(
                    f,
                    "stack overflow: the register stack ({words} words) is full at call depth {depth}"
                )
            }
            TrapKind::OutOfFuel { limit } => {
                write!(
                    f,
                    "out of fuel: the step limit of {limit} instructions was reached"
                )
            }
            TrapKind::Host { name, message } => {
                write!(f, "host function `{name}` failed: {message}")
            }
            TrapKind::BadFunctionValue(v) => {
                write!(f, "indirect call through {v}, which is not a function")
            }
            TrapKind::ArityMismatch {
                callee,
                expected,
                given,
            } => write!(
                f,
                "indirect call to `{callee}` passes {given} arguments but it takes {expected}"
            ),
        }
    }
}

/// A trap with where it happened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trap in `{function}` at instruction {} (pc {pc}): {kind}", pc.offset())]
pub struct Trap {
    /// Why the program stopped.
    pub kind: TrapKind,
    /// The trapping instruction: its function index and offset (for a call
    /// too deep, the `call` instruction in the caller).
    pub pc: Pc,
    /// The name of the function holding the trapping instruction.
    pub function: String,
}

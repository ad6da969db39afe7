//! Traps: the ways a running program can fail.

use std::fmt;

use crate::program::Pc;

/// Why a program stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrapKind {
    DivisionByZero,
    OutOfBounds {
        addr: i64,
        size: u64,
    },
    StackOverflow {
        depth: usize,
    },
    OutOfFuel {
        limit: u64,
    },
    BadFunctionValue(i64),
    ArityMismatch {
        callee: String,
        expected: u8,
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
            TrapKind::OutOfFuel { limit } => {
                write!(
                    f,
                    "out of fuel: the step limit of {limit} instructions was reached"
                )
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
    pub kind: TrapKind,
    pub pc: Pc,
    pub function: String,
}

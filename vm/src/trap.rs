//! Traps: the ways a running program can fail.

use std::fmt;

use crate::program::Pc;

/// The kinds of trap the `trap` instruction raises, by its code (its
/// immediate). The verifier refuses any other code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TrapCode {
    /// Code 0: "unreachable executed" (WebAssembly's `unreachable`).
    Unreachable,
    /// Code 1: "integer overflow".
    IntegerOverflow,
    /// Code 2: "undefined table element" (an indirect call past the table
    /// or through a null entry).
    UndefinedElement,
    /// Code 3: "indirect call signature mismatch".
    SignatureMismatch,
    /// Code 4: "memory access out of bounds" (a check a front-end emits).
    MemoryOutOfBounds,
    /// Code 5: "integer divide by zero".
    DivideByZero,
    /// Code 6: "unsupported instruction".
    Unsupported,
}

impl TrapCode {
    /// Every code, in code order.
    pub const ALL: [TrapCode; 7] = [
        TrapCode::Unreachable,
        TrapCode::IntegerOverflow,
        TrapCode::UndefinedElement,
        TrapCode::SignatureMismatch,
        TrapCode::MemoryOutOfBounds,
        TrapCode::DivideByZero,
        TrapCode::Unsupported,
    ];

    /// The kind a `trap` immediate names, if any.
    pub fn from_code(code: i32) -> Option<TrapCode> {
        usize::try_from(code)
            .ok()
            .and_then(|i| TrapCode::ALL.get(i))
            .copied()
    }

    /// The `trap` immediate that raises this kind.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The trap's message.
    pub fn message(self) -> &'static str {
        match self {
            TrapCode::Unreachable => "unreachable executed",
            TrapCode::IntegerOverflow => "integer overflow",
            TrapCode::UndefinedElement => "undefined table element",
            TrapCode::SignatureMismatch => "indirect call signature mismatch",
            TrapCode::MemoryOutOfBounds => "memory access out of bounds",
            TrapCode::DivideByZero => "integer divide by zero",
            TrapCode::Unsupported => "unsupported instruction",
        }
    }
}

impl fmt::Display for TrapCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Why a program stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrapKind {
    /// A `div`, `divi`, `rem`, `remi`, `divu` or `remu` with a zero divisor.
    DivisionByZero,
    /// An `ld` or `st` whose word is not inside the memory's current length.
    OutOfBounds {
        /// The word address accessed (`a + imm`, wrapping), possibly negative.
        addr: i64,
        /// The whole words within the memory's current length.
        size: u64,
    },
    /// A sized load or store (`ld8s` .. `st64`) not inside the memory's
    /// current length: "memory access out of bounds".
    BytesOutOfBounds {
        /// The byte address accessed, possibly negative.
        addr: i64,
        /// The access size in bytes.
        bytes: u8,
        /// The memory's current length in bytes.
        len: u64,
    },
    /// A `trap` instruction, of the kind its code names.
    Trap(TrapCode),
    /// A call nested deeper than [`Config::max_depth`](crate::interp::Config::max_depth).
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
    /// The run executed [`Config::fuel`](crate::interp::Config::fuel) instructions
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
        /// What the host said: its message (the trap's text), and the
        /// host's own error when it gave one
        /// ([`HostError::downcast_ref`]).
        message: HostError,
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
            TrapKind::BytesOutOfBounds { addr, bytes, len } => write!(
                f,
                "memory access out of bounds: {bytes} bytes at byte address {addr} (memory length {len} bytes)"
            ),
            TrapKind::Trap(code) => write!(f, "{code}"),
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

/// Why a host function failed: a message, and the host's own error when
/// it gave one ([`HostError::new`]). It becomes the program's trap
/// ([`TrapKind::Host`], with the import's name), which carries it back to
/// whoever ran the program: the embedder gets its own error again with
/// [`HostError::downcast_ref`].
///
/// Cheap to clone (shared); two compare equal when their messages do, so
/// traps compare by what they say (the interpreter's and compiled code's
/// trap of one failing call are equal).
#[derive(Clone)]
pub struct HostError(std::sync::Arc<HostErrorInner>);

struct HostErrorInner {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl HostError {
    /// A failure that is only a message.
    pub fn msg(message: impl Into<String>) -> HostError {
        HostError(std::sync::Arc::new(HostErrorInner {
            message: message.into(),
            source: None,
        }))
    }

    /// A failure that is the host's own `error`: its message is the
    /// error's, and [`downcast_ref`](Self::downcast_ref) gives the error
    /// back.
    pub fn new<E: std::error::Error + Send + Sync + 'static>(error: E) -> HostError {
        HostError(std::sync::Arc::new(HostErrorInner {
            message: error.to_string(),
            source: Some(Box::new(error)),
        }))
    }

    /// What the host said (the trap's text after the import's name).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The host's own error, when it gave one ([`HostError::new`]).
    pub fn error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.0.source.as_deref()
    }

    /// The host's own error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.error().and_then(|e| e.downcast_ref::<E>())
    }
}

impl std::fmt::Debug for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("HostError");
        d.field("message", &self.0.message);
        if let Some(e) = &self.0.source {
            d.field("error", e);
        }
        d.finish()
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

/// Transparent: its message is the host error's own, so the chain goes
/// on with that error's source.
impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error().and_then(|e| e.source())
    }
}

impl PartialEq for HostError {
    fn eq(&self, other: &Self) -> bool {
        self.0.message == other.0.message
    }
}

impl Eq for HostError {}

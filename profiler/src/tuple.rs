//! The profiled event: a `(kind, a, b)` tuple, defined once in `toyvm-event` for the VM
//! that emits it and the models here that consume it.
//!
//! A pc (for `Value.a`, `Edge.a`/`Edge.b`, `Call.a`) is a global pc: function index in the
//! high 32 bits, instruction offset in the low 32 bits; function arguments at entry use the
//! offset `0x8000_0000 | arg_index`.  `Call.b` is the callee function index.

pub use toyvm_event::{Kind, KindSet, Pc, Tuple};

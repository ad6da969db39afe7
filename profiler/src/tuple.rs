//! The profiled event: a `(kind, a, b)` tuple.

use serde::{Deserialize, Serialize};

/// What a tuple describes.  The discriminants are the encoding used by the
/// binary trace format and must not change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum Kind {
    /// `<pc, value>`: a value loaded at `pc`, or an argument at function entry.
    Value = 0,
    /// `<branch pc, next pc>`: one traversal of a control-flow arc.
    Edge = 1,
    /// `<call-site pc, callee>`: one call.
    Call = 2,
}

/// One profiled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Tuple {
    pub kind: Kind,
    pub a: u64,
    pub b: u64,
}

impl Tuple {
    pub const fn new(kind: Kind, a: u64, b: u64) -> Self {
        Tuple { kind, a, b }
    }
}

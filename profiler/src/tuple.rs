//! The profiled event: a `(kind, a, b)` tuple.
//!
//! A pc (for `Value.a`, `Edge.a`/`Edge.b`, `Call.a`) is a global pc: function index in the
//! high 32 bits, instruction offset in the low 32 bits; function arguments at entry use the
//! offset `0x8000_0000 | arg_index`.  `Call.b` is the callee function index.

use serde::{Deserialize, Serialize};
use std::fmt;

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

impl Kind {
    /// Every kind, in discriminant order.
    pub const ALL: [Kind; 3] = [Kind::Value, Kind::Edge, Kind::Call];

    /// The letter used by the text trace format.
    pub const fn letter(self) -> char {
        match self {
            Kind::Value => 'V',
            Kind::Edge => 'E',
            Kind::Call => 'C',
        }
    }

    /// The lower-case word used in specs and JSON.
    pub const fn word(self) -> &'static str {
        match self {
            Kind::Value => "value",
            Kind::Edge => "edge",
            Kind::Call => "call",
        }
    }

    /// Decodes the binary-trace discriminant.
    pub const fn from_u8(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::Value),
            1 => Some(Kind::Edge),
            2 => Some(Kind::Call),
            _ => None,
        }
    }

    /// Parses a letter (`V`, `E`, `C`) or a word (`value`, `edge`, `call`).
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "V" | "v" | "value" => Some(Kind::Value),
            "E" | "e" | "edge" => Some(Kind::Edge),
            "C" | "c" | "call" => Some(Kind::Call),
            _ => None,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// One profiled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Tuple {
    /// What the tuple describes.
    pub kind: Kind,
    /// The pc (see the module doc).
    pub a: u64,
    /// The value, next pc or callee.
    pub b: u64,
}

impl Tuple {
    /// A tuple from its parts.
    pub const fn new(kind: Kind, a: u64, b: u64) -> Self {
        Tuple { kind, a, b }
    }

    /// A `<pc, value>` tuple.
    pub const fn value(pc: u64, value: u64) -> Self {
        Tuple::new(Kind::Value, pc, value)
    }

    /// A `<branch pc, next pc>` tuple.
    pub const fn edge(from: u64, to: u64) -> Self {
        Tuple::new(Kind::Edge, from, to)
    }

    /// A `<call-site pc, callee>` tuple.
    pub const fn call(site: u64, callee: u64) -> Self {
        Tuple::new(Kind::Call, site, callee)
    }

    /// Packs a global pc from a function index and an instruction offset.
    pub const fn pc(function: u32, offset: u32) -> u64 {
        ((function as u64) << 32) | offset as u64
    }
}

/// The text-trace form: `V 0x100000004 42`.
impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:#x} {}", self.kind.letter(), self.a, self.b)
    }
}

/// A set of tuple kinds, as a 3-bit mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct KindSet(u8);

impl KindSet {
    /// No kinds.
    pub const EMPTY: KindSet = KindSet(0);
    /// Every kind.
    pub const ALL: KindSet = KindSet(0b111);

    /// The set holding only `k`.
    pub const fn only(k: Kind) -> Self {
        KindSet(1 << k as u8)
    }

    /// Whether `k` is in the set.
    #[inline]
    pub const fn contains(self, k: Kind) -> bool {
        self.0 & (1 << k as u8) != 0
    }

    /// The set with `k` added.
    pub const fn with(self, k: Kind) -> Self {
        KindSet(self.0 | (1 << k as u8))
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `other` is a subset of `self`.
    pub const fn includes(self, other: KindSet) -> bool {
        other.0 & !self.0 == 0
    }

    /// The kinds in the set, in discriminant order.
    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// Parses `all` or a `+`-separated list of kinds: `value+call`.
    pub fn parse(s: &str) -> Option<Self> {
        if s == "all" {
            return Some(KindSet::ALL);
        }
        let mut set = KindSet::EMPTY;
        for part in s.split('+') {
            set = set.with(Kind::parse(part)?);
        }
        Some(set)
    }
}

impl fmt::Display for KindSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == KindSet::ALL {
            return f.write_str("all");
        }
        let mut first = true;
        for k in self.iter() {
            if !first {
                f.write_str("+")?;
            }
            first = false;
            f.write_str(k.word())?;
        }
        Ok(())
    }
}

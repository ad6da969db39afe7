//! The profiled event, defined once for the VM that emits it and the profiler models
//! that consume it: a `(kind, a, b)` [`Tuple`], its [`Kind`], sets of kinds
//! ([`KindSet`]), the packed program counter ([`Pc`]) tuples carry, and the
//! [`Candidate`] a model reports (a tuple and its estimated count).
//!
//! The interpreter (`toyvm-vm`) writes these tuples into its batches and the models
//! (`toyvm-profiler`) read the same batches: no conversion or copy between the two.
//! The profiler stays usable without the VM; this crate depends on neither.
//!
//! ```
//! use toyvm_event::{Kind, KindSet, Pc, Tuple};
//!
//! let t = Tuple::value(Pc::new(0, 4).0, -3i64 as u64);
//! assert_eq!(t.to_string(), "V f0:4 -3");
//! assert_eq!(t.text().to_string(), "V 0x4 18446744073709551613");
//! let kinds: KindSet = "value,call".parse().unwrap();
//! assert!(kinds.contains(Kind::Value) && !kinds.contains(Kind::Edge));
//! assert_eq!(kinds.to_string(), "value+call");
//! ```
//!
//! What a tuple holds:
//! - **Value** `<pc, value>`: a value loaded at `pc`, or argument `i` of a function at
//!   entry (`pc` = [`Pc::arg`]`(func, i)`);
//! - **Edge** `<branch pc, next pc>`: one traversal of a control-flow arc;
//! - **Call** `<call-site pc, callee function index>`: one call.
#![deny(missing_docs)]

mod int;

pub use int::parse_int;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A program counter: function index in the high 32 bits, instruction offset in the
/// low 32.  This packing is the tuple encoding's, so a pc read from a trace names the
/// same instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pc(pub u64);

/// Offsets at or above this mark name a function's arguments at entry
/// (`ARG_OFFSET | i` is argument `i`), not instructions.
pub const ARG_OFFSET: u32 = 0x8000_0000;

impl Pc {
    /// The pc of instruction `offset` of function `func`.
    #[inline(always)]
    pub const fn new(func: u32, offset: u32) -> Pc {
        Pc(((func as u64) << 32) | offset as u64)
    }

    /// The pseudo-pc of argument `i` of `func`, used by its Value tuples.
    #[inline(always)]
    pub const fn arg(func: u32, i: u32) -> Pc {
        Pc::new(func, ARG_OFFSET | i)
    }

    /// The function index.
    pub const fn func(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The instruction offset (or `ARG_OFFSET | i` for an argument).
    pub const fn offset(self) -> u32 {
        self.0 as u32
    }

    /// Whether this names an argument rather than an instruction.
    pub const fn is_arg(self) -> bool {
        self.offset() & ARG_OFFSET != 0
    }
}

/// `f0:4`, or `f0:arg1` for an argument.
impl fmt::Display for Pc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_arg() {
            write!(f, "f{}:arg{}", self.func(), self.offset() & !ARG_OFFSET)
        } else {
            write!(f, "f{}:{}", self.func(), self.offset())
        }
    }
}

/// What a tuple describes.  The discriminants are the encoding of the binary trace
/// format and must not change.
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

    /// `V`, `E` or `C`: how tuples print and the text trace format's letter.
    pub const fn letter(self) -> char {
        match self {
            Kind::Value => 'V',
            Kind::Edge => 'E',
            Kind::Call => 'C',
        }
    }

    /// The lower-case word used in specs, flags and JSON.
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

    /// Parses a letter (`V`, `E`, `C`) or a word (`value`, `edge`, `call`, or their
    /// plurals).
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "V" | "v" | "value" | "values" => Some(Kind::Value),
            "E" | "e" | "edge" | "edges" => Some(Kind::Edge),
            "C" | "c" | "call" | "calls" => Some(Kind::Call),
            _ => None,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// One profiled event (see the crate doc for what `a` and `b` hold per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Tuple {
    /// What the tuple describes.
    pub kind: Kind,
    /// The pc.
    pub a: u64,
    /// The value, next pc or callee.
    pub b: u64,
}

impl Tuple {
    /// A tuple from its parts.
    #[inline(always)]
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

    /// Packs a global pc from a function index and an instruction offset
    /// ([`Pc::new`]'s packing, as a number).
    pub const fn pc(function: u32, offset: u32) -> u64 {
        Pc::new(function, offset).0
    }

    /// The second part as [`Tuple`]'s `Display` prints it: a value, a pc or a callee.
    pub fn second(&self) -> impl fmt::Display + use<> {
        let (kind, b) = (self.kind, self.b);
        fmt::from_fn(move |f| match kind {
            Kind::Value => write!(f, "{}", b as i64),
            Kind::Edge => write!(f, "{}", Pc(b)),
            Kind::Call => write!(f, "f{b}"),
        })
    }

    /// The text trace format's line: `V 0x100000004 42` (the pc in hex, the second
    /// part as an unsigned number).
    pub fn text(&self) -> impl fmt::Display + use<> {
        let t = *self;
        fmt::from_fn(move |f| write!(f, "{} {:#x} {}", t.kind.letter(), t.a, t.b))
    }
}

/// The one way tuples are printed for people (`--candidates`, verify's evidence):
/// `V f0:4 -3` (a value at a pc, as the signed integer the program computed),
/// `E f0:7 f0:2` (an arc between pcs), `C f0:12 f3` (a call site and its callee).
/// Traces use [`Tuple::text`].
impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.kind.letter(), Pc(self.a), self.second())
    }
}

/// A tuple a profiler model reports as hot at the end of an interval, with its
/// estimated count: what the optimizer plans from, one shape from model to
/// optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Candidate {
    /// The hot tuple.
    pub tuple: Tuple,
    /// The model's estimate of its occurrences in the interval.
    pub count: u64,
}

/// A set of tuple kinds, as a 3-bit mask: which kinds the interpreter emits
/// (Sastry's "selection by opcode"), a model profiles, or a trace holds.
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
    #[inline(always)]
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

    /// Parses `all`, `none`, or a list of kinds separated by `+` (as specs write it,
    /// where `,` separates keys: `kinds=value+call`) or `,` (as flags may:
    /// `--kinds value,call`).  `None` for an unknown kind or an empty part.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "all" => return Some(KindSet::ALL),
            "none" => return Some(KindSet::EMPTY),
            _ => {}
        }
        let mut set = KindSet::EMPTY;
        for part in s.split(['+', ',']) {
            set = set.with(Kind::parse(part.trim())?);
        }
        Some(set)
    }
}

impl FromStr for KindSet {
    type Err = String;

    /// [`KindSet::parse`], with an error that names the grammar.
    fn from_str(s: &str) -> Result<Self, String> {
        KindSet::parse(s).ok_or_else(|| {
            format!(
                "bad tuple kinds `{s}` (expected all, none, or value, edge and call joined by `+` or `,`)"
            )
        })
    }
}

/// `all`, `none`, or the kinds joined by `+` (`value+call`), which [`KindSet::parse`]
/// reads back.
impl fmt::Display for KindSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == KindSet::ALL {
            return f.write_str("all");
        }
        if self.is_empty() {
            return f.write_str("none");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_sets_read_back_what_they_print() {
        for bits in 0..8u8 {
            let set = KindSet(bits);
            assert_eq!(KindSet::parse(&set.to_string()), Some(set), "{set}");
        }
        assert_eq!(KindSet::parse("edge, calls"), KindSet::parse("edge+call"));
        for bad in ["", "value+", "values,,call", "stores", "value+all"] {
            assert_eq!(KindSet::parse(bad), None, "{bad}");
            assert!(
                bad.parse::<KindSet>()
                    .unwrap_err()
                    .contains("bad tuple kinds")
            );
        }
    }

    #[test]
    fn kinds_decode_their_discriminants() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_u8(k as u8), Some(k));
            assert_eq!(Kind::parse(k.word()), Some(k));
            assert_eq!(Kind::parse(&k.letter().to_string()), Some(k));
        }
        assert_eq!(Kind::from_u8(3), None);
    }

    #[test]
    fn tuples_print_for_people_and_for_traces() {
        let e = Tuple::edge(Pc::new(0, 7).0, Pc::new(0, 2).0);
        assert_eq!(e.to_string(), "E f0:7 f0:2");
        assert_eq!(Tuple::call(Pc::new(0, 12).0, 3).to_string(), "C f0:12 f3");
        assert_eq!(Tuple::value(Pc::arg(1, 0).0, 5).to_string(), "V f1:arg0 5");
        assert_eq!(
            Tuple::value(Tuple::pc(1, 4), 42).text().to_string(),
            "V 0x100000004 42"
        );
    }
}

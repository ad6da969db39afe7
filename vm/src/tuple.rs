//! Profiling tuples and the sink the interpreter streams them into.
//!
//! A tuple is `(kind, a, b)`:
//! - **Value** `<pc, value>`: every `ld` (the value loaded) and every
//!   argument of a function at entry (`pc` = [`Pc::arg`]`(func, i)`);
//! - **Edge** `<branch pc, next pc>`: every conditional branch, taken or not,
//!   and every `jtab`, so arc weights can be recovered from edge counts;
//! - **Call** `<call-site pc, callee index>`: every `call` and `calli`.
//!
//! Which kinds are emitted is chosen by a [`KindMask`] (Sastry's "selection
//! by opcode"). The interpreter writes tuples into a fixed buffer of
//! [`BATCH`] entries and hands each full buffer to a [`TupleSink`]. A sink
//! whose `ACTIVE` is false compiles every emission site away, so running
//! without a profiler costs nothing.
//!
//! [`Pc::arg`]: crate::program::Pc::arg

use std::fmt;
use std::str::FromStr;

use crate::interp::Trap;
use crate::program::Pc;

/// What a tuple describes.  The discriminants are the trace encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    Value = 0,
    Edge = 1,
    Call = 2,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Value, Kind::Edge, Kind::Call];

    /// `V`, `E` or `C`, as tuples print.
    pub const fn letter(self) -> char {
        match self {
            Kind::Value => 'V',
            Kind::Edge => 'E',
            Kind::Call => 'C',
        }
    }
}

/// One profiled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuple {
    pub kind: Kind,
    pub a: u64,
    pub b: u64,
}

/// The one way tuples are printed for people (`--candidates`, verify's
/// evidence): `V f0:4 -3` (a value at a pc, as the signed integer the
/// program computed), `E f0:7 f0:2` (an arc between pcs), `C f0:12 f3` (a
/// call site and its callee). Pcs print as [`Pc`]'s `Display` does.
impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.kind.letter(), Pc(self.a), self.second())
    }
}

impl Tuple {
    /// The second part as [`Tuple`]'s `Display` prints it: a value, a pc or
    /// a callee.
    pub fn second(&self) -> impl fmt::Display + use<> {
        let (kind, b) = (self.kind, self.b);
        fmt::from_fn(move |f| match kind {
            Kind::Value => write!(f, "{}", b as i64),
            Kind::Edge => write!(f, "{}", Pc(b)),
            Kind::Call => write!(f, "f{b}"),
        })
    }
}

/// Which tuple kinds to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindMask(u8);

impl KindMask {
    pub const NONE: KindMask = KindMask(0);
    pub const ALL: KindMask = KindMask(0b111);

    pub const fn only(k: Kind) -> KindMask {
        KindMask(1 << k as u8)
    }
    pub const fn with(self, k: Kind) -> KindMask {
        KindMask(self.0 | 1 << k as u8)
    }
    pub const fn contains(self, k: Kind) -> bool {
        self.0 & (1 << k as u8) != 0
    }
}

impl FromStr for KindMask {
    type Err = String;
    /// `all`, `none`, or a comma list of `value`, `edge`, `call`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "all" => return Ok(KindMask::ALL),
            "none" => return Ok(KindMask::NONE),
            _ => {}
        }
        let mut m = KindMask::NONE;
        for part in s.split(',') {
            m = m.with(match part.trim() {
                "value" | "values" => Kind::Value,
                "edge" | "edges" => Kind::Edge,
                "call" | "calls" => Kind::Call,
                other => {
                    return Err(format!(
                        "unknown tuple kind `{other}` (expected value, edge, call, all or none)"
                    ));
                }
            });
        }
        Ok(m)
    }
}

impl fmt::Display for KindMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            ("value", Kind::Value),
            ("edge", Kind::Edge),
            ("call", Kind::Call),
        ]
        .iter()
        .filter(|(_, k)| self.contains(*k))
        .map(|(n, _)| *n)
        .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(","))
        }
    }
}

/// Tuples per batch handed to a sink.
pub const BATCH: usize = 1024;

/// Where the interpreter's tuples go, and (for a runtime with a JIT) where
/// its compiled code comes from.
///
/// Contract:
/// 1. `accept` receives every emitted tuple exactly once, in execution
///    order, in batches of at most [`BATCH`].
/// 2. If `JIT` is true, the interpreter calls `region_at` after every taken
///    branch, `jmp`, `jtab` and call entry, with the pc it is about to run;
///    when it answers `Some(id)`, the interpreter calls `run_region` with
///    the current frame's registers and the memory instead of
///    interpreting, and resumes interpreting the same function at the
///    returned instruction offset.  The instruction there is interpreted
///    without another `region_at` check.
/// 3. `run_region` must leave registers and memory exactly as interpreting
///    from that pc up to the returned offset would have; or, if
///    interpreting would have trapped (possibly in a callee compiled code
///    called natively), return that trap, which ends the run exactly as the
///    interpreter's own trap would.
pub trait TupleSink {
    /// `false` only for sinks that never want a tuple; the interpreter is
    /// then compiled without any emission code.
    const ACTIVE: bool = true;
    /// Whether this sink supplies compiled code; when `false` the
    /// interpreter contains no region checks at all.
    const JIT: bool = false;
    /// Takes one batch (at most [`BATCH`] tuples, in execution order).
    fn accept(&mut self, batch: &[Tuple]);
    /// The compiled region that starts at `func`'s instruction `pc`, if any.
    #[inline(always)]
    fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
        let _ = (func, pc);
        None
    }
    /// Runs compiled region `id` with the current call depth; returns the
    /// instruction offset in the same function where interpretation
    /// resumes, or the trap that ends the run.
    fn run_region(
        &mut self,
        id: u32,
        regs: &mut [i64; 256],
        mem: &mut [i64],
        depth: usize,
    ) -> Result<u32, Trap> {
        let _ = (regs, mem, depth);
        unreachable!("region {id} was never offered: this sink has no compiled code")
    }
}

/// No profiling: emission compiles away.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSink;

impl TupleSink for NoSink {
    const ACTIVE: bool = false;
    fn accept(&mut self, _: &[Tuple]) {}
}

/// Receives every tuple and drops it: measures the cost of emission alone.
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard {
    pub batches: u64,
}

impl TupleSink for Discard {
    fn accept(&mut self, batch: &[Tuple]) {
        self.batches += 1;
        std::hint::black_box(batch);
    }
}

/// Keeps every tuple (tests, small programs).
impl TupleSink for Vec<Tuple> {
    fn accept(&mut self, batch: &[Tuple]) {
        self.extend_from_slice(batch);
    }
}

impl<S: TupleSink + ?Sized> TupleSink for &mut S {
    const ACTIVE: bool = S::ACTIVE;
    const JIT: bool = S::JIT;
    fn accept(&mut self, batch: &[Tuple]) {
        (**self).accept(batch)
    }
    #[inline(always)]
    fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
        (**self).region_at(func, pc)
    }
    fn run_region(
        &mut self,
        id: u32,
        regs: &mut [i64; 256],
        mem: &mut [i64],
        depth: usize,
    ) -> Result<u32, Trap> {
        (**self).run_region(id, regs, mem, depth)
    }
}

/// The interpreter's fixed tuple buffer in front of a sink.
pub(crate) struct Emitter<'s, S: TupleSink> {
    pub(crate) buf: Box<[Tuple; BATCH]>,
    pub(crate) len: usize,
    pub(crate) value: bool,
    pub(crate) edge: bool,
    pub(crate) call: bool,
    pub(crate) counts: [u64; 3],
    /// Whether to count tuples per kind (for statistics).
    pub(crate) count: bool,
    pub(crate) sink: &'s mut S,
}

impl<'s, S: TupleSink> Emitter<'s, S> {
    pub(crate) fn new(sink: &'s mut S, mask: KindMask) -> Self {
        Emitter {
            buf: Box::new(
                [Tuple {
                    kind: Kind::Value,
                    a: 0,
                    b: 0,
                }; BATCH],
            ),
            len: 0,
            value: S::ACTIVE && mask.contains(Kind::Value),
            edge: S::ACTIVE && mask.contains(Kind::Edge),
            call: S::ACTIVE && mask.contains(Kind::Call),
            counts: [0; 3],
            count: false,
            sink,
        }
    }

    /// Hands the buffered tuples to the sink.
    pub(crate) fn flush(&mut self) {
        let len = self.len;
        self.len = 0;
        hand_over(
            &mut *self.sink,
            &self.buf[..len],
            &mut self.counts,
            self.count,
        );
    }
}

/// Hands a full buffer to the sink: the interpreter's per-tuple path ends
/// in a compare and a jump here once every [`BATCH`] tuples.
#[cold]
#[inline(never)]
pub(crate) fn flush_full<S: TupleSink>(
    sink: &mut S,
    buf: &[Tuple; BATCH],
    counts: &mut [u64; 3],
    count: bool,
) {
    hand_over(sink, buf, counts, count);
}

#[inline(always)]
fn hand_over<S: TupleSink>(sink: &mut S, batch: &[Tuple], counts: &mut [u64; 3], count: bool) {
    // Counting here, once per batch, keeps the per-tuple path to a
    // store and a compare.
    if count {
        for t in batch {
            counts[t.kind as usize] += 1;
        }
    }
    sink.accept(batch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_mask_parses_and_prints() {
        let m: KindMask = "edge,call".parse().unwrap();
        assert!(m.contains(Kind::Edge) && m.contains(Kind::Call) && !m.contains(Kind::Value));
        assert_eq!(m.to_string(), "edge,call");
        assert_eq!("all".parse::<KindMask>().unwrap(), KindMask::ALL);
        assert!(
            "edges,bogus"
                .parse::<KindMask>()
                .unwrap_err()
                .contains("bogus")
        );
    }

    #[test]
    fn tuples_print_their_pcs_as_pc_does() {
        let t = |kind, a, b| Tuple { kind, a, b }.to_string();
        assert_eq!(t(Kind::Value, Pc::new(0, 4).0, -3i64 as u64), "V f0:4 -3");
        assert_eq!(t(Kind::Value, Pc::arg(2, 1).0, 7), "V f2:arg1 7");
        assert_eq!(
            t(Kind::Edge, Pc::new(1, 7).0, Pc::new(1, 2).0),
            "E f1:7 f1:2"
        );
        assert_eq!(t(Kind::Call, Pc::new(0, 12).0, 3), "C f0:12 f3");
    }
}

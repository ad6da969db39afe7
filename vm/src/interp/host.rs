//! The interpreter's host: a tuple sink that may also supply compiled code.

use super::{HostFunctions, Memory, Reentry, Trap};
use crate::tuple::{Tuple, TupleSink};

/// A [`TupleSink`] that may also hand the interpreter compiled code (the
/// runtime's JIT).  [`run_with_host`](super::run_with_host) takes one;
/// [`run_with_sink`](super::run_with_sink) wraps a plain sink in a host
/// without compiled code.
///
/// Contract:
/// 1. If `JIT` is true, the interpreter calls `region_at` after every taken
///    branch, `jmp`, `jtab` and call entry, with the pc it is about to run;
///    when it answers `Some(id)`, the interpreter calls `run_region` with
///    the current frame's registers, the memory and the run's host
///    functions (which compiled code calls for `hcall`s) instead of
///    interpreting, and resumes interpreting the same function at the
///    returned instruction offset.  The instruction there is interpreted
///    without another `region_at` check.  When `JIT` is false the
///    interpreter contains no region checks at all.
/// 2. `run_region` must leave registers and memory (its contents and its
///    current length) exactly as interpreting from that pc up to the
///    returned offset would have; or, if
///    interpreting would have trapped (possibly in a callee compiled code
///    called natively), return that trap, which ends the run exactly as the
///    interpreter's own trap would.
/// 3. `fuel` is the instructions the run may still execute (`u64::MAX`
///    less those run so far when the run has no limit); `run_region`
///    lowers it by the instructions compiled code ran, or leaves it alone
///    if it does not count them.  With a limit, the interpreter traps out
///    of fuel at the resume offset when none is left.
/// 4. Compiled code emits no tuples through `accept`; a host that reports
///    what compiled code did (exit tuples) hands them over in `accept`
///    calls of its own, in the same stream.
/// 5. While a region runs, its compiled code may call the interpreter for
///    a function through `vm` ([`Reentry::call`], handing this host back
///    in), on the same thread: the callee runs as the interpreter's `call`
///    would run it (tuples into the same stream in execution order, fuel
///    and depth charged against the run's limits, compiled code entered
///    where installed, which may call the interpreter again). When such a
///    call returns `None` the run is over: compiled code must stop at
///    once and `run_region` return; its result is then ignored and the
///    interpreter ends the run as the call said (a trap with its pc,
///    `halt`, an output error).
pub trait Host: TupleSink {
    /// Whether this host supplies compiled code.
    const JIT: bool;
    /// The compiled region that starts at `func`'s instruction `pc`, if any.
    fn region_at(&mut self, func: u32, pc: u32) -> Option<u32>;
    /// Runs compiled region `id` with the current call depth and fuel;
    /// returns the instruction offset in the same function where
    /// interpretation resumes, or the trap that ends the run. `vm` is the
    /// interpreter, lent for calls from the region (see 5 above).
    #[allow(clippy::too_many_arguments)]
    fn run_region(
        &mut self,
        id: u32,
        regs: &mut [i64; 256],
        mem: &mut Memory,
        host_fns: &mut dyn HostFunctions,
        depth: usize,
        fuel: &mut u64,
        vm: &mut Reentry<'_>,
    ) -> Result<u32, Trap>;
}

/// A plain sink as a host without compiled code.
#[derive(Debug)]
pub struct NoJit<'s, S: ?Sized>(pub &'s mut S);

impl<S: TupleSink + ?Sized> TupleSink for NoJit<'_, S> {
    const ACTIVE: bool = S::ACTIVE;
    #[inline(always)]
    fn accept(&mut self, batch: &[Tuple]) {
        self.0.accept(batch)
    }
}

impl<S: TupleSink + ?Sized> Host for NoJit<'_, S> {
    const JIT: bool = false;
    #[inline(always)]
    fn region_at(&mut self, _: u32, _: u32) -> Option<u32> {
        None
    }
    fn run_region(
        &mut self,
        id: u32,
        _: &mut [i64; 256],
        _: &mut Memory,
        _: &mut dyn HostFunctions,
        _: usize,
        _: &mut u64,
        _: &mut Reentry<'_>,
    ) -> Result<u32, Trap> {
        unreachable!("region {id} was never offered: this host has no compiled code")
    }
}

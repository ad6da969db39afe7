//! Entering compiled code: running an installed region (and the regions it
//! chains to), reporting its exits' tuples, and the calls its code makes
//! into the interpreter.
//!
//! A region whose call reaches a function without native code calls the
//! interpreter for it ([`toyvm_optimizer::Step::Interpreted`]): the
//! interpreter the dispatch loop lent for the region's run
//! ([`Reentry`]) runs the callee on this thread, with this host as its
//! host again, so the callee's tuples go into the run's stream in
//! execution order, its compiled code is entered where installed, and its
//! calls may come back here. So compiled code, the interpreter and compiled
//! code nest on the machine stack, and the JIT's state is changed under a
//! running region: an interval may end inside the call, and review, drop,
//! replace or install regions, this one included. Hence:
//!
//! 1. An activation holds its own `Arc` of the code it runs, so a region
//!    dropped while on the stack is freed only when it returns.
//! 2. An activation owns its exit counters while it runs: it takes the
//!    region's (or, when an activation of the same region is already
//!    running, starts from zeros) and adds them back when it returns; if
//!    the region was uninstalled meanwhile, what they counted goes straight
//!    into the statistics. The review leaves a busy region alone (it is in
//!    use, and its counts are away).
//! 3. Each nested call is one call deeper, so nesting is bounded by the
//!    call-depth limit; the machine stack it takes is bounded by the stack
//!    limit compiled code checks ([`toyvm_optimizer::stack`]): the end of
//!    the running thread's stack plus [`STACK_RESERVE`], taken when the
//!    outermost activation starts. Native calls below it go to the
//!    interpreter, and calls into the interpreter that would start below
//!    it are declined (the region then hands the call to the interpreter
//!    through an exit, as before there were such calls), but for a native
//!    function's, which the reserve is for: it covers one level of the
//!    interpreter's frames and what the interpreter does between two
//!    checks (output, host functions, the model), below the limit; a
//!    compile with little stack left runs on a thread of its own (see
//!    `compiler`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use toyvm_optimizer::{Called, CompiledRegion, ExitKind, Fuel, HostCalls, Interpreter};
use toyvm_vm::interp::{CallSite, HostFunctions, Memory, Reentry, Trap};

use super::{Jit, JitLimits, JitStats};
use crate::runtime::JitHost;

/// Machine stack kept free below the stack limit (see the module docs):
/// a level of the interpreter, entered from a native function at the
/// limit, with everything it may do before compiled code checks again
/// (compiling, which takes more, moves to a thread of its own when the
/// stack is low: see `compiler`). A call with the JIT on, compiles and
/// all, ran on a thread of 16 KiB (the C library's least) for the
/// suite's programs once nothing ran natively; the rest of the reserve is
/// for host functions.
pub(crate) const STACK_RESERVE: usize = 128 << 10;

/// The stack limit for compiled code on this thread (see the module docs);
/// where the thread's stack is unknown, the highest address: no native
/// call and no call into the interpreter is then made from compiled code.
pub(crate) fn stack_limit_here() -> usize {
    toyvm_optimizer::stack::stack_limit(STACK_RESERVE).unwrap_or(usize::MAX)
}

/// What running compiled code needs and keeps: the limits it honours, its
/// activations, and the time spent in it.
#[derive(Debug)]
pub(super) struct Native {
    /// The interpreter's call-depth limit, which native calls honour too.
    max_depth: usize,
    /// The run's fuel limit, if any: compiled code is metered.
    pub(super) fuel_limit: Option<u64>,
    /// Activations of compiled code on the machine stack now.
    nesting: u32,
    /// The stack limit compiled code checks, taken by the outermost
    /// activation on the thread it runs on (see the module docs).
    stack_limit: usize,
    /// With timing: when compiled code last took over from the
    /// interpreter.
    since: Option<Instant>,
    /// Time inside compiled code (when timed).
    pub(super) compiled_time: Duration,
}

impl Native {
    pub(super) fn new(limits: JitLimits) -> Native {
        Native {
            max_depth: limits.max_depth,
            fuel_limit: limits.fuel,
            nesting: 0,
            stack_limit: usize::MAX,
            since: None,
            compiled_time: Duration::ZERO,
        }
    }

    /// Compiled code takes over from the interpreter (when timed).
    fn resume_clock(&mut self, timing: bool) {
        if timing {
            self.since = Some(Instant::now());
        }
    }

    /// The interpreter takes over from compiled code.
    fn stop_clock(&mut self) {
        if let Some(since) = self.since.take() {
            self.compiled_time += since.elapsed();
        }
    }
}

/// One run of an installed region's code (see the module docs).
struct Activation {
    code: Arc<CompiledRegion>,
    counters: Vec<u64>,
}

impl Jit {
    /// Starts running the region in `slot`: counts the entry and hands out
    /// its code and counters.
    fn activate(&mut self, slot: u32) -> Activation {
        let native = &mut self.native;
        if native.nesting == 0 {
            native.stack_limit = stack_limit_here();
        }
        native.nesting += 1;
        native.resume_clock(self.opts.timing);
        let r = self
            .table
            .get_mut(slot)
            .expect("only installed regions are offered");
        r.entries += 1;
        r.busy += 1;
        let counters = if r.counters.is_empty() {
            vec![0; r.code.counters_len()]
        } else {
            std::mem::take(&mut r.counters)
        };
        Activation {
            code: Arc::clone(&r.code),
            counters,
        }
    }

    /// Ends an activation of the region that was in `slot`: its counters
    /// go back to the region, or into the statistics if it is gone.
    fn deactivate(&mut self, slot: u32, act: Activation) {
        self.native.nesting -= 1;
        self.native.stop_clock();
        match self.table.get_mut(slot) {
            Some(r) if Arc::ptr_eq(&r.code, &act.code) => {
                r.busy -= 1;
                if r.counters.is_empty() {
                    r.counters = act.counters;
                } else {
                    for (total, n) in r.counters.iter_mut().zip(act.counters) {
                        *total += n;
                    }
                }
            }
            // Dropped (or replaced) while it ran: its entries were counted
            // when it was uninstalled, these exits were not.
            _ => account_exits(&mut self.stats, &act.code, &act.counters),
        }
    }
}

/// Adds the exits `counters` counted for `code` to `stats`.
pub(super) fn account_exits(stats: &mut JitStats, code: &CompiledRegion, counters: &[u64]) {
    for (site, n) in code.exits().iter().zip(counters) {
        match site.kind {
            ExitKind::Side => stats.side_exits += n,
            ExitKind::Guard => stats.guard_failures += n,
            ExitKind::Interpret => stats.interpret_exits += n,
            // A trap ends the run; nothing to count toward policy.
            ExitKind::Trap => {}
        }
    }
}

/// The interpreter as the region's code calls it: the interpreter lent for
/// the region's run, with this host handed back in.
struct Nested<'h, 'a, 's, 'v, 'r> {
    host: &'h mut JitHost<'a, 's>,
    vm: &'v mut Reentry<'r>,
}

impl Interpreter for Nested<'_, '_, '_, '_, '_> {
    fn call(
        &mut self,
        call: CallSite<'_>,
        mem: &mut Memory,
        host_fns: &mut dyn HostFunctions,
        fuel: &mut u64,
    ) -> Called {
        // Calls that would start below the stack limit were declined
        // before they came here (see the module docs).
        let jit = &mut *self.host.jit;
        jit.stats.interpreter_calls += 1;
        jit.native.stop_clock();
        let called = self.vm.call(&mut *self.host, call, mem, host_fns, fuel);
        let jit = &mut *self.host.jit;
        jit.native.resume_clock(jit.opts.timing);
        match called {
            Some(v) => Called::Returned(v),
            None => Called::Ended,
        }
    }
}

/// Runs installed region `slot`; returns where to resume.
///
/// A side exit to the head of another installed region of the same
/// function goes straight on into that region (region chaining): the
/// interpreter would enter it anyway at its next transfer, after running
/// the head's first block once more, and a trace that leaves for a loop
/// formed as a separate region (sieve's prime test for its marking loop)
/// then never pays the round trip.
///
/// Each side exit and failing guard taken pushes onto the host's exit
/// tuples the tuple the interpreter would have emitted there (see
/// [`toyvm_optimizer::ExitReport`]), for the profiled kinds: compiled code
/// emits no tuples itself, and without these the profile would never see
/// the paths that leave it, nor would intervals advance while compiled
/// code runs. Calls into the interpreter emit theirs as the interpreter
/// does (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_region(
    host: &mut JitHost<'_, '_>,
    slot: u32,
    regs: &mut [i64; 256],
    mem: &mut Memory,
    host_fns: &mut dyn HostFunctions,
    depth: usize,
    fuel: &mut u64,
    vm: &mut Reentry<'_>,
) -> Result<u32, Trap> {
    // The interpreter's program is the JIT's: borrowed from the loop that
    // lent itself, not counted (an `Arc` clone per entry was a tenth of
    // a short region's round trip).
    let program = vm.program();
    let max_depth = host.jit.native.max_depth;
    let mut declined = 0;
    let mut f = Fuel {
        limit: host.jit.native.fuel_limit.unwrap_or(u64::MAX),
        left: *fuel,
    };
    let mut slot = slot;
    let exit = loop {
        let mut act = host.jit.activate(slot);
        let limit = host.jit.native.stack_limit;
        let ran = {
            let mut nested = Nested {
                host: &mut *host,
                vm: &mut *vm,
            };
            let mut calls = HostCalls::new(&mut *host_fns, &program.imports)
                .with_interpreter(&mut nested)
                .with_stack_limit(limit);
            let ran = act.code.run_hosted(
                regs,
                mem,
                &mut act.counters,
                depth,
                max_depth,
                &mut f,
                &mut calls,
            );
            declined += calls.declined();
            ran
        };
        let code = &act.code;
        let func = code.func();
        let exit = match ran {
            Ok((e, site)) => {
                let exited = site.and_then(|i| code.exits()[i].report);
                if let Some(t) = exited.and_then(|x| x.tuple(func, e.resume, regs, host.kinds)) {
                    host.exit_tuples.push(t);
                }
                Ok(e)
            }
            Err(t) => Err(t),
        };
        host.jit.deactivate(slot, act);
        match exit {
            Ok(e) if e.kind == ExitKind::Side => match host.jit.region_at(func, e.resume) {
                Some(next) => slot = next,
                None => break Ok(e),
            },
            other => break other,
        }
    };
    *fuel = f.left;
    host.jit.stats.interpreter_calls_declined += declined;
    match exit {
        Ok(exit) => Ok(exit.resume),
        Err(trap) => Err(trap.to_trap(program)),
    }
}

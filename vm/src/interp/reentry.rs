//! Calling the interpreter from compiled code: a host's compiled region
//! that reaches a call to a function with no compiled code runs the callee
//! here, on the same thread, and goes on with compiled code when it returns
//! (instead of handing the whole region back).
//!
//! The interpreter lends itself to the host for the time a region runs
//! ([`Host::run_region`]'s `vm`). A call through it is a dispatch loop of
//! its own, nested inside the compiled caller's, that shares the run's
//! state: the program's output buffer (so output stays in order), the
//! tuple buffer (so the callee's tuples land in execution order among its
//! caller's, and reach the sink exactly as they would interpreted: the Call
//! tuple at the site, the arguments' Value tuples, then the callee's own),
//! the fuel left (charged by what the callee runs), and the call depth (the
//! callee's frames count from its caller's depth plus one, against the
//! run's limit). The nested loop enters compiled code like any other (at
//! the callee's entry, branches and calls), so compiled code, the
//! interpreter and compiled code again nest: each level costs one call of
//! depth, so nesting is bounded by the call-depth limit; the machine stack
//! each level takes is the host's to watch (it declines a call, and the
//! compiled caller hands the call to the interpreter instead, when the
//! stack runs short).
//!
//! The callee's frames live on a register stack of their own. The
//! interpreter's register-stack limit counts a whole run's frames, which a
//! nested loop does not see; a host runs compiled code that calls the
//! interpreter only where that limit is out of reach (as it runs native
//! calls, see `toyvm-optimizer`'s `native` module).

use std::io::Write;

use super::{Call, Ended, FnView, Host, HostFunctions, Machine, Memory, Trap, TrapKind};
use crate::Error;
use crate::program::{Pc, Program};
use crate::tuple::{BATCH, Emitter, Kind, Tuple, flush_full};

/// What ended a run inside a nested loop, kept for the loop that lent the
/// interpreter: it ends the run the same way once compiled code has left.
#[derive(Debug)]
pub(super) enum Stop {
    /// `halt`: the run's value.
    Halt(i64),
    /// A trap, or output that could not be written.
    Error(Error),
}

/// One call compiled code makes into the interpreter.
#[derive(Clone, Copy, Debug)]
pub struct CallSite<'a> {
    /// The call instruction (its function and offset): the Call tuple's
    /// site, and where a trap of the call itself (a function value that
    /// names no function of the right arity, a call too deep) happens.
    pub site: Pc,
    /// The function value called: a `call`'s callee, or what a `calli`'s
    /// function register holds (any value: it is checked as the
    /// interpreter's `calli` checks it).
    pub callee: i64,
    /// The arguments, one per parameter.
    pub args: &'a [i64],
    /// The caller's frame depth (the `depth` its region runs at, see
    /// [`Host::run_region`]): the callee runs one deeper.
    pub depth: usize,
}

/// The interpreter, lent to a host's compiled code while a region runs
/// (see [`Host::run_region`] and the module docs).
pub struct Reentry<'r> {
    pub(super) prog: &'r Program,
    pub(super) fns: &'r [FnView<'r>],
    pub(super) out: &'r mut dyn Write,
    pub(super) out_buf: &'r mut Vec<u8>,
    pub(super) input_len: i64,
    /// The lending loop's tuple buffer and its fill level.
    pub(super) buf: &'r mut [Tuple; BATCH],
    pub(super) tlen: &'r mut usize,
    pub(super) counts: &'r mut [u64; 3],
    pub(super) count: bool,
    /// Emitted kinds: value, edge, call.
    pub(super) kinds: (bool, bool, bool),
    /// The lending loop's compile-time choices (see `Machine::exec`).
    pub(super) counting: bool,
    pub(super) emit: u8,
    pub(super) fuel_limit: u64,
    pub(super) max_depth: usize,
    pub(super) stop: Option<Stop>,
}

impl std::fmt::Debug for Reentry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reentry")
            .field("max_depth", &self.max_depth)
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl<'r> Reentry<'r> {
    /// The program the lending loop runs.
    pub fn program(&self) -> &'r Program {
        self.prog
    }

    /// Runs `call` in the interpreter, as its `call` or `calli` would from
    /// the compiled caller, with `host` (the host running the caller, handed
    /// back in) as the callee's sink and supplier of compiled code, on the
    /// run's memory and host functions, with `fuel` instructions left
    /// (lowered by what the callee runs, when the run counts).
    ///
    /// Returns the callee's return value; or `None` when the run is over (a
    /// trap, in the call or in the callee, at the interpreter's pc; `halt`;
    /// output that could not be written): compiled code must then stop at
    /// once and its host return from `run_region`, and the interpreter that
    /// lent itself ends the run as the callee's interpreter said. A host
    /// must not call again after `None`.
    pub fn call<S: Host>(
        &mut self,
        host: &mut S,
        call: CallSite<'_>,
        mem: &mut Memory,
        host_fns: &mut dyn HostFunctions,
        fuel: &mut u64,
    ) -> Option<i64> {
        assert!(self.stop.is_none(), "the run stopped: no more calls");
        let prog = self.prog;
        let trap = |kind: TrapKind| {
            let function = prog
                .functions
                .get(call.site.func() as usize)
                .map(|f| f.name.clone())
                .unwrap_or_default();
            Stop::Error(Error::Trap(Trap {
                kind,
                pc: call.site,
                function,
            }))
        };
        // The interpreter's `calli` checks, in its order: a function value
        // that names a function, of the call's arity; then the depth.
        let n = call.args.len();
        let callee = match usize::try_from(call.callee)
            .ok()
            .filter(|&i| i < prog.functions.len())
        {
            Some(i) if prog.functions[i].params as usize == n => i,
            Some(i) => {
                let f = &prog.functions[i];
                self.stop = Some(trap(TrapKind::ArityMismatch {
                    callee: f.name.clone(),
                    expected: f.params,
                    given: n as u8,
                }));
                return None;
            }
            None => {
                self.stop = Some(trap(TrapKind::BadFunctionValue(call.callee)));
                return None;
            }
        };
        if self.kinds.2 {
            self.push(host, Kind::Call, call.site.0, callee as u64);
        }
        if call.depth >= self.max_depth {
            self.stop = Some(trap(TrapKind::StackOverflow {
                depth: self.max_depth,
            }));
            return None;
        }
        let entry = Call {
            func: callee as u32,
            args: call.args,
            input_len: self.input_len as usize,
        };
        let mut m = Machine::new(prog, self.fns, entry, mem, &mut *self.out, host_fns);
        m.out_buf = std::mem::take(self.out_buf);
        m.fuel_limit = self.fuel_limit;
        let (value, edge, calls) = self.kinds;
        let mut em = Emitter {
            buf: &mut *self.buf,
            len: *self.tlen,
            value,
            edge,
            call: calls,
            counts: [0; 3],
            count: self.count,
            sink: host,
        };
        let ended = m.exec_as(
            &mut em,
            self.counting,
            self.emit,
            *fuel,
            self.max_depth,
            call.depth + 1,
        );
        *self.tlen = em.len;
        for (total, n) in self.counts.iter_mut().zip(em.counts) {
            *total += n;
        }
        *self.out_buf = std::mem::take(&mut m.out_buf);
        if self.counting {
            *fuel -= m.steps;
        }
        m.recycle();
        match ended {
            Ok(Ended::Returned(v)) => Some(v),
            Ok(Ended::Halted(v)) => {
                self.stop = Some(Stop::Halt(v));
                None
            }
            Err(e) => {
                self.stop = Some(Stop::Error(e));
                None
            }
        }
    }

    /// Whether a call ended the run (see [`call`](Self::call)).
    pub fn stopped(&self) -> bool {
        self.stop.is_some()
    }

    /// Appends a tuple to the lending loop's buffer, handing a full one to
    /// the sink, as the dispatch loop's `push!` does.
    fn push<S: Host>(&mut self, host: &mut S, kind: Kind, a: u64, b: u64) {
        self.buf[*self.tlen] = Tuple { kind, a, b };
        *self.tlen += 1;
        if *self.tlen == BATCH {
            *self.tlen = 0;
            flush_full(host, self.buf, self.counts, self.count);
        }
    }
}

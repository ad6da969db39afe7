//! Host calls from compiled code: the trampolines an `hcall` and a call
//! into the interpreter in a region call, and [`HostCalls`], what they call
//! into.
//!
//! A region lowers `hcall d, H, a, n` to a call of [`trampoline`] (its
//! address an immediate, in the host's C calling convention) with the
//! [`NativeCtx`], the import's index, a pointer to the `n` argument words
//! (a stack slot of the region's frame), `n`, and the instruction's
//! `func << 32 | pc`. The trampoline finds the [`HostCalls`] through
//! `NativeCtx::host`, rebuilds the guest memory slice (the whole words
//! within the current length) from `NativeCtx::mem` and `mem_len`, and
//! calls the host function. It returns the result; on a
//! failure it records the trap in the context (`TRAP_HOST`, with the
//! function and pc) and keeps the failure in the `HostCalls`, and the
//! region leaves through a `Trap` exit right after the call. A host
//! function that panics does not unwind through compiled frames (that
//! would abort the process): the trampoline catches the panic, the region
//! leaves the same way, and [`CompiledRegion::run_hosted`] resumes the
//! panic on the caller's side, so the host sees what an interpreted
//! `hcall` would have shown it.
//!
//! A call into the interpreter ([`crate::Step::Interpreted`], and a
//! native call's bail or a dispatch's miss) calls [`interp_trampoline`]
//! the same way, with the function value, the arguments, the call's site,
//! the region's depth and the fuel its block charged but has not run yet.
//! The trampoline hands the call to the [`Interpreter`] the `HostCalls`
//! lends (the runtime's: see `toyvm_vm::interp::Reentry`), with the fuel
//! left as the interpreter counts it, and stores what the callee left
//! back into the context. It records `TRAP_BAIL` when there is no
//! interpreter or it declines, or when the call would start below the stack
//! limit (see [`super::stack`]; the region then hands the call to the
//! interpreter through an `Interpret` exit, as before), and `TRAP_ENDED`
//! when the run ended inside the call (the region leaves at once through
//! its `Trap` exit, and whoever lent the interpreter ends the run as it
//! said). A panic inside is caught and resumed as an `hcall`'s is. A native
//! function whose call finds the stack at its limit calls
//! [`limit_trampoline`] instead, which is never declined.
//!
//! [`CompiledRegion::run_hosted`]: super::CompiledRegion::run_hosted

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use toyvm_vm::Pc;
use toyvm_vm::interp::{CallSite, HostError, HostFunctions, Memory, NoHostFunctions, TrapKind};
use toyvm_vm::program::Import;

use crate::native::{self, NativeCtx};

/// What the host functions of one run of compiled code are: the host's
/// [`HostFunctions`] and the program's imports (for the names in traps).
/// [`HostCalls::none`] has none: every `hcall` then traps, as the
/// interpreter's [`toyvm_vm::interp::NoHostFunctions`] does.
pub struct HostCalls<'a> {
    functions: Option<&'a mut dyn HostFunctions>,
    imports: &'a [Import],
    failure: Option<Failure>,
    interpreter: Option<&'a mut dyn Interpreter>,
    /// The stack limit native calls check (0: none; see `super::stack`).
    stack_limit: usize,
    /// Calls into the interpreter declined for want of stack.
    declined: u64,
}

/// The interpreter, as compiled code calls it for a callee without native
/// code (see the module docs). The runtime's implementation runs the
/// callee on the same thread, nested inside the compiled caller.
pub trait Interpreter {
    /// Calls `call.callee` (a function value: any value, checked as the
    /// interpreter's `calli` checks it) with `call.args`, from `call.site`
    /// at the caller's depth `call.depth`, on the run's memory and host
    /// functions, with `fuel` instructions left (lowered by what the call
    /// ran). Returns what happened: the value, a call declined before
    /// anything ran (compiled code then hands the call to the interpreter
    /// through an exit), or the run's end inside the call.
    fn call(
        &mut self,
        call: CallSite<'_>,
        mem: &mut Memory,
        host: &mut dyn HostFunctions,
        fuel: &mut u64,
    ) -> Called;
}

/// How a call into the [`Interpreter`] came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Called {
    /// The callee returned this value.
    Returned(i64),
    /// Nothing ran: compiled code hands the call to the interpreter.
    /// Never for a call a native function makes at the stack limit (see
    /// [`HostCalls::with_stack_limit`]), which cannot be handed back: that
    /// is reported as a panic in the caller of the compiled code.
    Declined,
    /// The run is over (a trap, `halt`, an output error): compiled code
    /// leaves at once, and the interpreter that was lent ends the run.
    Ended,
}

/// Why the last host call failed.
enum Failure {
    /// The host function returned an error: the program's trap.
    Trap(TrapKind),
    /// The host function panicked: resumed once compiled code has left.
    Panic(Box<dyn Any + Send>),
}

impl std::fmt::Debug for HostCalls<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCalls")
            .field("imports", &self.imports.len())
            .field("has_functions", &self.functions.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> HostCalls<'a> {
    /// The host's functions for a program with `imports`.
    pub fn new(functions: &'a mut dyn HostFunctions, imports: &'a [Import]) -> HostCalls<'a> {
        HostCalls {
            functions: Some(functions),
            imports,
            failure: None,
            interpreter: None,
            stack_limit: 0,
            declined: 0,
        }
    }

    /// These host calls, with `interpreter` answering the calls compiled
    /// code makes into the interpreter (without one, every such call is
    /// declined).
    pub fn with_interpreter(mut self, interpreter: &'a mut dyn Interpreter) -> HostCalls<'a> {
        self.interpreter = Some(interpreter);
        self
    }

    /// No host: every host call traps.
    pub fn none() -> HostCalls<'static> {
        HostCalls {
            functions: None,
            imports: &[],
            failure: None,
            interpreter: None,
            stack_limit: 0,
            declined: 0,
        }
    }

    /// These host calls, with compiled code checking the machine stack
    /// against `limit` (see [`super::stack`]; 0, the default: no check,
    /// the caller vouches that native recursion to the call-depth limit
    /// fits the thread's stack). Takes effect only with an interpreter
    /// ([`with_interpreter`](Self::with_interpreter)): native code that
    /// reaches the limit calls it for the rest of the recursion, and calls
    /// into it that would start below the limit are declined.
    pub fn with_stack_limit(mut self, limit: usize) -> HostCalls<'a> {
        self.stack_limit = limit;
        self
    }

    /// Whether an interpreter is lent.
    pub(crate) fn has_interpreter(&self) -> bool {
        self.interpreter.is_some()
    }

    /// The stack limit compiled code checks, 0 without an interpreter.
    pub(crate) fn stack_limit(&self) -> usize {
        if self.interpreter.is_some() {
            self.stack_limit
        } else {
            0
        }
    }

    /// Calls into the interpreter declined so far because they would have
    /// started below the stack limit (the code handed them to the
    /// interpreter through an exit instead).
    pub fn declined(&self) -> u64 {
        self.declined
    }

    fn call(&mut self, index: u16, args: &[i64], mem: &mut [i64]) -> Result<i64, HostError> {
        match self.functions.as_deref_mut() {
            Some(f) => f.call(index, args, mem),
            None => Err(HostError::msg("no host provides it")),
        }
    }

    fn name(&self, index: u16) -> String {
        self.imports
            .get(index as usize)
            .map_or_else(|| format!("import {index}"), |i| i.name.clone())
    }

    /// The trap a failed host call left (consumed), or resumes the panic a
    /// host function raised.
    pub(crate) fn take_trap(&mut self) -> TrapKind {
        match self.failure.take() {
            Some(Failure::Trap(kind)) => kind,
            Some(Failure::Panic(payload)) => std::panic::resume_unwind(payload),
            None => unreachable!("TRAP_HOST is recorded only with a failure"),
        }
    }
}

/// The trampoline's address, for the code generator.
pub(crate) fn trampoline_address() -> i64 {
    trampoline as *const () as usize as i64
}

/// The interpreter trampoline's address, for the code generator.
pub(crate) fn interp_trampoline_address() -> i64 {
    interp_trampoline as *const () as usize as i64
}

/// The address of the interpreter trampoline native functions call at the
/// stack limit (same signature), for the code generator.
pub(crate) fn limit_trampoline_address() -> i64 {
    limit_trampoline as *const () as usize as i64
}

/// Called by compiled code for an `hcall` (see the module docs); returns
/// the host function's result, or 0 with the trap recorded in `ctx`.
extern "C" fn trampoline(
    ctx: *mut NativeCtx,
    index: u64,
    args: *const i64,
    n: u64,
    site: u64,
) -> i64 {
    // SAFETY: compiled code passes the `NativeCtx` that
    // `CompiledRegion::run_hosted` built on its stack and is still
    // borrowing for the call (live, exclusively ours while compiled code
    // waits on this call); its `host` points at that call's `HostCalls`,
    // alive for the whole run and not otherwise touched during it.
    let ctx = unsafe { &mut *ctx };
    let host = unsafe { &mut *ctx.host.cast::<HostCalls<'_>>() };
    // SAFETY: `args` points at `n` initialized words of the caller's stack
    // slot (`n` is the `hcall`'s count, at most 255), which stays live and
    // unwritten during the call.
    let args = unsafe { std::slice::from_raw_parts(args, n as usize) };
    // SAFETY: `ctx.mem` is the guest memory `run_hosted` borrows
    // exclusively for the run, `ctx.mem_len` its current length in bytes
    // (at most its capacity), so the whole words within it are the
    // memory's; compiled code holds no reference into it across this call
    // (it reloads what it reads after a call). The host sees the words
    // within the length, as the interpreter's `hcall` gives it.
    let words = (ctx.mem_len / 8) as usize;
    let mem = unsafe { std::slice::from_raw_parts_mut(ctx.mem, words) };
    let index = index as u16;
    let failure = match catch_unwind(AssertUnwindSafe(|| host.call(index, args, mem))) {
        Ok(Ok(v)) => return v,
        Ok(Err(message)) => Failure::Trap(TrapKind::Host {
            name: host.name(index),
            message,
        }),
        Err(payload) => Failure::Panic(payload),
    };
    host.failure = Some(failure);
    ctx.trap_kind = native::TRAP_HOST;
    ctx.trap_func = site >> 32;
    ctx.trap_pc = site & 0xffff_ffff;
    0
}

/// Called by compiled code for a call into the interpreter (see the module
/// docs): `callee` is the function value, `args` its `n` arguments, `site`
/// the call's `func << 32 | pc`, `depth` the caller's depth and `unrun` the
/// instructions the caller's block charged to fuel but has not run (those
/// after the call). Returns the callee's value, or 0 with `TRAP_BAIL`
/// (declined: also when the call would start below the stack limit) or
/// `TRAP_ENDED` (the run is over) recorded in `ctx`.
extern "C" fn interp_trampoline(
    ctx: *mut NativeCtx,
    callee: i64,
    args: *const i64,
    n: u64,
    site: u64,
    depth: u64,
    unrun: u64,
) -> i64 {
    interp_call(ctx, callee, args, n, site, depth, unrun, false)
}

/// [`interp_trampoline`] for a native function's call at the stack limit
/// (see [`crate::native`]): never declined for want of stack (the
/// reserve below the limit is for this call), and an interpreter that
/// declines it is a bug, reported as a panic once compiled code has left
/// (a native function cannot hand a call back: it may have stored).
extern "C" fn limit_trampoline(
    ctx: *mut NativeCtx,
    callee: i64,
    args: *const i64,
    n: u64,
    site: u64,
    depth: u64,
    unrun: u64,
) -> i64 {
    interp_call(ctx, callee, args, n, site, depth, unrun, true)
}

/// What both interpreter trampolines do; `at_limit` for a native
/// function's call at the stack limit.
#[allow(clippy::too_many_arguments)]
fn interp_call(
    ctx: *mut NativeCtx,
    callee: i64,
    args: *const i64,
    n: u64,
    site: u64,
    depth: u64,
    unrun: u64,
    at_limit: bool,
) -> i64 {
    // SAFETY: as in `trampoline`: compiled code passes the live
    // `NativeCtx` of `CompiledRegion::run_hosted`, whose `host` is that
    // run's `HostCalls`, neither otherwise touched while this runs.
    let ctx = unsafe { &mut *ctx };
    let host = unsafe { &mut *ctx.host.cast::<HostCalls<'_>>() };
    let below = ctx.stack_limit != 0 && super::stack::stack_pointer() as u64 <= ctx.stack_limit;
    if below && !at_limit {
        host.declined += 1;
        ctx.trap_kind = native::TRAP_BAIL;
        return 0;
    }
    let Some(interpreter) = host.interpreter.as_deref_mut() else {
        // No limit is set without an interpreter, so no call at it.
        debug_assert!(!at_limit);
        ctx.trap_kind = native::TRAP_BAIL;
        return 0;
    };
    // SAFETY: `args` points at `n` initialized words of the caller's stack
    // slot (`n` is the call's count, at most 255), live and unwritten
    // during the call.
    let args = unsafe { std::slice::from_raw_parts(args, n as usize) };
    // SAFETY: `ctx.memory` is the `Memory` `run_hosted` borrows
    // exclusively for the run (`ctx.mem` points into it); compiled code
    // holds no reference into it across this call and `run_hosted` does
    // not use it until compiled code returns. The interpreter gets it for
    // the call only: with the length compiled `mgrow`s raised, and the
    // length it leaves (the callee may run `mgrow`) goes back to `ctx`,
    // where compiled code reloads it after the call.
    let mem = unsafe { &mut *ctx.memory };
    mem.set_grown_length(ctx.mem_len);
    // The fuel the interpreter counts with: what compiled code has left,
    // plus what its block charged for instructions after the call.
    let unrun = i128::from(unrun);
    let mut fuel = (i128::from(ctx.fuel) + unrun).clamp(0, i128::from(u64::MAX)) as u64;
    let call = CallSite {
        site: Pc(site),
        callee,
        args,
        depth: depth as usize,
    };
    let mut none = NoHostFunctions;
    let functions: &mut dyn HostFunctions = match host.functions.as_deref_mut() {
        Some(f) => f,
        None => &mut none,
    };
    let called = catch_unwind(AssertUnwindSafe(|| {
        interpreter.call(call, &mut *mem, functions, &mut fuel)
    }));
    ctx.mem_len = mem.len_bytes();
    match called {
        Ok(Called::Returned(v)) => {
            ctx.fuel =
                (i128::from(fuel) - unrun).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            v
        }
        Ok(Called::Declined) if at_limit => {
            let why = "the interpreter declined a call native code made at the stack limit";
            host.failure = Some(Failure::Panic(Box::new(why)));
            ctx.trap_kind = native::TRAP_HOST;
            ctx.trap_func = site >> 32;
            ctx.trap_pc = site & 0xffff_ffff;
            0
        }
        Ok(Called::Declined) => {
            ctx.trap_kind = native::TRAP_BAIL;
            0
        }
        Ok(Called::Ended) => {
            ctx.trap_kind = native::TRAP_ENDED;
            ctx.trap_func = site >> 32;
            ctx.trap_pc = site & 0xffff_ffff;
            0
        }
        Err(payload) => {
            host.failure = Some(Failure::Panic(payload));
            ctx.trap_kind = native::TRAP_HOST;
            ctx.trap_func = site >> 32;
            ctx.trap_pc = site & 0xffff_ffff;
            0
        }
    }
}

//! Host calls from compiled code: the trampoline an `hcall` in a region
//! calls, and [`HostCalls`], what it calls into.
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
//! [`CompiledRegion::run_hosted`]: super::CompiledRegion::run_hosted

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use toyvm_vm::interp::{HostFunctions, TrapKind};
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
        }
    }

    /// No host: every host call traps.
    pub fn none() -> HostCalls<'static> {
        HostCalls {
            functions: None,
            imports: &[],
            failure: None,
        }
    }

    fn call(&mut self, index: u16, args: &[i64], mem: &mut [i64]) -> Result<i64, String> {
        match self.functions.as_deref_mut() {
            Some(f) => f.call(index, args, mem),
            None => Err("no host provides it".to_owned()),
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

//! A region in machine code and running it: [`CompiledRegion`] and the
//! fuel it is given ([`Fuel`]). [`super::CodeCache`] builds them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use toyvm_vm::Pc;
use toyvm_vm::interp::{Memory, TrapKind};

use super::{CodeMemory, HostCalls, RegionFn};
use crate::DEFAULT_MAX_DEPTH;
use crate::exit::{Exit, ExitKind, ExitSite};
use crate::native::{self, NativeCtx, NativeTrap};

/// A fuel limit as compiled code sees it (see
/// [`CompiledRegion::run_metered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fuel {
    /// The run's limit, in instructions (for the out-of-fuel trap's message).
    pub limit: u64,
    /// Instructions the run may still execute.
    pub left: u64,
}

impl Fuel {
    /// No limit.
    pub const UNLIMITED: Fuel = Fuel {
        limit: u64::MAX,
        left: u64::MAX,
    };
}

/// A region in machine code.
///
/// Counter layout: `counters[i]` counts the exits taken through
/// [`exits()`](CompiledRegion::exits)`[i]`, and the last,
/// `counters[exits().len()]`, the times control reached the region's head
/// (once per entry that passes the entry guards, plus once per loop
/// iteration: a looping region's trips). The runtime allocates
/// [`counters_len()`](CompiledRegion::counters_len) zeroed `u64`s per
/// region and reads them to find hot side exits (kind `Side`), failing
/// guards (`Guard`, against the trips) and instructions handed to the
/// interpreter (`Interpret`).
pub struct CompiledRegion {
    pub(super) entry: RegionFn,
    /// Compiled with fuel metering.
    pub(super) metered: bool,
    pub(super) func: u32,
    pub(super) head: u32,
    /// Calls native code or the interpreter (see [`Self::calls_native`]).
    pub(super) calls_native: bool,
    /// Calls an open native function, which calls the interpreter (see
    /// [`crate::native`]): runs only with an interpreter lent.
    pub(super) needs_interpreter: bool,
    /// For regions that call native code or the interpreter: the most
    /// registers of any function of the program (see `run_with`).
    pub(super) max_regs: u16,
    pub(super) exits: Vec<ExitSite>,
    pub(super) code_size: usize,
    /// Calls to native functions compiled inline.
    pub(super) inlined: usize,
    /// Multiplications by an induction variable strength-reduced.
    pub(super) reduced: usize,
    pub(super) compile_time: Duration,
    /// The native functions compiled for this region before it (those
    /// its calls reach that had no native code yet).
    pub(super) natives: NativesCompiled,
    pub(super) clif: Option<String>,
    /// The region's own module: freed when the region is dropped.
    pub(super) _memory: Arc<CodeMemory>,
    /// The natives' module, which the region's code calls into.
    pub(super) _natives: Arc<CodeMemory>,
    /// The natives' `calli` table (see `NativeCtx::table`), empty when the
    /// region was compiled before any natives.
    pub(super) table: Arc<super::natives::Table>,
}

impl fmt::Debug for CompiledRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledRegion")
            .field("func", &self.func)
            .field("head", &self.head)
            .field("exits", &self.exits)
            .field("code_size", &self.code_size)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

impl CompiledRegion {
    /// Runs the region on the current frame's register window and the
    /// program's memory, from the region head until an exit.
    ///
    /// `depth` is the interpreter's frame count while this frame runs (its
    /// `frames.len()`: 0 in the entry function) and `max_depth` its call
    /// depth limit (`interp::Config::max_depth`): native calls check and
    /// trap exactly as the interpreter's `call` would.
    ///
    /// On `Ok`, `regs` holds every register as the interpreter would have
    /// it at the returned [`Exit::resume`] offset, and `mem` likewise (its
    /// contents and its current length, which compiled `mgrow`s raise). The
    /// runtime then interprets at least the instruction at `resume` before
    /// entering any region there: an `Interpret` exit has not run it, and a
    /// guard that resumes at the head would otherwise re-enter forever.
    /// This does not count fuel: see [`run_metered`](Self::run_metered).
    ///
    /// `Err` is a trap inside native code (the region took its `Trap` exit,
    /// counted like any other): the program stops with the interpreter's
    /// trap, [`NativeTrap::to_trap`]; `mem` holds what the interpreter's
    /// would at that trap. Native recursion runs on the machine stack: see
    /// [`CodeCache::native_stack_bytes`](crate::CodeCache::native_stack_bytes).
    ///
    /// A region that calls native code or the interpreter returns at once,
    /// without running, with an `Interpret` exit at its head (no counter
    /// incremented) when `max_depth` lets the interpreter's register-stack
    /// limit come into play (a program with a 256-register function at the
    /// default limit; see [`crate::native`]): native frames, and an
    /// interpreter called from compiled code, do not model it, and the
    /// interpreter then runs the code and traps where it should. So does a
    /// region that calls an open native function (see [`crate::native`])
    /// when no interpreter is lent, as here: see
    /// [`run_hosted`](Self::run_hosted).
    ///
    /// # Panics
    ///
    /// If `counters` is shorter than [`exits()`](Self::exits).
    pub fn run_with(
        &self,
        regs: &mut [i64; 256],
        mem: &mut Memory,
        counters: &mut [u64],
        depth: usize,
        max_depth: usize,
    ) -> std::result::Result<Exit, NativeTrap> {
        let mut fuel = Fuel::UNLIMITED;
        self.run_metered(regs, mem, counters, depth, max_depth, &mut fuel)
            .map(|(exit, _)| exit)
    }

    /// [`run_with`](Self::run_with) under a fuel limit, also saying which
    /// exit site was taken (an index into [`exits()`](Self::exits); `None`
    /// when the region did not run).
    ///
    /// Code compiled with [`CodeCache::set_fuel_metering`](crate::CodeCache::set_fuel_metering) charges
    /// `fuel.left` a basic block at a time and leaves when a block starts
    /// with none left: an `Interpret` exit at that block (the interpreter
    /// then traps there, out of fuel), or in native code the interpreter's
    /// out-of-fuel trap at that block's first instruction. `fuel.left` is
    /// what is left on return (0 when the last block ran past the limit),
    /// so the instructions counted are exactly the ones run, and a run
    /// stops at most one basic block past the limit. Code compiled without
    /// metering leaves `fuel` alone.
    pub fn run_metered(
        &self,
        regs: &mut [i64; 256],
        mem: &mut Memory,
        counters: &mut [u64],
        depth: usize,
        max_depth: usize,
        fuel: &mut Fuel,
    ) -> std::result::Result<(Exit, Option<usize>), NativeTrap> {
        self.run_hosted(
            regs,
            mem,
            counters,
            depth,
            max_depth,
            fuel,
            &mut HostCalls::none(),
        )
    }

    /// [`run_metered`](Self::run_metered) with the host functions the
    /// region's `hcall`s call, and the interpreter its calls into the
    /// interpreter call (see [`HostCalls`]). A host function's failure is
    /// the returned trap ([`TrapKind::Host`]); a host function (or the
    /// interpreter) that panics panics here, once compiled code has left.
    /// When the run ended inside a call into the interpreter, the region
    /// returns at once with `Ok` and an exit of kind
    /// [`ExitKind::Trap`](crate::ExitKind::Trap): the interpreter that was
    /// lent knows how the run ended. Instructions the interpreter ran count
    /// against `fuel` whether the code is metered or not.
    ///
    /// With a stack limit ([`HostCalls::with_stack_limit`]) native calls
    /// below it run in the interpreter instead (see [`crate::native`]).
    ///
    /// [`TrapKind::Host`]: toyvm_vm::interp::TrapKind::Host
    #[allow(clippy::too_many_arguments)]
    pub fn run_hosted(
        &self,
        regs: &mut [i64; 256],
        mem: &mut Memory,
        counters: &mut [u64],
        depth: usize,
        max_depth: usize,
        fuel: &mut Fuel,
        host: &mut HostCalls<'_>,
    ) -> std::result::Result<(Exit, Option<usize>), NativeTrap> {
        assert!(
            counters.len() >= self.counters_len(),
            "region {} needs {} counters, {} given",
            Pc::new(self.func, self.head),
            self.counters_len(),
            counters.len()
        );
        let unmodelled =
            self.calls_native && !native::register_stack_unreachable(max_depth, self.max_regs);
        if unmodelled || self.needs_interpreter && !host.has_interpreter() {
            let exit = Exit {
                kind: ExitKind::Interpret,
                resume: self.head,
            };
            return Ok((exit, None));
        }
        let mem_len = mem.len_bytes();
        let mem_cap = mem.capacity_bytes();
        let memory = std::ptr::from_mut(mem);
        // SAFETY: `memory` comes from the exclusive borrow `mem`, not used
        // again until compiled code has returned.
        let mem_ptr = unsafe { (*memory).as_mut_ptr() };
        let start_fuel = fuel.left.min(i64::MAX as u64) as i64;
        let mut ctx = NativeCtx {
            mem: mem_ptr,
            mem_len,
            mem_cap,
            max_depth: max_depth as u64,
            trap_kind: native::TRAP_NONE,
            trap_func: 0,
            trap_pc: 0,
            trap_addr: 0,
            fuel: start_fuel,
            host: std::ptr::from_mut(host).cast(),
            // `AtomicU64` has `u64`'s layout: compiled code reads the
            // words as plain ones (see `natives::Table`).
            table: self.table.as_ptr().cast::<[u64; 2]>(),
            table_len: self.table.len() as u64,
            memory,
            stack_limit: host.stack_limit() as u64,
        };
        // SAFETY: `entry` points at live code (`_memory` keeps it mapped)
        // with `RegionFn`'s signature, and so does every native function it
        // calls (in the natives' module, which `_natives` keeps mapped, with
        // the signature their callers' IR declares: imports are declared
        // with `native_signature` of the callee's arity). The code reads and writes `regs[0..256]`
        // only (register operands are `u8`), touches `mem` (through the
        // argument or `ctx.mem`, the same pointer; `mem_cap` bytes from it
        // are the memory's) only at word indices below `len / 8` and byte
        // ranges `[ea, ea + size)` with `0 <= ea` and `ea + size <= len`,
        // for the current length `len`, which starts as `mem_len` and which
        // `mgrow` raises only after checking it stays within `mem_cap`,
        // `counters` only at indices up to `exits.len()`
        // (below `counters_len()`, checked above), and `ctx` only within
        // the `NativeCtx` it points at; a bailing function's `calli` reads
        // `ctx.table` below `ctx.table_len` (the table `self.table` keeps
        // alive) and calls only its non-zero addresses, each the finalized
        // entry of a native function in the natives' module taking as many
        // parameters as the call passes, with `native_signature` of that
        // count.
        // The exclusive borrows do not alias and outlive the call; `mem` is
        // not otherwise used while `ctx` holds its pointer. An `hcall`
        // calls `host::trampoline` (a plain `extern "C"` function with the
        // signature the code generator declares for it), which reaches
        // `host` and the memory through `ctx` only while the code waits on
        // it; neither is used here until the code returns. A call into the
        // interpreter calls `host::interp_trampoline` (or, from a native
        // function at the stack limit, `host::limit_trampoline`) the same
        // way; the
        // interpreter it reaches through `host` gets the memory for the
        // call's duration and never `regs` (the callee's frames are its
        // own), so the region's window is untouched behind its back.
        let raw = unsafe {
            (self.entry)(
                regs.as_mut_ptr(),
                mem_ptr,
                mem_len,
                counters.as_mut_ptr(),
                &mut ctx,
                depth as u64,
            )
        };
        let exit = Exit::decode(raw).expect("compiled code returns only encoded exits");
        // Compiled `mgrow`s (and the interpreter's, in calls compiled code
        // made into it) left the length in the context.
        // SAFETY: compiled code has returned; `memory` is `mem`'s pointer.
        unsafe { (*memory).set_grown_length(ctx.mem_len) };
        if self.metered {
            fuel.left = ctx.fuel.max(0) as u64;
        } else {
            // Only calls into the interpreter charge unmetered code's fuel.
            fuel.left = fuel
                .left
                .saturating_sub(start_fuel.saturating_sub(ctx.fuel) as u64);
        }
        match ctx.trap(max_depth, fuel.limit, host) {
            Some(trap) => {
                debug_assert_eq!(exit.kind, ExitKind::Trap);
                // A native function's fuel lives in a variable that its
                // trap paths do not store back: out of fuel is none left,
                // as the interpreter leaves it.
                if matches!(trap.kind, TrapKind::OutOfFuel { .. }) {
                    fuel.left = 0;
                }
                Err(trap)
            }
            None => Ok((exit, Exit::site(raw))),
        }
    }

    /// [`run_with`](Self::run_with) for the entry function's frame (depth 0)
    /// under the interpreter's default depth limit: exact for regions that
    /// make no native calls ([`calls_native`](Self::calls_native) false),
    /// the regions of the previous API.
    ///
    /// # Panics
    ///
    /// If `counters` is too short, or if native code traps (use `run_with`,
    /// which returns the trap, for regions with native calls).
    pub fn run(&self, regs: &mut [i64; 256], mem: &mut Memory, counters: &mut [u64]) -> Exit {
        self.run_with(regs, mem, counters, 0, DEFAULT_MAX_DEPTH)
            .unwrap_or_else(|t| panic!("native code trapped ({t:?}): use `run_with`"))
    }

    /// Whether the region calls native code (a whole-function region, or a
    /// region with [`Step::Call`](crate::Step::Call)s) or the interpreter
    /// ([`Step::Interpreted`](crate::Step::Interpreted)): it then needs
    /// `run_with`'s depth, may return a trap, and uses the machine stack.
    pub fn calls_native(&self) -> bool {
        self.calls_native
    }

    /// The exit sites, in counter order.
    pub fn exits(&self) -> &[ExitSite] {
        &self.exits
    }

    /// The counters a run needs: one per exit site and the head's
    /// arrivals (see the type's docs).
    pub fn counters_len(&self) -> usize {
        self.exits.len() + 1
    }

    /// The function this region belongs to.
    pub fn func(&self) -> u32 {
        self.func
    }

    /// The head offset: run this region when the interpreter reaches it.
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Bytes of machine code.
    pub fn code_size(&self) -> usize {
        self.code_size
    }

    /// Calls to small native functions that call nothing, compiled inline
    /// in this region (the rest stay native calls).
    pub fn inlined_calls(&self) -> usize {
        self.inlined
    }

    /// Multiplications by an induction variable that this region carries
    /// around its loop as a sum instead (see `codegen::strength`).
    pub fn reduced_products(&self) -> usize {
        self.reduced
    }

    /// Wall time from lowering to finalized code (the region's own: see
    /// [`natives_compiled`](Self::natives_compiled) for the natives
    /// compiled for it first).
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// The native functions compiled for this region before it: the
    /// functions its calls reach that had no native code yet (a C
    /// program's `snprintf` reaches 17 of its library's, 1,450
    /// instructions), compiled once for every region after it.
    pub fn natives_compiled(&self) -> NativesCompiled {
        self.natives
    }

    /// The annotated Cranelift IR, when the cache had `set_dump_clif(true)`.
    pub fn clif(&self) -> Option<&str> {
        self.clif.as_deref()
    }
}

/// Native functions compiled in one or more batches (see
/// [`CompiledRegion::natives_compiled`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativesCompiled {
    /// Functions compiled.
    pub functions: usize,
    /// Their toyvm instructions.
    pub instructions: usize,
    /// Wall time from lowering the first to finalizing the last.
    pub time: Duration,
}

impl NativesCompiled {
    /// Adds another batch.
    pub(super) fn add(&mut self, functions: usize, instructions: usize, time: Duration) {
        self.functions += functions;
        self.instructions += instructions;
        self.time += time;
    }
}

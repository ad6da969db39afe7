//! Native functions: which bytecode functions compile whole into machine
//! code that calls other native functions directly, and the context such
//! code shares with its caller (how it reports a trap).
//!
//! A function is *closed* when every instruction it holds can run natively:
//! everything a region compiles in place, branches and jump tables, `ret`,
//! direct `call`s to closed functions (recursion included), and `calli`s
//! whose every possible callee is closed: a `calli` passing `n` arguments
//! can call only a function of `n` parameters (any other value traps), so
//! when there are at most [`MAX_CALLI_TARGETS`] of them and all are closed,
//! it compiles to a compare against each and a direct call, and to the
//! interpreter's trap (a bad function value, or an arity mismatch, which
//! [`NativeTrap::to_trap`] tells apart) for any other value. A scheduler
//! that dispatches through function values to task functions that store
//! to memory (richards) runs natively this way. `halt`, `putn`, `putc` and
//! `inlen` need the interpreter (the end of the program, output, input),
//! and so does any function that calls a function that needs it. A
//! function with an `hcall` is not closed either: regions call host
//! functions (through a trampoline), native functions do not.
//!
//! # Functions that bail out
//!
//! A function that is not closed may still run natively when it has no
//! side effects of its own: nothing that writes memory (a store, or
//! `mgrow`: [`Op::writes_memory`]) and no `hcall`. Such a function
//! *bails*: it is compiled whole like a closed one, and each instruction
//! native code cannot run (output, `halt`, `inlen`, a call to a function
//! that is neither bailing nor closed and store-free) becomes a *bail
//! point* that unwinds every native frame, as a trap does, with
//! `TRAP_BAIL`. Its `calli` looks the function value up in a table of
//! the program's native code (`NativeCtx::table`) and calls a pure or
//! bailing function of the call's arity natively; any other value (another
//! function, another arity, no function at all) bails, and the interpreter
//! makes the call, or traps. Nothing those frames did is visible (no store, no output,
//! no host call: the functions they ran are bailing or closed and
//! store-free, and they emit no tuples), so the region or entry stub that
//! made the outermost native call leaves with an `Interpret` exit *at the
//! call*, its registers and fuel as they were before it, and the
//! interpreter runs the call itself. A function whose every path from its
//! entry to a `ret` passes a bail point would bail on every call, so it is
//! not counted as bailing. [`native_functions`] decides which functions
//! bail; closed functions still call only closed functions (a bail would
//! undo their stores).
//!
//! This is how a stack-machine interpreter's arithmetic helper that calls
//! an error reporter (output and `halt`) on division by zero, or a lookup
//! that prints only when it fails, run natively on their hot paths.
//!
//! # Functions that call the interpreter
//!
//! A function that is neither closed nor bailing, but whose own
//! instructions all run natively (no output, `halt`, `inlen` or `hcall`),
//! is *open* ([`Native::Open`]): it is compiled whole too, and a call it
//! makes to a function without native code for it calls the interpreter
//! for the callee, through the interpreter trampoline that is never
//! declined (`jit::host::limit_trampoline`, as a closed function's call
//! at the stack limit does), and goes on with the value. So do its `calli`s
//! whose value names no native function of the call's arity (the
//! interpreter then makes the call, or traps as its `calli` would): they
//! look the value up in the natives' table (`NativeCtx::table`), whose
//! entries name every native function, those a bailing function may not
//! call marked (see `table_params`). It calls closed, pure and open
//! functions natively; a bailing callee that bails is called again in the
//! interpreter (it had no side effects). The library functions of a
//! compiled C program (`snprintf`'s formatting, `qsort` through its
//! comparator) are open: their calls reach functions with host calls
//! (output), or more functions than a closed `calli` compares against.
//!
//! Open functions need an interpreter: code that may reach one
//! ([`crate::CompiledRegion`]s that call an open function natively, and
//! the whole-function region of one) returns at once, without running,
//! when no interpreter is lent ([`crate::HostCalls::with_interpreter`]),
//! and the interpreter runs the code instead. Closed and bailing functions
//! never call an open one (a bail would undo its calls' output), so the
//! guarantees above stay as they were.
//!
//! Native code keeps registers in SSA values (no register window) and
//! recurses on the machine stack. It never exits to the interpreter: an
//! instruction that traps in the interpreter (division by zero, a memory
//! access out of bounds, a call deeper than `max_depth`) records the trap in
//! the [`NativeCtx`] and unwinds every native frame at once; the region that
//! made the outermost native call then returns an [`crate::ExitKind::Trap`]
//! exit and [`crate::CompiledRegion::run_with`] turns the context into a
//! [`NativeTrap`].
//!
//! Every native call (from a region, an entry stub or a native function)
//! first compares the stack pointer against `NativeCtx::stack_limit`, after
//! the depth check; below the limit the callee runs in the interpreter,
//! whose frames are on the heap, instead (see `crate::jit::stack`): a region
//! or entry stub hands the call over as for a bail, a bailing function
//! bails, and a closed function calls the interpreter for the callee
//! through the interpreter trampoline and goes on with its value. So
//! native recursion never overflows the machine stack, and the call-depth
//! limit and its trap stay the interpreter's.
//!
//! Where native code is not the interpreter, by design: it emits no
//! profile tuples, and with fuel metering on it charges fuel a basic block
//! at a time (see `codegen`), so a run may end up to one block
//! past the limit. The interpreter also
//! traps when its register stack (frames' register counts summed) would
//! pass 2^24 words, which native frames do not model; that limit is out of
//! reach when `max_depth * (most registers of any function) + 256 <= 2^24`
//! (with the default depth limit: every function has at most 255
//! registers), and where it is not, [`crate::CompiledRegion::run_with`]
//! does not run native code at all (see there).

use toyvm_vm::Program;
use toyvm_vm::interp::{TrapCode, TrapKind};
use toyvm_vm::isa::Instr;
#[cfg(doc)]
use toyvm_vm::isa::Op;

use crate::cfg::Cfg;

/// The most functions a closed function's `calli` compares its value
/// against (see the module docs): a `calli` that could reach more is left
/// to the interpreter.
pub const MAX_CALLI_TARGETS: usize = 8;

/// Whether native code can run `i` (a `call` only if its callee is closed,
/// a `calli` only if every function it can call is, which
/// [`closed_functions`] decides).
fn runs_natively(i: &Instr) -> bool {
    // What regions leave to the interpreter, but for the calls and
    // returns native functions make themselves; and no host call (the
    // trampoline's fuel check and trap path are the region code
    // generator's).
    matches!(
        i,
        Instr::Call { .. } | Instr::Calli { .. } | Instr::Ret { .. } | Instr::Trap { .. }
    ) || !(crate::superblock::is_interpreted(i) || matches!(i, Instr::Hcall { .. }))
}

/// The functions a `calli` passing `n` arguments can call: those taking
/// `n` parameters (the interpreter traps on any other value).
pub(crate) fn calli_targets(program: &Program, n: u8) -> impl Iterator<Item = u32> + '_ {
    (0..program.functions.len() as u32).filter(move |&g| program.functions[g as usize].params == n)
}

/// Every function `f` may call: its `call`s' callees and, for each `calli`,
/// every function of the call's arity.
fn callees<'p>(
    program: &'p Program,
    f: &'p toyvm_vm::Function,
) -> impl Iterator<Item = usize> + 'p {
    f.code.iter().flat_map(move |i| {
        let (direct, indirect) = match *i {
            Instr::Call { f, .. } => (Some(f as usize), None),
            Instr::Calli { n, .. } => (None, Some(calli_targets(program, n).map(|g| g as usize))),
            _ => (None, None),
        };
        direct.into_iter().chain(indirect.into_iter().flatten())
    })
}

/// Per function: whether it is closed (see the module docs). The greatest
/// fixpoint over the call graph: start from every function whose own
/// instructions all run natively (and whose `calli`s have at most
/// [`MAX_CALLI_TARGETS`] possible callees), then drop callers of dropped
/// functions until nothing changes, so (mutually) recursive functions stay
/// closed.
pub fn closed_functions(program: &Program) -> Vec<bool> {
    let few_targets = |ins: &Instr| match *ins {
        Instr::Calli { n, .. } => calli_targets(program, n).count() <= MAX_CALLI_TARGETS,
        _ => true,
    };
    let mut closed: Vec<bool> = program
        .functions
        .iter()
        .map(|f| f.code.iter().all(|i| runs_natively(i) && few_targets(i)))
        .collect();
    drop_callers_outside(program, &mut closed);
    closed
}

/// The greatest fixpoint under the call graph: drops from `set` every
/// function that may call (see [`callees`]) a function outside it, until
/// nothing changes.
fn drop_callers_outside(program: &Program, set: &mut [bool]) {
    loop {
        let mut changed = false;
        for (i, f) in program.functions.iter().enumerate() {
            if set[i] && callees(program, f).any(|g| !set.get(g).copied().unwrap_or(false)) {
                set[i] = false;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// How a function can run natively (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Native {
    /// Only in the interpreter.
    No,
    /// Closed, and it or a function it calls writes memory (a store or
    /// `mgrow`).
    Closed,
    /// Closed, and neither it nor any function it calls writes memory:
    /// bailing functions may call it.
    Pure,
    /// Not closed but free of side effects: compiled whole, with bail points
    /// where it needs the interpreter.
    Bails,
    /// Neither closed nor bailing, but its own instructions all run
    /// natively: compiled whole, calling the interpreter for callees
    /// without native code (see the module docs).
    Open,
}

impl Native {
    /// Whether regions may call the function natively.
    pub fn callable(self) -> bool {
        self != Native::No
    }

    /// Whether a bailing function may call a function of this kind
    /// natively (otherwise the call is one of its bail points).
    pub fn callable_from_bailing(self) -> bool {
        matches!(self, Native::Pure | Native::Bails)
    }

    /// Whether an open function may call a function of this kind natively
    /// (a bailing one is then called again in the interpreter if it bails).
    pub fn callable_from_open(self) -> bool {
        self != Native::No
    }
}

/// The second word of a function's entry in the natives' table: its
/// parameters, and bit 32 set for a native function a bailing function may
/// not call ([`Native::callable_from_bailing`]), so that a bailing `calli`
/// comparing the whole word with its arity never matches it, while an open
/// one compares the low half.
pub(crate) fn table_params(kind: Native, params: u8) -> u64 {
    let marked = kind.callable() && !kind.callable_from_bailing();
    u64::from(params) | u64::from(marked) << 32
}

/// Per function: how it can run natively (see the module docs): closed
/// functions ([`closed_functions`]), split by whether any store is
/// reachable through their calls, and bailing functions: free of stores
/// and host calls, with a path from the entry to a `ret` that passes no
/// bail point. Both sets are greatest fixpoints over the call graph. The
/// other functions whose own instructions all run natively are open.
pub fn native_functions(program: &Program) -> Vec<Native> {
    let closed = closed_functions(program);
    // A store, an `mgrow` (it changes memory's length) or a host call.
    let effect_free = |f: &toyvm_vm::Function| {
        !f.code
            .iter()
            .any(|i| i.op().writes_memory() || matches!(i, Instr::Hcall { .. }))
    };
    // Closed and store-free through every call.
    let mut pure: Vec<bool> = program
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| closed[i] && effect_free(f))
        .collect();
    drop_callers_outside(program, &mut pure);
    let mut bails: Vec<bool> = program
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| !closed[i] && effect_free(f))
        .collect();
    // The candidates' graphs, built once for every round of the fixpoint.
    let cfgs: Vec<Option<Cfg>> = program
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| bails[i].then(|| Cfg::new(i as u32, f)))
        .collect();
    loop {
        let mut changed = false;
        for (i, f) in program.functions.iter().enumerate() {
            let Some(cfg) = cfgs[i].as_ref().filter(|_| bails[i]) else {
                continue;
            };
            let native_call = |g: usize| {
                pure.get(g).copied().unwrap_or(false) || bails.get(g).copied().unwrap_or(false)
            };
            if !returns_without_bailing(cfg, f, &native_call) {
                bails[i] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Open: the rest whose own instructions all run natively.
    let own = |f: &toyvm_vm::Function| f.code.iter().all(runs_natively);
    program
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| match (closed[i], pure[i], bails[i]) {
            (true, true, _) => Native::Pure,
            (true, false, _) => Native::Closed,
            (false, _, true) => Native::Bails,
            (false, _, false) if own(f) => Native::Open,
            (false, _, false) => Native::No,
        })
        .collect()
}

/// Whether instruction `i` of a bailing function is a bail point, given
/// which callees it may call natively. A `calli` is not: it calls natively
/// whatever function value names a pure or bailing function of its arity,
/// and bails only for other values.
pub(crate) fn is_bail_point(i: &Instr, native_call: &dyn Fn(usize) -> bool) -> bool {
    match *i {
        Instr::Call { f, .. } => !native_call(f as usize),
        Instr::Calli { .. } => false,
        _ => !runs_natively(i),
    }
}

/// Whether some path from `f`'s entry reaches a `ret` without passing a
/// bail point.
fn returns_without_bailing(
    cfg: &Cfg,
    f: &toyvm_vm::Function,
    native_call: &dyn Fn(usize) -> bool,
) -> bool {
    let blocks = cfg.blocks();
    if blocks.is_empty() {
        return false;
    }
    let clear = |b: usize| {
        (blocks[b].start..blocks[b].end).all(|pc| !is_bail_point(&f.code[pc as usize], native_call))
    };
    let mut seen = vec![false; blocks.len()];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if seen[b] || !clear(b) {
            continue;
        }
        seen[b] = true;
        if matches!(f.code[blocks[b].last() as usize], Instr::Ret { .. }) {
            return true;
        }
        stack.extend(cfg.succs(b).iter().copied());
    }
    false
}

/// Trap codes in [`NativeCtx::trap_kind`].
pub(crate) const TRAP_NONE: u64 = 0;
pub(crate) const TRAP_DIVISION_BY_ZERO: u64 = 1;
pub(crate) const TRAP_OUT_OF_BOUNDS: u64 = 2;
pub(crate) const TRAP_STACK_OVERFLOW: u64 = 3;
pub(crate) const TRAP_OUT_OF_FUEL: u64 = 4;
/// A host function an `hcall` called failed (or panicked): the details are
/// in the run's [`crate::HostCalls`].
pub(crate) const TRAP_HOST: u64 = 5;
/// A bailing function reached a bail point (see the module docs): not a
/// trap of the program; the caller hands its call to the interpreter.
pub(crate) const TRAP_BAIL: u64 = 6;
/// A closed function's `calli` found no function it may call in its value
/// (in `trap_addr`): a bad function value or an arity mismatch.
pub(crate) const TRAP_BAD_FUNCTION: u64 = 7;
/// The run ended inside a call compiled code made into the interpreter (a
/// trap there, `halt`, an output error): not a trap to report from here;
/// whoever lent the interpreter ends the run (see `jit::host`).
pub(crate) const TRAP_ENDED: u64 = 8;

/// A sized access of `bytes` bytes out of bounds (byte address in
/// `trap_addr`): `TRAP_BYTES_OUT_OF_BOUNDS + bytes`.
const TRAP_BYTES_OUT_OF_BOUNDS: u64 = 16;
/// A `trap` instruction: `TRAP_EXPLICIT + code`.
const TRAP_EXPLICIT: u64 = 32;

/// The trap code of a sized access of `bytes` bytes out of bounds.
pub(crate) fn trap_bytes_out_of_bounds(bytes: u8) -> u64 {
    TRAP_BYTES_OUT_OF_BOUNDS + bytes as u64
}

/// The trap code of a `trap` instruction of kind `code`.
pub(crate) fn trap_explicit(code: TrapCode) -> u64 {
    TRAP_EXPLICIT + code.code() as u64
}

/// The interpreter's register-stack limit, in words (`MAX_STACK_WORDS` in
/// `toyvm_vm::interp`).
pub(crate) const INTERP_STACK_WORDS: u64 = 1 << 24;

/// Whether no call chain within `max_depth` frames of functions with at
/// most `max_regs` registers can reach the interpreter's register-stack
/// limit: a call from depth `k < max_depth` puts the callee's window at
/// most `(k + 1) * max_regs` words up, and the interpreter traps only when
/// that plus one window passes the limit.
pub(crate) fn register_stack_unreachable(max_depth: usize, max_regs: u16) -> bool {
    (max_depth as u64)
        .saturating_mul(max_regs as u64)
        .saturating_add(256)
        <= INTERP_STACK_WORDS
}

/// What compiled code shares with its caller, passed by pointer to every
/// region and native function. Native code reads `mem`, `mem_cap`,
/// `mem_len` and `max_depth`, writes `mem_len` when it runs `mgrow`, and
/// writes the `trap_*` fields when it traps. (The call
/// depth itself travels as an argument: a register, not memory traffic.)
///
/// Only [`crate::CompiledRegion::run_with`] builds one (it is public only
/// because [`crate::RegionFn`] names it).
#[repr(C)]
#[derive(Debug)]
pub struct NativeCtx {
    pub(crate) mem: *mut i64,
    /// Memory's current length in bytes: the one compiled code reads after
    /// a call and writes at `mgrow`; the caller's when compiled code leaves.
    pub(crate) mem_len: u64,
    /// Memory's capacity in bytes.
    pub(crate) mem_cap: u64,
    pub(crate) max_depth: u64,
    /// `TRAP_NONE` or one of the `TRAP_*` codes.
    pub(crate) trap_kind: u64,
    pub(crate) trap_func: u64,
    pub(crate) trap_pc: u64,
    /// The word address of an out-of-bounds access.
    pub(crate) trap_addr: i64,
    /// Fuel left, in instructions, for code compiled with fuel metering
    /// (see [`crate::CodeCache::set_fuel_metering`]); below zero after
    /// a block that ran past the limit.
    pub(crate) fuel: i64,
    /// The run's [`crate::HostCalls`] (type-erased), which a region's
    /// `hcall` trampoline calls into.
    pub(crate) host: *mut (),
    /// Per function `[address, parameters]`: where a bailing function's
    /// `calli` finds its callee's native code (address 0: none it may
    /// call; the call bails), `table_len` entries.
    pub(crate) table: *const [u64; 2],
    pub(crate) table_len: u64,
    /// The [`Memory`](toyvm_vm::interp::Memory) that `mem` points into,
    /// which a call into the interpreter hands on (compiled code never
    /// reads this field): its length is synchronized with `mem_len` around
    /// the call.
    pub(crate) memory: *mut toyvm_vm::interp::Memory,
    /// The lowest stack pointer at which native code may still call a
    /// native function (0: no check, the caller vouches for the stack):
    /// below it a native call goes to the interpreter instead (see
    /// `crate::jit::stack`).
    pub(crate) stack_limit: u64,
}

/// Field offsets for the code generator.
pub(crate) mod ctx_offset {
    use super::NativeCtx;
    use std::mem::offset_of;

    pub const MEM: i32 = offset_of!(NativeCtx, mem) as i32;
    pub const MEM_LEN: i32 = offset_of!(NativeCtx, mem_len) as i32;
    pub const MEM_CAP: i32 = offset_of!(NativeCtx, mem_cap) as i32;
    pub const MAX_DEPTH: i32 = offset_of!(NativeCtx, max_depth) as i32;
    pub const TRAP_KIND: i32 = offset_of!(NativeCtx, trap_kind) as i32;
    pub const TRAP_FUNC: i32 = offset_of!(NativeCtx, trap_func) as i32;
    pub const TRAP_PC: i32 = offset_of!(NativeCtx, trap_pc) as i32;
    pub const TRAP_ADDR: i32 = offset_of!(NativeCtx, trap_addr) as i32;
    pub const FUEL: i32 = offset_of!(NativeCtx, fuel) as i32;
    pub const TABLE: i32 = offset_of!(NativeCtx, table) as i32;
    pub const TABLE_LEN: i32 = offset_of!(NativeCtx, table_len) as i32;
    pub const STACK_LIMIT: i32 = offset_of!(NativeCtx, stack_limit) as i32;
}

/// A trap inside native code, with everything the runtime needs to build
/// the interpreter's identical `toyvm_vm::interp::Trap`: the kind (for
/// `OutOfBounds` with the address and memory size, for `StackOverflow` with
/// the depth limit), and the function and instruction offset where it
/// happened (for a call too deep: the `call` instruction, in the caller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeTrap {
    /// Why the native code stopped: `DivisionByZero`, `OutOfBounds`,
    /// `BytesOutOfBounds`, `Trap` (a `trap` instruction),
    /// `StackOverflow` (with the depth limit), `OutOfFuel`, `Host` (a
    /// region's host call failed), or `BadFunctionValue` (a closed
    /// function's `calli` found no callee in its value; see
    /// [`to_trap`](Self::to_trap)).
    pub kind: TrapKind,
    /// The index of the function holding the trapping instruction.
    pub func: u32,
    /// The trapping instruction's offset in that function.
    pub pc: u32,
}

impl NativeTrap {
    /// The interpreter's trap: the same kind, pc and function name. A
    /// closed function's `calli` reports its value as `BadFunctionValue`
    /// whatever it names; as the interpreter does, a value that names a
    /// function (which then has another arity: those of the call's arity
    /// are all compared against) is an `ArityMismatch`.
    pub fn to_trap(&self, program: &Program) -> toyvm_vm::interp::Trap {
        let kind = match self.kind {
            TrapKind::BadFunctionValue(v) => {
                let callee = usize::try_from(v)
                    .ok()
                    .and_then(|i| program.functions.get(i));
                let given = program
                    .functions
                    .get(self.func as usize)
                    .and_then(|f| f.code.get(self.pc as usize))
                    .and_then(|i| match *i {
                        Instr::Calli { n, .. } => Some(n),
                        _ => None,
                    });
                match (callee, given) {
                    (Some(c), Some(given)) => TrapKind::ArityMismatch {
                        callee: c.name.clone(),
                        expected: c.params,
                        given,
                    },
                    _ => self.kind.clone(),
                }
            }
            _ => self.kind.clone(),
        };
        toyvm_vm::interp::Trap {
            kind,
            pc: toyvm_vm::Pc::new(self.func, self.pc),
            function: program
                .functions
                .get(self.func as usize)
                .map(|f| f.name.clone())
                .unwrap_or_default(),
        }
    }
}

impl NativeCtx {
    /// The trap recorded in the context, if any.
    pub(crate) fn trap(
        &self,
        max_depth: usize,
        fuel_limit: u64,
        host: &mut crate::HostCalls<'_>,
    ) -> Option<NativeTrap> {
        let kind = match self.trap_kind {
            TRAP_NONE | TRAP_ENDED => return None,
            TRAP_DIVISION_BY_ZERO => TrapKind::DivisionByZero,
            TRAP_OUT_OF_BOUNDS => TrapKind::OutOfBounds {
                addr: self.trap_addr,
                size: self.mem_len / 8,
            },
            k @ 17..=24 => TrapKind::BytesOutOfBounds {
                addr: self.trap_addr,
                bytes: (k - TRAP_BYTES_OUT_OF_BOUNDS) as u8,
                len: self.mem_len,
            },
            k if k >= TRAP_EXPLICIT
                && let Some(code) = i32::try_from(k - TRAP_EXPLICIT)
                    .ok()
                    .and_then(TrapCode::from_code) =>
            {
                TrapKind::Trap(code)
            }
            TRAP_STACK_OVERFLOW => TrapKind::StackOverflow { depth: max_depth },
            TRAP_OUT_OF_FUEL => TrapKind::OutOfFuel { limit: fuel_limit },
            TRAP_HOST => host.take_trap(),
            TRAP_BAD_FUNCTION => TrapKind::BadFunctionValue(self.trap_addr),
            k => unreachable!("native code writes only known trap codes, not {k}"),
        };
        Some(NativeTrap {
            kind,
            func: self.trap_func as u32,
            pc: self.trap_pc as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toyvm_vm::asm::assemble;

    #[test]
    fn closedness_is_a_fixpoint_over_the_call_graph() {
        let p = assemble(
            "
            .func even(n)           # 0: mutual recursion, closed
                beqi n, 0, yes
                subi n, n, 1
                call n, odd, n, 1
                ret n
            yes:
                li n, 1
                ret n
            .end
            .func odd(n)            # 1
                beqi n, 0, no
                subi n, n, 1
                call n, even, n, 1
                ret n
            no:
                li n, 0
                ret n
            .end
            .func show(n)           # 2: output
                putn n
                ret n
            .end
            .func uses_show(n)      # 3: calls a function that is not closed
                call n, show, n, 1
                ret n
            .end
            .func indirect(n)       # 4: calli
                fref r1, even
                calli n, r1, n, 1
                ret n
            .end
            .func main(n)           # 5
                call n, uses_show, n, 1
                ret n
            .end",
        )
        .unwrap();
        assert_eq!(
            closed_functions(&p),
            [true, true, false, false, false, false]
        );
    }
}

//! Lowering a [`Region`] to Cranelift IR. No unsafe here: this builds and
//! checks IR; [`crate::jit`] turns it into machine code and runs it.
//!
//! The compiled function's ABI (see [`crate::jit::RegionFn`]):
//!
//! ```text
//! extern "C" fn(regs: *mut i64, mem: *mut i64, mem_len: u64, counters: *mut u64,
//!                ctx: *mut NativeCtx, depth: u64) -> u64
//! ```
//!
//! - Straight-line instructions (moves, constants, arithmetic, loads,
//!   stores, `msize`, `mgrow`) and `loop`'s counter are lowered by `lower`,
//!   shared with the native
//!   functions' code generator ([`func`]); this module says what differs
//!   for regions (the `Emit` implementation: constants tracked, a failed
//!   check an `Interpret` exit).
//! - Every register the region touches is loaded from `regs` into a
//!   Cranelift variable at entry; every exit stores back each register the
//!   region writes anywhere (a static superset of what the path wrote, whose
//!   variables hold the entry value where the path did not write them).
//!   Except the cold ones: a register named only by blocks that together
//!   run under 1/[`COLD`] as often as the head (an outer loop's path
//!   through a tree grown out of its inner loop; not the arms of a
//!   dispatch loop's switch, each rare but together as hot as the head,
//!   which C interpreters' loops are) stays in `regs`, read and written
//!   there where a step names it, so the loop does not carry it (as a
//!   block parameter the register allocator keeps in a register or spills,
//!   and spilled the memory's base and length instead: matmul's inner loop
//!   reloaded both from the stack at every access) and no exit stores it.
//! - Each exit returns [`Exit::encode`] and first increments its counter:
//!   exit site `i` (in [`Lowered::exits`] order) owns `counters[i]`. The
//!   counting and the return are one tail shared by every exit (see
//!   `exits`): an exit's own block only writes its registers back.
//! - Memory's current length (`mem_len`, in bytes) is a variable: the
//!   argument at entry, redefined by `mgrow` (which also stores it to
//!   `ctx`) and reloaded from `ctx` after every native call, whose callee
//!   may have grown memory. Host functions cannot change it. So every
//!   bounds check is against the length current where it runs, and the
//!   caller finds the final length in `ctx` (see `lower`).
//! - Instructions that could trap (division by a register, loads, stores) are
//!   preceded by a check that leaves with an `Interpret` exit at their pc,
//!   registers written back: the interpreter re-executes the instruction and
//!   traps exactly as it would have. `i64::MIN / -1` wraps as the
//!   interpreter's, and never reaches a machine `idiv` that would fault.
//! - A known-constant lattice over registers (constants, guarded values,
//!   and their folds through [`BinOp::eval`], the semantics the interpreter
//!   uses) removes checks, folds branches and jump tables, and hands
//!   Cranelift constant divisors it strength-reduces.
//! - With fuel metering (`CodeCache::set_fuel_metering`), a fuel variable
//!   is loaded from `ctx` at entry. Each [`Step::Block`] first leaves with
//!   an `Interpret` exit at its offset when no fuel is left (the
//!   interpreter then traps there, out of fuel), then charges the original
//!   block's whole length; an exit before the block's end gives back the
//!   instructions it did not run (an `Interpret` exit at `pc` or a guard
//!   resuming at `pc`: `end - pc`). Every exit stores what is left to
//!   `ctx`, and native calls hand it over and take it back. So the count is
//!   exact, and a run stops at most one basic block past the limit.
//! - A [`Step::Call`] calls the callee's native function (see [`func`]) with
//!   `depth` (the interpreter's frame count for the region's frame) after
//!   the interpreter's depth check; a trap there or inside leaves through a
//!   `Trap` exit, the trap's details left in `ctx`. A
//!   [`Step::Interpreted`] call, a dispatch's miss and a native callee's
//!   bail call the interpreter through a trampoline (see `calls`).
//! - Before Cranelift compiles a lowered region or native function,
//!   [`strength`] carries each product of an induction variable around its
//!   loop as a sum (`i * x` where a back edge steps `i` by a constant and
//!   keeps `x`): exact in the VM's wrapping arithmetic.

use std::collections::HashMap;
use std::fmt::Write as _;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    self, AbiParam, Block, InstBuilder, MemFlagsData, Signature, SourceLoc, Value, types,
};
use cranelift_codegen::isa::TargetIsa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use toyvm_vm::Pc;
use toyvm_vm::dataflow::RegSet;
use toyvm_vm::isa::{Instr, Reg};
use toyvm_vm::semantics::{self, Rhs, as_branch};

use crate::exit::{ExitKind, ExitReport, ExitSite};
use crate::native::ctx_offset;
use crate::region::{Region, Step, Target};
use crate::{Error, Result};

/// Stores `args` in a stack slot of the function being built (8 bytes
/// each, at least one slot) and returns its address: the argument array a
/// trampoline (host call, interpreter call) reads.
fn args_on_stack(b: &mut FunctionBuilder<'_>, ptr: ir::Type, args: &[Value]) -> Value {
    let slot = b.create_sized_stack_slot(ir::StackSlotData::new(
        ir::StackSlotKind::ExplicitSlot,
        8 * args.len().max(1) as u32,
        3,
    ));
    for (i, &v) in args.iter().enumerate() {
        b.ins().stack_store(ptr, v, slot, 8 * i as i32);
    }
    b.ins().stack_addr(ptr, slot, 0)
}

mod calls;
mod exits;
pub(crate) mod func;
mod lower;
pub(crate) mod strength;
mod table;

use calls::call_operands;
use func::DeclareCallee;

/// The addresses of the runtime's entry points that compiled code calls,
/// given by the JIT (which owns them: `crate::jit::host`), so that the code
/// generator stands below the JIT and needs nothing of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Trampolines {
    /// `hcall`'s trampoline ([`host_signature`]).
    pub hcall: i64,
    /// A call into the interpreter ([`calls::interp_signature`]).
    pub interp: i64,
    /// A native function's call at the stack limit (the same signature).
    pub limit: i64,
}

/// A region lowered to (unoptimized, verified) Cranelift IR.
#[derive(Debug)]
pub(crate) struct Lowered {
    pub func: ir::Function,
    /// The exit sites, in counter order.
    pub exits: Vec<ExitSite>,
}

/// The compiled region's signature.
pub(crate) fn signature(isa: &dyn TargetIsa) -> Signature {
    let ptr = isa.pointer_type();
    let mut sig = Signature::new(isa.default_call_conv());
    sig.params.push(AbiParam::new(ptr)); // regs
    sig.params.push(AbiParam::new(ptr)); // mem
    sig.params.push(AbiParam::new(types::I64)); // mem_len
    sig.params.push(AbiParam::new(ptr)); // counters
    sig.params.push(AbiParam::new(ptr)); // ctx
    sig.params.push(AbiParam::new(types::I64)); // depth
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// The `hcall` trampoline's signature (the JIT's `host` module):
/// `(ctx, import, args, n, func << 32 | pc) -> i64`.
fn host_signature(isa: &dyn TargetIsa) -> Signature {
    let ptr = isa.pointer_type();
    let mut sig = Signature::new(isa.default_call_conv());
    sig.params.push(AbiParam::new(ptr)); // ctx
    sig.params.push(AbiParam::new(types::I64)); // import index
    sig.params.push(AbiParam::new(ptr)); // args
    sig.params.push(AbiParam::new(types::I64)); // n
    sig.params.push(AbiParam::new(types::I64)); // site
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// Lowers `region` and runs the Cranelift verifier on the result.
/// `declare` gives the callees of native calls their `FuncRef`s. With
/// `live` (the registers live before each instruction of the region's
/// function, [`toyvm_vm::dataflow::live_in`]), an exit that hands control
/// to the interpreter stores back only the written registers live where it
/// resumes; without it, every written register.
pub(crate) fn lower(
    region: &Region,
    isa: &dyn TargetIsa,
    fctx: &mut FunctionBuilderContext,
    declare: &mut DeclareCallee<'_>,
    metering: bool,
    live: Option<&[RegSet]>,
    tramps: Trampolines,
) -> Result<Lowered> {
    let mut func = ir::Function::with_name_signature(ir::UserFuncName::default(), signature(isa));
    let mut refs = HashMap::new();
    for (callee, _) in region.native_calls() {
        refs.entry(callee)
            .or_insert_with(|| declare(callee, &mut func));
    }
    let calls_host = region.steps.iter().any(|s| {
        matches!(
            s,
            Step::Op {
                instr: Instr::Hcall { .. },
                ..
            }
        )
    });
    let host_sig = calls_host.then(|| func.import_signature(host_signature(isa)));
    let interp_sig = region
        .calls_interpreter()
        .then(|| func.import_signature(calls::interp_signature(isa)));
    // A `calli` that may call the interpreter first looks its value up in
    // the natives' table (see `Lower::call_value`): the signatures of
    // those calls, by arity.
    let mut table_sigs = HashMap::new();
    for s in &region.steps {
        if let Step::Dispatch {
            instr: Instr::Calli { n, .. },
            ..
        }
        | Step::Interpreted {
            instr: Instr::Calli { n, .. },
            ..
        } = s
        {
            table_sigs
                .entry(*n)
                .or_insert_with(|| func.import_signature(func::native_signature(isa, *n)));
        }
    }
    let exits = {
        let b = FunctionBuilder::new(&mut func, fctx);
        let mut l = Lower::new(region, b, isa.pointer_type(), refs, metering, tramps);
        l.host_sig = host_sig;
        l.interp_sig = interp_sig;
        l.table_sigs = table_sigs;
        l.live = live;
        if let Err(e) = l.region() {
            // The builder context holds the half-built function's state.
            drop(l);
            *fctx = FunctionBuilderContext::new();
            return Err(e);
        }
        let exits = std::mem::take(&mut l.exits);
        l.b.finalize(isa.frontend_config());
        exits
    };
    if let Err(errors) = cranelift_codegen::verify_function(&func, isa) {
        return Err(Error::Codegen {
            head: region.head_pc().to_string(),
            msg: cranelift_codegen::print_errors::pretty_verifier_error(&func, None, errors),
        });
    }
    Ok(Lowered { func, exits })
}

/// The IR text of a lowered region with each group of instructions preceded
/// by a `;` comment naming the region step (and so the bytecode pc) it
/// implements, for `--dump-clif`.
pub(crate) fn annotate(l: &Lowered, region: &Region) -> String {
    let text = l.func.display().to_string();
    let f = region.func;
    let describe = |loc: u32| -> String {
        let i = loc as usize;
        match region.steps.get(i.wrapping_sub(1)) {
            Some(Step::Guard { reg, value, resume }) => {
                format!(
                    "guard r{reg} == {value}, else resume at {}",
                    Pc::new(f, *resume)
                )
            }
            Some(Step::Goto(t)) => format!("goto {t}"),
            Some(s) => format!("f{f}:{s}"),
            None => match l.exits.get(i.wrapping_sub(region.steps.len() + 1)) {
                Some(e) => format!("exit #{} ({})", i - region.steps.len() - 1, exit_text(f, e)),
                None if i == region.steps.len() + 1 + l.exits.len() => {
                    "every exit: its counter, the arrivals, its code returned".into()
                }
                None => "entry: load registers".into(),
            },
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "; region {} ({} steps)",
        region.head_pc(),
        region.steps.len()
    );
    for (i, e) in l.exits.iter().enumerate() {
        let _ = writeln!(out, "; counters[{i}]: {}", exit_text(f, e));
    }
    let mut last = None;
    for line in text.lines() {
        let loc = line
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_prefix('@'))
            .and_then(|h| u32::from_str_radix(h, 16).ok());
        if loc.is_some() && loc != last {
            let _ = writeln!(
                out,
                "                                ; {}",
                describe(loc.unwrap_or(0))
            );
        }
        if line.ends_with(':') || line.starts_with("block") {
            last = None;
        } else if loc.is_some() {
            last = loc;
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

fn exit_text(f: u32, e: &ExitSite) -> String {
    format!("{} exit to {}", e.kind.name(), Pc::new(f, e.resume))
}

/// Source locations: step `i` is `i + 1`; exit site `k` is
/// `steps + 1 + k`, and the exits' shared tail `steps + 1 + exits`; 0
/// (the default) is the entry's register loads.
fn loc(n: usize) -> SourceLoc {
    SourceLoc::new(n as u32)
}

/// Registers named only by blocks whose weights (those the region was
/// planned with) sum to under 1/`COLD` of the head's stay in memory (see
/// the module docs).
const COLD: u64 = 8;

struct Lower<'r, 'b> {
    region: &'r Region,
    b: FunctionBuilder<'b>,
    vars: Vec<Option<Variable>>,
    /// Registers kept in `regs` rather than in variables (see [`COLD`]).
    cold: [bool; 256],
    /// Bounds proved on every path to the current point: kept across
    /// straight-line steps, guards and a branch's fall-through, which the
    /// proving check dominates; cleared at a join (the head, an arm) and
    /// at a call (which redefines the length).
    checked: lower::Proved,
    /// Registers whose value is a known constant at the current point.
    /// Invariant: a fact here holds on every path that reaches the current
    /// point, so it is only carried into a block that the block it was
    /// learnt in dominates (see [`Lower::enter`]).
    known: [Option<i64>; 256],
    /// The facts that hold at the loop head on every path into it: the
    /// entry guards' constants in registers the region never writes. Set
    /// when the head is entered; every arm of the tree starts from these.
    at_head: Option<[Option<i64>; 256]>,
    /// Registers the region writes somewhere: stored back at every exit
    /// (where live, with `live`).
    written: [bool; 256],
    /// Registers live before each instruction of the region's function,
    /// when known: exits to the interpreter store back only those.
    live: Option<&'r [RegSet]>,
    exits: Vec<ExitSite>,
    /// Exit blocks, filled once every path into them exists.
    pending: Vec<(Block, usize)>,
    /// Where native calls unwind to: `(block, trap exit, interpret exit)`,
    /// filled before the exits (see `Lower::unwound`).
    unwinds: Vec<(Block, Block, Block)>,
    head: Block,
    /// The blocks [`Target::Block`]s go to, by bytecode offset.
    labels: HashMap<u32, Block>,
    regs: Value,
    mem: Value,
    /// Memory's current length in bytes (see the module docs).
    mem_len: Variable,
    counters: Value,
    ctx: Value,
    depth: Value,
    /// Native callees' references in this function.
    refs: HashMap<u32, ir::FuncRef>,
    /// The current block already has its terminator.
    done: bool,
    /// What exits of the step being lowered report (see [`ExitReport`]).
    report: Option<ExitReport>,
    /// Fuel left, with metering on (see the module docs).
    fuel: Option<Variable>,
    /// Arrivals at the head in this run (entry and loop trips), added to
    /// the last counter at every exit.
    arrivals: Variable,
    /// The original block being lowered, `(offset, end)`, once charged.
    charged: Option<(u32, u32)>,
    /// Per exit site: instructions it gives back to fuel.
    refunds: Vec<u32>,
    /// The `hcall` trampoline's signature, when the region has `hcall`s.
    host_sig: Option<ir::SigRef>,
    /// The interpreter trampoline's signature, when the region may call
    /// the interpreter.
    interp_sig: Option<ir::SigRef>,
    /// Where the calls to the runtime go.
    tramps: Trampolines,
    /// Native functions' signatures by arity, for the `calli`s that look
    /// their value up in the natives' table.
    table_sigs: HashMap<u8, ir::SigRef>,
}

/// Regions track known constants; a failed check leaves with an
/// `Interpret` exit at the instruction, whose re-execution traps.
impl<'b> lower::Emit<'b> for Lower<'_, 'b> {
    fn builder(&mut self) -> &mut FunctionBuilder<'b> {
        &mut self.b
    }
    fn get(&mut self, r: Reg) -> Value {
        Lower::get(self, r)
    }
    fn known(&self, r: Reg) -> Option<i64> {
        self.known[r as usize]
    }
    fn set(&mut self, r: Reg, v: Value, k: Option<i64>) {
        Lower::set(self, r, v, k)
    }
    fn memory(&mut self) -> (Value, Value) {
        (self.mem, self.b.use_var(self.mem_len))
    }
    fn capacity(&mut self) -> Value {
        let ro = MemFlagsData::trusted().with_readonly();
        let ctx = self.ctx;
        self.b.ins().load(types::I64, ro, ctx, ctx_offset::MEM_CAP)
    }
    fn set_memory_len(&mut self, len: Value) {
        self.checked.clear();
        self.b.def_var(self.mem_len, len);
        let ctx = self.ctx;
        let flags = MemFlagsData::trusted();
        self.b.ins().store(flags, len, ctx, ctx_offset::MEM_LEN);
    }
    fn check(&mut self, ok: Value, pc: u32, _: lower::Fault) {
        Lower::check(self, ok, ExitKind::Interpret, pc)
    }
    fn proved(&mut self) -> Option<&mut lower::Proved> {
        Some(&mut self.checked)
    }
    fn fail(&mut self, pc: u32, _: lower::Fault) {
        self.leave(ExitKind::Interpret, pc)
    }
}

impl<'r, 'b> Lower<'r, 'b> {
    fn new(
        region: &'r Region,
        mut b: FunctionBuilder<'b>,
        ptr: ir::Type,
        refs: HashMap<u32, ir::FuncRef>,
        metering: bool,
        tramps: Trampolines,
    ) -> Self {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        debug_assert_eq!(ptr, b.func.dfg.value_type(p[0]));
        let head = b.create_block();
        let fuel = metering.then(|| {
            let v = b.declare_var(types::I64);
            let left = b
                .ins()
                .load(types::I64, MemFlagsData::trusted(), p[4], ctx_offset::FUEL);
            b.def_var(v, left);
            v
        });
        let arrivals = b.declare_var(types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.def_var(arrivals, zero);
        let mem_len = b.declare_var(types::I64);
        b.def_var(mem_len, p[2]);
        Lower {
            region,
            b,
            vars: vec![None; 256],
            cold: [false; 256],
            checked: lower::Proved::default(),
            known: [None; 256],
            at_head: None,
            written: [false; 256],
            live: None,
            exits: Vec::new(),
            pending: Vec::new(),
            unwinds: Vec::new(),
            head,
            labels: HashMap::new(),
            regs: p[0],
            mem: p[1],
            mem_len,
            counters: p[3],
            ctx: p[4],
            depth: p[5],
            refs,
            done: false,
            report: None,
            fuel,
            arrivals,
            charged: None,
            refunds: Vec::new(),
            host_sig: None,
            interp_sig: None,
            tramps,
            table_sigs: HashMap::new(),
        }
    }

    fn invalid(&self, msg: String) -> Error {
        Error::InvalidRegion {
            head: self.region.head_pc().to_string(),
            msg,
        }
    }

    fn region(&mut self) -> Result<()> {
        let region = self.region;
        let steps = &region.steps;
        let mut used = [false; 256];
        // Per register, the summed weight of the blocks naming it (see
        // `COLD`); the steps before the head (entry guards) run once per
        // entry and weigh nothing.
        let mut named = [0u64; 256];
        let mut named_in = [usize::MAX; 256];
        let head_weight = steps
            .iter()
            .find_map(|s| match s {
                Step::Block { weight, .. } => Some(*weight),
                _ => None,
            })
            .unwrap_or(u64::MAX);
        let mut block = (usize::MAX, 0u64);
        for (i, s) in steps.iter().enumerate() {
            if let Step::Block { weight, .. } = s {
                block = (i, *weight);
            }
            let regs: Vec<Reg> = match s {
                Step::Op {
                    instr: Instr::Hcall { d, a, n, .. },
                    ..
                } => {
                    self.written[*d as usize] = true;
                    let mut regs: Vec<Reg> = (0..*n).map(|i| a.wrapping_add(i)).collect();
                    regs.push(*d);
                    regs
                }
                Step::Op { instr, .. } | Step::Branch { instr, .. } => {
                    if let Some(d) = instr.dest() {
                        self.written[d as usize] = true;
                    }
                    instr
                        .operands()
                        .iter()
                        .filter_map(|o| match o {
                            toyvm_vm::isa::Operand::Reg(r) => Some(*r),
                            _ => None,
                        })
                        .collect()
                }
                Step::Switch { a, .. } => vec![*a],
                Step::Guard { reg, .. } => vec![*reg],
                Step::Call { instr, .. }
                | Step::Dispatch { instr, .. }
                | Step::Interpreted { instr, .. } => {
                    let (d, f, a, n) = call_operands(instr);
                    self.written[d as usize] = true;
                    let mut regs: Vec<Reg> = (0..n).map(|i| a.wrapping_add(i)).collect();
                    regs.push(d);
                    regs.extend(f);
                    regs
                }
                _ => vec![],
            };
            for r in regs {
                let r = r as usize;
                used[r] = true;
                if named_in[r] != block.0 {
                    named_in[r] = block.0;
                    named[r] = named[r].saturating_add(block.1);
                }
            }
        }
        for r in 0..256 {
            self.cold[r] = used[r] && named[r].saturating_mul(COLD) < head_weight;
        }
        for (r, _) in used
            .iter()
            .enumerate()
            .filter(|&(r, u)| *u && !self.cold[r])
        {
            let v = self.b.declare_var(types::I64);
            let flags = MemFlagsData::trusted();
            let x = self
                .b
                .ins()
                .load(types::I64, flags, self.regs, 8 * r as i32);
            self.b.def_var(v, x);
            self.vars[r] = Some(v);
        }
        let head_at = steps
            .iter()
            .position(|s| matches!(s, Step::Block { .. }))
            .unwrap_or(0);
        let labels = region.labels().map_err(|m| self.invalid(m))?;
        let mut arm_at = HashMap::new();
        for (offset, at) in labels {
            let blk = self.b.create_block();
            self.labels.insert(offset, blk);
            arm_at.insert(at, blk);
        }
        for (i, s) in steps.iter().enumerate() {
            if i == head_at {
                self.enter(self.head);
            } else if let Some(&blk) = arm_at.get(&i) {
                self.enter(blk);
            }
            if self.done {
                // Unreachable steps after a terminator (e.g. a folded
                // branch): emit them into a block nothing jumps to.
                let dead = self.b.create_block();
                self.b.switch_to_block(dead);
                self.checked.clear();
                self.done = false;
            }
            self.b.set_srcloc(loc(i + 1));
            self.report = match s {
                Step::Branch { pc, .. } | Step::Switch { pc, .. } => {
                    Some(ExitReport::Edge { branch: *pc })
                }
                Step::Guard { .. } => region.guard_report(i),
                _ => None,
            };
            self.step(s)?;
        }
        if steps.is_empty() {
            self.enter(self.head);
        }
        if !self.done {
            return Err(self.invalid(
                "the last step falls through: a region must end in a goto, an exit or a branch away"
                    .into(),
            ));
        }
        self.fill_exits();
        self.b.seal_all_blocks();
        Ok(())
    }

    /// Starts the loop head or an arm of a trace tree, blocks that more than
    /// one path reaches. Steps are lowered in list order, which is not
    /// dominance order: an arm is lowered after the path before it in the
    /// list, but that path does not run before the arm (a guard on one arm
    /// proves nothing on another). So the facts at a join are only those
    /// that hold on every path into it: at the head, what the entry guards
    /// (which run once, before it) proved of registers the region never
    /// writes; at an arm, which only paths from the head reach, the same.
    fn enter(&mut self, blk: Block) {
        if !self.done {
            self.b.ins().jump(blk, &[]);
        }
        self.checked.clear();
        self.b.switch_to_block(blk);
        self.done = false;
        if blk == self.head {
            let n = self.b.use_var(self.arrivals);
            let n = self.b.ins().iadd_imm_s(n, 1);
            self.b.def_var(self.arrivals, n);
        }
        let facts = match self.at_head {
            Some(facts) => facts,
            None if blk == self.head => {
                let mut facts = self.known;
                for (k, w) in facts.iter_mut().zip(self.written) {
                    if w {
                        *k = None;
                    }
                }
                self.at_head = Some(facts);
                facts
            }
            // An arm lowered before the head: nothing is known there.
            None => [None; 256],
        };
        self.known = facts;
    }

    fn var(&self, r: Reg) -> Variable {
        self.vars[r as usize].expect("every register a step names was declared")
    }

    fn get(&mut self, r: Reg) -> Value {
        if self.cold[r as usize] {
            let flags = MemFlagsData::trusted();
            return self
                .b
                .ins()
                .load(types::I64, flags, self.regs, 8 * r as i32);
        }
        let v = self.var(r);
        self.b.use_var(v)
    }

    fn set(&mut self, r: Reg, v: Value, known: Option<i64>) {
        self.checked.forget(r);
        if self.cold[r as usize] {
            let flags = MemFlagsData::trusted();
            self.b.ins().store(flags, v, self.regs, 8 * r as i32);
        } else {
            let var = self.var(r);
            self.b.def_var(var, v);
        }
        self.known[r as usize] = known;
    }

    fn set_const(&mut self, r: Reg, k: i64) {
        let v = self.b.ins().iconst(types::I64, k);
        self.set(r, v, Some(k));
    }

    fn rhs(&mut self, rhs: Rhs) -> (Value, Option<i64>) {
        match rhs {
            Rhs::Imm(k) => (self.b.ins().iconst(types::I64, k), Some(k)),
            Rhs::Reg(r) => (self.get(r), self.known[r as usize]),
        }
    }

    /// The block a branch direction goes to; `next` is created on demand.
    fn target(&mut self, t: Target, next: &mut Option<Block>) -> Block {
        match t {
            Target::Next => *next.get_or_insert_with(|| self.b.create_block()),
            Target::Head => self.head,
            Target::Block(to) => self.labels[&to],
            Target::Exit(to) => self.exit(ExitKind::Side, to),
        }
    }

    fn goto(&mut self, t: Target) {
        match t {
            Target::Next => {}
            Target::Head | Target::Block(_) => {
                let mut next = None;
                let blk = self.target(t, &mut next);
                self.b.ins().jump(blk, &[]);
                self.done = true;
            }
            Target::Exit(to) => self.leave(ExitKind::Side, to),
        }
    }

    /// After a multi-way branch: continue in `next` if the trace goes on.
    fn continue_in(&mut self, next: Option<Block>) {
        match next {
            Some(blk) => self.b.switch_to_block(blk),
            None => self.done = true,
        }
    }

    fn step(&mut self, s: &Step) -> Result<()> {
        // Calls (and host calls) reload the memory length.
        if matches!(
            s,
            Step::Call { .. }
                | Step::Dispatch { .. }
                | Step::Interpreted { .. }
                | Step::Op {
                    instr: Instr::Hcall { .. },
                    ..
                }
        ) {
            self.checked.clear();
        }
        match s {
            Step::Block { offset, end, .. } => self.charge(*offset, *end)?,
            Step::Op { pc, instr } => self.op(*pc, instr)?,
            Step::Branch {
                pc,
                instr,
                taken,
                fall,
            } => self.branch(*pc, instr, *taken, *fall)?,
            Step::Switch {
                a, cases, default, ..
            } => self.switch(*a, cases, *default),
            Step::Guard { reg, value, resume } => self.guard(*reg, *value, *resume),
            Step::Goto(t) => self.goto(*t),
            Step::Interpret { pc, .. } => self.leave(ExitKind::Interpret, *pc),
            Step::Call { pc, instr, callee } => self.call(*pc, instr, *callee)?,
            Step::Dispatch { pc, instr, callees } => self.dispatch(*pc, instr, callees)?,
            Step::Interpreted { pc, instr } => self.interpreted(*pc, instr)?,
        }
        Ok(())
    }

    /// With metering: leave at `offset` when no fuel is left, else charge
    /// the original block `[offset, end)`.
    fn charge(&mut self, offset: u32, end: u32) -> Result<()> {
        let Some(fuel) = self.fuel else {
            return Ok(());
        };
        if end <= offset {
            return Err(self.invalid(format!(
                "block {offset} has no known end: fuel cannot be metered"
            )));
        }
        // The check's exit runs nothing of this block: nothing to give back.
        self.charged = None;
        let left = self.b.use_var(fuel);
        let some = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, left, 0);
        self.check(some, ExitKind::Interpret, offset);
        let left = self.b.use_var(fuel);
        let left = self.b.ins().iadd_imm_s(left, -((end - offset) as i64));
        self.b.def_var(fuel, left);
        self.charged = Some((offset, end));
        Ok(())
    }

    fn guard(&mut self, reg: Reg, value: i64, resume: u32) {
        match self.known[reg as usize] {
            Some(k) if k == value => {}
            Some(_) => self.leave(ExitKind::Guard, resume),
            None => {
                let x = self.get(reg);
                let ok = self.b.ins().icmp_imm_s(IntCC::Equal, x, value);
                self.check(ok, ExitKind::Guard, resume);
                // From here on the register is the constant: what depends
                // on it folds.
                self.set_const(reg, value);
            }
        }
    }

    fn op(&mut self, pc: u32, instr: &Instr) -> Result<()> {
        if lower::straight(self, pc, instr) {
            return Ok(());
        }
        match *instr {
            Instr::Hcall { d, h, a, n } => self.host_call(pc, d, h, a, n),
            _ => {
                return Err(self.invalid(format!(
                    "`{}` at {pc} cannot be compiled in place",
                    crate::region::InstrText(instr)
                )));
            }
        }
        Ok(())
    }

    /// `d = H(a, .., a+n-1)` through the host trampoline. With metering, the
    /// call runs only if the interpreter would have run it: the block was
    /// charged whole at its start, so the fuel left plus what the block has
    /// still to run from `pc` (`end - pc`) must be above zero; otherwise an
    /// `Interpret` exit at `pc` (the interpreter then traps out of fuel
    /// before the host sees the call). A failed call leaves through a
    /// `Trap` exit, `d` unwritten, the trap's details in `ctx`.
    fn host_call(&mut self, pc: u32, d: Reg, h: u16, a: Reg, n: u8) {
        let sig = self
            .host_sig
            .expect("`lower` imports the trampoline's signature for regions with `hcall`s");
        if let (Some(fuel), Some((_, end))) = (self.fuel, self.charged) {
            let left = self.b.use_var(fuel);
            let ok = self.b.ins().icmp_imm_s(
                IntCC::SignedGreaterThan,
                left,
                -(end.saturating_sub(pc) as i64),
            );
            self.check(ok, ExitKind::Interpret, pc);
        }
        let ptr = self.b.func.dfg.value_type(self.ctx);
        let values: Vec<Value> = (0..n).map(|i| self.get(a.wrapping_add(i))).collect();
        let args = args_on_stack(&mut self.b, ptr, &values);
        let index = self.b.ins().iconst(types::I64, i64::from(h));
        let count = self.b.ins().iconst(types::I64, i64::from(n));
        let site = (u64::from(self.region.func) << 32 | u64::from(pc)) as i64;
        let site = self.b.ins().iconst(types::I64, site);
        let callee = self.b.ins().iconst(ptr, self.tramps.hcall);
        let call = self
            .b
            .ins()
            .call_indirect(sig, callee, &[self.ctx, index, args, count, site]);
        let v = self.b.inst_results(call)[0];
        let kind = self.b.ins().load(
            types::I64,
            MemFlagsData::trusted(),
            self.ctx,
            ctx_offset::TRAP_KIND,
        );
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, kind, 0);
        self.check(ok, ExitKind::Trap, pc);
        self.set(d, v, None);
    }

    fn branch(&mut self, pc: u32, instr: &Instr, taken: Target, fall: Target) -> Result<()> {
        let (cond, a, rhs) = match *instr {
            Instr::Loop { a, b, .. } => {
                lower::count_up(self, a);
                (semantics::LOOP_COND, a, Rhs::Reg(b))
            }
            _ => match as_branch(instr) {
                Some((cond, a, rhs, _)) => (cond, a, rhs),
                None => {
                    return Err(self.invalid(format!(
                        "`{}` at {pc} is not a conditional branch",
                        crate::region::InstrText(instr)
                    )));
                }
            },
        };
        let (y, ky) = self.rhs(rhs);
        if let (Some(kx), Some(ky)) = (self.known[a as usize], ky) {
            self.goto(if cond.holds(kx, ky) { taken } else { fall });
            return Ok(());
        }
        if taken == fall {
            self.goto(taken);
            return Ok(());
        }
        let x = self.get(a);
        let c = self.b.ins().icmp(lower::cond_cc(cond), x, y);
        let mut next = None;
        let t = self.target(taken, &mut next);
        let f = self.target(fall, &mut next);
        self.b.ins().brif(c, t, &[], f, &[]);
        self.continue_in(next);
        Ok(())
    }

    fn switch(&mut self, a: Reg, cases: &[Target], default: Target) {
        if let Some(k) = self.known[a as usize] {
            let t = semantics::jtab_entry(cases, k).unwrap_or(default);
            self.goto(t);
            return;
        }
        let mut next = None;
        let mut blocks: HashMap<Target, Block> = HashMap::new();
        let mut block_of = |l: &mut Self, t: Target, next: &mut Option<Block>| {
            *blocks.entry(t).or_insert_with(|| l.target(t, next))
        };
        let targets: Vec<Block> = cases
            .iter()
            .map(|&t| block_of(self, t, &mut next))
            .collect();
        let otherwise = block_of(self, default, &mut next);
        let x = self.get(a);
        lower::jump_table(&mut self.b, x, &targets, otherwise);
        self.continue_in(next);
    }
}

#[cfg(test)]
mod tests;

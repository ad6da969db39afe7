//! Lowering a whole closed function (see [`crate::native`]) to a native
//! Cranelift function, and the entry stub that runs one as a region.
//!
//! A native function's ABI:
//!
//! ```text
//! fn(ctx: *mut NativeCtx, depth: i64, r0: i64, .., r(params-1): i64) -> (value: i64, trapped: i8)
//! ```
//!
//! - `depth` is the interpreter's frame count for this call (its
//!   `frames.len()` while the function runs); a `call` first checks
//!   `depth >= ctx.max_depth` exactly as the interpreter's `enter!` does,
//!   then passes `depth + 1`.
//! - Registers are Cranelift variables: no register window in memory. The
//!   verifier proves every register is written before it is read; the
//!   non-parameters still start at 0 so the IR is well defined.
//! - A trap stores its kind, function, pc (and address) into `ctx` and
//!   returns `trapped = 1`; every caller checks `trapped` after each call
//!   and returns at once with `trapped = 1`, so the whole native stack
//!   unwinds to the region that entered it. No instruction is re-executed,
//!   so the side effects before the trap are exactly the interpreter's.

use std::collections::{BTreeMap, HashMap};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    self, AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, Signature, Value, types,
};
use cranelift_codegen::isa::TargetIsa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use toyvm_vm::Program;
use toyvm_vm::interp::TrapCode;
use toyvm_vm::isa::Instr;
use toyvm_vm::semantics::{self, Rhs, as_branch};

use crate::cfg::Cfg;
use crate::native::{self, Native, ctx_offset};
use crate::{Error, Result};

use super::Trampolines;
use super::lower::{self, Fault};

mod calli;
mod limit;
mod open;
mod stub;
pub(crate) use stub::lower_stub;

/// The signature of native function `f` (with `params` parameters).
pub(crate) fn native_signature(isa: &dyn TargetIsa, params: u8) -> Signature {
    let mut sig = Signature::new(isa.default_call_conv());
    sig.params.push(AbiParam::new(isa.pointer_type())); // ctx
    sig.params.push(AbiParam::new(types::I64)); // depth
    for _ in 0..params {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig.returns.push(AbiParam::new(types::I64)); // value
    sig.returns.push(AbiParam::new(types::I8)); // trapped
    sig
}

/// Resolves a callee's function index to a `FuncRef` inside the function
/// being built (the JIT module declares it there).
pub(crate) type DeclareCallee<'a> = dyn FnMut(u32, &mut ir::Function) -> FuncRef + 'a;

fn codegen_error(func: &ir::Function, isa: &dyn TargetIsa, head: String) -> Result<()> {
    match cranelift_codegen::verify_function(func, isa) {
        Ok(()) => Ok(()),
        Err(errors) => Err(Error::Codegen {
            head,
            msg: cranelift_codegen::print_errors::pretty_verifier_error(func, None, errors),
        }),
    }
}

/// Lowers closed, bailing or open function `fidx` of `program` (`natives`: every
/// function's [`Native`], from [`native::native_functions`]) and verifies
/// the result; also says its size for inlining: its instructions but those
/// of its calls at the stack limit (see `limit`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn lower_function(
    program: &Program,
    fidx: u32,
    natives: &[Native],
    targets: &BTreeMap<u32, u32>,
    isa: &dyn TargetIsa,
    fctx: &mut FunctionBuilderContext,
    declare: &mut DeclareCallee<'_>,
    metering: bool,
    tramps: Trampolines,
) -> Result<(ir::Function, usize)> {
    let f = &program.functions[fidx as usize];
    let mut func = ir::Function::with_name_signature(
        ir::UserFuncName::user(1, fidx),
        native_signature(isa, f.params),
    );
    let kind = natives.get(fidx as usize).copied().unwrap_or(Native::No);
    let bailing = kind == Native::Bails;
    let open = kind == Native::Open;
    let mut sigs = HashMap::new();
    if bailing || open {
        for i in &f.code {
            if let Instr::Calli { n, .. } = *i {
                sigs.entry(n)
                    .or_insert_with(|| func.import_signature(native_signature(isa, n)));
            }
        }
    }
    let mut refs = HashMap::new();
    for i in &f.code {
        match *i {
            Instr::Call { f: callee, .. }
                if match kind {
                    Native::Bails => natives[callee as usize].callable_from_bailing(),
                    Native::Open => natives[callee as usize].callable_from_open(),
                    _ => true,
                } =>
            {
                refs.entry(callee)
                    .or_insert_with(|| declare(callee, &mut func));
            }
            // A closed function's `calli` calls each possible callee
            // directly (see `native`).
            Instr::Calli { n, .. } if !bailing && !open => {
                for g in native::calli_targets(program, n) {
                    refs.entry(g).or_insert_with(|| declare(g, &mut func));
                }
            }
            _ => {}
        }
    }
    // An open function's `calli` sites with a call target the profile
    // found dominant call it directly when the value is that function (see
    // `calli_open`): those that have native code, of the call's arity.
    let mut direct = HashMap::new();
    if open {
        for (&pc, &g) in targets {
            let fits = match (f.code.get(pc as usize), program.functions.get(g as usize)) {
                (Some(Instr::Calli { n, .. }), Some(callee)) => callee.params == *n,
                _ => false,
            };
            if fits
                && natives
                    .get(g as usize)
                    .is_some_and(|k| k.callable_from_open())
            {
                refs.entry(g).or_insert_with(|| declare(g, &mut func));
                direct.insert(pc, g);
            }
        }
    }
    // Closed functions call the interpreter at the stack limit, open ones
    // for every callee without native code too.
    let interp_sig = (open || !bailing && !refs.is_empty())
        .then(|| func.import_signature(super::calls::interp_signature(isa)));
    let limit_insts = {
        let b = FunctionBuilder::new(&mut func, fctx);
        let mut l = FuncLower::new(program, fidx, b, refs, isa.pointer_type(), metering, tramps);
        l.bailing = bailing;
        l.open = open.then_some(natives);
        l.sigs = sigs;
        l.interp_sig = interp_sig;
        l.direct = direct;
        l.body();
        l.b.finalize(isa.frontend_config());
        l.limit_insts
    };
    codegen_error(&func, isa, format!("native function f{fidx}"))?;
    let size = func.dfg.num_insts().saturating_sub(limit_insts);
    Ok((func, size))
}

/// Shared by regions and native functions: `callee(args)` one frame deeper
/// than `depth`, after the interpreter's depth check (which traps at the
/// call, in the caller `func` at `pc`) and the stack check (a stack pointer
/// at or below `NativeCtx::stack_limit` goes to `no_stack`, nothing
/// recorded: see [`crate::native`]). On any trap control goes to
/// `unwind`, with the trap recorded in `ctx`; otherwise the call's value is
/// returned. With fuel metering (`fuel`), the caller's fuel goes to `ctx`
/// for the callee and comes back from it after the call; `mem_len`, the
/// caller's variable for memory's current length, is reloaded from `ctx`
/// after the call (the callee may have run `mgrow`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_native_call(
    b: &mut FunctionBuilder<'_>,
    ctx: Value,
    depth: Value,
    callee: NativeTarget,
    args: &[Value],
    func: u32,
    pc: u32,
    unwind: Block,
    no_stack: Block,
    fuel: Option<Variable>,
    mem_len: Option<Variable>,
) -> Value {
    let max = b.ins().load(
        types::I64,
        MemFlagsData::trusted().with_readonly(),
        ctx,
        ctx_offset::MAX_DEPTH,
    );
    let over = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, depth, max);
    let overflow = b.create_block();
    b.set_cold_block(overflow);
    let ok = b.create_block();
    b.ins().brif(over, overflow, &[], ok, &[]);
    b.switch_to_block(overflow);
    record_trap(b, ctx, native::TRAP_STACK_OVERFLOW, func, pc, None);
    b.ins().jump(unwind, &[]);
    b.switch_to_block(ok);
    let room = stack_room(b, ctx);
    let go = b.create_block();
    b.ins().brif(room, go, &[], no_stack, &[]);
    b.switch_to_block(go);
    let deeper = b.ins().iadd_imm_s(depth, 1);
    let mut all = vec![ctx, deeper];
    all.extend_from_slice(args);
    if let Some(var) = fuel {
        let left = b.use_var(var);
        b.ins()
            .store(MemFlagsData::trusted(), left, ctx, ctx_offset::FUEL);
    }
    let call = match callee {
        NativeTarget::Direct(f) => b.ins().call(f, &all),
        NativeTarget::Indirect(sig, addr) => b.ins().call_indirect(sig, addr, &all),
    };
    let (value, trapped) = {
        let r = b.inst_results(call);
        (r[0], r[1])
    };
    let cont = b.create_block();
    b.ins().brif(trapped, unwind, &[], cont, &[]);
    b.switch_to_block(cont);
    if let Some(var) = fuel {
        let left = b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), ctx, ctx_offset::FUEL);
        b.def_var(var, left);
    }
    if let Some(var) = mem_len {
        let len = b.ins().load(
            types::I64,
            MemFlagsData::trusted(),
            ctx,
            ctx_offset::MEM_LEN,
        );
        b.def_var(var, len);
    }
    value
}

/// Whether the stack pointer is above `NativeCtx::stack_limit` (always,
/// with the limit 0): a native call may be made.
pub(crate) fn stack_room(b: &mut FunctionBuilder<'_>, ctx: Value) -> Value {
    let ptr = b.func.dfg.value_type(ctx);
    let ro = MemFlagsData::trusted().with_readonly();
    let limit = b.ins().load(types::I64, ro, ctx, ctx_offset::STACK_LIMIT);
    let sp = b.ins().get_stack_pointer(ptr);
    let sp = if ptr == types::I64 {
        sp
    } else {
        b.ins().uextend(types::I64, sp)
    };
    b.ins().icmp(IntCC::UnsignedGreaterThan, sp, limit)
}

/// The function value a native function's call passes to the interpreter
/// when the interpreter makes the call instead (see `limit` and `open`).
#[derive(Clone, Copy, Debug)]
enum CallValue {
    /// A known function.
    Index(u32),
    /// A `calli`'s value.
    Dynamic(Value),
}

/// How a native call reaches its callee.
#[derive(Clone, Copy, Debug)]
pub(crate) enum NativeTarget {
    /// A callee known when the code is generated.
    Direct(FuncRef),
    /// A `calli` in a bailing function: the address found in the natives'
    /// table, called with `native_signature` of the call's arity.
    Indirect(ir::SigRef, Value),
}

/// Stores a trap's fields into the context.
fn record_trap(
    b: &mut FunctionBuilder<'_>,
    ctx: Value,
    kind: u64,
    func: u32,
    pc: u32,
    addr: Option<Value>,
) {
    let flags = MemFlagsData::trusted();
    let put = |b: &mut FunctionBuilder<'_>, v: Value, off: i32| {
        b.ins().store(flags, v, ctx, off);
    };
    let k = b.ins().iconst(types::I64, kind as i64);
    put(b, k, ctx_offset::TRAP_KIND);
    let f = b.ins().iconst(types::I64, func as i64);
    put(b, f, ctx_offset::TRAP_FUNC);
    let p = b.ins().iconst(types::I64, pc as i64);
    put(b, p, ctx_offset::TRAP_PC);
    if let Some(a) = addr {
        put(b, a, ctx_offset::TRAP_ADDR);
    }
}

/// A trap site whose cold block is filled after the body.
struct PendingTrap {
    block: Block,
    kind: u64,
    pc: u32,
    addr: Option<Value>,
}

struct FuncLower<'p, 'b> {
    program: &'p Program,
    fidx: u32,
    b: FunctionBuilder<'b>,
    refs: HashMap<u32, FuncRef>,
    vars: Vec<Variable>,
    /// The Cranelift block of each bytecode offset that starts a block.
    blocks: HashMap<u32, Block>,
    ctx: Value,
    depth: Value,
    /// Memory's base address and current length in bytes (a variable:
    /// `mgrow` and calls redefine it), where the function uses memory.
    mem: Option<(Value, Variable)>,
    unwind: Block,
    traps: Vec<PendingTrap>,
    /// Fuel left, with metering on: checked and charged a block at a time.
    fuel: Option<Variable>,
    /// The end of each block, by its start.
    ends: HashMap<u32, u32>,
    /// A bailing function: instructions it cannot run natively, and calls
    /// to functions it has no native code for, bail (see [`crate::native`]).
    bailing: bool,
    /// An open function: every function's kind (see `open`).
    open: Option<&'p [Native]>,
    /// A bailing or open function's `calli` signatures, by arity.
    sigs: HashMap<u8, ir::SigRef>,
    /// An open function's `calli` sites that call one function directly
    /// when the value names it (its call target in the profile), by offset.
    direct: HashMap<u32, u32>,
    /// A closed function with calls: the interpreter trampoline's
    /// signature, for its calls at the stack limit (see `limit`).
    interp_sig: Option<ir::SigRef>,
    /// Where the calls to the runtime go.
    tramps: Trampolines,
    /// The start of the bytecode block being lowered.
    block_start: u32,
    /// Instructions of the calls' paths at the stack limit (see `limit`).
    limit_insts: usize,
    /// Bounds proved so far in the bytecode block being lowered (see
    /// [`lower::Proved`]): cleared at its start and at a call (which
    /// redefines the memory length).
    checked: lower::Proved,
}

/// Native functions track no constants; a failed check records the trap
/// and unwinds every native frame.
impl<'b> lower::Emit<'b> for FuncLower<'_, 'b> {
    fn builder(&mut self) -> &mut FunctionBuilder<'b> {
        &mut self.b
    }
    fn get(&mut self, r: u8) -> Value {
        FuncLower::get(self, r)
    }
    fn known(&self, _: u8) -> Option<i64> {
        None
    }
    fn set(&mut self, r: u8, v: Value, _: Option<i64>) {
        FuncLower::set(self, r, v)
    }
    fn proved(&mut self) -> Option<&mut lower::Proved> {
        Some(&mut self.checked)
    }
    fn memory(&mut self) -> (Value, Value) {
        let (base, len) = self
            .mem
            .expect("loaded at entry when the function uses memory");
        (base, self.b.use_var(len))
    }
    fn capacity(&mut self) -> Value {
        let ro = MemFlagsData::trusted().with_readonly();
        let ctx = self.ctx;
        self.b.ins().load(types::I64, ro, ctx, ctx_offset::MEM_CAP)
    }
    fn set_memory_len(&mut self, len: Value) {
        let (_, var) = self
            .mem
            .expect("loaded at entry when the function uses memory");
        self.checked.clear();
        self.b.def_var(var, len);
        let ctx = self.ctx;
        let flags = MemFlagsData::trusted();
        self.b.ins().store(flags, len, ctx, ctx_offset::MEM_LEN);
    }
    fn check(&mut self, ok: Value, pc: u32, fault: Fault) {
        let (kind, addr) = match fault {
            Fault::DivisionByZero => (native::TRAP_DIVISION_BY_ZERO, None),
            Fault::OutOfBounds { addr } => (native::TRAP_OUT_OF_BOUNDS, Some(addr)),
            Fault::BytesOutOfBounds { addr, bytes } => {
                (native::trap_bytes_out_of_bounds(bytes), Some(addr))
            }
        };
        FuncLower::check(self, ok, kind, pc, addr)
    }
    fn fail(&mut self, pc: u32, fault: Fault) {
        // The code after it stays valid IR, in a block nothing reaches.
        let never = self.b.ins().iconst(types::I8, 0);
        lower::Emit::check(self, never, pc, fault)
    }
}

impl<'p, 'b> FuncLower<'p, 'b> {
    fn new(
        program: &'p Program,
        fidx: u32,
        mut b: FunctionBuilder<'b>,
        refs: HashMap<u32, FuncRef>,
        ptr: ir::Type,
        metering: bool,
        tramps: Trampolines,
    ) -> Self {
        let f = &program.functions[fidx as usize];
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        debug_assert_eq!(ptr, b.func.dfg.value_type(p[0]));
        let (ctx, depth) = (p[0], p[1]);
        let mut vars = Vec::with_capacity(f.regs as usize);
        for r in 0..f.regs as usize {
            let v = b.declare_var(types::I64);
            let x = match p.get(2 + r) {
                Some(&param) if r < f.params as usize => param,
                _ => b.ins().iconst(types::I64, 0),
            };
            b.def_var(v, x);
            vars.push(v);
        }
        // Memory's base never changes while native code runs: load it once
        // per call, and only where the function uses memory. Its length
        // does (`mgrow`, here or in a callee): a variable, loaded here,
        // redefined by `mgrow` and reloaded after each call.
        let uses_mem = f
            .code
            .iter()
            .any(|i| i.op().reads_memory() || i.op().writes_memory());
        let mem = uses_mem.then(|| {
            let ro = MemFlagsData::trusted().with_readonly();
            let ptr_ty = b.func.dfg.value_type(ctx);
            let base = b.ins().load(ptr_ty, ro, ctx, ctx_offset::MEM);
            let len = b.declare_var(types::I64);
            let now = b.ins().load(
                types::I64,
                MemFlagsData::trusted(),
                ctx,
                ctx_offset::MEM_LEN,
            );
            b.def_var(len, now);
            (base, len)
        });
        let fuel = metering.then(|| {
            let v = b.declare_var(types::I64);
            let left = b
                .ins()
                .load(types::I64, MemFlagsData::trusted(), ctx, ctx_offset::FUEL);
            b.def_var(v, left);
            v
        });
        let cfg = Cfg::new(fidx, f);
        let blocks = cfg
            .blocks()
            .iter()
            .map(|blk| (blk.start, b.create_block()))
            .collect();
        let ends = cfg
            .blocks()
            .iter()
            .map(|blk| (blk.start, blk.end))
            .collect();
        let unwind = b.create_block();
        b.set_cold_block(unwind);
        FuncLower {
            program,
            fidx,
            b,
            refs,
            vars,
            blocks,
            ctx,
            depth,
            mem,
            unwind,
            traps: Vec::new(),
            fuel,
            ends,
            bailing: false,
            open: None,
            sigs: HashMap::new(),
            direct: HashMap::new(),
            interp_sig: None,
            tramps,
            block_start: 0,
            limit_insts: 0,
            checked: lower::Proved::default(),
        }
    }

    fn block(&self, offset: u32) -> Block {
        self.blocks[&offset]
    }

    fn get(&mut self, r: u8) -> Value {
        self.b.use_var(self.vars[r as usize])
    }

    fn set(&mut self, r: u8, v: Value) {
        self.checked.forget(r);
        self.b.def_var(self.vars[r as usize], v);
    }

    fn rhs(&mut self, rhs: Rhs) -> Value {
        match rhs {
            Rhs::Reg(r) => self.get(r),
            Rhs::Imm(k) => self.b.ins().iconst(types::I64, k),
        }
    }

    /// Continues in a new block if `ok`, else traps.
    fn check(&mut self, ok: Value, kind: u64, pc: u32, addr: Option<Value>) {
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        self.traps.push(PendingTrap {
            block,
            kind,
            pc,
            addr,
        });
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], block, &[]);
        self.b.switch_to_block(cont);
    }

    fn body(&mut self) {
        let f = &self.program.functions[self.fidx as usize];
        let first = self.block(0);
        self.b.ins().jump(first, &[]);
        let mut open = false;
        for (pc, instr) in f.code.iter().enumerate() {
            let pc = pc as u32;
            if let Some(&blk) = self.blocks.get(&pc) {
                if open {
                    self.b.ins().jump(blk, &[]);
                }
                self.b.switch_to_block(blk);
                self.block_start = pc;
                self.checked.clear();
                self.charge(pc);
            }
            if matches!(instr, Instr::Call { .. } | Instr::Calli { .. }) {
                self.checked.clear();
            }
            open = self.instr(pc, instr);
        }
        debug_assert!(!open, "the verifier rejects running off the end");
        for t in std::mem::take(&mut self.traps) {
            self.b.switch_to_block(t.block);
            record_trap(&mut self.b, self.ctx, t.kind, self.fidx, t.pc, t.addr);
            self.b.ins().jump(self.unwind, &[]);
        }
        self.b.switch_to_block(self.unwind);
        let zero = self.b.ins().iconst(types::I64, 0);
        let one = self.b.ins().iconst(types::I8, 1);
        self.b.ins().return_(&[zero, one]);
        self.b.seal_all_blocks();
    }

    /// With metering, at the start of the block at `start`: trap out of
    /// fuel when none is left, else charge the block's length.
    fn charge(&mut self, start: u32) {
        let Some(fuel) = self.fuel else {
            return;
        };
        let left = self.b.use_var(fuel);
        let some = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, left, 0);
        self.check(some, native::TRAP_OUT_OF_FUEL, start, None);
        let len = self.ends[&start] - start;
        let left = self.b.use_var(fuel);
        let left = self.b.ins().iadd_imm_s(left, -(len as i64));
        self.b.def_var(fuel, left);
    }

    /// `d = callee(a, .., a+n-1)` natively; a trap or bail unwinds. At the
    /// stack limit a bailing function bails, and a closed or open one calls
    /// the interpreter for `callee` (`value`: the function value, known for
    /// every call of a closed or open function) instead. With `may_bail`
    /// (an open function's call of a callee that may bail) a bail calls the
    /// interpreter for the callee too, and other traps unwind.
    #[allow(clippy::too_many_arguments)]
    fn native_call(
        &mut self,
        pc: u32,
        d: u8,
        callee: NativeTarget,
        value: Option<CallValue>,
        a: u8,
        n: u8,
        may_bail: bool,
    ) {
        let args: Vec<Value> = (0..n).map(|i| self.get(a.wrapping_add(i))).collect();
        let no_stack = self.b.create_block();
        self.b.set_cold_block(no_stack);
        let unwind = if may_bail {
            let blk = self.b.create_block();
            self.b.set_cold_block(blk);
            blk
        } else {
            self.unwind
        };
        let v = emit_native_call(
            &mut self.b,
            self.ctx,
            self.depth,
            callee,
            &args,
            self.fidx,
            pc,
            unwind,
            no_stack,
            self.fuel,
            self.mem.map(|(_, len)| len),
        );
        self.set(d, v);
        let join = self.b.create_block();
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(no_stack);
        if self.bailing {
            record_trap(
                &mut self.b,
                self.ctx,
                native::TRAP_BAIL,
                self.fidx,
                pc,
                None,
            );
            self.b.ins().jump(self.unwind, &[]);
        } else {
            let value = value.expect("a closed or open function's callees are known");
            let before = self.b.func.dfg.num_insts();
            let value = self.call_value(value);
            let v = self.limit_call(pc, value, &args);
            self.limit_insts += self.b.func.dfg.num_insts() - before;
            self.set(d, v);
            self.b.ins().jump(join, &[]);
        }
        if may_bail {
            let value = value.expect("only open functions retry a bail");
            self.b.switch_to_block(unwind);
            let before = self.b.func.dfg.num_insts();
            self.retry_bail(pc, d, value, &args, join);
            self.limit_insts += self.b.func.dfg.num_insts() - before;
        }
        self.b.switch_to_block(join);
    }

    /// The function value of a call, as the interpreter gets it.
    fn call_value(&mut self, value: CallValue) -> Value {
        match value {
            CallValue::Index(g) => self.b.ins().iconst(types::I64, i64::from(g)),
            CallValue::Dynamic(x) => x,
        }
    }

    /// A bail point at `pc`: unwind every native frame with
    /// [`native::TRAP_BAIL`], for the outermost caller to hand its call to
    /// the interpreter.
    /// Returns whether lowering goes on in the same bytecode block.
    fn bail(&mut self, pc: u32) -> bool {
        record_trap(
            &mut self.b,
            self.ctx,
            native::TRAP_BAIL,
            self.fidx,
            pc,
            None,
        );
        self.b.ins().jump(self.unwind, &[]);
        let len = self.program.functions[self.fidx as usize].code.len() as u32;
        if pc + 1 >= len || self.blocks.contains_key(&(pc + 1)) {
            return false;
        }
        // The rest of the bytecode block is unreachable here: lower it
        // into a Cranelift block of its own, which nothing enters.
        let dead = self.b.create_block();
        self.b.switch_to_block(dead);
        true
    }

    /// A `trap` at `pc`: records its kind and unwinds every native frame.
    /// Returns whether lowering goes on in the same bytecode block (as
    /// [`bail`](Self::bail)).
    fn trap(&mut self, pc: u32, code: TrapCode) -> bool {
        let kind = native::trap_explicit(code);
        record_trap(&mut self.b, self.ctx, kind, self.fidx, pc, None);
        self.b.ins().jump(self.unwind, &[]);
        let len = self.program.functions[self.fidx as usize].code.len() as u32;
        if pc + 1 >= len || self.blocks.contains_key(&(pc + 1)) {
            return false;
        }
        let dead = self.b.create_block();
        self.b.switch_to_block(dead);
        true
    }

    /// Lowers one instruction; whether control falls through to `pc + 1`.
    fn instr(&mut self, pc: u32, instr: &Instr) -> bool {
        if let Instr::Trap { imm } = *instr {
            // The verifier admits only known codes.
            return self.trap(
                pc,
                TrapCode::from_code(imm).unwrap_or(TrapCode::Unsupported),
            );
        }
        if lower::straight(self, pc, instr) {
            return true;
        }
        if let Some((cond, a, rhs, target)) = as_branch(instr) {
            let x = self.get(a);
            let y = self.rhs(rhs);
            let c = self.b.ins().icmp(lower::cond_cc(cond), x, y);
            let (t, n) = (self.block(target), self.block(pc + 1));
            self.b.ins().brif(c, t, &[], n, &[]);
            return false;
        }
        match *instr {
            Instr::Jmp { target } => {
                let t = self.block(target);
                self.b.ins().jump(t, &[]);
                return false;
            }
            Instr::Loop { a, b, target } => {
                lower::count_up(self, a);
                let (v, y) = (self.get(a), self.get(b));
                let c = self
                    .b
                    .ins()
                    .icmp(lower::cond_cc(semantics::LOOP_COND), v, y);
                let (t, n) = (self.block(target), self.block(pc + 1));
                self.b.ins().brif(c, t, &[], n, &[]);
                return false;
            }
            Instr::Jtab { a, t } => {
                let f = &self.program.functions[self.fidx as usize];
                let targets: Vec<_> = f.tables[t as usize]
                    .iter()
                    .map(|&to| self.block(to))
                    .collect();
                let x = self.get(a);
                let otherwise = self.block(pc + 1);
                lower::jump_table(&mut self.b, x, &targets, otherwise);
                return false;
            }
            Instr::Call { d, f, a, n } if !self.refs.contains_key(&f) => {
                if self.open.is_none() {
                    debug_assert!(self.bailing, "closed functions call only closed ones");
                    return self.bail(pc);
                }
                let value = self.b.ins().iconst(types::I64, i64::from(f));
                self.interpreted(pc, d, value, a, n);
            }
            Instr::Call { d, f, a, n } => {
                let callee = NativeTarget::Direct(self.refs[&f]);
                let may_bail = self.open.is_some_and(|k| k[f as usize] == Native::Bails);
                self.native_call(pc, d, callee, Some(CallValue::Index(f)), a, n, may_bail);
            }
            Instr::Ret { a } => {
                let v = self.get(a);
                if let Some(fuel) = self.fuel {
                    let left = self.b.use_var(fuel);
                    let flags = MemFlagsData::trusted();
                    self.b.ins().store(flags, left, self.ctx, ctx_offset::FUEL);
                }
                let ok = self.b.ins().iconst(types::I8, 0);
                self.b.ins().return_(&[v, ok]);
                return false;
            }
            Instr::Calli { d, f, a, n } if self.bailing => self.calli(pc, d, f, a, n),
            Instr::Calli { d, f, a, n } if self.open.is_some() => self.calli_open(pc, d, f, a, n),
            Instr::Calli { d, f, a, n } => self.calli_closed(pc, d, f, a, n),
            Instr::Halt { .. } | Instr::Putn { .. } | Instr::Putc { .. } | Instr::Inlen { .. }
                if self.bailing =>
            {
                return self.bail(pc);
            }
            Instr::Hcall { .. }
            | Instr::Halt { .. }
            | Instr::Putn { .. }
            | Instr::Putc { .. }
            | Instr::Inlen { .. } => {
                unreachable!("native functions hold no {:?}", instr.op())
            }
            _ => unreachable!("arithmetic and branches are handled above: {instr:?}"),
        }
        true
    }
}

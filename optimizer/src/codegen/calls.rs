//! Calls in regions: a `call` or guarded `calli` to one closed function
//! ([`Step::Call`](crate::region::Step::Call)), a polymorphic `calli`
//! dispatching among several
//! ([`Step::Dispatch`](crate::region::Step::Dispatch)), and calls into the
//! interpreter ([`Step::Interpreted`](crate::region::Step::Interpreted)).
//!
//! A call into the interpreter goes through `jit::host`'s interpreter
//! trampoline: the arguments in a stack slot of the region's frame, the
//! function value, the site, the region's depth and the instructions its
//! block charged to fuel but has not run (the trampoline adds them back,
//! so the interpreter counts exactly what the interpreter would have left,
//! and takes them off again for the region). It is also what a native
//! callee's bail and a dispatch's miss do: the trace goes on either way.
//! When the trampoline declines (no interpreter lent, or no machine stack
//! to spare) the region leaves through an `Interpret` exit at the call,
//! registers and fuel as before it, and the interpreter makes the call.
//! A native call that finds the stack at its limit (see [`crate::native`])
//! goes where its callee's bail would: to the trampoline, which then
//! declines too.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, Block, InstBuilder, MemFlagsData, Signature, Value, types};
use cranelift_codegen::isa::TargetIsa;
use toyvm_vm::isa::{Instr, Reg};

use super::{Lower, func};
use crate::Result;
use crate::exit::ExitKind;
use crate::native::ctx_offset;

/// The interpreter trampoline's signature (see `crate::jit::host`):
/// `(ctx, callee, args, n, func << 32 | pc, depth, unrun) -> i64`.
pub(crate) fn interp_signature(isa: &dyn TargetIsa) -> Signature {
    let ptr = isa.pointer_type();
    let mut sig = Signature::new(isa.default_call_conv());
    sig.params.push(AbiParam::new(ptr)); // ctx
    sig.params.push(AbiParam::new(types::I64)); // function value
    sig.params.push(AbiParam::new(ptr)); // args
    sig.params.push(AbiParam::new(types::I64)); // n
    sig.params.push(AbiParam::new(types::I64)); // site
    sig.params.push(AbiParam::new(types::I64)); // depth
    sig.params.push(AbiParam::new(types::I64)); // unrun
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

impl Lower<'_, '_> {
    /// A polymorphic `calli`: compare the function value with each callee
    /// in turn and call the one it names natively; any other value, and a
    /// callee that bails, calls the interpreter.
    pub(super) fn dispatch(&mut self, pc: u32, instr: &Instr, callees: &[u32]) -> Result<()> {
        let (d, Some(f), a, n) = call_operands(instr) else {
            return Err(self.invalid(format!(
                "`{}` at {pc} is not a `calli`",
                crate::region::InstrText(instr)
            )));
        };
        if let Some(k) = self.known[f as usize] {
            match callees.iter().find(|&&c| c as i64 == k) {
                Some(&c) => return self.call(pc, instr, c),
                None => return self.interpreted(pc, instr),
            }
        }
        let interpret = self.exit(ExitKind::Interpret, pc);
        let trap = self.exit(ExitKind::Trap, pc);
        let fallback = self.b.create_block();
        let lookup = self.b.create_block();
        let unwind = self.unwound(trap, fallback);
        let args: Vec<Value> = (0..n).map(|i| self.get(a.wrapping_add(i))).collect();
        let x = self.get(f);
        let join = self.b.create_block();
        for &c in callees {
            let hit = self.b.create_block();
            let miss = self.b.create_block();
            let is = self.b.ins().icmp_imm_s(IntCC::Equal, x, c as i64);
            self.b.ins().brif(is, hit, &[], miss, &[]);
            self.b.switch_to_block(hit);
            let v = func::emit_native_call(
                &mut self.b,
                self.ctx,
                self.depth,
                func::NativeTarget::Direct(self.refs[&c]),
                &args,
                self.region.func,
                pc,
                unwind,
                fallback,
                self.fuel,
                Some(self.mem_len),
            );
            // Each callee defines `d`; the join merges them.
            self.set(d, v, None);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(miss);
        }
        self.b.ins().jump(lookup, &[]);
        // A value no callee has: natively through the natives' table, or
        // the interpreter.
        self.b.switch_to_block(lookup);
        self.call_value(pc, d, x, &args, fallback, trap, join);
        // A callee that bailed (it is the value), or no native code.
        self.b.switch_to_block(fallback);
        let v = self.interp_call(pc, x, &args, interpret, trap);
        self.set(d, v, None);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// In the current block, a `calli`'s function value `x` with no
    /// profiled callee: looked up in the natives' table (`NativeCtx::table`,
    /// every function with native code a bailing function may call: also
    /// those whose whole-function code was installed after this region was
    /// planned, and callees its profile did not rank) and, with an address
    /// and the call's arity, called natively, `d` set and on to `join`; any
    /// other value, and a callee that bails, goes to `interp` (which calls
    /// the interpreter). A trap leaves through `trap`.
    #[allow(clippy::too_many_arguments)]
    fn call_value(
        &mut self,
        pc: u32,
        d: Reg,
        x: Value,
        args: &[Value],
        interp: Block,
        trap: Block,
        join: Block,
    ) {
        let n = args.len() as u8;
        let Some(&sig) = self.table_sigs.get(&n) else {
            self.b.ins().jump(interp, &[]);
            return;
        };
        let inside = super::table::in_table(&mut self.b, self.ctx, x);
        let look = self.b.create_block();
        self.b.ins().brif(inside, look, &[], interp, &[]);
        self.b.switch_to_block(look);
        let (addr, ok) = super::table::table_entry(&mut self.b, self.ctx, x, n, false);
        let call = self.b.create_block();
        self.b.ins().brif(ok, call, &[], interp, &[]);
        self.b.switch_to_block(call);
        let unwind = self.unwound(trap, interp);
        let v = func::emit_native_call(
            &mut self.b,
            self.ctx,
            self.depth,
            func::NativeTarget::Indirect(sig, addr),
            args,
            self.region.func,
            pc,
            unwind,
            interp,
            self.fuel,
            Some(self.mem_len),
        );
        self.set(d, v, None);
        self.b.ins().jump(join, &[]);
    }

    /// Where a native call goes when its callee unwinds: a bail (see
    /// [`crate::native`]) clears the context's trap and goes on to
    /// `interpret` (registers and fuel are the region's from before the
    /// call): an `Interpret` exit at the call, or a block that calls the
    /// interpreter; a trap leaves through `trap`. The block is filled with
    /// the exits (see `fill_exits`).
    pub(super) fn unwound(&mut self, trap: Block, interpret: Block) -> Block {
        let blk = self.b.create_block();
        self.b.set_cold_block(blk);
        self.unwinds.push((blk, trap, interpret));
        blk
    }

    /// A native call: `d = callee(a, .., a+n-1)`, a `Trap` exit, or (the
    /// callee bailed) a call into the interpreter.
    pub(super) fn call(&mut self, pc: u32, instr: &Instr, callee: u32) -> Result<()> {
        let direct = matches!(instr, Instr::Call { f, .. } if *f == callee);
        if !direct && !matches!(instr, Instr::Calli { .. }) {
            return Err(self.invalid(format!(
                "`{}` at {pc} is not a call to f{callee}",
                crate::region::InstrText(instr)
            )));
        }
        let (d, f, a, n) = call_operands(instr);
        if let Some(f) = f {
            // The function value must be the callee: specialization puts
            // this guard right before the call, and then it folds away.
            self.guard(f, callee as i64, pc);
            if self.done {
                return Ok(());
            }
        }
        let args: Vec<Value> = (0..n).map(|i| self.get(a.wrapping_add(i))).collect();
        let trap = self.exit(ExitKind::Trap, pc);
        let interpret = self.exit(ExitKind::Interpret, pc);
        let bailed = self.b.create_block();
        self.b.set_cold_block(bailed);
        let unwind = self.unwound(trap, bailed);
        let v = func::emit_native_call(
            &mut self.b,
            self.ctx,
            self.depth,
            func::NativeTarget::Direct(self.refs[&callee]),
            &args,
            self.region.func,
            pc,
            unwind,
            bailed,
            self.fuel,
            Some(self.mem_len),
        );
        self.set(d, v, None);
        let join = self.b.create_block();
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(bailed);
        let value = self.b.ins().iconst(types::I64, i64::from(callee));
        let v = self.interp_call(pc, value, &args, interpret, trap);
        self.set(d, v, None);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// A call into the interpreter: `d = callee(a, .., a+n-1)` for
    /// whatever function the `call` names or the `calli`'s register holds
    /// (the interpreter checks it as its own `calli` would).
    pub(super) fn interpreted(&mut self, pc: u32, instr: &Instr) -> Result<()> {
        let (d, f, a, n) = call_operands(instr);
        let value = match (*instr, f) {
            (Instr::Call { f: callee, .. }, _) => {
                self.b.ins().iconst(types::I64, i64::from(callee))
            }
            (Instr::Calli { .. }, Some(f)) => self.get(f),
            _ => {
                return Err(self.invalid(format!(
                    "`{}` at {pc} is not a call",
                    crate::region::InstrText(instr)
                )));
            }
        };
        let args: Vec<Value> = (0..n).map(|i| self.get(a.wrapping_add(i))).collect();
        let interpret = self.exit(ExitKind::Interpret, pc);
        let trap = self.exit(ExitKind::Trap, pc);
        if f.is_some() {
            // A `calli`: natively through the natives' table where it can.
            let interp = self.b.create_block();
            let join = self.b.create_block();
            self.call_value(pc, d, value, &args, interp, trap, join);
            self.b.switch_to_block(interp);
            let v = self.interp_call(pc, value, &args, interpret, trap);
            self.set(d, v, None);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(join);
            return Ok(());
        }
        let v = self.interp_call(pc, value, &args, interpret, trap);
        self.set(d, v, None);
        Ok(())
    }

    /// Calls the interpreter for function value `callee` with `args` (see
    /// the module docs); returns the value, in a new current block. A
    /// declined call goes to `interpret` (an `Interpret` exit at `pc`), a
    /// run that ended inside the call to `trap`.
    fn interp_call(
        &mut self,
        pc: u32,
        callee: Value,
        args: &[Value],
        interpret: Block,
        trap: Block,
    ) -> Value {
        let sig = self
            .interp_sig
            .expect("`lower` imports the trampoline's signature for regions that call out");
        let flags = MemFlagsData::trusted();
        // With metering, the call runs only if the interpreter would have
        // reached it: the block was charged whole at its start.
        let unrun = match (self.fuel, self.charged) {
            (Some(fuel), Some((_, end))) if end > pc => {
                let left = self.b.use_var(fuel);
                let ok =
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::SignedGreaterThan, left, -i64::from(end - pc));
                let go = self.b.create_block();
                self.b.ins().brif(ok, go, &[], interpret, &[]);
                self.b.switch_to_block(go);
                end - pc - 1
            }
            _ => 0,
        };
        let ptr = self.b.func.dfg.value_type(self.ctx);
        let n = args.len();
        let argp = super::args_on_stack(&mut self.b, ptr, args);
        if let Some(fuel) = self.fuel {
            let left = self.b.use_var(fuel);
            self.b.ins().store(flags, left, self.ctx, ctx_offset::FUEL);
        }
        let count = self.b.ins().iconst(types::I64, n as i64);
        let site = (u64::from(self.region.func) << 32 | u64::from(pc)) as i64;
        let site = self.b.ins().iconst(types::I64, site);
        let unrun = self.b.ins().iconst(types::I64, i64::from(unrun));
        let target = self.b.ins().iconst(ptr, self.tramps.interp);
        let call = self.b.ins().call_indirect(
            sig,
            target,
            &[self.ctx, callee, argp, count, site, self.depth, unrun],
        );
        let v = self.b.inst_results(call)[0];
        let kind = self
            .b
            .ins()
            .load(types::I64, flags, self.ctx, ctx_offset::TRAP_KIND);
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, kind, 0);
        let unwind = self.unwound(trap, interpret);
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], unwind, &[]);
        self.b.switch_to_block(cont);
        if let Some(fuel) = self.fuel {
            let left = self
                .b
                .ins()
                .load(types::I64, flags, self.ctx, ctx_offset::FUEL);
            self.b.def_var(fuel, left);
        }
        // The callee may have run `mgrow`.
        let len = self
            .b
            .ins()
            .load(types::I64, flags, self.ctx, ctx_offset::MEM_LEN);
        self.b.def_var(self.mem_len, len);
        v
    }
}

/// `(d, function register, first argument, count)` of a `call`/`calli`.
pub(super) fn call_operands(instr: &Instr) -> (Reg, Option<Reg>, Reg, u8) {
    match *instr {
        Instr::Call { d, a, n, .. } => (d, None, a, n),
        Instr::Calli { d, f, a, n } => (d, Some(f), a, n),
        _ => (0, None, 0, 0),
    }
}

//! Native calls in regions: a `call` or guarded `calli` to one closed
//! function ([`Step::Call`](crate::region::Step::Call)), and a polymorphic
//! `calli` dispatching among several
//! ([`Step::Dispatch`](crate::region::Step::Dispatch)).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, Value};
use toyvm_vm::isa::{Instr, Reg};

use super::{Lower, func};
use crate::Result;
use crate::exit::ExitKind;

impl Lower<'_, '_> {
    /// A polymorphic `calli`: compare the function value with each callee
    /// in turn and call the one it names natively; any other value leaves
    /// for the interpreter, which runs the `calli` (and any trap it makes).
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
                None => {
                    self.leave(ExitKind::Interpret, pc);
                    return Ok(());
                }
            }
        }
        let fallback = self.exit(ExitKind::Interpret, pc);
        let trap = self.exit(ExitKind::Trap, pc);
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
                self.fuel,
                Some(self.mem_len),
            );
            // Each callee defines `d`; the join merges them.
            self.set(d, v, None);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(miss);
        }
        self.b.ins().jump(fallback, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// Where a native call goes when its callee unwinds: a bail (see
    /// [`crate::native`]) clears the context's trap and leaves through
    /// `interpret`, an `Interpret` exit at the call (registers and fuel are
    /// the region's from before the call), for the interpreter to make the
    /// call; a trap leaves through `trap`. The block is filled with the
    /// exits (see `fill_exits`).
    pub(super) fn unwound(&mut self, trap: Block, interpret: Block) -> Block {
        let blk = self.b.create_block();
        self.b.set_cold_block(blk);
        self.unwinds.push((blk, trap, interpret));
        blk
    }

    /// A native call: `d = callee(a, .., a+n-1)`, a `Trap` exit, or (the
    /// callee bailed) an `Interpret` exit at the call.
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
        let unwind = self.unwound(trap, interpret);
        let v = func::emit_native_call(
            &mut self.b,
            self.ctx,
            self.depth,
            func::NativeTarget::Direct(self.refs[&callee]),
            &args,
            self.region.func,
            pc,
            unwind,
            self.fuel,
            Some(self.mem_len),
        );
        self.set(d, v, None);
        Ok(())
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

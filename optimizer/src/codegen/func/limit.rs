//! A closed native function's call at the stack limit (see
//! [`crate::native`]): the callee runs in the interpreter, through the
//! interpreter trampoline that is never declined
//! (`jit::host::limit_trampoline`), and the function goes on with its value.
//!
//! The trampoline's arguments are a region's (see `codegen::calls`): the
//! arguments in a stack slot, the function value, the call's site, this
//! frame's depth and, with fuel metering, the instructions the block
//! charged but has not run (after the call). With metering, the call is
//! made only if the interpreter would have reached it; otherwise the
//! function traps out of fuel exactly where the interpreter would have,
//! within the block (whose start had fuel left).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, types};

use super::{FuncLower, record_trap};
use crate::native::{self, ctx_offset};

impl FuncLower<'_, '_> {
    /// `callee(args)` in the interpreter from the call at `pc` (`callee`:
    /// the function value); returns the value, in a new current block. A
    /// run that ended in the call (or a fuel trap before it) unwinds.
    pub(super) fn limit_call(&mut self, pc: u32, callee: Value, args: &[Value]) -> Value {
        let sig = self
            .interp_sig
            .expect("imported for closed functions that call");
        let flags = MemFlagsData::trusted();
        let ctx = self.ctx;
        let unrun = match self.fuel {
            Some(fuel) => {
                let end = self.ends[&self.block_start];
                let left = self.b.use_var(fuel);
                // The interpreter reaches the call with fuel left iff the
                // block's start had more than `pc - start`: `left` is that
                // minus the block's length.
                let reach = -i64::from(end - pc);
                let ok = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThan, left, reach);
                let go = self.b.create_block();
                let out = self.b.create_block();
                self.b.set_cold_block(out);
                self.b.ins().brif(ok, go, &[], out, &[]);
                self.b.switch_to_block(out);
                // It runs dry at `start + fuel at the start` = `left + end`.
                record_trap(
                    &mut self.b,
                    ctx,
                    native::TRAP_OUT_OF_FUEL,
                    self.fidx,
                    pc,
                    None,
                );
                let at = self.b.ins().iadd_imm_s(left, i64::from(end));
                self.b.ins().store(flags, at, ctx, ctx_offset::TRAP_PC);
                self.b.ins().jump(self.unwind, &[]);
                self.b.switch_to_block(go);
                let left = self.b.use_var(fuel);
                self.b.ins().store(flags, left, ctx, ctx_offset::FUEL);
                end - pc - 1
            }
            None => 0,
        };
        let ptr = self.b.func.dfg.value_type(ctx);
        let n = args.len();
        let argp = crate::codegen::args_on_stack(&mut self.b, ptr, args);
        let value = callee;
        let count = self.b.ins().iconst(types::I64, n as i64);
        let site = (u64::from(self.fidx) << 32 | u64::from(pc)) as i64;
        let site = self.b.ins().iconst(types::I64, site);
        let unrun = self.b.ins().iconst(types::I64, i64::from(unrun));
        let target = self.b.ins().iconst(ptr, self.tramps.limit);
        let call = self.b.ins().call_indirect(
            sig,
            target,
            &[ctx, value, argp, count, site, self.depth, unrun],
        );
        let v = self.b.inst_results(call)[0];
        let kind = self
            .b
            .ins()
            .load(types::I64, flags, ctx, ctx_offset::TRAP_KIND);
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, kind, 0);
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], self.unwind, &[]);
        self.b.switch_to_block(cont);
        if let Some(fuel) = self.fuel {
            let left = self.b.ins().load(types::I64, flags, ctx, ctx_offset::FUEL);
            self.b.def_var(fuel, left);
        }
        if let Some((_, len)) = self.mem {
            let now = self
                .b
                .ins()
                .load(types::I64, flags, ctx, ctx_offset::MEM_LEN);
            self.b.def_var(len, now);
        }
        v
    }
}

//! An open native function's calls (see [`crate::native`]): a callee
//! without native code runs in the interpreter, through the trampoline a
//! closed function's call at the stack limit takes (see `limit`), and the
//! function goes on with its value; a `calli` looks its value up in the
//! natives' table and calls the native code it finds, or the interpreter;
//! a callee that bails is called again in the interpreter.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData, Value, types};

use super::{CallValue, FuncLower, NativeTarget};
use crate::native::{self, ctx_offset};

impl FuncLower<'_, '_> {
    /// `d = value(a, .., a+n-1)` in the interpreter.
    pub(super) fn interpreted(&mut self, pc: u32, d: u8, value: Value, a: u8, n: u8) {
        let args: Vec<Value> = (0..n).map(|i| self.get(a.wrapping_add(i))).collect();
        let v = self.limit_call(pc, value, &args);
        self.set(d, v);
    }

    /// An open function's `calli`: the value's entry in the natives'
    /// table, called natively when it has an address and the call's arity
    /// (whatever the function's kind: see [`native::table_params`]); any
    /// other value goes to the interpreter, which calls it or traps.
    ///
    /// A site whose call target the profile found dominant when the
    /// function was compiled (`direct`) first compares the value with that
    /// function and calls it directly, a call Cranelift's inliner may
    /// inline (see `jit::inline`); any other value takes the table.
    pub(super) fn calli_open(&mut self, pc: u32, d: u8, f: u8, a: u8, n: u8) {
        let ctx = self.ctx;
        let x = self.get(f);
        let join = self.b.create_block();
        if let Some(&g) = self.direct.get(&pc) {
            let hit = self.b.create_block();
            let other = self.b.create_block();
            let is_g = self.b.ins().icmp_imm_s(IntCC::Equal, x, i64::from(g));
            self.b.ins().brif(is_g, hit, &[], other, &[]);
            self.b.switch_to_block(hit);
            let target = NativeTarget::Direct(self.refs[&g]);
            let may_bail = self
                .open
                .is_some_and(|k| k[g as usize] == native::Native::Bails);
            self.native_call(pc, d, target, Some(CallValue::Index(g)), a, n, may_bail);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(other);
        }
        let inside = crate::codegen::table::in_table(&mut self.b, ctx, x);
        let look = self.b.create_block();
        let call = self.b.create_block();
        let interp = self.b.create_block();
        self.b.ins().brif(inside, look, &[], interp, &[]);
        self.b.switch_to_block(look);
        let (addr, ok) = crate::codegen::table::table_entry(&mut self.b, ctx, x, n, true);
        self.b.ins().brif(ok, call, &[], interp, &[]);
        self.b.switch_to_block(call);
        let sig = self.sigs[&n];
        let target = NativeTarget::Indirect(sig, addr);
        self.native_call(pc, d, target, Some(CallValue::Dynamic(x)), a, n, true);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(interp);
        self.interpreted(pc, d, x, a, n);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
    }

    /// In the block a native call's trap leads to: a bail (the callee had
    /// no side effects) clears the trap and calls the interpreter for the
    /// callee, then goes on to `join`; any other trap unwinds.
    pub(super) fn retry_bail(
        &mut self,
        pc: u32,
        d: u8,
        value: CallValue,
        args: &[Value],
        join: Block,
    ) {
        let flags = MemFlagsData::trusted();
        let ctx = self.ctx;
        let kind = self
            .b
            .ins()
            .load(types::I64, flags, ctx, ctx_offset::TRAP_KIND);
        let bailed = self
            .b
            .ins()
            .icmp_imm_s(IntCC::Equal, kind, native::TRAP_BAIL as i64);
        let retry = self.b.create_block();
        self.b.set_cold_block(retry);
        self.b.ins().brif(bailed, retry, &[], self.unwind, &[]);
        self.b.switch_to_block(retry);
        let none = self.b.ins().iconst(types::I64, native::TRAP_NONE as i64);
        self.b.ins().store(flags, none, ctx, ctx_offset::TRAP_KIND);
        let value = self.call_value(value);
        let v = self.limit_call(pc, value, args);
        self.set(d, v);
        self.b.ins().jump(join, &[]);
    }
}

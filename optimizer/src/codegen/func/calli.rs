//! A closed or bailing native function's `calli` (see [`crate::native`];
//! an open one's is in `open`).

use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types;

use super::{CallValue, FuncLower, NativeTarget};
use crate::codegen::table::{in_table, table_entry};
use crate::native;

impl FuncLower<'_, '_> {
    /// A bailing function's `calli` (see [`crate::native`]): the function
    /// value's entry in the natives' table, called natively if it has an
    /// address and the call's arity; any other value (out of the table, no
    /// native code a bailing function may call, another arity) bails.
    pub(super) fn calli(&mut self, pc: u32, d: u8, f: u8, a: u8, n: u8) {
        let ctx = self.ctx;
        let x = self.get(f);
        let inside = in_table(&mut self.b, ctx, x);
        self.check(inside, native::TRAP_BAIL, pc, None);
        let (addr, ok) = table_entry(&mut self.b, ctx, x, n, false);
        self.check(ok, native::TRAP_BAIL, pc, None);
        let sig = self.sigs[&n];
        self.native_call(pc, d, NativeTarget::Indirect(sig, addr), None, a, n, false);
    }

    /// A closed function's `calli`: the value compared against every
    /// function of the call's arity (all closed, at most
    /// [`native::MAX_CALLI_TARGETS`]) and that one called directly; any
    /// other value is the interpreter's trap, recorded with the value (see
    /// [`native::NativeTrap::to_trap`]).
    pub(super) fn calli_closed(&mut self, pc: u32, d: u8, f: u8, a: u8, n: u8) {
        let x = self.get(f);
        let join = self.b.create_block();
        let targets: Vec<u32> = native::calli_targets(self.program, n).collect();
        for g in targets {
            let call = self.b.create_block();
            let next = self.b.create_block();
            let is = self.b.ins().icmp_imm_s(IntCC::Equal, x, i64::from(g));
            self.b.ins().brif(is, call, &[], next, &[]);
            self.b.switch_to_block(call);
            let target = NativeTarget::Direct(self.refs[&g]);
            self.native_call(pc, d, target, Some(CallValue::Index(g)), a, n, false);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(next);
        }
        let never = self.b.ins().iconst(types::I8, 0);
        self.check(never, native::TRAP_BAD_FUNCTION, pc, Some(x));
        // Nothing reaches here: the check above always traps.
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
    }
}

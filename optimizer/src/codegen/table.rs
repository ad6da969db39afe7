//! The natives' table (`NativeCtx::table`, see `jit::natives::Table`) as
//! compiled code reads it: a `calli` looking its function value up, in a
//! region, a bailing function or an open one.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::FunctionBuilder;

use crate::native::ctx_offset;

/// Whether function value `x` is inside the natives' table (unsigned: a
/// negative value is out of it too).
pub(crate) fn in_table(b: &mut FunctionBuilder<'_>, ctx: Value, x: Value) -> Value {
    let ro = MemFlagsData::trusted().with_readonly();
    let len = b.ins().load(types::I64, ro, ctx, ctx_offset::TABLE_LEN);
    b.ins().icmp(IntCC::UnsignedLessThan, x, len)
}

/// The natives' table entry of function value `x` (inside the table, see
/// [`in_table`]): its native code's address, and whether that may be
/// called with `n` arguments: by a bailing function or a region (`open`
/// false: the whole parameters word, which [`crate::native::table_params`] marks
/// for the functions they may not call), or by an open function (`open`:
/// the low half). The address word changes once, from 0, when a later
/// batch compiles the function (see `jit::natives::Table`): a read that
/// misses it finds no native code, as before.
pub(crate) fn table_entry(
    b: &mut FunctionBuilder<'_>,
    ctx: Value,
    x: Value,
    n: u8,
    open: bool,
) -> (Value, Value) {
    let ro = MemFlagsData::trusted().with_readonly();
    let ptr = b.func.dfg.value_type(ctx);
    let table = b.ins().load(ptr, ro, ctx, ctx_offset::TABLE);
    let index = if ptr == types::I64 {
        x
    } else {
        b.ins().ireduce(ptr, x)
    };
    let offset = b.ins().imul_imm_u(index, 16);
    let entry = b.ins().iadd(table, offset);
    let addr = b.ins().load(ptr, ro, entry, 0);
    let params = b.ins().load(types::I64, ro, entry, 8);
    let params = if open {
        b.ins().band_imm_u(params, 0xffff_ffff)
    } else {
        params
    };
    let has = b.ins().icmp_imm_s(IntCC::NotEqual, addr, 0);
    let fits = b.ins().icmp_imm_s(IntCC::Equal, params, i64::from(n));
    (addr, b.ins().band(has, fits))
}

//! One function body: validation, locals, and each operator to its
//! translation.

use toyvm_vm::program::MAX_REGS;
use wasmparser::{FuncValidatorAllocations, Operator as O};

use crate::cond::Cond;
use crate::emit::Width;
use crate::func::{Builder, Built, Frame, FrameKind, Shared};
use crate::module::Body;
use crate::ops::{Arith, DivOp, FloatBits, Unary};
use crate::{Error, Result};

/// Validates and translates the body of WebAssembly function `index`.
pub fn translate(shared: &Shared<'_>, index: u32, name: &str, body: Body<'_>) -> Result<Built> {
    let fail = |offset: usize, message: String| Error::InvalidFunction {
        index,
        name: name.to_owned(),
        offset,
        message,
    };
    let wasm_err =
        |e: wasmparser::BinaryReaderError| fail(e.offset() as usize, e.message().to_owned());
    let mut validator = body
        .validator
        .into_validator(FuncValidatorAllocations::default());
    validator.validate(&body.body).map_err(wasm_err)?;

    let ty = shared.module.func_type(index);
    let mut reader = body.body.get_locals_reader().map_err(wasm_err)?;
    let mut locals = ty.params().len() as u64;
    for _ in 0..reader.get_count() {
        let (n, _) = reader.read().map_err(wasm_err)?;
        locals += n as u64;
        if locals > MAX_REGS as u64 {
            return Err(Error::FunctionTooLarge {
                index,
                name: name.to_owned(),
                offset: reader.original_position() as usize,
                what: format!(
                    "declares more than {MAX_REGS} locals (with its parameters); toyvm has {MAX_REGS} registers per function, for locals and the operand stack"
                ),
            });
        }
    }
    let results = ty.results().len();
    if results > 1 {
        return Err(Error::Unsupported {
            offset: body.body.range().start as usize,
            what: format!("function {index} (`{name}`) returns {results} values"),
        });
    }
    let mut b = Builder::new(shared, index, name, ty.params(), locals as usize);
    let label = b.new_label();
    b.frames.push(Frame {
        kind: FrameKind::Func,
        height: 0,
        results,
        label,
        else_label: None,
        reached: false,
        dead: false,
    });
    let mut ops = body.body.get_operators_reader().map_err(wasm_err)?;
    while !ops.eof() {
        let (op, offset) = ops.read_with_offset().map_err(wasm_err)?;
        b.offset = offset as usize;
        b.operators += 1;
        if operator(&mut b, op)? {
            break;
        }
    }
    b.finish()
}

/// Translates one operator; true at the function's final `end`.
fn operator(b: &mut Builder<'_, '_>, op: O<'_>) -> Result<bool> {
    use Width::*;
    match op {
        O::Unreachable => b.unreachable_()?,
        O::Nop => {}
        O::Block { blockty } => b.block(blockty)?,
        O::Loop { blockty } => b.loop_(blockty)?,
        O::If { blockty } => b.if_(blockty)?,
        O::Else => b.else_()?,
        O::End => return b.end(),
        O::Br { relative_depth } => b.br(relative_depth)?,
        O::BrIf { relative_depth } => b.br_if(relative_depth)?,
        O::BrTable { targets } => b.br_table(&targets)?,
        O::Return => {
            if !b.unreachable {
                b.return_()?;
            }
        }
        O::Call { function_index } => b.call(function_index)?,
        O::CallIndirect { type_index, .. } => b.call_indirect(type_index)?,
        O::Drop => b.drop_()?,
        O::Select | O::TypedSelect { .. } => b.select()?,
        O::LocalGet { local_index } => b.local_get(local_index)?,
        O::LocalSet { local_index } => b.local_set(local_index, false)?,
        O::LocalTee { local_index } => b.local_set(local_index, true)?,
        O::GlobalGet { global_index } => b.global_get(global_index)?,
        O::GlobalSet { global_index } => b.global_set(global_index)?,

        O::I32Load { memarg } | O::F32Load { memarg } => b.load(W32, true, &memarg)?,
        O::I64Load { memarg } | O::F64Load { memarg } => b.load(W64, true, &memarg)?,
        O::I32Load8S { memarg } | O::I64Load8S { memarg } => b.load(W8, true, &memarg)?,
        O::I32Load8U { memarg } | O::I64Load8U { memarg } => b.load(W8, false, &memarg)?,
        O::I32Load16S { memarg } | O::I64Load16S { memarg } => b.load(W16, true, &memarg)?,
        O::I32Load16U { memarg } | O::I64Load16U { memarg } => b.load(W16, false, &memarg)?,
        O::I64Load32S { memarg } => b.load(W32, true, &memarg)?,
        O::I64Load32U { memarg } => b.load(W32, false, &memarg)?,
        O::I32Store { memarg } | O::F32Store { memarg } | O::I64Store32 { memarg } => {
            b.store(W32, &memarg)?
        }
        O::I64Store { memarg } | O::F64Store { memarg } => b.store(W64, &memarg)?,
        O::I32Store8 { memarg } | O::I64Store8 { memarg } => b.store(W8, &memarg)?,
        O::I32Store16 { memarg } | O::I64Store16 { memarg } => b.store(W16, &memarg)?,
        O::MemorySize { .. } => b.memory_size()?,
        O::MemoryGrow { .. } => b.memory_grow()?,
        O::MemoryFill { .. } => b.memory_fill()?,
        O::MemoryCopy { .. } => b.memory_copy()?,
        O::MemoryInit { data_index, .. } => b.memory_init(data_index)?,
        O::DataDrop { data_index } => b.data_drop(data_index)?,
        O::TableCopy { .. } => b.table_copy()?,
        O::TableInit { elem_index, .. } => b.table_init(elem_index)?,
        O::ElemDrop { elem_index } => b.elem_drop(elem_index)?,

        O::I32Const { value } => push_const(b, value as i64)?,
        O::I64Const { value } => push_const(b, value)?,
        O::F32Const { value } => push_const(b, value.bits() as i32 as i64)?,
        O::F64Const { value } => push_const(b, value.bits() as i64)?,

        O::I32Eqz => b.eqz(false)?,
        O::I64Eqz => b.eqz(true)?,
        O::I32Eq => b.compare(Cond::Eq, false)?,
        O::I32Ne => b.compare(Cond::Ne, false)?,
        O::I32LtS => b.compare(Cond::LtS, false)?,
        O::I32LtU => b.compare(Cond::LtU, false)?,
        O::I32GtS => b.compare(Cond::GtS, false)?,
        O::I32GtU => b.compare(Cond::GtU, false)?,
        O::I32LeS => b.compare(Cond::LeS, false)?,
        O::I32LeU => b.compare(Cond::LeU, false)?,
        O::I32GeS => b.compare(Cond::GeS, false)?,
        O::I32GeU => b.compare(Cond::GeU, false)?,
        O::I64Eq => b.compare(Cond::Eq, true)?,
        O::I64Ne => b.compare(Cond::Ne, true)?,
        O::I64LtS => b.compare(Cond::LtS, true)?,
        O::I64LtU => b.compare(Cond::LtU, true)?,
        O::I64GtS => b.compare(Cond::GtS, true)?,
        O::I64GtU => b.compare(Cond::GtU, true)?,
        O::I64LeS => b.compare(Cond::LeS, true)?,
        O::I64LeU => b.compare(Cond::LeU, true)?,
        O::I64GeS => b.compare(Cond::GeS, true)?,
        O::I64GeU => b.compare(Cond::GeU, true)?,

        O::I32Clz => b.unary(Unary::Clz, false)?,
        O::I32Ctz => b.unary(Unary::Ctz, false)?,
        O::I32Popcnt => b.unary(Unary::Popcnt, false)?,
        O::I64Clz => b.unary(Unary::Clz, true)?,
        O::I64Ctz => b.unary(Unary::Ctz, true)?,
        O::I64Popcnt => b.unary(Unary::Popcnt, true)?,
        O::I32Extend8S | O::I64Extend8S => b.unary(Unary::Extend8, true)?,
        O::I32Extend16S | O::I64Extend16S => b.unary(Unary::Extend16, true)?,
        O::I64Extend32S | O::I32WrapI64 => b.unary(Unary::Extend32, true)?,
        O::I64ExtendI32U => b.unary(Unary::ZeroExtend32, true)?,
        // Already sign-extended / raw bits: nothing to do.
        O::I64ExtendI32S
        | O::I32ReinterpretF32
        | O::F32ReinterpretI32
        | O::I64ReinterpretF64
        | O::F64ReinterpretI64 => {}

        O::I32Add => b.arith(Arith::Add, false)?,
        O::I32Sub => b.arith(Arith::Sub, false)?,
        O::I32Mul => b.arith(Arith::Mul, false)?,
        O::I32And => b.arith(Arith::And, false)?,
        O::I32Or => b.arith(Arith::Or, false)?,
        O::I32Xor => b.arith(Arith::Xor, false)?,
        O::I32Shl => b.arith(Arith::Shl, false)?,
        O::I32ShrS => b.arith(Arith::ShrS, false)?,
        O::I32ShrU => b.arith(Arith::ShrU, false)?,
        O::I32Rotl => b.arith(Arith::Rotl, false)?,
        O::I32Rotr => b.arith(Arith::Rotr, false)?,
        O::I64Add => b.arith(Arith::Add, true)?,
        O::I64Sub => b.arith(Arith::Sub, true)?,
        O::I64Mul => b.arith(Arith::Mul, true)?,
        O::I64And => b.arith(Arith::And, true)?,
        O::I64Or => b.arith(Arith::Or, true)?,
        O::I64Xor => b.arith(Arith::Xor, true)?,
        O::I64Shl => b.arith(Arith::Shl, true)?,
        O::I64ShrS => b.arith(Arith::ShrS, true)?,
        O::I64ShrU => b.arith(Arith::ShrU, true)?,
        O::I64Rotl => b.arith(Arith::Rotl, true)?,
        O::I64Rotr => b.arith(Arith::Rotr, true)?,
        O::I32DivS => b.divide(DivOp::DivS, false)?,
        O::I32DivU => b.divide(DivOp::DivU, false)?,
        O::I32RemS => b.divide(DivOp::RemS, false)?,
        O::I32RemU => b.divide(DivOp::RemU, false)?,
        O::I64DivS => b.divide(DivOp::DivS, true)?,
        O::I64DivU => b.divide(DivOp::DivU, true)?,
        O::I64RemS => b.divide(DivOp::RemS, true)?,
        O::I64RemU => b.divide(DivOp::RemU, true)?,

        O::F32Abs => b.float_bits(FloatBits::Abs, false)?,
        O::F32Neg => b.float_bits(FloatBits::Neg, false)?,
        O::F32Copysign => b.float_bits(FloatBits::Copysign, false)?,
        O::F64Abs => b.float_bits(FloatBits::Abs, true)?,
        O::F64Neg => b.float_bits(FloatBits::Neg, true)?,
        O::F64Copysign => b.float_bits(FloatBits::Copysign, true)?,

        op => match float_name(&op) {
            Some(name) => b.unsupported_float(name)?,
            None => {
                return Err(Error::Unsupported {
                    offset: b.offset,
                    what: format!("operator {op:?} in function {} (`{}`)", b.index, b.name),
                });
            }
        },
    }
    Ok(false)
}

fn push_const(b: &mut Builder<'_, '_>, k: i64) -> Result<()> {
    if b.unreachable {
        return Ok(());
    }
    b.push(crate::func::Val::Const(k))
}

/// The WebAssembly name of a float operator that computes (and traps
/// here), if `op` is one.
pub fn float_name(op: &O<'_>) -> Option<&'static str> {
    Some(match op {
        O::F32Eq => "f32.eq",
        O::F32Ne => "f32.ne",
        O::F32Lt => "f32.lt",
        O::F32Gt => "f32.gt",
        O::F32Le => "f32.le",
        O::F32Ge => "f32.ge",
        O::F64Eq => "f64.eq",
        O::F64Ne => "f64.ne",
        O::F64Lt => "f64.lt",
        O::F64Gt => "f64.gt",
        O::F64Le => "f64.le",
        O::F64Ge => "f64.ge",
        O::F32Ceil => "f32.ceil",
        O::F32Floor => "f32.floor",
        O::F32Trunc => "f32.trunc",
        O::F32Nearest => "f32.nearest",
        O::F32Sqrt => "f32.sqrt",
        O::F32Add => "f32.add",
        O::F32Sub => "f32.sub",
        O::F32Mul => "f32.mul",
        O::F32Div => "f32.div",
        O::F32Min => "f32.min",
        O::F32Max => "f32.max",
        O::F64Ceil => "f64.ceil",
        O::F64Floor => "f64.floor",
        O::F64Trunc => "f64.trunc",
        O::F64Nearest => "f64.nearest",
        O::F64Sqrt => "f64.sqrt",
        O::F64Add => "f64.add",
        O::F64Sub => "f64.sub",
        O::F64Mul => "f64.mul",
        O::F64Div => "f64.div",
        O::F64Min => "f64.min",
        O::F64Max => "f64.max",
        O::I32TruncF32S => "i32.trunc_f32_s",
        O::I32TruncF32U => "i32.trunc_f32_u",
        O::I32TruncF64S => "i32.trunc_f64_s",
        O::I32TruncF64U => "i32.trunc_f64_u",
        O::I64TruncF32S => "i64.trunc_f32_s",
        O::I64TruncF32U => "i64.trunc_f32_u",
        O::I64TruncF64S => "i64.trunc_f64_s",
        O::I64TruncF64U => "i64.trunc_f64_u",
        O::F32ConvertI32S => "f32.convert_i32_s",
        O::F32ConvertI32U => "f32.convert_i32_u",
        O::F32ConvertI64S => "f32.convert_i64_s",
        O::F32ConvertI64U => "f32.convert_i64_u",
        O::F32DemoteF64 => "f32.demote_f64",
        O::F64ConvertI32S => "f64.convert_i32_s",
        O::F64ConvertI32U => "f64.convert_i32_u",
        O::F64ConvertI64S => "f64.convert_i64_s",
        O::F64ConvertI64U => "f64.convert_i64_u",
        O::F64PromoteF32 => "f64.promote_f32",
        O::I32TruncSatF32S => "i32.trunc_sat_f32_s",
        O::I32TruncSatF32U => "i32.trunc_sat_f32_u",
        O::I32TruncSatF64S => "i32.trunc_sat_f64_s",
        O::I32TruncSatF64U => "i32.trunc_sat_f64_u",
        O::I64TruncSatF32S => "i64.trunc_sat_f32_s",
        O::I64TruncSatF32U => "i64.trunc_sat_f32_u",
        O::I64TruncSatF64S => "i64.trunc_sat_f64_s",
        O::I64TruncSatF64U => "i64.trunc_sat_f64_u",
        _ => return None,
    })
}

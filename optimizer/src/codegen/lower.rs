//! The one lowering of each straight-line instruction (moves, constants,
//! unary and binary arithmetic, `ld`, `st`) and of `loop`'s counter step,
//! shared by the region code generator (`super`) and the native-function
//! code generator ([`super::func`]). What differs between the two is the
//! [`Emit`] trait: where registers live, which registers are known
//! constants (regions track them; native functions do not), and what a
//! failed check does (a region leaves with an `Interpret` exit so the
//! interpreter traps; a native function records the trap and unwinds).
//! The instructions' meaning is `toyvm_vm::semantics`': [`BinOp::eval`]
//! folds constants, [`semantics::word_address`] is the addressing the
//! checks implement, [`semantics::loop_count`] the `loop` counter.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::FunctionBuilder;
use toyvm_vm::isa::{Instr, Reg};
use toyvm_vm::semantics::{self, BinOp, Cond, Rhs, as_binary};

/// Why an instruction fails at run time.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// `div`/`rem` by zero.
    DivisionByZero,
    /// `ld`/`st` outside memory, at word address `addr`.
    OutOfBounds { addr: Value },
}

/// What a code generator provides to the shared lowering.
pub(crate) trait Emit<'b> {
    /// The function being built.
    fn builder(&mut self) -> &mut FunctionBuilder<'b>;
    /// Register `r`'s value here.
    fn get(&mut self, r: Reg) -> Value;
    /// The constant `r` holds here, where the generator tracks constants.
    fn known(&self, r: Reg) -> Option<i64>;
    /// Defines `r` as `v`, which is the constant `k` when `k` is `Some`.
    fn set(&mut self, r: Reg, v: Value, k: Option<i64>);
    /// Guest memory: its host base address and its length in words.
    fn memory(&mut self) -> (Value, Value);
    /// Goes on only if `ok`; otherwise the instruction at `pc` fails.
    fn check(&mut self, ok: Value, pc: u32, fault: Fault);
    /// The instruction at `pc` always fails (a constant zero divisor):
    /// nothing after it in this block runs.
    fn fail(&mut self, pc: u32, fault: Fault);
}

/// Defines `r` as the constant `k`.
fn set_const<'b>(e: &mut impl Emit<'b>, r: Reg, k: i64) {
    let v = e.builder().ins().iconst(types::I64, k);
    e.set(r, v, Some(k));
}

/// Lowers `instr` at `pc` if it is a straight-line instruction (no
/// branch, call, return, host call or I/O); returns whether it was.
pub(crate) fn straight<'b>(e: &mut impl Emit<'b>, pc: u32, instr: &Instr) -> bool {
    if let Some((op, d, a, rhs)) = as_binary(instr) {
        binary(e, pc, op, d, a, rhs);
        return true;
    }
    match *instr {
        Instr::Nop {} => {}
        Instr::Mov { d, a } => {
            let v = e.get(a);
            let k = e.known(a);
            e.set(d, v, k);
        }
        Instr::Li { d, imm } => set_const(e, d, imm as i64),
        Instr::Lk { d, k } => set_const(e, d, k),
        Instr::Fref { d, f } => set_const(e, d, f as i64),
        Instr::Neg { d, a } => match e.known(a) {
            Some(k) => set_const(e, d, k.wrapping_neg()),
            None => {
                let x = e.get(a);
                let v = e.builder().ins().ineg(x);
                e.set(d, v, None);
            }
        },
        Instr::Not { d, a } => match e.known(a) {
            Some(k) => set_const(e, d, !k),
            None => {
                let x = e.get(a);
                let v = e.builder().ins().bnot(x);
                e.set(d, v, None);
            }
        },
        Instr::Ld { d, a, imm } => {
            let p = address(e, pc, a, imm);
            let v = e
                .builder()
                .ins()
                .load(types::I64, MemFlagsData::trusted(), p, 0);
            e.set(d, v, None);
        }
        Instr::St { a, imm, b } => {
            let p = address(e, pc, a, imm);
            let v = e.get(b);
            e.builder().ins().store(MemFlagsData::trusted(), v, p, 0);
        }
        _ => return false,
    }
    true
}

/// The host address of word `a + imm` ([`semantics::word_address`]), after
/// a bounds check: unsigned, so a negative address fails too.
fn address<'b>(e: &mut impl Emit<'b>, pc: u32, a: Reg, imm: i32) -> Value {
    let addr = match e.known(a) {
        Some(k) => e
            .builder()
            .ins()
            .iconst(types::I64, semantics::word_address(k, imm)),
        None => {
            let x = e.get(a);
            e.builder().ins().iadd_imm_s(x, imm as i64)
        }
    };
    let (mem, len) = e.memory();
    let ok = e.builder().ins().icmp(IntCC::UnsignedLessThan, addr, len);
    e.check(ok, pc, Fault::OutOfBounds { addr });
    let b = e.builder();
    let off = b.ins().ishl_imm_u(addr, 3);
    b.ins().iadd(mem, off)
}

/// `d = a op rhs`: folded when both operands are known constants
/// ([`BinOp::eval`]), else computed; `div`/`rem` check their divisor.
fn binary<'b>(e: &mut impl Emit<'b>, pc: u32, op: BinOp, d: Reg, a: Reg, rhs: Rhs) {
    let (y, ky) = match rhs {
        Rhs::Imm(k) => (e.builder().ins().iconst(types::I64, k), Some(k)),
        Rhs::Reg(r) => (e.get(r), e.known(r)),
    };
    if let (Some(kx), Some(ky)) = (e.known(a), ky) {
        match op.eval(kx, ky) {
            Ok(v) => set_const(e, d, v),
            Err(semantics::ArithError::DivisionByZero) => e.fail(pc, Fault::DivisionByZero),
        }
        return;
    }
    let x = e.get(a);
    let v = match pure_binary(e.builder(), op, x, y) {
        Some(v) => v,
        None => match divide(e, pc, op == BinOp::Div, x, y, ky) {
            Some(v) => v,
            None => return,
        },
    };
    e.set(d, v, None);
}

/// Lowers every binary operation that cannot trap (all but `div` and
/// `rem`).
fn pure_binary(b: &mut FunctionBuilder<'_>, op: BinOp, x: Value, y: Value) -> Option<Value> {
    let ins = b.ins();
    Some(match op {
        BinOp::Add => ins.iadd(x, y),
        BinOp::Sub => ins.isub(x, y),
        BinOp::Mul => ins.imul(x, y),
        BinOp::And => ins.band(x, y),
        BinOp::Or => ins.bor(x, y),
        BinOp::Xor => ins.bxor(x, y),
        // Cranelift masks shift amounts to the type's width, as toyvm does.
        BinOp::Shl => ins.ishl(x, y),
        BinOp::Shr => ins.sshr(x, y),
        BinOp::Ushr => ins.ushr(x, y),
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Ltu => {
            let cc = match op {
                BinOp::Eq => cond_cc(Cond::Eq),
                BinOp::Ne => cond_cc(Cond::Ne),
                BinOp::Lt => cond_cc(Cond::Lt),
                BinOp::Le => cond_cc(Cond::Le),
                _ => IntCC::UnsignedLessThan,
            };
            let c = ins.icmp(cc, x, y);
            b.ins().uextend(types::I64, c)
        }
        BinOp::Div | BinOp::Rem => return None,
    })
}

/// `x / y` or `x % y` with toyvm's semantics; `None` when the divisor is
/// the constant 0 (the instruction fails).
fn divide<'b>(
    e: &mut impl Emit<'b>,
    pc: u32,
    div: bool,
    x: Value,
    y: Value,
    ky: Option<i64>,
) -> Option<Value> {
    match ky {
        Some(0) => {
            e.fail(pc, Fault::DivisionByZero);
            None
        }
        // The one overflowing case: `MIN / -1` wraps, `MIN % -1` is 0.
        Some(-1) if div => Some(e.builder().ins().ineg(x)),
        Some(-1) => Some(e.builder().ins().iconst(types::I64, 0)),
        // A constant divisor: Cranelift strength-reduces it.
        Some(_) if div => Some(e.builder().ins().sdiv(x, y)),
        Some(_) => Some(e.builder().ins().srem(x, y)),
        None => {
            let nonzero = e.builder().ins().icmp_imm_s(IntCC::NotEqual, y, 0);
            e.check(nonzero, pc, Fault::DivisionByZero);
            Some(nonzero_divide(e.builder(), div, x, y))
        }
    }
}

/// `x / y` (or `x % y`) for a `y` known to be non-zero, wrapping like the
/// interpreter: divides by 1 instead of -1 and patches the result, so the
/// machine division never overflows.
fn nonzero_divide(b: &mut FunctionBuilder<'_>, div: bool, x: Value, y: Value) -> Value {
    let m1 = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
    let one = b.ins().iconst(types::I64, 1);
    let safe = b.ins().select(m1, one, y);
    let (q, alt) = if div {
        (b.ins().sdiv(x, safe), b.ins().ineg(x))
    } else {
        (b.ins().srem(x, safe), b.ins().iconst(types::I64, 0))
    };
    b.ins().select(m1, alt, q)
}

/// `loop a, b, _`'s counter step ([`semantics::loop_count`]): `a += 1`,
/// wrapping. The branch that follows tests [`semantics::LOOP_COND`].
pub(crate) fn count_up<'b>(e: &mut impl Emit<'b>, a: Reg) {
    match e.known(a) {
        Some(k) => set_const(e, a, semantics::loop_count(k)),
        None => {
            let x = e.get(a);
            let v = e.builder().ins().iadd_imm_s(x, 1);
            e.set(a, v, None);
        }
    }
}

/// The comparison a branch condition makes (signed, as the interpreter's).
pub(crate) fn cond_cc(cond: Cond) -> IntCC {
    match cond {
        Cond::Eq => IntCC::Equal,
        Cond::Ne => IntCC::NotEqual,
        Cond::Lt => IntCC::SignedLessThan,
        Cond::Le => IntCC::SignedLessThanOrEqual,
        Cond::Gt => IntCC::SignedGreaterThan,
        Cond::Ge => IntCC::SignedGreaterThanOrEqual,
    }
}

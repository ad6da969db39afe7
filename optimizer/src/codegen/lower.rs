//! The one lowering of each straight-line instruction (moves, constants,
//! unary and binary arithmetic, `select`, `ld`, `st`, the sized loads and
//! stores, `msize`, `mgrow`) and of `loop`'s counter step,
//! shared by the region code generator (`super`) and the native-function
//! code generator ([`super::func`]). What differs between the two is the
//! [`Emit`] trait: where registers live, which registers are known
//! constants (regions track them; native functions do not), and what a
//! failed check does (a region leaves with an `Interpret` exit so the
//! interpreter traps; a native function records the trap and unwinds).
//! The instructions' meaning is `toyvm_vm::semantics`': [`BinOp::eval`]
//! and [`UnOp::eval`] fold constants, [`semantics::word_address`] and
//! [`semantics::byte_address`] are the addressing the checks implement,
//! [`semantics::loop_count`] the `loop` counter.
//!
//! Memory's length: [`Emit::memory`] gives the current length in bytes
//! where the instruction runs (a Cranelift variable: each generator defines
//! it at entry and again after every call, since a callee may have run
//! `mgrow`), and `mgrow` defines it anew through [`Emit::set_memory_len`],
//! which also stores it to `NativeCtx::mem_len`, the length native callees,
//! host calls and the caller read. So every check is against the length
//! current at that instruction: a word access needs `index < len / 8`, a
//! sized one `0 <= ea` and `ea + size <= len`.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::FunctionBuilder;
use toyvm_vm::isa::{Instr, Reg};
use toyvm_vm::semantics::{self, BinOp, Cond, Rhs, UnOp, as_binary, as_unary};

/// Why an instruction fails at run time.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// `div`/`rem` by zero.
    DivisionByZero,
    /// `ld`/`st` outside memory, at word address `addr`.
    OutOfBounds { addr: Value },
    /// A sized access of `bytes` bytes outside memory, at byte address `addr`.
    BytesOutOfBounds { addr: Value, bytes: u8 },
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
    /// Guest memory: its host base address and its current length in bytes.
    fn memory(&mut self) -> (Value, Value);
    /// Guest memory's capacity in bytes (for `mgrow`).
    fn capacity(&mut self) -> Value;
    /// Makes `len` memory's current length here on (after an `mgrow`),
    /// for this code and, through the context, for callees and the caller.
    fn set_memory_len(&mut self, len: Value);
    /// Goes on only if `ok`; otherwise the instruction at `pc` fails.
    fn check(&mut self, ok: Value, pc: u32, fault: Fault);
    /// The instruction at `pc` always fails (a constant zero divisor):
    /// nothing after it in this block runs.
    fn fail(&mut self, pc: u32, fault: Fault);
    /// The bounds checks that dominate this point, where the generator
    /// tracks them (see [`Proved`]).
    fn proved(&mut self) -> Option<&mut Proved> {
        None
    }
}

/// A place a bounds check proved within memory's current length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// `zext32(a) + end <= len` in bytes: what a sized access at byte
    /// offset `imm >= 0` of `size` bytes with `imm + size <= end` needs.
    Bytes(i64),
    /// Word `a + imm` is below `len / 8`: what a word access at the same
    /// `imm` needs.
    Word(i32),
}

/// Bounds proved by checks that dominate the point being lowered, against
/// the memory length current there, of registers unchanged since: an
/// access they cover needs no check of its own (a store back to the place
/// just loaded, a second field within the first's reach). The generator
/// forgets a register's facts where it is redefined and clears them all
/// where the length is (an `mgrow`, a call) and at a join, where a path
/// the check is not on comes in.
#[derive(Debug, Default)]
pub(crate) struct Proved(Vec<(Reg, Bound)>);

impl Proved {
    fn covers(&self, a: Reg, need: Bound) -> bool {
        self.0.iter().any(|&(r, b)| {
            r == a
                && match (b, need) {
                    (Bound::Bytes(have), Bound::Bytes(end)) => have >= end,
                    (Bound::Word(have), Bound::Word(imm)) => have == imm,
                    _ => false,
                }
        })
    }
    fn add(&mut self, a: Reg, b: Bound) {
        self.0.push((a, b));
    }
    /// `r` was redefined.
    pub(crate) fn forget(&mut self, r: Reg) {
        self.0.retain(|&(a, _)| a != r);
    }
    /// The length was redefined, or a join.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

/// Whether a dominating check already proved `need` of `a`.
fn covered<'b>(e: &mut impl Emit<'b>, a: Reg, need: Bound) -> bool {
    e.known(a).is_none() && e.proved().is_some_and(|p| p.covers(a, need))
}

/// Records that a check proved `b` of `a` (a register whose value is not
/// a known constant).
fn prove<'b>(e: &mut impl Emit<'b>, a: Reg, b: Bound) {
    if e.known(a).is_none()
        && let Some(p) = e.proved()
    {
        p.add(a, b);
    }
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
    if let Some((op, d, a)) = as_unary(instr) {
        unary(e, op, d, a);
        return true;
    }
    if let Some((size, signed)) = instr.op().sized_access() {
        sized(e, pc, instr, size, signed);
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
        Instr::Select { d, c, a, b } => match e.known(c) {
            Some(k) => {
                let r = if semantics::select(k, 1, 0) == 1 {
                    a
                } else {
                    b
                };
                let v = e.get(r);
                let k = e.known(r);
                e.set(d, v, k);
            }
            None => {
                let (c, x, y) = (e.get(c), e.get(a), e.get(b));
                // Cranelift's `select` takes any non-zero `c` as true.
                let v = e.builder().ins().select(c, x, y);
                e.set(d, v, None);
            }
        },
        Instr::Msize { d } => {
            let (_, len) = e.memory();
            e.set(d, len, None);
        }
        Instr::Mgrow { d, a } => grow(e, d, a),
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

/// `d = op a`: folded when `a` is a known constant ([`UnOp::eval`]).
fn unary<'b>(e: &mut impl Emit<'b>, op: UnOp, d: Reg, a: Reg) {
    if let Some(k) = e.known(a) {
        set_const(e, d, op.eval(k));
        return;
    }
    let x = e.get(a);
    let b = e.builder();
    let v = match op {
        UnOp::Neg => b.ins().ineg(x),
        UnOp::Not => b.ins().bnot(x),
        UnOp::Sext8 | UnOp::Sext16 | UnOp::Sext32 => {
            let ty = match op {
                UnOp::Sext8 => types::I8,
                UnOp::Sext16 => types::I16,
                _ => types::I32,
            };
            let low = b.ins().ireduce(ty, x);
            b.ins().sextend(types::I64, low)
        }
        UnOp::Zext32 => {
            let low = b.ins().ireduce(types::I32, x);
            b.ins().uextend(types::I64, low)
        }
        UnOp::Clz => b.ins().clz(x),
        UnOp::Ctz => b.ins().ctz(x),
        UnOp::Popcnt => b.ins().popcnt(x),
    };
    e.set(d, v, None);
}

/// `mgrow d, a` ([`semantics::grown_length`]): grows when `0 <= a <=
/// capacity - len` (one unsigned comparison: a negative `a` is past any
/// capacity), then `d` is the old length; otherwise `d = -1` and the
/// length stays.
fn grow<'b>(e: &mut impl Emit<'b>, d: Reg, a: Reg) {
    let by = e.get(a);
    let (_, len) = e.memory();
    let cap = e.capacity();
    let b = e.builder();
    let room = b.ins().isub(cap, len);
    let ok = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, by, room);
    let grown = b.ins().iadd(len, by);
    let new_len = b.ins().select(ok, grown, len);
    let failed = b.ins().iconst(types::I64, -1);
    let v = b.ins().select(ok, len, failed);
    e.set_memory_len(new_len);
    e.set(d, v, None);
}

/// A sized load or store of `size` bytes (`signed`: a sign-extending
/// load): the byte address [`semantics::byte_address`], checked against
/// the current length ([`semantics::bytes_in_bounds`]), then a
/// little-endian access that may be unaligned.
fn sized<'b>(e: &mut impl Emit<'b>, pc: u32, instr: &Instr, size: u8, signed: bool) {
    let (d_or_b, a, imm, load) = match *instr {
        Instr::Ld8s { d, a, imm }
        | Instr::Ld8u { d, a, imm }
        | Instr::Ld16s { d, a, imm }
        | Instr::Ld16u { d, a, imm }
        | Instr::Ld32s { d, a, imm }
        | Instr::Ld32u { d, a, imm }
        | Instr::Ld64 { d, a, imm } => (d, a, imm, true),
        Instr::St8 { a, imm, b }
        | Instr::St16 { a, imm, b }
        | Instr::St32 { a, imm, b }
        | Instr::St64 { a, imm, b } => (b, a, imm, false),
        _ => unreachable!("`sized_access` names only sized loads and stores"),
    };
    let Some(p) = byte_address(e, pc, a, imm, size) else {
        return;
    };
    let flags = MemFlagsData::new()
        .with_notrap()
        .with_endianness(Endianness::Little);
    let ins = e.builder().ins();
    if load {
        let v = match (size, signed) {
            (1, true) => ins.sload8(types::I64, flags, p, 0),
            (1, false) => ins.uload8(types::I64, flags, p, 0),
            (2, true) => ins.sload16(types::I64, flags, p, 0),
            (2, false) => ins.uload16(types::I64, flags, p, 0),
            (4, true) => ins.sload32(flags, p, 0),
            (4, false) => ins.uload32(flags, p, 0),
            _ => ins.load(types::I64, flags, p, 0),
        };
        e.set(d_or_b, v, None);
    } else {
        let v = e.get(d_or_b);
        let b = e.builder();
        let v = narrow_source(b, v, size);
        let whole = b.func.dfg.value_type(v).bytes() == u32::from(size);
        let ins = b.ins();
        match size {
            _ if whole => ins.store(flags, v, p, 0),
            1 => ins.istore8(flags, v, p, 0),
            2 => ins.istore16(flags, v, p, 0),
            4 => ins.istore32(flags, v, p, 0),
            _ => ins.store(flags, v, p, 0),
        };
    }
}

/// What a store of `size` bytes of `v` may store instead: the narrower
/// value `v` was extended from, when it has at least those bytes (a 32-bit
/// result is kept sign-extended in its register, and a narrow store reads
/// only its low bytes), so that the extension, used by nothing else, is
/// not computed (matmul.wasm's inner loop extended each sum it stored).
fn narrow_source(b: &mut FunctionBuilder<'_>, v: Value, size: u8) -> Value {
    use cranelift_codegen::ir::{Opcode, ValueDef};
    let ValueDef::Result(inst, _) = b.func.dfg.value_def(v) else {
        return v;
    };
    if !matches!(
        b.func.dfg.insts[inst].opcode(),
        Opcode::Sextend | Opcode::Uextend
    ) {
        return v;
    }
    let x = b.func.dfg.inst_args(inst)[0];
    if b.func.dfg.value_type(x).bytes() >= u32::from(size) {
        x
    } else {
        v
    }
}

/// The host address of byte `ea` ([`semantics::byte_address`] of `a` and
/// `imm`) after the bounds check for `size` bytes; `None` when the access
/// always fails (a known negative address), nothing after it running.
fn byte_address<'b>(e: &mut impl Emit<'b>, pc: u32, a: Reg, imm: i32, size: u8) -> Option<Value> {
    let ea = match e.known(a) {
        Some(k) => {
            let ea = semantics::byte_address(k, imm);
            let addr = e.builder().ins().iconst(types::I64, ea);
            if ea < 0 {
                e.fail(pc, Fault::BytesOutOfBounds { addr, bytes: size });
                return None;
            }
            addr
        }
        None => {
            let x = e.get(a);
            let b = e.builder();
            let low = b.ins().ireduce(types::I32, x);
            let low = b.ins().uextend(types::I64, low);
            b.ins().iadd_imm_s(low, imm as i64)
        }
    };
    let (mem, len) = e.memory();
    // A dominating check of the same register reaching as far proved this
    // one (the base is the same 32 bits, the offset not negative); the
    // access after it (a load, then a store back to the same place) goes
    // unchecked.
    let reach = Bound::Bytes(imm as i64 + size as i64);
    if imm >= 0 && covered(e, a, reach) {
        return Some(e.builder().ins().iadd(mem, ea));
    }
    let b = e.builder();
    // `ea + size` cannot wrap (`ea < 2^33`); `ea >= 0` is known when the
    // offset is not negative (the base is 32 bits, unsigned).
    let end = b.ins().iadd_imm_s(ea, size as i64);
    let mut ok = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, len);
    if imm < 0 && e.known(a).is_none() {
        let b = e.builder();
        let nonneg = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, ea, 0);
        ok = b.ins().band(ok, nonneg);
    }
    e.check(
        ok,
        pc,
        Fault::BytesOutOfBounds {
            addr: ea,
            bytes: size,
        },
    );
    if imm >= 0 {
        prove(e, a, reach);
    }
    Some(e.builder().ins().iadd(mem, ea))
}

/// The host address of word `a + imm` ([`semantics::word_address`]), after
/// a bounds check against the whole words within the current length:
/// unsigned, so a negative address fails too.
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
    if !covered(e, a, Bound::Word(imm)) {
        let words = e.builder().ins().ushr_imm_u(len, 3);
        let ok = e.builder().ins().icmp(IntCC::UnsignedLessThan, addr, words);
        e.check(ok, pc, Fault::OutOfBounds { addr });
        prove(e, a, Bound::Word(imm));
    }
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
        None => match divide(e, pc, op, x, y, ky) {
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
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Ltu | BinOp::Leu => {
            let cc = match op {
                BinOp::Eq => cond_cc(Cond::Eq),
                BinOp::Ne => cond_cc(Cond::Ne),
                BinOp::Lt => cond_cc(Cond::Lt),
                BinOp::Le => cond_cc(Cond::Le),
                BinOp::Leu => IntCC::UnsignedLessThanOrEqual,
                _ => IntCC::UnsignedLessThan,
            };
            let c = ins.icmp(cc, x, y);
            b.ins().uextend(types::I64, c)
        }
        // Cranelift rotates by the amount modulo the type's width.
        BinOp::Rotl => ins.rotl(x, y),
        BinOp::Rotr => ins.rotr(x, y),
        BinOp::Rotl32 | BinOp::Rotr32 => {
            let lx = ins.ireduce(types::I32, x);
            let ly = b.ins().ireduce(types::I32, y);
            let r = if op == BinOp::Rotl32 {
                b.ins().rotl(lx, ly)
            } else {
                b.ins().rotr(lx, ly)
            };
            b.ins().sextend(types::I64, r)
        }
        BinOp::AddW | BinOp::SubW | BinOp::MulW | BinOp::ShlW | BinOp::ShrW | BinOp::UshrW => {
            // On the low 32 bits (Cranelift masks an i32 shift's count to
            // 5 bits, as these do), then sign-extended.
            let lx = ins.ireduce(types::I32, x);
            let ly = b.ins().ireduce(types::I32, y);
            let r = match op {
                BinOp::AddW => b.ins().iadd(lx, ly),
                BinOp::SubW => b.ins().isub(lx, ly),
                BinOp::MulW => b.ins().imul(lx, ly),
                BinOp::ShlW => b.ins().ishl(lx, ly),
                BinOp::ShrW => b.ins().sshr(lx, ly),
                _ => b.ins().ushr(lx, ly),
            };
            b.ins().sextend(types::I64, r)
        }
        BinOp::Div | BinOp::Rem | BinOp::Divu | BinOp::Remu => return None,
    })
}

/// `x / y` or `x % y` (signed, or unsigned for `divu`/`remu`) with
/// toyvm's semantics; `None` when the divisor is the constant 0 (the
/// instruction fails).
fn divide<'b>(
    e: &mut impl Emit<'b>,
    pc: u32,
    op: BinOp,
    x: Value,
    y: Value,
    ky: Option<i64>,
) -> Option<Value> {
    let div = op == BinOp::Div;
    if matches!(op, BinOp::Divu | BinOp::Remu) {
        if ky == Some(0) {
            e.fail(pc, Fault::DivisionByZero);
            return None;
        }
        if ky.is_none() {
            let nonzero = e.builder().ins().icmp_imm_s(IntCC::NotEqual, y, 0);
            e.check(nonzero, pc, Fault::DivisionByZero);
        }
        // Unsigned division cannot overflow.
        let ins = e.builder().ins();
        return Some(if op == BinOp::Divu {
            ins.udiv(x, y)
        } else {
            ins.urem(x, y)
        });
    }
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

/// The comparison a branch condition makes (as the interpreter's: signed
/// but for `Ltu`/`Geu`).
pub(crate) fn cond_cc(cond: Cond) -> IntCC {
    match cond {
        Cond::Eq => IntCC::Equal,
        Cond::Ne => IntCC::NotEqual,
        Cond::Lt => IntCC::SignedLessThan,
        Cond::Le => IntCC::SignedLessThanOrEqual,
        Cond::Gt => IntCC::SignedGreaterThan,
        Cond::Ge => IntCC::SignedGreaterThanOrEqual,
        Cond::Ltu => IntCC::UnsignedLessThan,
        Cond::Geu => IntCC::UnsignedGreaterThanOrEqual,
    }
}

/// A `jtab` on `x`: entry `i` of `targets` when `x == i`, `otherwise` for
/// any other value, negative ones included (the interpreter's
/// fall-through). Cranelift's `br_table` takes a 32-bit index, so
/// `cranelift_frontend::Switch` first tests a 64-bit index against
/// `u32::MAX`; an index loaded or extended from 32 bits or fewer
/// (wasm's `br_table` operand always is) needs no such test: its low 32
/// bits, read unsigned, are in the table exactly when it is (a
/// sign-extended negative one reads as at least 2^31, past any table).
/// Short tables stay with `Switch`, which compares them in branches.
pub(crate) fn jump_table(
    b: &mut FunctionBuilder<'_>,
    x: Value,
    targets: &[cranelift_codegen::ir::Block],
    otherwise: cranelift_codegen::ir::Block,
) {
    use cranelift_codegen::ir::{JumpTableData, Opcode, ValueDef};
    let narrow = match b.func.dfg.value_def(x) {
        ValueDef::Result(inst, _) => match b.func.dfg.insts[inst].opcode() {
            Opcode::Sload32
            | Opcode::Uload32
            | Opcode::Sload16
            | Opcode::Uload16
            | Opcode::Sload8
            | Opcode::Uload8 => true,
            Opcode::Sextend | Opcode::Uextend => {
                let arg = b.func.dfg.inst_args(inst)[0];
                b.func.dfg.value_type(arg).bits() <= 32
            }
            _ => false,
        },
        _ => false,
    };
    if !narrow || targets.len() < 4 || u32::try_from(targets.len()).is_err() {
        let mut sw = cranelift_frontend::Switch::new();
        for (i, &t) in targets.iter().enumerate() {
            sw.set_entry(i as u128, t);
        }
        sw.emit(b, x, otherwise);
        return;
    }
    let calls: Vec<_> = targets
        .iter()
        .map(|&t| b.func.dfg.block_call(t, &[]))
        .collect();
    let default = b.func.dfg.block_call(otherwise, &[]);
    let jt = b
        .func
        .create_jump_table(JumpTableData::new(default, &calls));
    let index = b.ins().ireduce(types::I32, x);
    b.ins().br_table(index, jt);
}

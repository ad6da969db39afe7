//! What each arithmetic and comparison instruction computes, and how
//! `ld`/`st` and the sized loads and stores address memory, `mgrow` grows
//! it, `loop` counts and `jtab` picks its target: the one definition the
//! interpreter, the JIT's constant folder and lowering, and the tests'
//! evaluator share.

use crate::isa::{Instr, Reg};

/// Why an operation could not produce a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithError {
    /// A `div`, `divi`, `rem`, `remi`, `divu` or `remu` with a zero
    /// divisor; the interpreter turns it into a division-by-zero trap.
    DivisionByZero,
}

/// A two-operand integer operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `a + b`, wrapping.
    Add,
    /// `a - b`, wrapping.
    Sub,
    /// `a * b`, wrapping.
    Mul,
    /// `a / b`, truncating toward zero; an error when `b == 0`.
    Div,
    /// `a % b`, with the sign of `a`; an error when `b == 0`.
    Rem,
    /// Bitwise `a & b`.
    And,
    /// Bitwise `a | b`.
    Or,
    /// Bitwise `a ^ b`.
    Xor,
    /// `a << (b & 63)`.
    Shl,
    /// `a >> (b & 63)`, arithmetic (sign-filling).
    Shr,
    /// `a >> (b & 63)`, logical (zero-filling).
    Ushr,
    /// `1` if `a == b`, else `0`.
    Eq,
    /// `1` if `a != b`, else `0`.
    Ne,
    /// `1` if `a < b` (signed), else `0`.
    Lt,
    /// `1` if `a <= b` (signed), else `0`.
    Le,
    /// `1` if `a < b` compared as unsigned, else `0`.
    Ltu,
    /// `a / b` as unsigned; an error when `b == 0`.
    Divu,
    /// `a % b` as unsigned; an error when `b == 0`.
    Remu,
    /// `a` rotated left by `b & 63`.
    Rotl,
    /// `a` rotated right by `b & 63`.
    Rotr,
    /// `a`'s low 32 bits rotated left by `b & 31`, sign-extended from 32 bits.
    Rotl32,
    /// `a`'s low 32 bits rotated right by `b & 31`, sign-extended from 32 bits.
    Rotr32,
    /// `1` if `a <= b` compared as unsigned, else `0`.
    Leu,
    /// The low 32 bits of `a + b`, sign-extended (WebAssembly's
    /// `i32.add` on values kept sign-extended, as RV64's `addw`).
    AddW,
    /// The low 32 bits of `a - b`, sign-extended.
    SubW,
    /// The low 32 bits of `a * b`, sign-extended.
    MulW,
    /// The low 32 bits of `a << (b & 31)`, sign-extended.
    ShlW,
    /// `a`'s low 32 bits shifted right arithmetically by `b & 31`.
    ShrW,
    /// `a`'s low 32 bits shifted right logically by `b & 31`,
    /// sign-extended from 32 bits.
    UshrW,
}

impl BinOp {
    /// Applies the operation.  Arithmetic wraps; shifts use the low 6 bits
    /// of the count; comparisons give 0 or 1; `i64::MIN / -1` wraps to
    /// `i64::MIN` (and `% -1` gives 0) rather than trapping, as in the JIT.
    #[inline(always)]
    pub fn eval(self, a: i64, b: i64) -> Result<i64, ArithError> {
        Ok(match self {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => {
                if b == 0 {
                    return Err(ArithError::DivisionByZero);
                }
                a.wrapping_div(b)
            }
            BinOp::Rem => {
                if b == 0 {
                    return Err(ArithError::DivisionByZero);
                }
                a.wrapping_rem(b)
            }
            BinOp::And => a & b,
            BinOp::Or => a | b,
            BinOp::Xor => a ^ b,
            BinOp::Shl => a.wrapping_shl(b as u32),
            BinOp::Shr => a.wrapping_shr(b as u32),
            BinOp::Ushr => (a as u64).wrapping_shr(b as u32) as i64,
            BinOp::Eq => (a == b) as i64,
            BinOp::Ne => (a != b) as i64,
            BinOp::Lt => (a < b) as i64,
            BinOp::Le => (a <= b) as i64,
            BinOp::Ltu => ((a as u64) < (b as u64)) as i64,
            BinOp::Divu => {
                if b == 0 {
                    return Err(ArithError::DivisionByZero);
                }
                ((a as u64) / (b as u64)) as i64
            }
            BinOp::Remu => {
                if b == 0 {
                    return Err(ArithError::DivisionByZero);
                }
                ((a as u64) % (b as u64)) as i64
            }
            // `rotate_*` take the count modulo the width.
            BinOp::Rotl => a.rotate_left(b as u32),
            BinOp::Rotr => a.rotate_right(b as u32),
            BinOp::Rotl32 => (a as u32).rotate_left(b as u32) as i32 as i64,
            BinOp::Rotr32 => (a as u32).rotate_right(b as u32) as i32 as i64,
            BinOp::Leu => ((a as u64) <= (b as u64)) as i64,
            BinOp::AddW => (a as i32).wrapping_add(b as i32) as i64,
            BinOp::SubW => (a as i32).wrapping_sub(b as i32) as i64,
            BinOp::MulW => (a as i32).wrapping_mul(b as i32) as i64,
            // `wrapping_sh*` take the count modulo 32 for i32 and u32.
            BinOp::ShlW => (a as i32).wrapping_shl(b as u32) as i64,
            BinOp::ShrW => (a as i32).wrapping_shr(b as u32) as i64,
            BinOp::UshrW => (a as u32).wrapping_shr(b as u32) as i32 as i64,
        })
    }

    /// Whether the operation can fail (a zero divisor).
    pub fn can_fail(self) -> bool {
        matches!(self, BinOp::Div | BinOp::Rem | BinOp::Divu | BinOp::Remu)
    }
}

/// A one-operand integer operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-a`, wrapping.
    Neg,
    /// Bitwise `!a`.
    Not,
    /// The low 8 bits, sign-extended.
    Sext8,
    /// The low 16 bits, sign-extended.
    Sext16,
    /// The low 32 bits, sign-extended.
    Sext32,
    /// The low 32 bits, zero-extended.
    Zext32,
    /// Leading zero bits (64 for 0).
    Clz,
    /// Trailing zero bits (64 for 0).
    Ctz,
    /// One bits.
    Popcnt,
}

impl UnOp {
    /// Applies the operation (none can fail).
    #[inline(always)]
    pub fn eval(self, a: i64) -> i64 {
        match self {
            UnOp::Neg => a.wrapping_neg(),
            UnOp::Not => !a,
            UnOp::Sext8 => a as i8 as i64,
            UnOp::Sext16 => a as i16 as i64,
            UnOp::Sext32 => a as i32 as i64,
            UnOp::Zext32 => a as u32 as i64,
            UnOp::Clz => a.leading_zeros() as i64,
            UnOp::Ctz => a.trailing_zeros() as i64,
            UnOp::Popcnt => a.count_ones() as i64,
        }
    }
}

/// A structured view of the one-operand instructions: `d = op a`, as
/// `(op, d, a)`; `None` for every other instruction.
pub fn as_unary(i: &Instr) -> Option<(UnOp, Reg, Reg)> {
    use Instr as I;
    Some(match *i {
        I::Neg { d, a } => (UnOp::Neg, d, a),
        I::Not { d, a } => (UnOp::Not, d, a),
        I::Sext8 { d, a } => (UnOp::Sext8, d, a),
        I::Sext16 { d, a } => (UnOp::Sext16, d, a),
        I::Sext32 { d, a } => (UnOp::Sext32, d, a),
        I::Zext32 { d, a } => (UnOp::Zext32, d, a),
        I::Clz { d, a } => (UnOp::Clz, d, a),
        I::Ctz { d, a } => (UnOp::Ctz, d, a),
        I::Popcnt { d, a } => (UnOp::Popcnt, d, a),
        _ => return None,
    })
}

/// `select d, c, a, b`: `a` when `c != 0`, else `b`.
#[inline(always)]
pub fn select(c: i64, a: i64, b: i64) -> i64 {
    if c != 0 { a } else { b }
}

/// A comparison a conditional branch tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cond {
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `a < b`, signed.
    Lt,
    /// `a <= b`, signed.
    Le,
    /// `a > b`, signed.
    Gt,
    /// `a >= b`, signed.
    Ge,
    /// `a < b`, unsigned.
    Ltu,
    /// `a >= b`, unsigned.
    Geu,
}

impl Cond {
    /// Whether `a` and `b` satisfy the comparison (signed but for `Ltu`
    /// and `Geu`), i.e. whether the branch is taken.
    #[inline(always)]
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cond::Eq => a == b,
            Cond::Ne => a != b,
            Cond::Lt => a < b,
            Cond::Le => a <= b,
            Cond::Gt => a > b,
            Cond::Ge => a >= b,
            Cond::Ltu => (a as u64) < (b as u64),
            Cond::Geu => (a as u64) >= (b as u64),
        }
    }

    /// The opposite comparison: `c.negate().holds(a, b) == !c.holds(a, b)`
    /// for all `a`, `b`.
    pub fn negate(self) -> Cond {
        match self {
            Cond::Eq => Cond::Ne,
            Cond::Ne => Cond::Eq,
            Cond::Lt => Cond::Ge,
            Cond::Le => Cond::Gt,
            Cond::Gt => Cond::Le,
            Cond::Ge => Cond::Lt,
            Cond::Ltu => Cond::Geu,
            Cond::Geu => Cond::Ltu,
        }
    }
}

/// The word address an `ld`/`st` with base register value `base` and
/// offset `imm` accesses (wrapping). The access is in bounds when
/// [`word_index`] of it is below the memory's length in words.
#[inline(always)]
pub fn word_address(base: i64, imm: i32) -> i64 {
    base.wrapping_add(imm as i64)
}

/// The memory index of word address `addr`: compared unsigned, so a
/// negative address is past any memory (out of bounds, trapping with
/// `addr` itself).
#[inline(always)]
pub fn word_index(addr: i64) -> usize {
    addr as u64 as usize
}

/// The byte address a sized load or store (`ld8s` .. `st64`) with base
/// register value `base` and offset `imm` accesses: the base's low 32 bits,
/// unsigned, plus the sign-extended offset (WebAssembly's addressing), in
/// 64 bits, so it cannot wrap; it may be negative (then out of bounds).
#[inline(always)]
pub fn byte_address(base: i64, imm: i32) -> i64 {
    (base as u64 & 0xFFFF_FFFF) as i64 + imm as i64
}

/// Whether an access of `size` bytes at byte address `ea` lies inside a
/// memory whose current length is `len` bytes: `0 <= ea` and
/// `ea + size <= len`.
#[inline(always)]
pub fn bytes_in_bounds(ea: i64, size: u8, len: u64) -> bool {
    ea >= 0 && (ea as u64) + size as u64 <= len
}

/// The value a sized load of `size` bytes gives for the little-endian
/// `raw` bits it read (only the low `8 * size` bits count):
/// sign-extended when `signed`, else zero-extended.
#[inline(always)]
pub fn extend_loaded(raw: u64, size: u8, signed: bool) -> i64 {
    match (size, signed) {
        (1, true) => raw as i8 as i64,
        (1, false) => raw as u8 as i64,
        (2, true) => raw as i16 as i64,
        (2, false) => raw as u16 as i64,
        (4, true) => raw as i32 as i64,
        (4, false) => raw as u32 as i64,
        _ => raw as i64,
    }
}

/// `mgrow` on a memory of current length `len` and capacity `cap` bytes,
/// growing by `by` bytes: the new length, or `None` (the length stays,
/// `mgrow` gives -1) when `by < 0` or `len + by > cap`.
#[inline(always)]
pub fn grown_length(len: u64, cap: u64, by: i64) -> Option<u64> {
    // `len <= cap` always, so `cap - len` cannot wrap.
    (by >= 0 && by as u64 <= cap - len).then(|| len + by as u64)
}

/// `loop a, b, target` first steps the counter `a` to `loop_count(a)`
/// (wrapping), then goes to `target` while [`LOOP_COND`] holds of the new
/// count and `b`.
#[inline(always)]
pub fn loop_count(a: i64) -> i64 {
    a.wrapping_add(1)
}

/// The comparison `loop` branches on: the stepped counter `<=` the limit.
pub const LOOP_COND: Cond = Cond::Le;

/// The entry of a `jtab`'s table that index `i` selects; `None` (fall
/// through to the next instruction) when `i` is negative or past the end.
#[inline(always)]
pub fn jtab_entry<T: Copy>(table: &[T], i: i64) -> Option<T> {
    usize::try_from(i).ok().and_then(|i| table.get(i)).copied()
}

/// The right-hand side of a binary operation or comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rhs {
    /// A register operand (the `a op b` forms).
    Reg(Reg),
    /// An immediate, already sign-extended to 64 bits (the `a op imm`
    /// forms, and zero for `jnz`/`jz`).
    Imm(i64),
}

/// A structured view of the arithmetic instructions: `d = a op rhs`, as
/// `(op, d, a, rhs)`; `None` for every other instruction.
pub fn as_binary(i: &Instr) -> Option<(BinOp, Reg, Reg, Rhs)> {
    use BinOp as B;
    use Instr as I;
    let r = |op, d, a, b| Some((op, d, a, Rhs::Reg(b)));
    let k = |op, d, a, imm: i32| Some((op, d, a, Rhs::Imm(imm as i64)));
    match *i {
        I::Add { d, a, b } => r(B::Add, d, a, b),
        I::Sub { d, a, b } => r(B::Sub, d, a, b),
        I::Mul { d, a, b } => r(B::Mul, d, a, b),
        I::Div { d, a, b } => r(B::Div, d, a, b),
        I::Rem { d, a, b } => r(B::Rem, d, a, b),
        I::And { d, a, b } => r(B::And, d, a, b),
        I::Or { d, a, b } => r(B::Or, d, a, b),
        I::Xor { d, a, b } => r(B::Xor, d, a, b),
        I::Shl { d, a, b } => r(B::Shl, d, a, b),
        I::Shr { d, a, b } => r(B::Shr, d, a, b),
        I::Ushr { d, a, b } => r(B::Ushr, d, a, b),
        I::Eq { d, a, b } => r(B::Eq, d, a, b),
        I::Ne { d, a, b } => r(B::Ne, d, a, b),
        I::Lt { d, a, b } => r(B::Lt, d, a, b),
        I::Le { d, a, b } => r(B::Le, d, a, b),
        I::Ltu { d, a, b } => r(B::Ltu, d, a, b),
        I::Addi { d, a, imm } => k(B::Add, d, a, imm),
        I::Subi { d, a, imm } => k(B::Sub, d, a, imm),
        I::Muli { d, a, imm } => k(B::Mul, d, a, imm),
        I::Divi { d, a, imm } => k(B::Div, d, a, imm),
        I::Remi { d, a, imm } => k(B::Rem, d, a, imm),
        I::Andi { d, a, imm } => k(B::And, d, a, imm),
        I::Ori { d, a, imm } => k(B::Or, d, a, imm),
        I::Xori { d, a, imm } => k(B::Xor, d, a, imm),
        I::Shli { d, a, imm } => k(B::Shl, d, a, imm),
        I::Shri { d, a, imm } => k(B::Shr, d, a, imm),
        I::Ushri { d, a, imm } => k(B::Ushr, d, a, imm),
        I::Eqi { d, a, imm } => k(B::Eq, d, a, imm),
        I::Nei { d, a, imm } => k(B::Ne, d, a, imm),
        I::Lti { d, a, imm } => k(B::Lt, d, a, imm),
        I::Lei { d, a, imm } => k(B::Le, d, a, imm),
        I::Ltui { d, a, imm } => k(B::Ltu, d, a, imm),
        I::Divu { d, a, b } => r(B::Divu, d, a, b),
        I::Remu { d, a, b } => r(B::Remu, d, a, b),
        I::Rotl { d, a, b } => r(B::Rotl, d, a, b),
        I::Rotr { d, a, b } => r(B::Rotr, d, a, b),
        I::Rotl32 { d, a, b } => r(B::Rotl32, d, a, b),
        I::Rotr32 { d, a, b } => r(B::Rotr32, d, a, b),
        I::Leu { d, a, b } => r(B::Leu, d, a, b),
        I::Addw { d, a, b } => r(B::AddW, d, a, b),
        I::Subw { d, a, b } => r(B::SubW, d, a, b),
        I::Mulw { d, a, b } => r(B::MulW, d, a, b),
        I::Shlw { d, a, b } => r(B::ShlW, d, a, b),
        I::Shrw { d, a, b } => r(B::ShrW, d, a, b),
        I::Ushrw { d, a, b } => r(B::UshrW, d, a, b),
        I::Addiw { d, a, imm } => k(B::AddW, d, a, imm),
        I::Muliw { d, a, imm } => k(B::MulW, d, a, imm),
        I::Shliw { d, a, imm } => k(B::ShlW, d, a, imm),
        I::Ushriw { d, a, imm } => k(B::UshrW, d, a, imm),
        _ => None,
    }
}

/// A structured view of the compare-and-branch instructions (`jnz`/`jz`
/// compare against zero; `loop` is not included: it also increments), as
/// `(cond, a, rhs, target)`: jump to `target` when `cond.holds(a, rhs)`;
/// `None` for every other instruction.
pub fn as_branch(i: &Instr) -> Option<(Cond, Reg, Rhs, u32)> {
    use Instr as I;
    let r = |c, a, b, t| Some((c, a, Rhs::Reg(b), t));
    let k = |c, a, imm: i32, t| Some((c, a, Rhs::Imm(imm as i64), t));
    match *i {
        I::Jnz { a, target } => Some((Cond::Ne, a, Rhs::Imm(0), target)),
        I::Jz { a, target } => Some((Cond::Eq, a, Rhs::Imm(0), target)),
        I::Beq { a, b, target } => r(Cond::Eq, a, b, target),
        I::Bne { a, b, target } => r(Cond::Ne, a, b, target),
        I::Blt { a, b, target } => r(Cond::Lt, a, b, target),
        I::Ble { a, b, target } => r(Cond::Le, a, b, target),
        I::Bgt { a, b, target } => r(Cond::Gt, a, b, target),
        I::Bge { a, b, target } => r(Cond::Ge, a, b, target),
        I::Beqi { a, imm, target } => k(Cond::Eq, a, imm, target),
        I::Bnei { a, imm, target } => k(Cond::Ne, a, imm, target),
        I::Blti { a, imm, target } => k(Cond::Lt, a, imm, target),
        I::Blei { a, imm, target } => k(Cond::Le, a, imm, target),
        I::Bgti { a, imm, target } => k(Cond::Gt, a, imm, target),
        I::Bgei { a, imm, target } => k(Cond::Ge, a, imm, target),
        I::Bltu { a, b, target } => r(Cond::Ltu, a, b, target),
        I::Bgeu { a, b, target } => r(Cond::Geu, a, b, target),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_edge_cases_do_not_panic() {
        assert_eq!(BinOp::Div.eval(7, 0), Err(ArithError::DivisionByZero));
        assert_eq!(BinOp::Rem.eval(7, 0), Err(ArithError::DivisionByZero));
        assert_eq!(BinOp::Div.eval(i64::MIN, -1), Ok(i64::MIN));
        assert_eq!(BinOp::Rem.eval(i64::MIN, -1), Ok(0));
        assert_eq!(BinOp::Rem.eval(-7, 2), Ok(-1));
    }

    #[test]
    fn shifts_mask_their_count() {
        assert_eq!(BinOp::Shl.eval(1, 65), Ok(2));
        assert_eq!(BinOp::Shr.eval(-8, 1), Ok(-4));
        assert_eq!(BinOp::Ushr.eval(-1, 60), Ok(15));
    }

    #[test]
    fn unsigned_division_traps_on_zero_and_divides_as_unsigned() {
        assert_eq!(BinOp::Divu.eval(7, 0), Err(ArithError::DivisionByZero));
        assert_eq!(BinOp::Remu.eval(7, 0), Err(ArithError::DivisionByZero));
        assert_eq!(BinOp::Divu.eval(-1, 2), Ok(i64::MAX));
        assert_eq!(BinOp::Remu.eval(-1, 10), Ok(5)); // 2^64 - 1 = 18446744073709551615
        assert_eq!(BinOp::Divu.eval(i64::MIN, -1), Ok(0));
        assert_eq!(BinOp::Remu.eval(i64::MIN, -1), Ok(i64::MIN));
        assert!(BinOp::Divu.can_fail() && BinOp::Remu.can_fail() && !BinOp::Rotl.can_fail());
    }

    #[test]
    fn rotates_take_their_count_modulo_the_width() {
        let x = 0x0123_4567_89ab_cdef_i64;
        assert_eq!(BinOp::Rotl.eval(x, 4), Ok(0x1234_5678_9abc_def0));
        assert_eq!(BinOp::Rotl.eval(x, 64 + 4), BinOp::Rotl.eval(x, 4));
        assert_eq!(BinOp::Rotl.eval(x, -60), BinOp::Rotl.eval(x, 4));
        assert_eq!(BinOp::Rotr.eval(x, 4), Ok(0xf012_3456_789a_bcde_u64 as i64));
        assert_eq!(BinOp::Rotr.eval(x, 0), Ok(x));
        // 32-bit: only the low 32 bits rotate, the result is sign-extended.
        assert_eq!(BinOp::Rotl32.eval(0x8000_0001, 1), Ok(3));
        assert_eq!(BinOp::Rotl32.eval(0x4000_0000, 1), Ok(i32::MIN as i64));
        assert_eq!(BinOp::Rotl32.eval(0x4000_0000, 33), Ok(i32::MIN as i64));
        assert_eq!(BinOp::Rotr32.eval(1, 1), Ok(i32::MIN as i64));
        assert_eq!(BinOp::Rotr32.eval(0x7fff_ffff_0000_0001, 32), Ok(1));
        assert_eq!(BinOp::Rotr32.eval(3, -1), BinOp::Rotr32.eval(3, 31));
        assert_eq!(BinOp::Leu.eval(-1, 0), Ok(0));
        assert_eq!(BinOp::Leu.eval(0, -1), Ok(1));
        assert_eq!(BinOp::Leu.eval(5, 5), Ok(1));
        // The 32-bit forms: the low 32 bits, sign-extended; counts modulo 32.
        assert_eq!(BinOp::AddW.eval(i32::MAX as i64, 1), Ok(i32::MIN as i64));
        assert_eq!(BinOp::AddW.eval(0x1_0000_0005, 2), Ok(7));
        assert_eq!(BinOp::SubW.eval(i32::MIN as i64, 1), Ok(i32::MAX as i64));
        assert_eq!(BinOp::MulW.eval(0x10000, 0x10000), Ok(0));
        assert_eq!(BinOp::MulW.eval(0x8000, 0x10000), Ok(i32::MIN as i64));
        assert_eq!(BinOp::ShlW.eval(1, 31), Ok(i32::MIN as i64));
        assert_eq!(BinOp::ShlW.eval(1, 33), Ok(2));
        assert_eq!(BinOp::ShrW.eval(i32::MIN as i64, 31), Ok(-1));
        assert_eq!(BinOp::ShrW.eval(0x1_8000_0000, 32), Ok(i32::MIN as i64));
        assert_eq!(BinOp::UshrW.eval(-1, 1), Ok(i32::MAX as i64));
        assert_eq!(BinOp::UshrW.eval(-1, 0), Ok(-1));
        assert_eq!(BinOp::UshrW.eval(i32::MIN as i64, 63), Ok(1));
    }

    #[test]
    fn unary_operations_at_their_edges() {
        assert_eq!(UnOp::Clz.eval(0), 64);
        assert_eq!(UnOp::Ctz.eval(0), 64);
        assert_eq!(UnOp::Clz.eval(-1), 0);
        assert_eq!(UnOp::Clz.eval(1), 63);
        assert_eq!(UnOp::Ctz.eval(i64::MIN), 63);
        assert_eq!(UnOp::Popcnt.eval(-1), 64);
        assert_eq!(UnOp::Popcnt.eval(0), 0);
        assert_eq!(UnOp::Popcnt.eval(0x0f0f), 8);
        assert_eq!(UnOp::Sext8.eval(0x1ff), -1);
        assert_eq!(UnOp::Sext8.eval(0x17f), 127);
        assert_eq!(UnOp::Sext16.eval(0x8000), -32768);
        assert_eq!(UnOp::Sext32.eval(0x1_8000_0000), i32::MIN as i64);
        assert_eq!(UnOp::Sext32.eval(0x7fff_ffff), i32::MAX as i64);
        assert_eq!(UnOp::Zext32.eval(-1), 0xffff_ffff);
        assert_eq!(UnOp::Neg.eval(i64::MIN), i64::MIN);
        assert_eq!(UnOp::Not.eval(0), -1);
        assert_eq!(
            (select(5, 1, 2), select(0, 1, 2), select(-1, 1, 2)),
            (1, 2, 1)
        );
    }

    #[test]
    fn unsigned_branches_and_their_negations() {
        assert!(Cond::Ltu.holds(1, -1) && !Cond::Lt.holds(1, -1));
        assert!(Cond::Geu.holds(-1, 1) && !Cond::Ge.holds(-1, 1));
        for c in [Cond::Ltu, Cond::Geu] {
            for (a, b) in [(0, 0), (1, -1), (-1, 1), (i64::MIN, i64::MAX)] {
                assert_eq!(c.negate().holds(a, b), !c.holds(a, b), "{c:?} {a} {b}");
            }
        }
    }

    #[test]
    fn byte_addresses_use_the_low_32_bits_unsigned_plus_the_offset() {
        assert_eq!(byte_address(5, 3), 8);
        assert_eq!(byte_address(-1, 0), 0xffff_ffff);
        assert_eq!(byte_address(0x1_0000_0010, -16), 0);
        assert_eq!(byte_address(0, -1), -1);
        assert_eq!(byte_address(-1, i32::MAX), 0xffff_ffff + i32::MAX as i64);
        // In bounds: 0 <= ea and ea + size <= len.
        assert!(bytes_in_bounds(0, 8, 8));
        assert!(!bytes_in_bounds(1, 8, 8));
        assert!(bytes_in_bounds(7, 1, 8));
        assert!(!bytes_in_bounds(8, 1, 8));
        assert!(!bytes_in_bounds(-1, 1, 8));
        assert!(!bytes_in_bounds(0, 1, 0));
    }

    #[test]
    fn loads_extend_by_their_size_and_sign() {
        let raw = 0xffff_ffff_ffff_ff80_u64;
        assert_eq!(extend_loaded(raw, 1, true), -128);
        assert_eq!(extend_loaded(raw, 1, false), 0x80);
        assert_eq!(extend_loaded(raw, 2, true), -128);
        assert_eq!(extend_loaded(raw, 2, false), 0xff80);
        assert_eq!(extend_loaded(raw, 4, true), -128);
        assert_eq!(extend_loaded(raw, 4, false), 0xffff_ff80);
        assert_eq!(extend_loaded(raw, 8, false), -128);
        assert_eq!(extend_loaded(0x7f, 1, true), 127);
    }

    #[test]
    fn growing_stays_within_the_capacity() {
        assert_eq!(grown_length(8, 64, 56), Some(64));
        assert_eq!(grown_length(8, 64, 57), None);
        assert_eq!(grown_length(8, 64, 0), Some(8));
        assert_eq!(grown_length(8, 64, 3), Some(11));
        assert_eq!(grown_length(8, 64, -1), None);
        assert_eq!(grown_length(8, 64, i64::MAX), None);
        assert_eq!(grown_length(64, 64, 1), None);
    }

    #[test]
    fn every_arithmetic_opcode_has_a_structured_view() {
        use crate::isa::{Op, Operand};
        for &op in crate::isa::Op::ALL {
            let ops: Vec<Operand> = op
                .operand_kinds()
                .iter()
                .map(|k| match k {
                    crate::isa::OperandKind::Reg => Operand::Reg(1),
                    crate::isa::OperandKind::Imm => Operand::Imm(3),
                    crate::isa::OperandKind::Wide => Operand::Wide(3),
                    crate::isa::OperandKind::Label => Operand::Label(0),
                    crate::isa::OperandKind::Func => Operand::Func(0),
                    crate::isa::OperandKind::Count => Operand::Count(0),
                    crate::isa::OperandKind::Table => Operand::Table(0),
                    crate::isa::OperandKind::HostFn => Operand::HostFn(0),
                })
                .collect();
            let i = Instr::from_operands(op, &ops).unwrap();
            let arith = (0x10..0x30).contains(&(op as u8))
                || (0x80..=0x86).contains(&(op as u8))
                || (0x88..=0x91).contains(&(op as u8));
            assert_eq!(as_binary(&i).is_some(), arith, "{op}");
            let branch = op.is_conditional_branch() && op != Op::Loop;
            assert_eq!(as_branch(&i).is_some(), branch, "{op}");
            let unary = (0x05..=0x0d).contains(&(op as u8));
            assert_eq!(as_unary(&i).is_some(), unary, "{op}");
        }
    }
}

//! What each arithmetic and comparison instruction computes, and how
//! `ld`/`st` address memory, `loop` counts and `jtab` picks its target: the
//! one definition the interpreter, the JIT's constant folder and lowering,
//! and the tests' evaluator share.

use crate::isa::{Instr, Reg};

/// Why an operation could not produce a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithError {
    /// A `div`, `divi`, `rem` or `remi` with a zero divisor; the
    /// interpreter turns it into a division-by-zero trap.
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
        })
    }
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
}

impl Cond {
    /// Whether `a` and `b` (signed) satisfy the comparison, i.e. whether the
    /// branch is taken.
    #[inline(always)]
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cond::Eq => a == b,
            Cond::Ne => a != b,
            Cond::Lt => a < b,
            Cond::Le => a <= b,
            Cond::Gt => a > b,
            Cond::Ge => a >= b,
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
            let arith = (0x10..0x30).contains(&(op as u8));
            assert_eq!(as_binary(&i).is_some(), arith, "{op}");
            let branch = op.is_conditional_branch() && op != Op::Loop;
            assert_eq!(as_branch(&i).is_some(), branch, "{op}");
        }
    }
}

//! Comparisons: WebAssembly's ten integer comparisons as toyvm value
//! instructions (`lt`, `leu`, ...) and as fused conditional branches
//! (`blt`, `bgeu`, `beqi`, ...).

use toyvm_vm::isa::{Imm, Instr, Label, Reg};

/// A comparison of two integers (i32 values are kept sign-extended, so one
/// comparison serves both widths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    Eq,
    Ne,
    LtS,
    LtU,
    LeS,
    LeU,
    GtS,
    GtU,
    GeS,
    GeU,
}

/// An operand of a comparison: a register or a 32-bit immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opnd {
    Reg(Reg),
    Imm(Imm),
}

impl Cond {
    /// The comparison that is true exactly when this one is false.
    pub fn negate(self) -> Cond {
        use Cond::*;
        match self {
            Eq => Ne,
            Ne => Eq,
            LtS => GeS,
            LtU => GeU,
            LeS => GtS,
            LeU => GtU,
            GtS => LeS,
            GtU => LeU,
            GeS => LtS,
            GeU => LtU,
        }
    }

    /// The comparison with its operands swapped (`a < b` is `b > a`).
    pub fn swap(self) -> Cond {
        use Cond::*;
        match self {
            Eq => Eq,
            Ne => Ne,
            LtS => GtS,
            LtU => GtU,
            LeS => GeS,
            LeU => GeU,
            GtS => LtS,
            GtU => LtU,
            GeS => LeS,
            GeU => LeU,
        }
    }

    /// Whether it holds for two constants.
    pub fn eval(self, a: i64, b: i64) -> bool {
        use Cond::*;
        let (ua, ub) = (a as u64, b as u64);
        match self {
            Eq => a == b,
            Ne => a != b,
            LtS => a < b,
            LtU => ua < ub,
            LeS => a <= b,
            LeU => ua <= ub,
            GtS => a > b,
            GtU => ua > ub,
            GeS => a >= b,
            GeU => ua >= ub,
        }
    }

    /// `d = (a cond b)` in one instruction, if toyvm has one for these
    /// operand forms.
    pub fn value(self, d: Reg, a: Reg, b: Opnd) -> Option<Instr> {
        use Cond::*;
        Some(match b {
            Opnd::Reg(b) => match self {
                Eq => Instr::Eq { d, a, b },
                Ne => Instr::Ne { d, a, b },
                LtS => Instr::Lt { d, a, b },
                LtU => Instr::Ltu { d, a, b },
                LeS => Instr::Le { d, a, b },
                LeU => Instr::Leu { d, a, b },
                GtS => Instr::Lt { d, a: b, b: a },
                GtU => Instr::Ltu { d, a: b, b: a },
                GeS => Instr::Le { d, a: b, b: a },
                GeU => Instr::Leu { d, a: b, b: a },
            },
            Opnd::Imm(imm) => match self {
                Eq => Instr::Eqi { d, a, imm },
                Ne => Instr::Nei { d, a, imm },
                LtS => Instr::Lti { d, a, imm },
                LtU => Instr::Ltui { d, a, imm },
                LeS => Instr::Lei { d, a, imm },
                _ => return None,
            },
        })
    }

    /// Jump to `target` when `a cond b`, in one instruction, if toyvm has
    /// one for these operand forms.
    pub fn branch(self, a: Reg, b: Opnd, target: Label) -> Option<Instr> {
        use Cond::*;
        Some(match b {
            Opnd::Reg(b) => match self {
                Eq => Instr::Beq { a, b, target },
                Ne => Instr::Bne { a, b, target },
                LtS => Instr::Blt { a, b, target },
                LeS => Instr::Ble { a, b, target },
                GtS => Instr::Bgt { a, b, target },
                GeS => Instr::Bge { a, b, target },
                LtU => Instr::Bltu { a, b, target },
                GeU => Instr::Bgeu { a, b, target },
                GtU => Instr::Bltu { a: b, b: a, target },
                LeU => Instr::Bgeu { a: b, b: a, target },
            },
            Opnd::Imm(0) if self == Eq => Instr::Jz { a, target },
            Opnd::Imm(0) if self == Ne => Instr::Jnz { a, target },
            Opnd::Imm(imm) => match self {
                Eq => Instr::Beqi { a, imm, target },
                Ne => Instr::Bnei { a, imm, target },
                LtS => Instr::Blti { a, imm, target },
                LeS => Instr::Blei { a, imm, target },
                GtS => Instr::Bgti { a, imm, target },
                GeS => Instr::Bgei { a, imm, target },
                _ => return None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Cond; 10] = [
        Cond::Eq,
        Cond::Ne,
        Cond::LtS,
        Cond::LtU,
        Cond::LeS,
        Cond::LeU,
        Cond::GtS,
        Cond::GtU,
        Cond::GeS,
        Cond::GeU,
    ];

    #[test]
    fn negate_and_swap_agree_with_eval() {
        let values = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for c in ALL {
            for &a in &values {
                for &b in &values {
                    assert_eq!(c.negate().eval(a, b), !c.eval(a, b), "{c:?} {a} {b}");
                    assert_eq!(c.swap().eval(b, a), c.eval(a, b), "{c:?} {a} {b}");
                }
            }
        }
    }

    #[test]
    fn every_register_form_has_a_value_and_a_branch() {
        for c in ALL {
            assert!(c.value(0, 1, Opnd::Reg(2)).is_some());
            assert!(c.branch(1, Opnd::Reg(2), 0).is_some());
        }
    }
}

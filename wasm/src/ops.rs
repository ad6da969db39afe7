//! Numeric operators and memory accesses.
//!
//! i32 values are kept sign-extended to 64 bits in registers: signed
//! comparisons and 64-bit shifts right work on them directly, unsigned
//! comparisons order them as u32; add, sub, mul and the shifts are toyvm's
//! 32-bit instructions (`addw`, `addiw`, `shlw`, `ushriw`, ...), which
//! sign-extend their result, and the other operations whose 64-bit result
//! can leave that form (`neg`, unsigned division) are followed by
//! `sext32`.

use toyvm_vm::isa::{Instr, Reg};
use wasmparser::MemArg;

use crate::cond::{Cond, Opnd};
use crate::emit::{self, Width};
use crate::func::{Builder, Val};
use crate::{Result, trap_code};

/// A binary operator computed by one toyvm instruction (after operand
/// preparation for i32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Shl,
    ShrS,
    ShrU,
    Rotl,
    Rotr,
}

/// A division or remainder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DivOp {
    DivS,
    DivU,
    RemS,
    RemU,
}

/// A unary integer operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    Clz,
    Ctz,
    Popcnt,
    Extend8,
    Extend16,
    Extend32,
    /// i64.extend_i32_u
    ZeroExtend32,
}

impl Arith {
    /// WebAssembly's result for two constants (i32 operands and result
    /// sign-extended).
    fn fold(self, a: i64, b: i64, wide: bool) -> i64 {
        if wide {
            match self {
                Arith::Add => a.wrapping_add(b),
                Arith::Sub => a.wrapping_sub(b),
                Arith::Mul => a.wrapping_mul(b),
                Arith::And => a & b,
                Arith::Or => a | b,
                Arith::Xor => a ^ b,
                Arith::Shl => a.wrapping_shl(b as u32),
                Arith::ShrS => a.wrapping_shr(b as u32),
                Arith::ShrU => (a as u64).wrapping_shr(b as u32) as i64,
                Arith::Rotl => a.rotate_left((b & 63) as u32),
                Arith::Rotr => a.rotate_right((b & 63) as u32),
            }
        } else {
            let (a, b) = (a as i32, b as i32);
            (match self {
                Arith::Add => a.wrapping_add(b),
                Arith::Sub => a.wrapping_sub(b),
                Arith::Mul => a.wrapping_mul(b),
                Arith::And => a & b,
                Arith::Or => a | b,
                Arith::Xor => a ^ b,
                Arith::Shl => a.wrapping_shl(b as u32),
                Arith::ShrS => a.wrapping_shr(b as u32),
                Arith::ShrU => (a as u32).wrapping_shr(b as u32) as i32,
                Arith::Rotl => a.rotate_left((b & 31) as u32),
                Arith::Rotr => a.rotate_right((b & 31) as u32),
            }) as i64
        }
    }

    fn commutative(self) -> bool {
        matches!(
            self,
            Arith::Add | Arith::Mul | Arith::And | Arith::Or | Arith::Xor
        )
    }

    /// The register-register instruction.
    fn reg(self, d: Reg, a: Reg, b: Reg, wide: bool) -> Instr {
        match self {
            Arith::Add => Instr::Add { d, a, b },
            Arith::Sub => Instr::Sub { d, a, b },
            Arith::Mul => Instr::Mul { d, a, b },
            Arith::And => Instr::And { d, a, b },
            Arith::Or => Instr::Or { d, a, b },
            Arith::Xor => Instr::Xor { d, a, b },
            Arith::Shl => Instr::Shl { d, a, b },
            Arith::ShrS => Instr::Shr { d, a, b },
            Arith::ShrU => Instr::Ushr { d, a, b },
            Arith::Rotl if wide => Instr::Rotl { d, a, b },
            Arith::Rotr if wide => Instr::Rotr { d, a, b },
            Arith::Rotl => Instr::Rotl32 { d, a, b },
            Arith::Rotr => Instr::Rotr32 { d, a, b },
        }
    }

    /// The i32 register-register instruction that computes on the low 32
    /// bits and sign-extends its result, for an operator whose 64-bit
    /// result can leave that form or whose count is taken modulo 32.
    fn reg_w(self, d: Reg, a: Reg, b: Reg) -> Option<Instr> {
        Some(match self {
            Arith::Add => Instr::Addw { d, a, b },
            Arith::Sub => Instr::Subw { d, a, b },
            Arith::Mul => Instr::Mulw { d, a, b },
            Arith::Shl => Instr::Shlw { d, a, b },
            Arith::ShrS => Instr::Shrw { d, a, b },
            Arith::ShrU => Instr::Ushrw { d, a, b },
            _ => return None,
        })
    }

    /// The i32 register-immediate form of [`Arith::reg_w`], if there is
    /// one (`x - k` is `x + -k` on 32 bits, `i32::MIN` included).
    fn imm_w(self, d: Reg, a: Reg, imm: i32) -> Option<Instr> {
        Some(match self {
            Arith::Add => Instr::Addiw { d, a, imm },
            Arith::Sub => Instr::Addiw {
                d,
                a,
                imm: imm.wrapping_neg(),
            },
            Arith::Mul => Instr::Muliw { d, a, imm },
            Arith::Shl => Instr::Shliw { d, a, imm },
            Arith::ShrU => Instr::Ushriw { d, a, imm },
            _ => return None,
        })
    }

    /// The register-immediate instruction, if there is one.
    fn imm(self, d: Reg, a: Reg, imm: i32) -> Option<Instr> {
        Some(match self {
            Arith::Add => Instr::Addi { d, a, imm },
            Arith::Sub => Instr::Subi { d, a, imm },
            Arith::Mul => Instr::Muli { d, a, imm },
            Arith::And => Instr::Andi { d, a, imm },
            Arith::Or => Instr::Ori { d, a, imm },
            Arith::Xor => Instr::Xori { d, a, imm },
            Arith::Shl => Instr::Shli { d, a, imm },
            Arith::ShrS => Instr::Shri { d, a, imm },
            Arith::ShrU => Instr::Ushri { d, a, imm },
            Arith::Rotl | Arith::Rotr => return None,
        })
    }
}

impl Builder<'_, '_> {
    /// Pops two operands: (a, b, a's slot).
    fn pop2(&mut self) -> Result<(Val, Val, usize)> {
        let b = self.pop()?;
        let a = self.pop()?;
        Ok((a, b, self.stack.len()))
    }

    /// A constant as an immediate operand, if it fits.
    fn as_imm(v: Val) -> Option<i32> {
        match v {
            Val::Const(k) => i32::try_from(k).ok(),
            _ => None,
        }
    }

    pub fn arith(&mut self, op: Arith, wide: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let pending = self.pending_top();
        let (va, vb, k) = self.pop2()?;
        if let (Val::Const(a), Val::Const(b)) = (va, vb) {
            return self.push(Val::Const(op.fold(a, b, wide)));
        }
        if !wide {
            self.drop_operand_sext(op, pending, va, vb, k)?;
        }
        if op == Arith::Sub && va == Val::Const(0) {
            // 0 - x: a negation.
            let rb = self.reg_of(vb, k + 1)?;
            let start = self.code_len();
            let d = self.home(k)?;
            if wide {
                self.emit(Instr::Neg { d, a: rb })?;
            } else {
                // The low 32 bits times -1, sign-extended: one instruction
                // where `neg` and `sext32` were two.
                self.emit(Instr::Muliw { d, a: rb, imm: -1 })?;
            }
            return self.push_computed(start, None);
        }
        // A constant on the left of a commutative operator goes right (an
        // operand keeps its own slot: `Home` is relative to it).
        let ((va, sa), (vb, sb)) = if op.commutative() && matches!(va, Val::Const(_)) {
            ((vb, k + 1), (va, k))
        } else {
            ((va, k), (vb, k + 1))
        };
        let ra = self.reg_of(va, sa)?;
        let d = self.home(k)?;
        // i32 add, sub, mul and shifts: one instruction on the low 32 bits
        // whose result is sign-extended (no `sext32` after it, no `andi` of
        // a shift's count, no `zext32` before `shr_u`); `shr_s` by a
        // constant stays `shri`, exact on a sign-extended value.
        if !wide && op.reg_w(d, ra, ra).is_some() {
            let imm = Self::as_imm(vb);
            if let Some(i) = imm.and_then(|k| op.imm_w(d, ra, k)) {
                let start = self.code_len();
                self.emit(i)?;
                return self.push_computed(start, None);
            }
            if !(op == Arith::ShrS && imm.is_some()) {
                let rb = self.reg_of(vb, sb)?;
                let start = self.code_len();
                self.emit(op.reg_w(d, ra, rb).expect("checked above"))?;
                return self.push_computed(start, None);
            }
        }
        let shift = matches!(op, Arith::Shl | Arith::ShrS | Arith::ShrU);
        let mask = if wide { 63 } else { 31 };
        // i32 shifts count modulo 32, toyvm's modulo 64: mask a constant
        // count here, a register one with `andi`.
        let imm = Self::as_imm(vb).map(|i| if shift { i & mask } else { i });
        let zero_extend = !wide && op == Arith::ShrU;
        let (rb, start) = match imm.and_then(|i| op.imm(d, ra, i).map(|_| i)) {
            Some(i) => (Opnd::Imm(i), self.code_len()),
            None => {
                let rb = self.reg_of(vb, sb)?;
                let start = self.code_len();
                if shift && !wide {
                    let t = self.temp(2)?;
                    self.emit(Instr::Andi {
                        d: t,
                        a: rb,
                        imm: 31,
                    })?;
                    (Opnd::Reg(t), start)
                } else {
                    (Opnd::Reg(rb), start)
                }
            }
        };
        let src = if zero_extend {
            self.emit(emit::zext32(d, ra))?;
            d
        } else {
            ra
        };
        let i = match rb {
            Opnd::Imm(i) => op.imm(d, src, i).expect("checked above"),
            Opnd::Reg(b) => op.reg(d, src, b, wide),
        };
        self.emit(i)?;
        // A logical shift right by a constant 1..31 leaves bit 31 clear:
        // already sign-extended.
        let shifted_out = op == Arith::ShrU && matches!(rb, Opnd::Imm(i) if i != 0);
        let sext = !wide
            && !shifted_out
            && matches!(
                op,
                Arith::Add | Arith::Sub | Arith::Mul | Arith::Shl | Arith::ShrU
            );
        if sext {
            self.emit(emit::sext(Width::W32, d, d))?;
        }
        self.push_computed(start, None)
    }

    /// Removes the `sext32` that ends the computation of an i32 operand
    /// just computed (the pending top: `b`, or `a` when `b` is lazy) where
    /// `op` reads only the operand's low 32 bits: add, sub, mul and shl
    /// (whose result is sign-extended again), `shr_u` (which zero-extends
    /// its value first), and any shift's count (masked to 5 bits). The
    /// operand's register is its stack slot's, which only `op` reads.
    fn drop_operand_sext(
        &mut self,
        op: Arith,
        pending: Option<crate::func::Pending>,
        va: Val,
        vb: Val,
        k: usize,
    ) -> Result<()> {
        let Some(p) = pending else { return Ok(()) };
        let low_bits_a = matches!(
            op,
            Arith::Add | Arith::Sub | Arith::Mul | Arith::Shl | Arith::ShrU
        );
        let low_bits_b = low_bits_a || op == Arith::ShrS;
        let slot = match (va, vb) {
            (_, Val::Home) if low_bits_b => k + 1,
            (Val::Home, Val::Local(_) | Val::Const(_)) if low_bits_a => k,
            _ => return Ok(()),
        };
        let h = self.home(slot)?;
        let n = self.code_len();
        if p.reg == h && p.start + 1 < n && self.last_is(emit::sext(Width::W32, h, h)) {
            self.truncate(n - 1);
        }
        Ok(())
    }

    pub fn compare(&mut self, cond: Cond, wide: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let (va, vb, k) = self.pop2()?;
        self.compare_vals(cond, va, vb, k, wide)
    }

    pub fn eqz(&mut self, wide: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let va = self.pop()?;
        let k = self.stack.len();
        self.compare_vals(Cond::Eq, va, Val::Const(0), k, wide)
    }

    fn compare_vals(&mut self, cond: Cond, va: Val, vb: Val, k: usize, _wide: bool) -> Result<()> {
        // A constant goes right (an operand keeps its own slot: `Home` is
        // relative to it).
        let (cond, (va, sa), (vb, sb)) = match (va, vb) {
            (Val::Const(a), Val::Const(b)) => {
                return self.push(Val::Const(cond.eval(a, b) as i64));
            }
            (Val::Const(_), _) => (cond.swap(), (vb, k + 1), (va, k)),
            _ => (cond, (va, k), (vb, k + 1)),
        };
        // Operands first (a materialized constant stays if the comparison
        // is later fused into a branch); the comparison itself from `start`.
        let ra = self.reg_of(va, sa)?;
        let b = match Self::as_imm(vb) {
            Some(i) => Opnd::Imm(i),
            None => Opnd::Reg(self.reg_of(vb, sb)?),
        };
        let start = self.code_len();
        let d = self.home(k)?;
        match cond.value(d, ra, b) {
            Some(i) => self.emit(i)?,
            None => {
                let Opnd::Imm(imm) = b else {
                    return Err(self.internal("comparison without a value form"));
                };
                // Past both operands' slots.
                let t = self.home(k + 2)?;
                self.emit(Instr::Li { d: t, imm })?;
                let i = cond
                    .value(d, ra, Opnd::Reg(t))
                    .ok_or_else(|| self.internal("comparison without a value form"))?;
                self.emit(i)?;
            }
        }
        self.push_computed(start, Some((cond, ra, b)))
    }

    pub fn unary(&mut self, op: Unary, wide: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let va = self.pop()?;
        let k = self.stack.len();
        if let Val::Const(a) = va {
            return self.push(Val::Const(fold_unary(op, a, wide)));
        }
        let ra = self.reg_of(va, k)?;
        let start = self.code_len();
        let d = self.home(k)?;
        match (op, wide) {
            (Unary::Clz, true) => self.emit(Instr::Clz { d, a: ra })?,
            (Unary::Ctz, true) => self.emit(Instr::Ctz { d, a: ra })?,
            (Unary::Popcnt, true) => self.emit(Instr::Popcnt { d, a: ra })?,
            (Unary::Clz, false) => {
                self.emit(emit::zext32(d, ra))?;
                self.emit(Instr::Clz { d, a: d })?;
                self.emit(Instr::Subi { d, a: d, imm: 32 })?;
            }
            (Unary::Ctz, false) => {
                // Bit 32 set: a zero i32 counts 32.
                let t = self.home(k + 1)?;
                self.emit(Instr::Lk { d: t, k: 1 << 32 })?;
                self.emit(Instr::Or { d, a: ra, b: t })?;
                self.emit(Instr::Ctz { d, a: d })?;
            }
            (Unary::Popcnt, false) => {
                self.emit(emit::zext32(d, ra))?;
                self.emit(Instr::Popcnt { d, a: d })?;
            }
            (Unary::Extend8, _) => self.emit(emit::sext(Width::W8, d, ra))?,
            (Unary::Extend16, _) => self.emit(emit::sext(Width::W16, d, ra))?,
            (Unary::Extend32, _) => self.emit(emit::sext(Width::W32, d, ra))?,
            (Unary::ZeroExtend32, _) => self.emit(emit::zext32(d, ra))?,
        }
        self.push_computed(start, None)
    }

    pub fn divide(&mut self, op: DivOp, wide: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let (va, vb, k) = self.pop2()?;
        let d = self.home(k)?;
        // A constant divisor other than 0 and -1 needs no checks.
        if let Some(imm) = Self::as_imm(vb).filter(|&i| i != 0 && i != -1)
            && matches!(op, DivOp::DivS | DivOp::RemS)
        {
            let ra = self.reg_of(va, k)?;
            let start = self.code_len();
            self.emit(match op {
                DivOp::DivS => Instr::Divi { d, a: ra, imm },
                _ => Instr::Remi { d, a: ra, imm },
            })?;
            return self.push_computed(start, None);
        }
        if let Val::Const(0) = vb {
            self.emit_trap(trap_code::DIVIDE_BY_ZERO, None)?;
            self.unreachable = true;
            return Ok(());
        }
        let ra = self.reg_of(va, k)?;
        let rb = self.reg_of(vb, k + 1)?;
        let start = self.code_len();
        let zero = self.cold_trap(trap_code::DIVIDE_BY_ZERO)?;
        self.emit(Instr::Jz {
            a: rb,
            target: zero,
        })?;
        match op {
            DivOp::DivS => {
                // MIN / -1 overflows; any other x / -1 is -x.
                let minus_one = self.new_label();
                let back = self.new_label();
                self.emit(Instr::Beqi {
                    a: rb,
                    imm: -1,
                    target: minus_one,
                })?;
                self.emit(Instr::Div { d, a: ra, b: rb })?;
                self.bind(back);
                self.bind_cold(minus_one);
                let overflow = self.new_label();
                if wide {
                    let t = self.temp(2)?;
                    self.emit_cold(Instr::Lk { d: t, k: i64::MIN })?;
                    self.emit_cold(Instr::Beq {
                        a: ra,
                        b: t,
                        target: overflow,
                    })?;
                } else {
                    self.emit_cold(Instr::Beqi {
                        a: ra,
                        imm: i32::MIN,
                        target: overflow,
                    })?;
                }
                self.emit_cold(Instr::Neg { d, a: ra })?;
                self.emit_cold(Instr::Jmp { target: back })?;
                self.bind_cold(overflow);
                self.emit_cold(emit::trap(trap_code::INTEGER_OVERFLOW))?;
            }
            DivOp::RemS => self.emit(Instr::Rem { d, a: ra, b: rb })?,
            DivOp::DivU | DivOp::RemU => {
                let (a, b) = if wide {
                    (ra, rb)
                } else {
                    let t = self.temp(2)?;
                    self.emit(emit::zext32(d, ra))?;
                    self.emit(emit::zext32(t, rb))?;
                    (d, t)
                };
                self.emit(if op == DivOp::DivU {
                    Instr::Divu { d, a, b }
                } else {
                    Instr::Remu { d, a, b }
                })?;
                if !wide {
                    self.emit(emit::sext(Width::W32, d, d))?;
                    // Its `sext32` can go where only the low 32 bits are
                    // read (a narrow store, an address, `addw`..).
                    return self.push_computed(start, None);
                }
            }
        }
        self.push(Val::Home)
    }

    /// The constant added to an address register: WebAssembly's offset
    /// past toyvm's `base`; `None` when that cannot be in bounds.
    fn address_imm(&self, memarg: &MemArg) -> Option<i32> {
        let imm = self.shared.layout.base.checked_add(memarg.offset)?;
        i32::try_from(imm).ok()
    }

    pub fn load(&mut self, w: Width, signed: bool, memarg: &MemArg) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let pending = self.pending_top();
        let va = self.pop()?;
        let k = self.stack.len();
        // An address just computed and sign-extended: the access reads only
        // its low 32 bits, so the `sext32` can go.
        if let (Val::Home, Some(p)) = (va, pending) {
            let h = self.home(k)?;
            let n = self.code_len();
            if p.reg == h && p.start + 1 < n && self.last_is(emit::sext(Width::W32, h, h)) {
                self.truncate(n - 1);
            }
        }
        let ra = self.reg_of(va, k)?;
        let Some(imm) = self.address_imm(memarg) else {
            // Offsets past 2^31 lie past any memory toyvm can have.
            self.emit_trap(trap_code::OUT_OF_BOUNDS, None)?;
            self.unreachable = true;
            return Ok(());
        };
        let start = self.code_len();
        let d = self.home(k)?;
        self.emit(emit::load(w, signed, d, ra, imm))?;
        self.push_computed(start, None)
    }

    pub fn store(&mut self, w: Width, memarg: &MemArg) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let pending = self.pending_top();
        let (va, vb, k) = self.pop2()?;
        // The operand just computed and sign-extended, if the access reads
        // only its low 32 bits: the value of a store narrower than 64 bits,
        // or the address (computed last when the value is lazy).
        let low32 = match (va, vb) {
            (_, Val::Home) if w != Width::W64 => Some(k + 1),
            (Val::Home, Val::Local(_) | Val::Const(_)) => Some(k),
            _ => None,
        };
        if let (Some(slot), Some(p)) = (low32, pending) {
            let h = self.home(slot)?;
            let n = self.code_len();
            if p.reg == h && p.start + 1 < n && self.last_is(emit::sext(Width::W32, h, h)) {
                self.truncate(n - 1);
            }
        }
        let ra = self.reg_of(va, k)?;
        let rb = self.reg_of(vb, k + 1)?;
        match self.address_imm(memarg) {
            Some(imm) => self.emit(emit::store(w, ra, imm, rb)),
            None => {
                self.emit_trap(trap_code::OUT_OF_BOUNDS, None)?;
                self.unreachable = true;
                Ok(())
            }
        }
    }

    pub fn memory_size(&mut self) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let d = self.home(self.stack.len())?;
        self.emit(Instr::Msize { d })?;
        self.bytes_to_pages(d)?;
        self.push(Val::Home)
    }

    /// `d` (a memory length in bytes) as WebAssembly pages.
    fn bytes_to_pages(&mut self, d: Reg) -> Result<()> {
        let base = self.shared.layout.base as i32;
        if base != 0 {
            self.emit(Instr::Subi { d, a: d, imm: base })?;
        }
        self.emit(Instr::Ushri { d, a: d, imm: 16 })
    }

    pub fn memory_grow(&mut self) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let va = self.pop()?;
        let k = self.stack.len();
        let ra = self.reg_of(va, k)?;
        let d = self.home(k)?;
        let t = self.temp(1)?;
        // Pages as u32, in bytes.
        self.emit(emit::zext32(t, ra))?;
        self.emit(Instr::Shli {
            d: t,
            a: t,
            imm: 16,
        })?;
        self.emit(Instr::Mgrow { d, a: t })?;
        let failed = self.new_label();
        self.emit(Instr::Blti {
            a: d,
            imm: 0,
            target: failed,
        })?;
        self.bytes_to_pages(d)?;
        self.bind(failed);
        self.push(Val::Home)
    }

    /// A float operator that is only bit movement: `abs`, `neg` and
    /// `copysign` on the raw bits (f32 values are kept sign-extended from
    /// 32 bits, like i32).
    pub fn float_bits(&mut self, op: FloatBits, wide: bool) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        let (sign, magnitude): (i64, i64) = if wide {
            (i64::MIN, i64::MAX)
        } else {
            (i32::MIN as i64, i32::MAX as i64)
        };
        if op == FloatBits::Copysign {
            let (va, vb, k) = self.pop2()?;
            let ra = self.reg_of(va, k)?;
            let rb = self.reg_of(vb, k + 1)?;
            let (d, t, m) = (self.home(k)?, self.temp(2)?, self.temp(3)?);
            self.load_const(m, magnitude)?;
            self.emit(Instr::And { d: t, a: ra, b: m })?;
            self.load_const(m, sign)?;
            self.emit(Instr::And { d, a: rb, b: m })?;
            self.emit(Instr::Or { d, a: d, b: t })?;
            return self.push(Val::Home);
        }
        let va = self.pop()?;
        let k = self.stack.len();
        if let Val::Const(a) = va {
            return self.push(Val::Const(match op {
                FloatBits::Abs => a & magnitude,
                _ => a ^ sign,
            }));
        }
        let ra = self.reg_of(va, k)?;
        let (d, m) = (self.home(k)?, self.temp(1)?);
        self.load_const(
            m,
            if op == FloatBits::Abs {
                magnitude
            } else {
                sign
            },
        )?;
        self.emit(match op {
            FloatBits::Abs => Instr::And { d, a: ra, b: m },
            _ => Instr::Xor { d, a: ra, b: m },
        })?;
        self.push(Val::Home)
    }

    /// A float operator that computes: a trap naming it.
    pub fn unsupported_float(&mut self, name: &'static str) -> Result<()> {
        if self.unreachable {
            return Ok(());
        }
        self.emit_trap(trap_code::UNSUPPORTED, Some(name))?;
        self.unreachable = true;
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatBits {
    Abs,
    Neg,
    Copysign,
}

fn fold_unary(op: Unary, a: i64, wide: bool) -> i64 {
    let a32 = a as i32;
    match (op, wide) {
        (Unary::Clz, true) => a.leading_zeros() as i64,
        (Unary::Ctz, true) => a.trailing_zeros() as i64,
        (Unary::Popcnt, true) => a.count_ones() as i64,
        (Unary::Clz, false) => a32.leading_zeros() as i64,
        (Unary::Ctz, false) => a32.trailing_zeros() as i64,
        (Unary::Popcnt, false) => a32.count_ones() as i64,
        (Unary::Extend8, _) => a as i8 as i64,
        (Unary::Extend16, _) => a as i16 as i64,
        (Unary::Extend32, _) => a as i32 as i64,
        (Unary::ZeroExtend32, _) => a as u32 as i64,
    }
}

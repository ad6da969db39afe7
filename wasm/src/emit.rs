//! Constructors for the toyvm instructions added for compiled code
//! (docs/isa.md: sized loads and stores, extensions, unsigned division,
//! rotates, bit counts, `select`, `msize`/`mgrow`, `trap`).

use toyvm_vm::isa::{Imm, Instr, Reg};

/// An access width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    W8,
    W16,
    W32,
    W64,
}

/// `d = mem[low32(a) + imm]`, `signed` or zero-extended to 64 bits.
pub fn load(w: Width, signed: bool, d: Reg, a: Reg, imm: Imm) -> Instr {
    match (w, signed) {
        (Width::W8, true) => Instr::Ld8s { d, a, imm },
        (Width::W8, false) => Instr::Ld8u { d, a, imm },
        (Width::W16, true) => Instr::Ld16s { d, a, imm },
        (Width::W16, false) => Instr::Ld16u { d, a, imm },
        (Width::W32, true) => Instr::Ld32s { d, a, imm },
        (Width::W32, false) => Instr::Ld32u { d, a, imm },
        (Width::W64, _) => Instr::Ld64 { d, a, imm },
    }
}

/// `mem[low32(a) + imm] = b`'s low bytes.
pub fn store(w: Width, a: Reg, imm: Imm, b: Reg) -> Instr {
    match w {
        Width::W8 => Instr::St8 { a, imm, b },
        Width::W16 => Instr::St16 { a, imm, b },
        Width::W32 => Instr::St32 { a, imm, b },
        Width::W64 => Instr::St64 { a, imm, b },
    }
}

pub fn trap(code: i32) -> Instr {
    Instr::Trap { imm: code }
}

pub fn zext32(d: Reg, a: Reg) -> Instr {
    Instr::Zext32 { d, a }
}

pub fn sext(w: Width, d: Reg, a: Reg) -> Instr {
    match w {
        Width::W8 => Instr::Sext8 { d, a },
        Width::W16 => Instr::Sext16 { d, a },
        Width::W32 | Width::W64 => Instr::Sext32 { d, a },
    }
}

pub fn select(d: Reg, c: Reg, a: Reg, b: Reg) -> Instr {
    Instr::Select { d, c, a, b }
}

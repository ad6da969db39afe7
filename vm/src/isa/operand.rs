//! Operands: their kinds, encoded sizes and values, for the table in
//! the parent module.

use super::{Count, Func, HostFn, Imm, Label, Reg, Table, Wide};

/// The kinds of operand an instruction can carry, with their encoded sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandKind {
    /// A register index ([`Reg`], 1 byte).
    Reg,
    /// A signed 32-bit immediate ([`Imm`], 4 bytes).
    Imm,
    /// A full 64-bit constant ([`Wide`], 8 bytes).
    Wide,
    /// A branch target, an instruction index ([`Label`], 4 bytes).
    Label,
    /// A function index ([`Func`], 4 bytes).
    Func,
    /// An argument count ([`Count`], 1 byte).
    Count,
    /// A jump table index ([`Table`], 2 bytes).
    Table,
    /// A host function, an index into the program's imports ([`HostFn`],
    /// 2 bytes).
    HostFn,
}

impl OperandKind {
    /// Bytes this operand takes in the `.bc` encoding.
    pub const fn encoded_size(self) -> usize {
        match self {
            OperandKind::Reg | OperandKind::Count => 1,
            OperandKind::Table | OperandKind::HostFn => 2,
            OperandKind::Imm | OperandKind::Label | OperandKind::Func => 4,
            OperandKind::Wide => 8,
        }
    }

    /// What the assembler calls this operand in error messages.
    pub const fn describe(self) -> &'static str {
        match self {
            OperandKind::Reg => "a register",
            OperandKind::Imm => "a 32-bit immediate",
            OperandKind::Wide => "a 64-bit constant",
            OperandKind::Label => "a label",
            OperandKind::Func => "a function name",
            OperandKind::Count => "an argument count (0-255)",
            OperandKind::Table => "a jump table `[L1, L2, ...]`",
            OperandKind::HostFn => "an imported host function's name",
        }
    }
}

/// One operand value, tagged with its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A register index.
    Reg(Reg),
    /// A signed 32-bit immediate.
    Imm(Imm),
    /// A full 64-bit constant.
    Wide(Wide),
    /// A branch target: an instruction index within the function.
    Label(Label),
    /// A function index within the program.
    Func(Func),
    /// An argument count.
    Count(Count),
    /// An index into the function's jump tables.
    Table(Table),
    /// An index into the program's imports.
    HostFn(HostFn),
}

impl Operand {
    /// The kind of this operand (its variant, without the value).
    pub const fn kind(self) -> OperandKind {
        match self {
            Operand::Reg(_) => OperandKind::Reg,
            Operand::Imm(_) => OperandKind::Imm,
            Operand::Wide(_) => OperandKind::Wide,
            Operand::Label(_) => OperandKind::Label,
            Operand::Func(_) => OperandKind::Func,
            Operand::Count(_) => OperandKind::Count,
            Operand::Table(_) => OperandKind::Table,
            Operand::HostFn(_) => OperandKind::HostFn,
        }
    }
}

/// The most operands any instruction has.
pub const MAX_OPERANDS: usize = 4;

/// The operands of one instruction, in declaration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operands {
    len: u8,
    items: [Operand; MAX_OPERANDS],
}

impl Operands {
    pub(super) fn from_slice(s: &[Operand]) -> Self {
        let mut items = [Operand::Reg(0); MAX_OPERANDS];
        items[..s.len()].copy_from_slice(s);
        Operands {
            len: s.len() as u8,
            items,
        }
    }
}

impl std::ops::Deref for Operands {
    type Target = [Operand];
    fn deref(&self) -> &[Operand] {
        &self.items[..self.len as usize]
    }
}

//! The instruction set: the one table every other part reads.
//!
//! Each opcode is declared once, in `define_isa!` below, with its byte
//! encoding, its assembly mnemonic and the kinds of its operands.  From that
//! single table the macro derives the opcode enum [`Op`], the decoded
//! instruction enum [`Instr`] the interpreter and the JIT match on, and the
//! generic conversions ([`Instr::operands`], [`Instr::from_operands`]) that the
//! binary encoder and decoder, the assembler, the disassembler and the
//! verifier use.  Adding an instruction is one line here plus its meaning in
//! [`crate::semantics`] and its arm in the interpreter; `docs/isa.md` is the
//! prose version of this table.

use std::fmt;

/// A register index within the current function's register file.
pub type Reg = u8;
/// A signed 32-bit immediate, sign-extended to 64 bits when used.
pub type Imm = i32;
/// A full 64-bit constant.
pub type Wide = i64;
/// An instruction index within the current function.
pub type Label = u32;
/// A function index within the program.
pub type Func = u32;
/// A small count (the number of call arguments).
pub type Count = u8;
/// An index into the current function's jump tables.
pub type Table = u16;
/// A host function's index among the program's imports.
pub type HostFn = u16;

mod operand;
pub use operand::{MAX_OPERANDS, Operand, OperandKind, Operands};

macro_rules! define_isa {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident = $code:literal, $mnemonic:literal { $($field:ident : $kind:ident),* }
    ;)*) => {
        /// An opcode: the first byte of every encoded instruction.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Op {
            $($(#[doc = $doc])* $name = $code,)*
        }

        impl Op {
            /// Every opcode, in table order.
            pub const ALL: &'static [Op] = &[$(Op::$name),*];

            /// The opcode with this encoding byte, if any.
            pub const fn from_byte(b: u8) -> Option<Op> {
                match b {
                    $($code => Some(Op::$name),)*
                    _ => None,
                }
            }

            /// The assembly mnemonic.
            pub const fn mnemonic(self) -> &'static str {
                match self {
                    $(Op::$name => $mnemonic,)*
                }
            }

            /// The opcode with this mnemonic, if any.
            pub fn from_mnemonic(s: &str) -> Option<Op> {
                match s {
                    $($mnemonic => Some(Op::$name),)*
                    _ => None,
                }
            }

            /// The kinds of this opcode's operands, in order.
            pub const fn operand_kinds(self) -> &'static [OperandKind] {
                match self {
                    $(Op::$name => &[$(OperandKind::$kind),*],)*
                }
            }

            /// One line of documentation, for `--help` style listings.
            pub const fn doc(self) -> &'static str {
                match self {
                    $(Op::$name => concat!($($doc),*),)*
                }
            }
        }

        /// A decoded instruction.  Field names follow a convention: `d` is
        /// the destination register, `a`/`b` are source registers, `imm` an
        /// immediate, `target` a label, `f` a function, `n` a count.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Instr {
            $($(#[doc = $doc])* $name {
                $(#[doc = field_doc!($name, $field, $kind)] $field: $kind),*
            },)*
        }

        impl Instr {
            /// This instruction's opcode.
            pub const fn op(&self) -> Op {
                match self {
                    $(Instr::$name { .. } => Op::$name,)*
                }
            }

            /// The operands, in the order the table declares them.
            #[allow(unused_variables)]
            pub fn operands(&self) -> Operands {
                match *self {
                    $(Instr::$name { $($field),* } =>
                        Operands::from_slice(&[$(Operand::$kind($field)),*]),)*
                }
            }

            /// Builds an instruction from an opcode and operands of the
            /// right kinds; `None` if the count or a kind does not match.
            #[allow(unused_mut, unused_variables)]
            pub fn from_operands(op: Op, ops: &[Operand]) -> Option<Instr> {
                match op {
                    $(Op::$name => {
                        let mut it = ops.iter();
                        $(let $field = match it.next()? {
                            Operand::$kind(v) => *v,
                            _ => return None,
                        };)*
                        if it.next().is_some() {
                            return None;
                        }
                        Some(Instr::$name { $($field),* })
                    })*
                }
            }
        }
    };
}

/// The documentation of operand `field` (of kind `kind`) of instruction
/// `op`, for the fields of [`Instr`]'s variants: the general role of each
/// field name (see [`Instr`]'s naming convention), after the instructions
/// whose operands play a more specific role.
macro_rules! field_doc {
    (Li, imm, Imm) => {
        "The constant, sign-extended to 64 bits."
    };
    (Mov, a, Reg) => {
        "The source register."
    };
    (Neg, a, Reg) => {
        "The source register."
    };
    (Not, a, Reg) => {
        "The source register."
    };
    (Ld, a, Reg) => {
        "The register holding the base address (a word index)."
    };
    (Ld, imm, Imm) => {
        "The offset, in words, added to the base address."
    };
    (St, a, Reg) => {
        "The register holding the base address (a word index)."
    };
    (St, imm, Imm) => {
        "The offset, in words, added to the base address."
    };
    (St, b, Reg) => {
        "The register holding the value stored."
    };
    (Ld8s, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld8s, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (Ld8u, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld8u, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (Ld16s, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld16s, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (Ld16u, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld16u, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (Ld32s, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld32s, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (Ld32u, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld32u, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (Ld64, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (Ld64, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (St8, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (St8, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (St16, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (St16, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (St32, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (St32, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (St64, a, Reg) => {
        "The register whose low 32 bits, unsigned, are the base byte address."
    };
    (St64, imm, Imm) => {
        "The offset, in bytes, added to the base address."
    };
    (St8, b, Reg) => {
        "The register whose low bits are stored."
    };
    (St16, b, Reg) => {
        "The register whose low bits are stored."
    };
    (St32, b, Reg) => {
        "The register whose low bits are stored."
    };
    (St64, b, Reg) => {
        "The register whose low bits are stored."
    };
    (Jnz, a, Reg) => {
        "The register compared with zero."
    };
    (Jz, a, Reg) => {
        "The register compared with zero."
    };
    (Jtab, a, Reg) => {
        "The register holding the index into the jump table."
    };
    (Loop, a, Reg) => {
        "The loop counter, incremented before the comparison."
    };
    (Loop, b, Reg) => {
        "The register holding the counter's inclusive upper bound."
    };
    (Call, a, Reg) => {
        "The first of the `n` consecutive argument registers."
    };
    (Calli, a, Reg) => {
        "The first of the `n` consecutive argument registers."
    };
    (Hcall, a, Reg) => {
        "The first of the `n` consecutive argument registers."
    };
    (Calli, f, Reg) => {
        "The register holding the callee's function value (from `fref`)."
    };
    (Ret, a, Reg) => {
        "The register holding the value returned."
    };
    (Halt, a, Reg) => {
        "The register holding the exit status (its low 8 bits)."
    };
    (Putn, a, Reg) => {
        "The register holding the number printed."
    };
    (Putc, a, Reg) => {
        "The register holding the byte printed (its low 8 bits)."
    };
    (Select, c, Reg) => {
        "The condition: `a` is chosen when it is not zero."
    };
    (Select, a, Reg) => {
        "The value chosen when `c` is not zero."
    };
    (Select, b, Reg) => {
        "The value chosen when `c` is zero."
    };
    (Mgrow, a, Reg) => {
        "The register holding the number of bytes to grow by."
    };
    (Trap, imm, Imm) => {
        "The trap's kind code (`TrapCode`)."
    };
    ($op:ident, d, Reg) => {
        "The destination register."
    };
    ($op:ident, a, Reg) => {
        "The first source register (the left operand)."
    };
    ($op:ident, b, Reg) => {
        "The second source register (the right operand)."
    };
    ($op:ident, imm, Imm) => {
        "The immediate (the right operand), sign-extended to 64 bits."
    };
    ($op:ident, k, Wide) => {
        "The 64-bit constant."
    };
    ($op:ident, f, Func) => {
        "The function's index in the program."
    };
    ($op:ident, target, Label) => {
        "The branch target: an instruction index in this function."
    };
    ($op:ident, t, Table) => {
        "The jump table's index among this function's tables."
    };
    ($op:ident, h, HostFn) => {
        "The host function's index among the program's imports."
    };
    ($op:ident, n, Count) => {
        "The number of arguments passed."
    };
}

define_isa! {
    /// Does nothing.
    Nop = 0x00, "nop" {};
    /// `d = a`
    Mov = 0x01, "mov" { d: Reg, a: Reg };
    /// `d = imm` (sign-extended 32-bit immediate)
    Li = 0x02, "li" { d: Reg, imm: Imm };
    /// `d = k` (full 64-bit constant)
    Lk = 0x03, "lk" { d: Reg, k: Wide };
    /// `d = f` as a function value, for `calli`
    Fref = 0x04, "fref" { d: Reg, f: Func };
    /// `d = -a` (wrapping)
    Neg = 0x05, "neg" { d: Reg, a: Reg };
    /// `d = !a` (bitwise not)
    Not = 0x06, "not" { d: Reg, a: Reg };
    /// `d` = `a`'s low 8 bits, sign-extended
    Sext8 = 0x07, "sext8" { d: Reg, a: Reg };
    /// `d` = `a`'s low 16 bits, sign-extended
    Sext16 = 0x08, "sext16" { d: Reg, a: Reg };
    /// `d` = `a`'s low 32 bits, sign-extended
    Sext32 = 0x09, "sext32" { d: Reg, a: Reg };
    /// `d = a & 0xFFFF_FFFF` (the low 32 bits, zero-extended)
    Zext32 = 0x0a, "zext32" { d: Reg, a: Reg };
    /// `d` = leading zero bits of `a` (64 for 0)
    Clz = 0x0b, "clz" { d: Reg, a: Reg };
    /// `d` = trailing zero bits of `a` (64 for 0)
    Ctz = 0x0c, "ctz" { d: Reg, a: Reg };
    /// `d` = one bits of `a`
    Popcnt = 0x0d, "popcnt" { d: Reg, a: Reg };

    /// `d = a + b` (wrapping)
    Add = 0x10, "add" { d: Reg, a: Reg, b: Reg };
    /// `d = a - b` (wrapping)
    Sub = 0x11, "sub" { d: Reg, a: Reg, b: Reg };
    /// `d = a * b` (wrapping)
    Mul = 0x12, "mul" { d: Reg, a: Reg, b: Reg };
    /// `d = a / b`, truncating; traps when `b == 0`
    Div = 0x13, "div" { d: Reg, a: Reg, b: Reg };
    /// `d = a % b`, sign of `a`; traps when `b == 0`
    Rem = 0x14, "rem" { d: Reg, a: Reg, b: Reg };
    /// `d = a & b`
    And = 0x15, "and" { d: Reg, a: Reg, b: Reg };
    /// `d = a | b`
    Or = 0x16, "or" { d: Reg, a: Reg, b: Reg };
    /// `d = a ^ b`
    Xor = 0x17, "xor" { d: Reg, a: Reg, b: Reg };
    /// `d = a << (b & 63)`
    Shl = 0x18, "shl" { d: Reg, a: Reg, b: Reg };
    /// `d = a >> (b & 63)`, arithmetic
    Shr = 0x19, "shr" { d: Reg, a: Reg, b: Reg };
    /// `d = a >> (b & 63)`, logical
    Ushr = 0x1a, "ushr" { d: Reg, a: Reg, b: Reg };
    /// `d = (a == b) as i64`
    Eq = 0x1b, "eq" { d: Reg, a: Reg, b: Reg };
    /// `d = (a != b) as i64`
    Ne = 0x1c, "ne" { d: Reg, a: Reg, b: Reg };
    /// `d = (a < b) as i64`, signed
    Lt = 0x1d, "lt" { d: Reg, a: Reg, b: Reg };
    /// `d = (a <= b) as i64`, signed
    Le = 0x1e, "le" { d: Reg, a: Reg, b: Reg };
    /// `d = (a < b) as i64`, unsigned
    Ltu = 0x1f, "ltu" { d: Reg, a: Reg, b: Reg };

    /// `d = a + imm`
    Addi = 0x20, "addi" { d: Reg, a: Reg, imm: Imm };
    /// `d = a - imm`
    Subi = 0x21, "subi" { d: Reg, a: Reg, imm: Imm };
    /// `d = a * imm`
    Muli = 0x22, "muli" { d: Reg, a: Reg, imm: Imm };
    /// `d = a / imm`; traps when `imm == 0`
    Divi = 0x23, "divi" { d: Reg, a: Reg, imm: Imm };
    /// `d = a % imm`; traps when `imm == 0`
    Remi = 0x24, "remi" { d: Reg, a: Reg, imm: Imm };
    /// `d = a & imm`
    Andi = 0x25, "andi" { d: Reg, a: Reg, imm: Imm };
    /// `d = a | imm`
    Ori = 0x26, "ori" { d: Reg, a: Reg, imm: Imm };
    /// `d = a ^ imm`
    Xori = 0x27, "xori" { d: Reg, a: Reg, imm: Imm };
    /// `d = a << (imm & 63)`
    Shli = 0x28, "shli" { d: Reg, a: Reg, imm: Imm };
    /// `d = a >> (imm & 63)`, arithmetic
    Shri = 0x29, "shri" { d: Reg, a: Reg, imm: Imm };
    /// `d = a >> (imm & 63)`, logical
    Ushri = 0x2a, "ushri" { d: Reg, a: Reg, imm: Imm };
    /// `d = (a == imm) as i64`
    Eqi = 0x2b, "eqi" { d: Reg, a: Reg, imm: Imm };
    /// `d = (a != imm) as i64`
    Nei = 0x2c, "nei" { d: Reg, a: Reg, imm: Imm };
    /// `d = (a < imm) as i64`, signed
    Lti = 0x2d, "lti" { d: Reg, a: Reg, imm: Imm };
    /// `d = (a <= imm) as i64`, signed
    Lei = 0x2e, "lei" { d: Reg, a: Reg, imm: Imm };
    /// `d = (a < imm) as i64`, unsigned (imm sign-extended first)
    Ltui = 0x2f, "ltui" { d: Reg, a: Reg, imm: Imm };

    /// `d = mem[a + imm]`; traps when out of bounds.  Emits a Value tuple.
    Ld = 0x30, "ld" { d: Reg, a: Reg, imm: Imm };
    /// `mem[a + imm] = b`; traps when out of bounds
    St = 0x31, "st" { a: Reg, imm: Imm, b: Reg };
    /// `d` = the byte at byte address `ea = (a & 0xFFFF_FFFF) + imm`,
    /// sign-extended; traps unless `ea + 1 <= len`.  Emits a Value tuple.
    Ld8s = 0x32, "ld8s" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the byte at `ea`, zero-extended.  Emits a Value tuple.
    Ld8u = 0x33, "ld8u" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the 16 bits at `ea` (little-endian), sign-extended.  Emits a Value tuple.
    Ld16s = 0x34, "ld16s" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the 16 bits at `ea`, zero-extended.  Emits a Value tuple.
    Ld16u = 0x35, "ld16u" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the 32 bits at `ea`, sign-extended.  Emits a Value tuple.
    Ld32s = 0x36, "ld32s" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the 32 bits at `ea`, zero-extended.  Emits a Value tuple.
    Ld32u = 0x37, "ld32u" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the 64 bits at `ea`.  Emits a Value tuple.
    Ld64 = 0x38, "ld64" { d: Reg, a: Reg, imm: Imm };
    /// Stores `b`'s low 8 bits at byte address `ea = (a & 0xFFFF_FFFF) + imm`;
    /// traps unless `ea + 1 <= len`
    St8 = 0x39, "st8" { a: Reg, imm: Imm, b: Reg };
    /// Stores `b`'s low 16 bits at `ea` (little-endian)
    St16 = 0x3a, "st16" { a: Reg, imm: Imm, b: Reg };
    /// Stores `b`'s low 32 bits at `ea`
    St32 = 0x3b, "st32" { a: Reg, imm: Imm, b: Reg };
    /// Stores `b`'s 64 bits at `ea`
    St64 = 0x3c, "st64" { a: Reg, imm: Imm, b: Reg };
    /// `d` = the memory's current length, in bytes
    Msize = 0x3d, "msize" { d: Reg };
    /// Grows the memory by `a` bytes: `d` = the old length, or -1 (and no
    /// change) when `a < 0` or the capacity would be passed
    Mgrow = 0x3e, "mgrow" { d: Reg, a: Reg };

    /// Jump to `target`
    Jmp = 0x40, "jmp" { target: Label };
    /// Jump if `a != 0`.  Emits an Edge tuple.
    Jnz = 0x41, "jnz" { a: Reg, target: Label };
    /// Jump if `a == 0`.  Emits an Edge tuple.
    Jz = 0x42, "jz" { a: Reg, target: Label };
    /// Jump if `a == b`.  Emits an Edge tuple.
    Beq = 0x43, "beq" { a: Reg, b: Reg, target: Label };
    /// Jump if `a != b`.  Emits an Edge tuple.
    Bne = 0x44, "bne" { a: Reg, b: Reg, target: Label };
    /// Jump if `a < b`, signed.  Emits an Edge tuple.
    Blt = 0x45, "blt" { a: Reg, b: Reg, target: Label };
    /// Jump if `a <= b`, signed.  Emits an Edge tuple.
    Ble = 0x46, "ble" { a: Reg, b: Reg, target: Label };
    /// Jump if `a > b`, signed.  Emits an Edge tuple.
    Bgt = 0x47, "bgt" { a: Reg, b: Reg, target: Label };
    /// Jump if `a >= b`, signed.  Emits an Edge tuple.
    Bge = 0x48, "bge" { a: Reg, b: Reg, target: Label };
    /// Jump if `a == imm`.  Emits an Edge tuple.
    Beqi = 0x49, "beqi" { a: Reg, imm: Imm, target: Label };
    /// Jump if `a != imm`.  Emits an Edge tuple.
    Bnei = 0x4a, "bnei" { a: Reg, imm: Imm, target: Label };
    /// Jump if `a < imm`.  Emits an Edge tuple.
    Blti = 0x4b, "blti" { a: Reg, imm: Imm, target: Label };
    /// Jump if `a <= imm`.  Emits an Edge tuple.
    Blei = 0x4c, "blei" { a: Reg, imm: Imm, target: Label };
    /// Jump if `a > imm`.  Emits an Edge tuple.
    Bgti = 0x4d, "bgti" { a: Reg, imm: Imm, target: Label };
    /// Jump if `a >= imm`.  Emits an Edge tuple.
    Bgei = 0x4e, "bgei" { a: Reg, imm: Imm, target: Label };
    /// Indirect jump: to entry `a` of jump table `t`, or fall through when
    /// `a` is out of the table's range.  Emits an Edge tuple.
    Jtab = 0x4f, "jtab" { a: Reg, t: Table };
    /// `a += 1; if a <= b jump` (a counted loop's back edge).  Emits an Edge tuple.
    Loop = 0x50, "loop" { a: Reg, b: Reg, target: Label };
    /// Jump if `a < b`, unsigned.  Emits an Edge tuple.
    Bltu = 0x51, "bltu" { a: Reg, b: Reg, target: Label };
    /// Jump if `a >= b`, unsigned.  Emits an Edge tuple.
    Bgeu = 0x52, "bgeu" { a: Reg, b: Reg, target: Label };

    /// `d = f(a, a+1, ..., a+n-1)`.  Emits a Call tuple.
    Call = 0x60, "call" { d: Reg, f: Func, a: Reg, n: Count };
    /// `d = (function value in f)(a, ..., a+n-1)`; traps on a bad function
    /// value or arity.  Emits a Call tuple.
    Calli = 0x61, "calli" { d: Reg, f: Reg, a: Reg, n: Count };
    /// `d = host function h(a, a+1, ..., a+n-1)`: a function the embedder
    /// provides, imported by name (`.import`); it may read and write memory,
    /// or trap with a message.
    Hcall = 0x64, "hcall" { d: Reg, h: HostFn, a: Reg, n: Count };
    /// Return `a` to the caller (from the entry function: end the program).
    Ret = 0x62, "ret" { a: Reg };
    /// End the program now with exit status `a & 255`.
    Halt = 0x63, "halt" { a: Reg };
    /// Stop with the trap whose kind code `imm` names (see
    /// [`crate::interp::TrapCode`]; the verifier refuses unknown codes).
    Trap = 0x65, "trap" { imm: Imm };

    /// Print `a` in decimal.
    Putn = 0x70, "putn" { a: Reg };
    /// Print the byte `a & 255`.
    Putc = 0x71, "putc" { a: Reg };
    /// `d` = number of input bytes loaded into memory at the input address.
    Inlen = 0x72, "inlen" { d: Reg };

    /// `d = a / b`, unsigned; traps when `b == 0`
    Divu = 0x80, "divu" { d: Reg, a: Reg, b: Reg };
    /// `d = a % b`, unsigned; traps when `b == 0`
    Remu = 0x81, "remu" { d: Reg, a: Reg, b: Reg };
    /// `d = a` rotated left by `b & 63`
    Rotl = 0x82, "rotl" { d: Reg, a: Reg, b: Reg };
    /// `d = a` rotated right by `b & 63`
    Rotr = 0x83, "rotr" { d: Reg, a: Reg, b: Reg };
    /// `d` = `a`'s low 32 bits rotated left by `b & 31`, sign-extended
    Rotl32 = 0x84, "rotl32" { d: Reg, a: Reg, b: Reg };
    /// `d` = `a`'s low 32 bits rotated right by `b & 31`, sign-extended
    Rotr32 = 0x85, "rotr32" { d: Reg, a: Reg, b: Reg };
    /// `d = (a <= b) as i64`, unsigned
    Leu = 0x86, "leu" { d: Reg, a: Reg, b: Reg };
    /// `d = if c != 0 { a } else { b }`
    Select = 0x87, "select" { d: Reg, c: Reg, a: Reg, b: Reg };

    /// `d` = the low 32 bits of `a + b`, sign-extended
    Addw = 0x88, "addw" { d: Reg, a: Reg, b: Reg };
    /// `d` = the low 32 bits of `a - b`, sign-extended
    Subw = 0x89, "subw" { d: Reg, a: Reg, b: Reg };
    /// `d` = the low 32 bits of `a * b`, sign-extended
    Mulw = 0x8a, "mulw" { d: Reg, a: Reg, b: Reg };
    /// `d` = the low 32 bits of `a << (b & 31)`, sign-extended
    Shlw = 0x8b, "shlw" { d: Reg, a: Reg, b: Reg };
    /// `d` = `a`'s low 32 bits shifted right arithmetically by `b & 31`, sign-extended
    Shrw = 0x8c, "shrw" { d: Reg, a: Reg, b: Reg };
    /// `d` = `a`'s low 32 bits shifted right logically by `b & 31`, sign-extended
    Ushrw = 0x8d, "ushrw" { d: Reg, a: Reg, b: Reg };
    /// `d` = the low 32 bits of `a + imm`, sign-extended
    Addiw = 0x8e, "addiw" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the low 32 bits of `a * imm`, sign-extended
    Muliw = 0x8f, "muliw" { d: Reg, a: Reg, imm: Imm };
    /// `d` = the low 32 bits of `a << (imm & 31)`, sign-extended
    Shliw = 0x90, "shliw" { d: Reg, a: Reg, imm: Imm };
    /// `d` = `a`'s low 32 bits shifted right logically by `imm & 31`, sign-extended
    Ushriw = 0x91, "ushriw" { d: Reg, a: Reg, imm: Imm };
}

impl Op {
    /// Whether control can continue to the next instruction.
    pub const fn falls_through(self) -> bool {
        !matches!(self, Op::Jmp | Op::Ret | Op::Halt | Op::Trap)
    }

    /// Whether this is a conditional branch (two successors).
    pub const fn is_conditional_branch(self) -> bool {
        matches!(
            self,
            Op::Jnz
                | Op::Jz
                | Op::Beq
                | Op::Bne
                | Op::Blt
                | Op::Ble
                | Op::Bgt
                | Op::Bge
                | Op::Beqi
                | Op::Bnei
                | Op::Blti
                | Op::Blei
                | Op::Bgti
                | Op::Bgei
                | Op::Loop
                | Op::Bltu
                | Op::Bgeu
        )
    }

    /// Whether this is a load: `ld` or a sized load (`ld8s` .. `ld64`),
    /// which reads memory into its destination and emits a Value tuple.
    pub const fn is_load(self) -> bool {
        matches!(
            self,
            Op::Ld | Op::Ld8s | Op::Ld8u | Op::Ld16s | Op::Ld16u | Op::Ld32s | Op::Ld32u | Op::Ld64
        )
    }

    /// Whether this is a store: `st` or a sized store (`st8` .. `st64`).
    pub const fn is_store(self) -> bool {
        matches!(self, Op::St | Op::St8 | Op::St16 | Op::St32 | Op::St64)
    }

    /// Whether the instruction reads the program's memory: its contents
    /// (a load) or its current length (`msize`, `mgrow`). An `hcall`'s host
    /// function may read memory too; code that cares treats `hcall` apart.
    pub const fn reads_memory(self) -> bool {
        self.is_load() || matches!(self, Op::Msize | Op::Mgrow)
    }

    /// Whether the instruction changes the program's memory: its contents
    /// (a store) or its length (`mgrow`). Code that may assume memory
    /// unchanged across an instruction must ask this (and treat `hcall`,
    /// whose host function may write memory, and calls apart).
    pub const fn writes_memory(self) -> bool {
        self.is_store() || matches!(self, Op::Mgrow)
    }

    /// The access size in bytes of a sized load or store (`ld8s` .. `st64`),
    /// and for loads whether the value is sign-extended; `None` for every
    /// other instruction (the word `ld`/`st` included).
    pub const fn sized_access(self) -> Option<(u8, bool)> {
        Some(match self {
            Op::Ld8s => (1, true),
            Op::Ld8u | Op::St8 => (1, false),
            Op::Ld16s => (2, true),
            Op::Ld16u | Op::St16 => (2, false),
            Op::Ld32s => (4, true),
            Op::Ld32u | Op::St32 => (4, false),
            Op::Ld64 | Op::St64 => (8, false),
            _ => return None,
        })
    }

    /// Encoded size of an instruction with this opcode, in bytes.
    pub fn encoded_size(self) -> usize {
        1 + self
            .operand_kinds()
            .iter()
            .map(|k| k.encoded_size())
            .sum::<usize>()
    }
}

impl Instr {
    /// The destination register this instruction writes, if any.
    pub fn dest(&self) -> Option<Reg> {
        match self.operands().first() {
            Some(Operand::Reg(d)) if self.writes_first_operand() => Some(*d),
            _ => None,
        }
    }

    fn writes_first_operand(&self) -> bool {
        use Op::*;
        !matches!(
            self.op(),
            St | St8
                | St16
                | St32
                | St64
                | Trap
                | Bltu
                | Bgeu
                | Jmp
                | Jnz
                | Jz
                | Beq
                | Bne
                | Blt
                | Ble
                | Bgt
                | Bge
                | Beqi
                | Bnei
                | Blti
                | Blei
                | Bgti
                | Bgei
                | Jtab
                | Ret
                | Halt
                | Putn
                | Putc
                | Nop
        )
    }

    /// Static branch targets of this instruction (not including the jump
    /// table's, which live in the function).
    pub fn label(&self) -> Option<Label> {
        self.operands().iter().find_map(|o| match o {
            Operand::Label(l) => Some(*l),
            _ => None,
        })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_instruction_stays_small() {
        // The interpreter streams through `[Instr]`; a bigger enum costs cache.
        assert_eq!(std::mem::size_of::<Instr>(), 16);
    }

    #[test]
    fn opcode_bytes_and_mnemonics_are_unique_and_round_trip() {
        for &op in Op::ALL {
            assert_eq!(Op::from_byte(op as u8), Some(op));
            assert_eq!(Op::from_mnemonic(op.mnemonic()), Some(op));
            assert!(op.operand_kinds().len() <= MAX_OPERANDS);
            assert!(!op.doc().is_empty(), "{op} has no doc");
        }
        let mut names: Vec<_> = Op::ALL.iter().map(|o| o.mnemonic()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Op::ALL.len());
    }

    #[test]
    fn operands_round_trip_through_from_operands() {
        let i = Instr::Call {
            d: 3,
            f: 7,
            a: 4,
            n: 2,
        };
        assert_eq!(Instr::from_operands(i.op(), &i.operands()), Some(i));
        assert_eq!(Instr::from_operands(Op::Call, &[Operand::Reg(1)]), None);
        assert_eq!(i.dest(), Some(3));
        assert_eq!(Instr::St { a: 1, imm: 0, b: 2 }.dest(), None);
    }
}

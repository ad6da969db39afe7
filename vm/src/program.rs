//! A loaded program: functions, data segments and memory layout.
//!
//! A `Program` as built by the decoder or the assembler is not yet trusted;
//! [`crate::verify`] checks every invariant the interpreter relies on, and
//! [`Program::load`]/[`crate::asm::assemble`] run it before handing one out.

use crate::isa::Instr;

/// Most registers a function may declare: register operands are one byte,
/// and the interpreter's register window relies on this bound.
pub const MAX_REGS: usize = 256;
/// Most words of linear memory a program may declare (1 GiB).
pub const MAX_MEMORY_WORDS: u64 = 1 << 27;
/// Most functions in one program.
pub const MAX_FUNCTIONS: usize = 1 << 16;
/// Most instructions in one function.
pub const MAX_CODE_LEN: usize = 1 << 24;

/// One function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// The function's name (`.func name(...)` in assembly, also stored in
    /// `.bc` images), unique within the program (verified); assembly
    /// refers to functions by it, traps and verifier errors report it.
    pub name: String,
    /// Parameters arrive in `r0 .. r(params-1)`.
    pub params: u8,
    /// Size of the register file, `params <= regs <= 256`.
    pub regs: u16,
    /// The decoded instructions; labels and pcs are indices into it.
    pub code: Vec<Instr>,
    /// Jump tables used by `jtab`, each a list of instruction indices.
    pub tables: Vec<Vec<u32>>,
}

/// Initialized words of linear memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSegment {
    /// The word address of the first word; the segment lies within
    /// [`Program::memory_len`] (verified).
    pub addr: u64,
    /// The initial values, from `addr` on.
    pub words: Vec<i64>,
}

/// A host function the program imports (`.import name N` in assembly):
/// the embedder provides a function of this name taking `params`
/// arguments, and `hcall` calls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The name the host provides it under, unique among the imports
    /// (verified).
    pub name: String,
    /// How many arguments it takes; every `hcall` of it passes this many
    /// (verified).
    pub params: u8,
}

/// Most host functions one program may import.
pub const MAX_IMPORTS: usize = 1 << 16;

/// A whole program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Every function; [`Func`](crate::isa::Func) operands and the function
    /// index of a [`Pc`] index into it.
    pub functions: Vec<Function>,
    /// The memory's initial contents, copied in before the run starts.
    pub data: Vec<DataSegment>,
    /// Words of linear memory, all zero except the data segments: the
    /// memory's capacity (`8 * memory_words` bytes).
    pub memory_words: u64,
    /// The memory's initial current length in bytes (`.memlen`): a multiple
    /// of 8, at most `8 * memory_words` (verified); accesses past the
    /// current length trap, and `mgrow` raises it up to the capacity.
    pub memory_len: u64,
    /// Where the `--input` file's bytes are loaded, one byte per word.
    pub input_base: u64,
    /// The function that starts the program; its parameters are the
    /// program's arguments.
    pub entry: u32,
    /// The host functions the program imports; [`HostFn`](crate::isa::HostFn)
    /// operands index into it. A program with imports runs only where a
    /// host provides them (see `toyvm::engine`).
    pub imports: Vec<Import>,
    /// Debug information, not executed: where each instruction came from
    /// in the source the program was translated from (a WebAssembly
    /// module's byte offset of the operator; see `toyvm-wasm`). Either
    /// empty (assembly and `.bc` programs: the `.bc` format does not carry
    /// it) or one list per function, each empty (no source) or one offset
    /// per instruction. Reports print it beside a pc
    /// ([`Program::source_offset`]); nothing else reads it.
    pub source_offsets: Vec<Vec<u32>>,
}

impl Program {
    /// The index of the function with this name.
    pub fn function_index(&self, name: &str) -> Option<u32> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| i as u32)
    }

    /// The function that starts the program, [`Program::entry`].
    ///
    /// Panics if `entry` is not a function index, which a verified program
    /// rules out.
    pub fn entry_function(&self) -> &Function {
        &self.functions[self.entry as usize]
    }

    /// The source offset instruction `pc` of function `func` was
    /// translated from, when the program carries one
    /// ([`Program::source_offsets`]).
    pub fn source_offset(&self, func: u32, pc: u32) -> Option<u32> {
        self.source_offsets
            .get(func as usize)?
            .get(pc as usize)
            .copied()
    }
}

/// A program counter ([`toyvm_event::Pc`]): function index in the high 32
/// bits, instruction offset in the low 32, the tuple encoding's packing.
pub use toyvm_event::{ARG_OFFSET, Pc};

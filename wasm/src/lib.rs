//! A WebAssembly front-end for toyvm: translates a module of WebAssembly
//! 1.0's integer subset (with the sign-extension operators) into a
//! verified [`toyvm_vm::Program`], and a WASI preview 1 host ([`Wasi`]) for
//! the command-line programs wasi-libc builds.
//!
//! ```
//! use toyvm_vm::interp;
//! use toyvm_wasm::{translate, Options, Wasi};
//!
//! // A WASI command that prints "hi\n" and exits with status 3.
//! let wasm = wat::parse_str(r#"
//!     (module
//!       (import "wasi_snapshot_preview1" "fd_write"
//!         (func $fd_write (param i32 i32 i32 i32) (result i32)))
//!       (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
//!       (memory (export "memory") 1)
//!       (data (i32.const 8) "hi\n")
//!       (func (export "_start")
//!         (i32.store (i32.const 0) (i32.const 8))   ;; iovec: buffer
//!         (i32.store (i32.const 4) (i32.const 3))   ;; iovec: length
//!         (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))
//!         (call $exit (i32.const 3))))
//! "#)?;
//! let t = translate(&wasm, &Options::default())?;
//! let mut stdout = Vec::new();
//! let mut wasi = Wasi::new(&t, vec!["hello.wasm".into()]).stdout(&mut stdout);
//! let mut mem = interp::memory(&t.program, &[])?;
//! let call = interp::Call { func: t.program.entry, args: &[], input_len: 0 };
//! let (outcome, _steps) = interp::call_with_host(
//!     &t.program, &mut mem, call, &mut std::io::sink(),
//!     &mut toyvm_vm::interp::NoJit(&mut toyvm_vm::tuple::NoSink),
//!     &mut wasi, &Default::default(),
//! );
//! drop(wasi);
//! assert_eq!(outcome?.value, 3);
//! assert_eq!(stdout, b"hi\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! See `wasm/README.md` for what is supported, what traps and the limits.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bulk;
mod cond;
mod control;
mod dispatch;
mod emit;
mod error;
mod func;
mod layout;
mod module;
mod names;
mod ops;
mod table;
mod translate;
pub mod wasi;

pub use error::{Error, Result};
pub use layout::{DataPlace, Layout, PAGE};
pub use module::{MAX_DEFINED_FUNCTIONS, MAX_MUTABLE_GLOBALS, MAX_TABLE_ENTRIES};
pub use translate::translate;
pub use wasi::{Clock, Randomness, WASI_MODULE, Wasi, WasiFn};

use toyvm_vm::Program;

/// The `trap` codes the translation emits (docs/isa.md), by the
/// WebAssembly trap each stands for.
pub mod trap_code {
    /// `unreachable` executed.
    pub const UNREACHABLE: i32 = 0;
    /// `i32.div_s`/`i64.div_s` of the minimum by -1.
    pub const INTEGER_OVERFLOW: i32 = 1;
    /// `call_indirect` past the table or through a null entry (also an
    /// element segment past the table at instantiation).
    pub const UNDEFINED_ELEMENT: i32 = 2;
    /// `call_indirect` through an entry of another type.
    pub const SIGNATURE_MISMATCH: i32 = 3;
    /// A memory access out of bounds the translation knows statically (an
    /// offset past any memory, a data segment past the memory).
    pub const OUT_OF_BOUNDS: i32 = 4;
    /// Integer division or remainder by zero.
    pub const DIVIDE_BY_ZERO: i32 = 5;
    /// A floating-point operator that computes (not supported yet).
    pub const UNSUPPORTED: i32 = 6;
}

/// Which function the program's entry calls after instantiating the module
/// (placing its segments and running its start function).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Entry {
    /// The export `_start` (a WASI command); the entry takes no arguments.
    #[default]
    Start,
    /// This export: its integer parameters become the entry's (i32
    /// arguments are taken modulo 2^32), its result the entry's value.
    Export(String),
    /// None: the entry only instantiates (for embedders that call exports
    /// themselves, through [`Translation::exports`]).
    InstantiateOnly,
}

/// How to translate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// What the program's entry runs.
    pub entry: Entry,
    /// The most WebAssembly pages (64 KiB) a memory may reach: a memory
    /// without a declared maximum, or with a larger one, can grow to this
    /// many pages and no further (`memory.grow` then returns -1). Default
    /// 1024 (64 MiB); toyvm's memory limit (1 GiB) caps it.
    pub max_memory_pages: u64,
    /// Whether imports from modules other than WASI's become host imports
    /// of the program ([`Translation::imports`]) for the embedder to
    /// provide; when false they are link errors. Default true.
    pub host_imports: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            entry: Entry::Start,
            max_memory_pages: DEFAULT_MAX_MEMORY_PAGES,
            host_imports: true,
        }
    }
}

/// [`Options::max_memory_pages`]'s default: 64 MiB.
pub const DEFAULT_MAX_MEMORY_PAGES: u64 = 1024;

/// A translated module.
#[derive(Clone, Debug)]
pub struct Translation {
    /// The program, verified.
    pub program: Program,
    /// What each of the program's functions is, by the same index.
    pub functions: Vec<FunctionInfo>,
    /// What each of the program's imports is, by the same index.
    pub imports: Vec<HostImport>,
    /// The module's exported functions.
    pub exports: Vec<Export>,
    /// Where things live in memory.
    pub layout: Layout,
    /// The function that instantiates the module: it traps as WebAssembly
    /// instantiation does when a segment does not fit, and runs the start
    /// function. The entry calls it first; embedders that call exports
    /// themselves call it once before.
    pub init: u32,
    /// The instructions that trap because their WebAssembly operator is not
    /// supported (floating-point arithmetic and conversions).
    pub unsupported: Vec<Unsupported>,
}

/// Where a program function comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A function of the module.
    Wasm {
        /// Its WebAssembly function index (imports count first).
        index: u32,
        /// The code offset of its body in the module.
        offset: u32,
    },
    /// A function that calls an imported one (a table entry of an import).
    ImportThunk {
        /// The import's WebAssembly function index.
        index: u32,
    },
    /// The instantiation function ([`Translation::init`]).
    Init,
    /// The program's entry.
    Entry,
}

/// One program function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    /// Its name in the program (from the name section where the module has
    /// one, made into an identifier toyvm's assembler accepts).
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// The WebAssembly operators its body holds (the final `end`
    /// included; 0 for a function that is not the module's).
    pub operators: u32,
    /// The size of its body in the module's code section, in bytes (0
    /// for a function that is not the module's).
    pub body_bytes: u32,
}

/// What an import of the program is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostImport {
    /// The WebAssembly import's module.
    pub module: String,
    /// Its field.
    pub field: String,
    /// The WASI function, when it is one ([`Wasi`] provides those).
    pub wasi: Option<WasiFn>,
}

/// A value type at the boundary (parameters and results of exports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValKind {
    /// i32, kept sign-extended in a register.
    I32,
    /// i64.
    I64,
    /// f32's bits, sign-extended from 32.
    F32,
    /// f64's bits.
    F64,
}

/// An exported function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    /// The export's name.
    pub name: String,
    /// The program function to call (with [`Translation::init`] run once
    /// before).
    pub function: u32,
    /// Its parameters.
    pub params: Vec<ValKind>,
    /// Its results (at most one).
    pub results: Vec<ValKind>,
}

/// An instruction that traps with [`trap_code::UNSUPPORTED`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// The program function.
    pub function: u32,
    /// The instruction.
    pub pc: u32,
    /// The WebAssembly operator, e.g. `f64.add`.
    pub operator: &'static str,
    /// Its code offset in the module.
    pub offset: u32,
}

/// What the translation made of the module's code: its static cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// The module's defined functions.
    pub functions: u32,
    /// Their bodies' bytes: the code section without its header (a
    /// module's other sections, debug information say, are not code).
    pub code_bytes: u64,
    /// WebAssembly operators in their bodies, every one counted once
    /// (`local.get`, `block` and `end` too, and operators in dead code).
    pub operators: u64,
    /// toyvm instructions the translation emitted for those bodies (their
    /// out-of-line code and locals' zeroing included; not the import
    /// thunks, the instantiation or the entry).
    pub instructions: u64,
}

impl Counts {
    /// toyvm instructions per WebAssembly operator (0 without operators).
    pub fn per_operator(&self) -> f64 {
        if self.operators == 0 {
            0.0
        } else {
            self.instructions as f64 / self.operators as f64
        }
    }
}

impl Translation {
    /// The static cost: operators read against instructions emitted, over
    /// the module's own functions.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for (info, f) in self.functions.iter().zip(&self.program.functions) {
            if let Origin::Wasm { .. } = info.origin {
                c.functions += 1;
                c.code_bytes += info.body_bytes as u64;
                c.operators += info.operators as u64;
                c.instructions += f.code.len() as u64;
            }
        }
        c
    }

    /// The WebAssembly code offset an instruction was translated from
    /// (the program's [`Program::source_offsets`]; none for the
    /// instantiation and the entry, which no operator produced).
    pub fn wasm_offset(&self, function: u32, pc: u32) -> Option<u32> {
        self.program.source_offset(function, pc)
    }

    /// A trap of the program, described in WebAssembly's terms: the
    /// function and code offset, and for an unsupported operator its name.
    pub fn describe_trap(&self, trap: &toyvm_vm::interp::Trap) -> String {
        let (f, pc) = (trap.pc.func(), trap.pc.offset());
        let mut s = trap.to_string();
        if let Some(u) = self
            .unsupported
            .iter()
            .find(|u| u.function == f && u.pc == pc)
        {
            s.push_str(&format!(" (WebAssembly `{}`)", u.operator));
        }
        if let Some(off) = self.wasm_offset(f, pc) {
            s.push_str(&format!(" at WebAssembly code offset {off:#x}"));
        }
        s
    }

    /// The export with this name.
    pub fn export(&self, name: &str) -> Option<&Export> {
        self.exports.iter().find(|e| e.name == name)
    }
}

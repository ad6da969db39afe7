//! WebAssembly modules on the command line: `toyvm run prog.wasm ARGS` and
//! `toyvm dis prog.wasm`. A module is told apart from bytecode and text
//! assembly by its magic (`\0asm`), translated by `toyvm-wasm`, and run with
//! its WASI host: the ARGS are its `argv` after the module's name, its
//! output goes to stdout and stderr, and its clock and random bytes are
//! deterministic unless `--real-time` is given.

use std::path::Path;
use std::time::Instant;

use toyvm_vm::Program;

/// A loaded program, and the module it was translated from when it was one.
pub struct Loaded {
    /// The program (translated, when it came from a module).
    pub program: Program,
    /// The translation, for a WebAssembly module.
    pub wasm: Option<Box<toyvm_wasm::Translation>>,
    /// What translating it cost, for a WebAssembly module.
    pub cost: Option<crate::runstats::WasmStats>,
}

/// Whether `bytes` are a WebAssembly module (its magic number).
pub fn is_module(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\0asm")
}

/// Translates a module; the error names the file (a module that does not
/// translate is malformed input: status 3).
pub fn translate(path: &Path, bytes: &[u8]) -> Result<Loaded, crate::status::Failure> {
    let start = Instant::now();
    let t = toyvm_wasm::translate(bytes, &toyvm_wasm::Options::default())
        .map_err(|e| crate::status::Failure::io(format!("{}: {e}", path.display())))?;
    let cost = crate::runstats::WasmStats::new(bytes.len(), start.elapsed().as_secs_f64(), &t);
    Ok(Loaded {
        program: t.program.clone(),
        wasm: Some(Box::new(t)),
        cost: Some(cost),
    })
}

/// The module's WASI host for one run: `argv` is the module's file name
/// then `args`.
pub fn host<'a>(
    t: &toyvm_wasm::Translation,
    path: &Path,
    args: &[String],
    real_time: bool,
) -> toyvm_wasm::Wasi<'a> {
    let wasi = toyvm_wasm::Wasi::new(t, toyvm_lab::suite::wasi_argv(path, args));
    if real_time {
        wasi.clock(toyvm_wasm::Clock::Real)
            .randomness(toyvm_wasm::Randomness::Real)
    } else {
        wasi
    }
}

/// Where a candidate tuple's pcs come from in the module, to print after
/// the tuple: ` (wasm 0x3a2)` for a value or call site, ` (wasm 0x3a2 ->
/// 0x390)` for an edge; empty when the pc has no code offset (the
/// instantiation, the entry, a function argument's value).
pub fn source(t: &toyvm_wasm::Translation, tuple: &toyvm_vm::Tuple) -> String {
    let at = |pc: u64| {
        let pc = toyvm_vm::Pc(pc);
        t.wasm_offset(pc.func(), pc.offset())
    };
    match (at(tuple.a), tuple.kind) {
        (None, _) => String::new(),
        (Some(from), toyvm_vm::Kind::Edge) => match at(tuple.b) {
            Some(to) => format!(" (wasm {from:#x} -> {to:#x})"),
            None => format!(" (wasm {from:#x})"),
        },
        (Some(from), _) => format!(" (wasm {from:#x})"),
    }
}

//! What the tests share: running a module under wasmi (the oracle) and
//! under toyvm's interpreter, and comparing how the runs end.
#![allow(dead_code)]

pub mod fuzz;
pub mod wasmi_wasi;

use std::path::PathBuf;

use toyvm_vm::interp::{self, Call, Config, NoJit, TrapCode, TrapKind};
use toyvm_vm::tuple::NoSink;
use toyvm_wasm::{Options, Translation, Wasi, translate};

/// A WebAssembly trap, by kind: what both engines are compared on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WasmTrap {
    Unreachable,
    IntegerOverflow,
    /// `call_indirect` past the table or through a null entry (wasmi tells
    /// the two apart, WebAssembly 1.0 and toyvm do not).
    UndefinedElement,
    SignatureMismatch,
    OutOfBounds,
    DivideByZero,
    /// A float operator toyvm does not run yet.
    Unsupported,
    StackOverflow,
    OutOfFuel,
    Other(String),
}

impl WasmTrap {
    pub fn from_wasmi(e: &wasmi::Error) -> WasmTrap {
        use wasmi::TrapCode as T;
        if e.as_trap_code().is_none() {
            // Instantiation errors carry no trap code.
            let msg = e.to_string();
            if msg.contains("out of bounds table access") {
                return WasmTrap::UndefinedElement;
            }
            if msg.contains("out of bounds memory access") {
                return WasmTrap::OutOfBounds;
            }
            if msg.contains("fuel") {
                return WasmTrap::OutOfFuel;
            }
        }
        match e.as_trap_code() {
            Some(T::UnreachableCodeReached) => WasmTrap::Unreachable,
            Some(T::IntegerOverflow) => WasmTrap::IntegerOverflow,
            Some(T::TableOutOfBounds | T::IndirectCallToNull) => WasmTrap::UndefinedElement,
            Some(T::BadSignature) => WasmTrap::SignatureMismatch,
            Some(T::MemoryOutOfBounds) => WasmTrap::OutOfBounds,
            Some(T::IntegerDivisionByZero) => WasmTrap::DivideByZero,
            Some(T::StackOverflow) => WasmTrap::StackOverflow,
            Some(T::OutOfFuel) => WasmTrap::OutOfFuel,
            _ => WasmTrap::Other(e.to_string()),
        }
    }

    pub fn from_toyvm(kind: &TrapKind) -> WasmTrap {
        toyvm_trap(kind)
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exit status (0 when `_start` returns, else `proc_exit`'s code).
    Exit(i32),
    Trap(WasmTrap),
}

/// A command's run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub ending: Ending,
}

/// Runs a WASI command under toyvm's interpreter with the WASI host.
pub fn toyvm_command(t: &Translation, args: &[&str], fuel: Option<u64>) -> Run {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let result = {
        let mut wasi = Wasi::new(t, args.iter().map(|a| a.to_string()).collect())
            .stdout(&mut stdout)
            .stderr(&mut stderr);
        let mut mem = interp::memory(&t.program, &[]).expect("memory");
        let call = Call {
            func: t.program.entry,
            args: &[],
            input_len: 0,
        };
        let cfg = Config {
            fuel,
            ..Config::default()
        };
        interp::call_with_host(
            &t.program,
            &mut mem,
            call,
            &mut std::io::sink(),
            &mut NoJit(&mut NoSink),
            &mut wasi,
            &cfg,
        )
        .0
    };
    let ending = match result {
        Ok(o) => Ending::Exit(o.value as i32),
        Err(toyvm_vm::Error::Trap(trap)) => Ending::Trap(WasmTrap::from_toyvm(&trap.kind)),
        Err(e) => panic!("toyvm run failed: {e}"),
    };
    Run {
        stdout,
        stderr,
        ending,
    }
}

/// Translates a module for a WASI command run.
pub fn translate_command(wasm: &[u8]) -> Translation {
    translate(wasm, &Options::default()).unwrap_or_else(|e| panic!("translation: {e}"))
}

/// A C program of programs/c with its header's test arguments and
/// expected output.
pub struct CProgram {
    pub name: String,
    pub wasm: Vec<u8>,
    pub args: Vec<String>,
    pub bench_args: Vec<String>,
    pub expected: String,
}

pub fn c_programs() -> Vec<CProgram> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../programs/c");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("programs/c")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    entries.sort();
    for src in entries {
        let text = std::fs::read_to_string(&src).unwrap();
        let field = |prefix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("{} has no `{prefix}` line", src.display()))
                .trim()
                .to_owned()
        };
        let words = |s: String| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let wasm = std::fs::read(src.with_extension("wasm"))
            .unwrap_or_else(|e| panic!("{}: {e} (run programs/c/build.sh)", src.display()));
        out.push(CProgram {
            name: src.file_stem().unwrap().to_string_lossy().into_owned(),
            wasm,
            args: words(field("// args:")),
            bench_args: words(field("// bench-args:")),
            expected: field("//>") + "\n",
        });
    }
    out
}

/// The WebAssembly trap a toyvm trap stands for.
fn toyvm_trap(kind: &TrapKind) -> WasmTrap {
    match kind {
        TrapKind::Trap(code) => match code {
            TrapCode::Unreachable => WasmTrap::Unreachable,
            TrapCode::IntegerOverflow => WasmTrap::IntegerOverflow,
            TrapCode::UndefinedElement => WasmTrap::UndefinedElement,
            TrapCode::SignatureMismatch => WasmTrap::SignatureMismatch,
            TrapCode::MemoryOutOfBounds => WasmTrap::OutOfBounds,
            TrapCode::DivideByZero => WasmTrap::DivideByZero,
            TrapCode::Unsupported => WasmTrap::Unsupported,
            other => WasmTrap::Other(format!("{other:?}")),
        },
        TrapKind::BytesOutOfBounds { .. } => WasmTrap::OutOfBounds,
        TrapKind::StackOverflow { .. } => WasmTrap::StackOverflow,
        TrapKind::OutOfFuel { .. } => WasmTrap::OutOfFuel,
        other => WasmTrap::Other(other.to_string()),
    }
}

//! What the commands read: program files, `--input` files, arguments and
//! profiler specs, each refused with the status of its class.

use std::io;
use std::path::Path;

use toyvm_vm::Program;

use crate::status::Failure;
use crate::streams::note;

pub(crate) fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    read_bounded(path, toyvm_lab::files::MAX_FILE_BYTES, "")
}

/// [`toyvm_lab::files::read_bounded`] with a person's message; `why` follows
/// the size when the file is too large.
fn read_bounded(path: &Path, limit: u64, why: &str) -> Result<Vec<u8>, Failure> {
    toyvm_lab::files::read_bounded(path, limit).map_err(|e| {
        let why = if e.kind() == io::ErrorKind::FileTooLarge {
            why
        } else {
            ""
        };
        Failure::io(format!("{}: {e}{why}", path.display()))
    })
}

/// The `--input` file: at most what the program's memory holds from its
/// `.input` address on (one byte per word).
pub(crate) fn read_input(path: Option<&Path>, program: &Program) -> Result<Vec<u8>, Failure> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let room = toyvm_lab::files::input_room(program);
    let why = format!(
        ": the program's memory holds {room} input bytes from its `.input` address {} (raise `.memory`)",
        program.input_base
    );
    read_bounded(path, room, &why)
}

/// A program file, loaded and verified (not linked: `asm` and `dis` take
/// programs with imports).
pub(crate) fn load(path: &Path) -> Result<Program, Failure> {
    load_any(path).map(|l| l.program)
}

/// A program from bytecode, text assembly or a WebAssembly module (told
/// apart by the magic), loaded and verified, not linked.
pub(crate) fn load_any(path: &Path) -> Result<crate::wasm::Loaded, Failure> {
    let bytes = read(path)?;
    if crate::wasm::is_module(&bytes) {
        return crate::wasm::translate(path, &bytes);
    }
    Program::load_any(&bytes)
        .map(|program| crate::wasm::Loaded {
            program,
            wasm: None,
            cost: None,
        })
        .map_err(|e| Failure::of(path.display(), &e))
}

/// Links `program` for a run with no host functions: refused (status 3)
/// when it imports any.
pub(crate) fn link_without_host(path: &Path, program: &Program) -> Result<(), Failure> {
    toyvm::runtime::no_imports(program).map_err(|e| Failure::of(path.display(), &e))
}

/// A program file to run: loaded, verified and linked. Every command that
/// runs a program links it first, so a program whose imports no host
/// provides is refused before it runs, by every command alike.
pub(crate) fn load_runnable(path: &Path) -> Result<Program, Failure> {
    let program = load(path)?;
    link_without_host(path, &program)?;
    Ok(program)
}

/// The program's arguments: integers in any form
/// [`toyvm_vm::parse_int`] reads (`_`, `0x`, `0b`, `1e7`), as profiler specs
/// and assembly read them.
pub(crate) fn parse_args(args: &[String]) -> Result<Vec<i64>, Failure> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            toyvm_vm::parse_int(a)
                .and_then(|v| i64::try_from(v).ok())
                .ok_or_else(|| {
                    Failure::usage(format!(
                        "argument {} (`{a}`) is not an integer (or not within 64 bits)",
                        i + 1
                    ))
                })
        })
        .collect()
}

/// Parses `--profile` values with the one spec-list grammar
/// ([`toyvm_profiler::spec::split_spec_list`]).
pub(crate) fn parse_profile_specs(
    values: &[String],
) -> Result<Vec<toyvm_profiler::ProfilerSpec>, Failure> {
    toyvm_profiler::spec::split_spec_list(values)?
        .iter()
        .map(|s| toyvm_profiler::parse_spec(s).map_err(Failure::from))
        .collect()
}

/// Warns on standard error when the program's header names an input
/// (`# input:`) and no `--input` was given: it would read zeros.
pub(crate) fn warn_if_input_named(file: &Path) -> Result<(), Failure> {
    if let Some(named) = toyvm_lab::suite::header_input(file, &read(file)?) {
        note(&format!(
            "toyvm: warning: {}'s header names an input ({}) and no --input was given: the program reads zeros where its input goes\n",
            file.display(),
            named.display()
        ));
    }
    Ok(())
}

/// A program path, or the name of a program in `programs/` (`sieve`).
pub(crate) fn resolve(file: std::path::PathBuf) -> Result<std::path::PathBuf, Failure> {
    toyvm_lab::suite::resolve_path(file).map_err(Failure::from)
}

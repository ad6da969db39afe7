//! `toyvm asm`, `dis`, `profile` and `verify`.

use std::path::{Path, PathBuf};

use toyvm_lab::output;
use toyvm_vm::asm;

use crate::inputs::{
    load, load_runnable, parse_args, parse_profile_specs, read, read_input, resolve,
};
use crate::status::{Failure, Status};
use crate::streams::{finish, note, out};

/// The format version of `toyvm profile --json`'s report.
pub(crate) const PROFILE_JSON_FORMAT: u32 = 1;

/// `toyvm asm FILE -o OUT`.
pub(crate) fn asm(file: &Path, output: &Path) -> Result<u8, Failure> {
    output::check_writable(output, "the bytecode")?;
    let src = read(file)?;
    let text = std::str::from_utf8(&src)
        .map_err(|_| Failure::io(format!("{}: not UTF-8 text", file.display())))?;
    let program = asm::assemble(text).map_err(|e| Failure::of(file.display(), &e))?;
    output::replace_file(output, &program.to_bytes())
        .map_err(|e| Failure::write(&output.display().to_string(), &e))?;
    Ok(0)
}

/// `toyvm dis FILE [-o OUT]`.
pub(crate) fn dis(file: &Path, output: Option<PathBuf>) -> Result<u8, Failure> {
    if let Some(p) = &output {
        output::check_writable(p, "the disassembly")?;
    }
    let program = load(file)?;
    let text = asm::disassemble(&program);
    match output {
        Some(p) => output::replace_file(&p, text.as_bytes())
            .map_err(|e| Failure::write(&p.display().to_string(), &e))?,
        None => out(&text)?,
    }
    Ok(0)
}

/// `toyvm profile --trace FILE --profile SPEC...`.
pub(crate) fn profile(
    trace: &Path,
    profiles: &[String],
    json: bool,
    top: usize,
) -> Result<u8, Failure> {
    let specs = parse_profile_specs(profiles)?;
    let reader = toyvm_profiler::trace::TraceReader::open(trace)
        .map_err(|e| Failure::of(trace.display(), &e))?;
    let report = toyvm_profiler::evaluation::profile_stream(reader, &specs)
        .map_err(|e| Failure::of(trace.display(), &e))?;
    let mut text = if json {
        output::json_pretty(PROFILE_JSON_FORMAT, &report)
    } else {
        report.to_text(top)
    };
    text.push('\n');
    out(&text)?;
    Ok(0)
}

/// `toyvm verify`'s arguments.
pub(crate) struct VerifyArgs {
    pub(crate) file: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) profile: String,
    pub(crate) reference: Option<PathBuf>,
    pub(crate) input: Option<PathBuf>,
    pub(crate) given: toyvm_lab::conformance::GivenTolerances,
    pub(crate) json: bool,
    pub(crate) jit: bool,
}

/// `toyvm verify`: 0 on a pass, 1 on a FAIL; the verdict's status stands
/// whatever happens to its output.
pub(crate) fn verify(v: VerifyArgs) -> Result<u8, Failure> {
    let spec = match parse_profile_specs(std::slice::from_ref(&v.profile))?.as_slice() {
        [one] => one.clone(),
        _ => return Err(Failure::usage("verify takes one --profile spec")),
    };
    let tol = v.given.resolve()?;
    if let Some(path) = v.reference.as_ref().filter(|p| !p.exists()) {
        output::check_writable(path, "the reference")?;
    }
    let file = &resolve(v.file.clone())?;
    let program = load_runnable(file)?;
    let args = parse_args(&v.args)?;
    let input_bytes = read_input(v.input.as_deref(), &program)?;
    let fail = |e: toyvm_lab::Error| Failure::of(file.display(), &e);
    let (reference_data, notes) = match &v.reference {
        Some(path) if path.exists() => {
            let r = toyvm_lab::conformance::reuse(path, &program, &args, &input_bytes, v.given)
                .map_err(|e| Failure::of(path.display(), &e))?;
            note(&format!("pass 1: reusing {}\n", path.display()));
            r
        }
        _ => {
            let r = toyvm_lab::conformance::record_reference(
                &program,
                &file.display().to_string(),
                &args,
                &input_bytes,
                &spec,
                tol,
            )
            .map_err(fail)?;
            if let Some(path) = &v.reference {
                let what = format!("the reference {}", path.display());
                let (mut f, replacement) =
                    output::Replacement::create(path).map_err(|e| Failure::write(&what, &e))?;
                toyvm_lab::conformance::save(&r, &mut f)
                    .map_err(|e| Failure::write(&what, &e))
                    .and_then(|()| {
                        drop(f);
                        replacement.commit().map_err(|e| Failure::write(&what, &e))
                    })?;
                note(&format!("pass 1: wrote {}\n", path.display()));
            }
            (r, Vec::new())
        }
    };
    let mut verdict = if v.jit {
        toyvm_lab::conformance::check_jit(&program, &input_bytes, &spec, &reference_data)
    } else {
        toyvm_lab::conformance::check(&program, &input_bytes, &spec, &reference_data)
    }
    .map_err(fail)?;
    verdict.notes.extend(notes);
    let text = if v.json {
        output::json_pretty(toyvm_lab::conformance::VERDICT_JSON_FORMAT, &verdict) + "\n"
    } else {
        verdict.to_text()
    };
    let status = if verdict.passed() {
        Status::Success
    } else {
        Status::Failed
    };
    finish(status, out(&text))
}

//! The programs a comparison runs: found in `programs/` (or named on the
//! command line) and run with the arguments their header gives.
//!
//! A program's header is the `#` comment block the golden tests read too:
//! `# args:` (test size, the default), `# bench-args:` (with `--bench`) and
//! `# input:` (a file loaded at `.input`, relative to the repository root,
//! the folder that holds `programs/`).

use std::path::{Path, PathBuf};

use toyvm_vm::Program;

use super::error::{BadArgument, Error, Result};

/// One program, loaded and ready to run.
#[derive(Clone, Debug)]
pub struct Case {
    /// Its name (the file stem).
    pub name: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// The program, assembled or loaded from `.bc` (and verified).
    pub program: Program,
    /// The entry function's arguments.
    pub args: Vec<i64>,
    /// The input file, when the header names one.
    pub input_path: Option<PathBuf>,
    /// The input file's bytes (empty without one).
    pub input: Vec<u8>,
}

/// What a header says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The entry function's arguments at test size (`# args:`; empty
    /// without the line). `_` may separate digits (`1_000`).
    pub args: Vec<i64>,
    /// The arguments at benchmark size (`# bench-args:`), when given.
    pub bench_args: Option<Vec<i64>>,
    /// The input file (`# input:`), relative to the repository root; an
    /// empty value counts as none.
    pub input: Option<String>,
}

/// Reads the `# args:`, `# bench-args:` and `# input:` lines of a source.
pub fn parse_header(source: &str) -> Result<Header, BadArgument> {
    let mut h = Header::default();
    let ints = |s: &str, line: usize| -> Result<Vec<i64>, BadArgument> {
        s.split_whitespace()
            .map(|a| {
                a.replace('_', "").parse().map_err(|_| BadArgument {
                    line,
                    arg: a.to_owned(),
                })
            })
            .collect()
    };
    for (i, l) in source.lines().enumerate() {
        let Some(c) = l.strip_prefix('#') else {
            continue;
        };
        let c = c.trim();
        if let Some(a) = c.strip_prefix("args:") {
            h.args = ints(a, i + 1)?;
        } else if let Some(a) = c.strip_prefix("bench-args:") {
            h.bench_args = Some(ints(a, i + 1)?);
        } else if let Some(a) = c.strip_prefix("input:") {
            h.input = Some(a.trim().to_owned()).filter(|s| !s.is_empty());
        }
    }
    Ok(h)
}

/// The default program folder: `programs/` in the working directory, else
/// the one beside this crate's sources.
pub fn default_dir() -> PathBuf {
    let here = PathBuf::from("programs");
    if here.is_dir() {
        here
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("programs")
    }
}

/// Every `.tasm` and `.bc` file of `dir`, sorted by name.
pub fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tasm" || e == "bc"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(Error::NoPrograms {
            dir: dir.to_owned(),
        });
    }
    Ok(paths)
}

/// A program given on the command line: a path, or the name of a program
/// in `dir` (`sieve` for `dir/sieve.tasm`).
pub fn resolve(name: &str, dir: &Path) -> Result<PathBuf> {
    let p = PathBuf::from(name);
    if p.is_file() {
        return Ok(p);
    }
    for ext in ["tasm", "bc"] {
        let q = dir.join(format!("{name}.{ext}"));
        if q.is_file() {
            return Ok(q);
        }
    }
    let known: Vec<String> = list(dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    Err(Error::UnknownProgram {
        name: name.to_owned(),
        dir: dir.to_owned(),
        known,
    })
}

/// A program path from the command line, or when no such file exists the
/// name of a program in [`default_dir`] (`toyvm run sieve`).
pub fn resolve_path(file: PathBuf) -> Result<PathBuf> {
    if file.exists() {
        return Ok(file);
    }
    resolve(&file.to_string_lossy(), &default_dir())
}

/// Loads a program with its header's arguments (`bench`: the benchmark
/// size when the header gives one).
pub fn load(path: &Path, bench: bool) -> Result<Case> {
    let bytes =
        crate::files::read_bounded(path, crate::files::MAX_FILE_BYTES).map_err(|source| {
            Error::Read {
                path: path.to_owned(),
                source,
            }
        })?;
    let program = Program::load_any(&bytes).map_err(|source| Error::Program {
        path: path.to_owned(),
        source,
    })?;
    let header = match std::str::from_utf8(&bytes) {
        // Bytecode has no header: it runs without arguments.
        Ok(text) if !bytes.starts_with(toyvm_vm::bytecode::MAGIC) => {
            parse_header(text).map_err(|source| Error::Header {
                path: path.to_owned(),
                source,
            })?
        }
        _ => Header::default(),
    };
    let args = match (bench, &header.bench_args) {
        (true, Some(b)) => b.clone(),
        _ => header.args.clone(),
    };
    let input_path = named_input(path, &header);
    let input =
        match &input_path {
            Some(p) => crate::files::read_bounded(p, crate::files::input_room(&program)).map_err(
                |source| Error::Input {
                    program: path.to_owned(),
                    input: p.clone(),
                    source,
                },
            )?,
            None => Vec::new(),
        };
    Ok(Case {
        name: path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        ),
        path: path.to_owned(),
        program,
        args,
        input_path,
        input,
    })
}

/// The input `source`'s header names (`# input:`), resolved as [`load`]
/// resolves it; `None` for bytecode, a header without one, or one that
/// does not parse.
pub fn header_input(path: &Path, source: &[u8]) -> Option<PathBuf> {
    if source.starts_with(toyvm_vm::bytecode::MAGIC) {
        return None;
    }
    let header = parse_header(std::str::from_utf8(source).ok()?).ok()?;
    named_input(path, &header)
}

fn named_input(path: &Path, header: &Header) -> Option<PathBuf> {
    header.input.as_deref().map(|rel| input_path(path, rel))
}

/// Headers name inputs relative to the repository root, the parent of the
/// program's folder; the working directory is tried next.
fn input_path(program: &Path, rel: &str) -> PathBuf {
    let rel = Path::new(rel);
    if rel.is_absolute() {
        return rel.to_owned();
    }
    let root = program.parent().and_then(Path::parent).map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    let candidates = [root.map(|r| r.join(rel)), Some(rel.to_owned())];
    candidates
        .iter()
        .flatten()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| candidates[0].clone().unwrap_or_else(|| rel.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_give_arguments_and_input() {
        let h = parse_header(
            "# Sum.\n# args: 300 -2\n# bench-args: 10_000\n# input: ../shared/x.b\n.func main(n)\n",
        )
        .unwrap();
        assert_eq!(h.args, [300, -2]);
        assert_eq!(h.bench_args, Some(vec![10_000]));
        assert_eq!(h.input.as_deref(), Some("../shared/x.b"));
        let e = parse_header("# args: x\n").unwrap_err();
        assert_eq!(
            e,
            BadArgument {
                line: 1,
                arg: "x".into()
            }
        );
        assert_eq!(e.to_string(), "line 1: argument `x` is not an integer");
    }
}

//! The program suite: the programs of `programs/` (or named on the command
//! line), run with the arguments their header gives, and the one parser of
//! those headers (the golden tests, `compare` and the benchmarks read it).
//!
//! A program's header is its `#` comment block: `# args:` (test size, the
//! default), `# bench-args:` (with `--bench`), `# input:` (a file loaded
//! at `.input`, relative to the repository root, the folder that holds
//! `programs/`), and what it must print: `#>` lines (the exact output), or
//! `# expect-fnv1a64:` and `# expect-bytes:` for a long output.

use std::path::{Path, PathBuf};

use std::io::Write;

use toyvm_vm::interp::{self, Input};
use toyvm_vm::{Program, TupleSink};

/// What can keep a program of the suite from running: it cannot be found,
/// read or loaded, its header is malformed, or its input is missing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program named on the command line is neither a file nor a
    /// program of the program folder.
    #[error(
        "`{name}` is neither a file nor a program in {} (there: {})",
        .dir.display(),
        .known.join(", ")
    )]
    UnknownProgram {
        /// The name given.
        name: String,
        /// The program folder.
        dir: PathBuf,
        /// The programs the folder has.
        known: Vec<String>,
    },
    /// The program folder holds no program.
    #[error("{}: no .tasm, .bc or .wasm programs", .dir.display())]
    NoPrograms {
        /// The program folder.
        dir: PathBuf,
    },
    /// A program or the program folder could not be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// The input file a program's header names could not be read.
    #[error("{}: input {}: {source}", .program.display(), .input.display())]
    Input {
        /// The program.
        program: PathBuf,
        /// The input file, as resolved.
        input: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// A program does not load (not bytecode, not valid assembly, or it
    /// does not verify).
    #[error("{}: {source}", .path.display())]
    Program {
        /// The program's file.
        path: PathBuf,
        /// What the loader said.
        source: toyvm_vm::Error,
    },
    /// A WebAssembly module does not translate (malformed, or outside the
    /// supported subset).
    #[error("{}: {source}", .path.display())]
    Module {
        /// The module's file.
        path: PathBuf,
        /// What the translator said.
        source: toyvm_wasm::Error,
    },
    /// A program imports host functions: the suite has no host to offer
    /// them, so it is refused before any run.
    #[error("{}: {source}", .path.display())]
    Link {
        /// The program file.
        path: PathBuf,
        /// The link error.
        source: toyvm::Error,
    },
    /// A program's header gives an argument that is not an integer.
    #[error("{}: {source}", .path.display())]
    Header {
        /// The program's file.
        path: PathBuf,
        /// The line and the argument.
        source: BadArgument,
    },
}

/// The suite's result, with [`Error`] by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An argument of a program's header (`# args:`, `# bench-args:`) that is
/// not an integer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: argument `{arg}` is not an integer")]
pub struct BadArgument {
    /// The header's line, from 1.
    pub line: usize,
    /// The argument as written.
    pub arg: String,
}

/// One program, loaded and ready to run.
#[derive(Clone, Debug)]
pub struct Case {
    /// Its name (the file stem).
    pub name: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// The program, assembled or loaded from `.bc` (and verified), or
    /// translated from a WebAssembly module.
    pub program: Program,
    /// The header's arguments: the entry function's, or a WebAssembly
    /// command's `argv` after its name.
    pub args: Vec<i64>,
    /// The input file, when the header names one.
    pub input_path: Option<PathBuf>,
    /// The input file's bytes (empty without one).
    pub input: Vec<u8>,
    /// The translation, when the program is a WebAssembly module (run
    /// with its WASI host).
    pub wasm: Option<std::sync::Arc<toyvm_wasm::Translation>>,
}

impl Case {
    /// The entry function's arguments: the header's for a toyvm program,
    /// none for a WebAssembly command (`_start` takes none: its arguments
    /// are its `argv`).
    pub fn entry_args(&self) -> &[i64] {
        if self.wasm.is_some() { &[] } else { &self.args }
    }

    /// The run's input: the entry arguments and the input file.
    pub fn input(&self) -> Input<'_> {
        Input {
            args: self.entry_args(),
            file: &self.input,
        }
    }

    /// The WASI host of one run of a WebAssembly command: `argv` is the
    /// module's file name then the header's arguments, standard output
    /// goes to `out` (standard error is dropped), and the clock and the
    /// random bytes are deterministic, so every run prints the same.
    pub fn wasi<'a>(
        &self,
        t: &toyvm_wasm::Translation,
        out: impl Write + Send + 'a,
    ) -> toyvm_wasm::Wasi<'a> {
        let args: Vec<String> = self.args.iter().map(i64::to_string).collect();
        toyvm_wasm::Wasi::new(t, wasi_argv(&self.path, &args))
            .stdout(out)
            .stderr(std::io::sink())
    }

    /// Interprets the program once (the JIT off), its tuples into `sink`
    /// and its output to `out` (a module's standard output).
    pub fn interpret<S: TupleSink>(
        &self,
        out: &mut (dyn Write + Send),
        sink: &mut S,
        cfg: &interp::Config,
    ) -> toyvm_vm::Result<interp::Outcome> {
        let mut host = interp::NoJit(sink);
        match &self.wasm {
            Some(t) => {
                let mut wasi = self.wasi(t, out);
                let outcome = interp::run_hosted(
                    &self.program,
                    self.input(),
                    &mut std::io::sink(),
                    &mut host,
                    &mut wasi,
                    cfg,
                )?;
                wasi.flush().map_err(toyvm_vm::Error::Output)?;
                Ok(outcome)
            }
            None => interp::run_with_host(&self.program, self.input(), out, &mut host, cfg),
        }
    }
}

/// A WebAssembly command's `argv`: its file name, then `args`.
pub fn wasi_argv(path: &Path, args: &[String]) -> Vec<String> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    std::iter::once(name).chain(args.iter().cloned()).collect()
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
    /// What the program must print at its test arguments.
    pub expect: Expect,
}

/// What a program must print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The exact output, line by line (the `#>` lines; none: no output).
    Lines(Vec<String>),
    /// A long output, by its [`fnv1a64`] and length (`# expect-fnv1a64:`
    /// and `# expect-bytes:`).
    Hash {
        /// FNV-1a 64 of the output.
        fnv: u64,
        /// Its length in bytes.
        bytes: usize,
    },
}

impl Default for Expect {
    fn default() -> Self {
        Expect::Lines(Vec::new())
    }
}

impl Expect {
    /// Whether `out` is what is expected.
    pub fn matches(&self, out: &[u8]) -> bool {
        match self {
            Expect::Lines(lines) => {
                let want: String = lines.iter().map(|l| format!("{l}\n")).collect();
                out == want.as_bytes()
            }
            Expect::Hash { fnv, bytes } => out.len() == *bytes && fnv1a64(out) == *fnv,
        }
    }
}

/// FNV-1a, 64 bits: outputs are compared by hash and length so that runs
/// need not keep them.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a64::default();
    h.update(bytes);
    h.finish()
}

/// [`fnv1a64`] computed piece by piece, for output that is never held
/// whole.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a64 {
    /// Hashes `bytes` after what came before.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        });
    }

    /// The hash of everything so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The most bytes of a program's output a [`Digest`] keeps.
pub const OUTPUT_PREFIX_BYTES: usize = 4096;

/// What a run printed, reduced as it streams: its length, its [`Fnv1a64`]
/// and its first [`OUTPUT_PREFIX_BYTES`] bytes (for a report). Memory stays
/// bounded whatever the program prints; outputs are compared by length and
/// hash.
///
/// ```
/// use std::io::Write;
/// use toyvm_lab::suite::{Digest, fnv1a64};
///
/// let mut d = Digest::default();
/// d.write_all(b"hello ")?;
/// d.write_all(b"world")?;
/// assert_eq!((d.bytes(), d.fnv1a64()), (11, fnv1a64(b"hello world")));
/// assert_eq!(d.prefix(), b"hello world");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    hash: Option<u64>,
    bytes: u64,
    prefix: Vec<u8>,
}

impl Digest {
    /// The bytes written.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// FNV-1a 64 of the bytes written.
    pub fn fnv1a64(&self) -> u64 {
        self.hash.unwrap_or_else(|| Fnv1a64::default().finish())
    }

    /// The first bytes written, at most [`OUTPUT_PREFIX_BYTES`].
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }
}

impl std::io::Write for Digest {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut h = Fnv1a64(self.fnv1a64());
        h.update(buf);
        self.hash = Some(h.finish());
        self.bytes += buf.len() as u64;
        let room = OUTPUT_PREFIX_BYTES.saturating_sub(self.prefix.len());
        self.prefix.extend_from_slice(&buf[..room.min(buf.len())]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `source` with its expectation replaced by `out` (`TOYVM_BLESS=1`): `#>`
/// lines for a short output, its hash and length for a long one (over 40
/// lines, or not ending in a newline).
pub fn bless(source: &str, out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out);
    let long = text.lines().count() > 40 || !out.ends_with(b"\n") && !out.is_empty();
    let mut header = Vec::new();
    if long {
        header.push(format!("# expect-fnv1a64: 0x{:016x}", fnv1a64(out)));
        header.push(format!("# expect-bytes: {}", out.len()));
    } else {
        header.extend(text.lines().map(|l| format!("#> {l}")));
    }
    let mut result = Vec::new();
    let mut placed = false;
    for l in source.lines() {
        let is_expect = l.starts_with("#>")
            || l.starts_with("# expect-fnv1a64:")
            || l.starts_with("# expect-bytes:");
        if is_expect {
            if !placed {
                result.extend(header.iter().cloned());
                placed = true;
            }
            continue;
        }
        if !placed && !l.starts_with('#') {
            result.extend(header.iter().cloned());
            placed = true;
        }
        result.push(l.to_owned());
    }
    result.join("\n") + "\n"
}

/// Reads a source's header: its `# args:`, `# bench-args:`, `# input:`
/// and expectation lines (`//` in place of `#` in a C source).
pub fn parse_header(source: &str) -> Result<Header, BadArgument> {
    let mut h = Header::default();
    let ints = |s: &str, line: usize| -> Result<Vec<i64>, BadArgument> {
        s.split_whitespace()
            .map(|a| {
                toyvm::vm::parse_int(a)
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(|| BadArgument {
                        line,
                        arg: a.to_owned(),
                    })
            })
            .collect()
    };
    let mut lines = Vec::new();
    let mut hash = (None, None);
    for (i, l) in source.lines().enumerate() {
        // `#` in text assembly, `//` in the C sources of `programs/c/`.
        let Some(c) = l.strip_prefix('#').or_else(|| l.strip_prefix("//")) else {
            continue;
        };
        if let Some(rest) = c.strip_prefix('>') {
            lines.push(rest.strip_prefix(' ').unwrap_or(rest).to_owned());
            continue;
        }
        let c = c.trim();
        let bad = |a: &str| BadArgument {
            line: i + 1,
            arg: a.trim().to_owned(),
        };
        if let Some(a) = c.strip_prefix("expect-fnv1a64:") {
            let hex = a.trim().trim_start_matches("0x");
            hash.0 = Some(u64::from_str_radix(hex, 16).map_err(|_| bad(a))?);
        } else if let Some(a) = c.strip_prefix("expect-bytes:") {
            hash.1 = Some(a.trim().parse().map_err(|_| bad(a))?);
        } else if let Some(a) = c.strip_prefix("args:") {
            h.args = ints(a, i + 1)?;
        } else if let Some(a) = c.strip_prefix("bench-args:") {
            h.bench_args = Some(ints(a, i + 1)?);
        } else if let Some(a) = c.strip_prefix("input:") {
            h.input = Some(a.trim().to_owned()).filter(|s| !s.is_empty());
        }
    }
    h.expect = match hash {
        (Some(fnv), Some(bytes)) => Expect::Hash { fnv, bytes },
        _ => Expect::Lines(lines),
    };
    Ok(h)
}

/// The default program folder: `programs/` in the working directory, else
/// the one beside this crate's sources.
pub fn default_dir() -> PathBuf {
    let here = PathBuf::from("programs");
    if here.is_dir() {
        here
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../programs")
    }
}

/// Every `.tasm`, `.bc` and `.wasm` file of `dir`, sorted by name.
pub fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "tasm" || e == "bc" || e == "wasm")
        })
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
    for ext in ["tasm", "bc", "wasm"] {
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
    if bytes.starts_with(WASM_MAGIC) {
        return load_module(path, &bytes, bench);
    }
    let program = Program::load_any(&bytes).map_err(|source| Error::Program {
        path: path.to_owned(),
        source,
    })?;
    // Linked before anything runs, as every command does.
    toyvm::runtime::no_imports(&program).map_err(|source| Error::Link {
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
        name: stem(path),
        path: path.to_owned(),
        program,
        args,
        input_path,
        input,
        wasm: None,
    })
}

/// The magic number of a WebAssembly module.
pub const WASM_MAGIC: &[u8] = b"\0asm";

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// A WebAssembly command, translated; its header is that of the C source
/// beside it (`crc32.c` for `crc32.wasm`: `// args:`, `// bench-args:`,
/// `//>` lines), and without one it runs with no arguments.
fn load_module(path: &Path, bytes: &[u8], bench: bool) -> Result<Case> {
    let t = toyvm_wasm::translate(bytes, &toyvm_wasm::Options::default()).map_err(|source| {
        Error::Module {
            path: path.to_owned(),
            source,
        }
    })?;
    let source = path.with_extension("c");
    let header = match crate::files::read_bounded(&source, crate::files::MAX_FILE_BYTES) {
        Ok(text) => {
            parse_header(&String::from_utf8_lossy(&text)).map_err(|source| Error::Header {
                path: path.with_extension("c"),
                source,
            })?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Header::default(),
        Err(source) => {
            return Err(Error::Read {
                path: path.with_extension("c"),
                source,
            });
        }
    };
    let args = match (bench, &header.bench_args) {
        (true, Some(b)) => b.clone(),
        _ => header.args.clone(),
    };
    Ok(Case {
        name: stem(path),
        path: path.to_owned(),
        program: t.program.clone(),
        args,
        input_path: None,
        input: Vec::new(),
        wasm: Some(std::sync::Arc::new(t)),
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

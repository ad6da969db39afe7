//! The program suite as the golden runner and the mode-matrix tests see it:
//! each program's source and its header, read by the suite's one header
//! parser (`toyvm_lab::suite::parse_header`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use toyvm_lab::suite::{self, Expect};

/// One program of `programs/` with its header.
#[derive(Debug)]
pub struct Case {
    pub path: PathBuf,
    pub name: String,
    pub source: String,
    pub args: Vec<i64>,
    pub bench_args: Option<Vec<i64>>,
    pub input: Option<PathBuf>,
    pub expect: Expect,
}

/// The repository root (the folder holding `programs/` and `tests/`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn load(path: &Path) -> Case {
    let source = std::fs::read_to_string(path).unwrap();
    let h = suite::parse_header(&source)
        .unwrap_or_else(|e| panic!("{}: bad header: {e}", path.display()));
    Case {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        path: path.to_owned(),
        args: h.args,
        bench_args: h.bench_args,
        input: h.input.map(|i| root().join(i)),
        expect: h.expect,
        source,
    }
}

/// Every text-assembly program in `programs/`, sorted by name.
pub fn all() -> Vec<Case> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tasm"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

impl Case {
    /// The input file's bytes, or `None` (with one line on standard error
    /// saying so) when the header names an input that is absent.
    pub fn input_or_skip(&self) -> Option<Vec<u8>> {
        match &self.input {
            Some(p) if !p.exists() => {
                eprintln!(
                    "skipping {}: its input {} is absent",
                    self.name,
                    p.display()
                );
                None
            }
            Some(p) => Some(std::fs::read(p).unwrap_or_else(|e| {
                panic!("{}: input {} cannot be read: {e}", self.name, p.display())
            })),
            None => Some(Vec::new()),
        }
    }

    /// Whether `out` is what the header expects.
    pub fn matches(&self, out: &[u8]) -> bool {
        self.expect.matches(out)
    }

    /// The source with its expectation replaced by `out`.
    pub fn blessed(&self, out: &[u8]) -> String {
        suite::bless(&self.source, out)
    }
}

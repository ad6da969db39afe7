//! The program suite's headers: what each program is run with and what it
//! must print.  Shared by the golden runner and the mode-matrix tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

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

/// What the program must print.
#[derive(Debug, PartialEq, Eq)]
pub enum Expect {
    /// The exact output, line by line (`#>` lines).
    Lines(Vec<String>),
    /// A long output by its FNV-1a 64 hash and length.
    Hash { fnv: u64, bytes: usize },
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn parse_ints(s: &str, path: &Path) -> Vec<i64> {
    s.split_whitespace()
        .map(|a| {
            a.parse()
                .unwrap_or_else(|_| panic!("{}: bad argument `{a}` in header", path.display()))
        })
        .collect()
}

pub fn load(path: &Path) -> Case {
    let source = std::fs::read_to_string(path).unwrap();
    let mut args = Vec::new();
    let mut bench_args = None;
    let mut input = None;
    let mut lines = Vec::new();
    let mut hash = (None, None);
    for l in source.lines() {
        let Some(h) = l.strip_prefix('#') else {
            continue;
        };
        if let Some(rest) = h.strip_prefix('>') {
            lines.push(rest.strip_prefix(' ').unwrap_or(rest).to_owned());
        } else if let Some(a) = h.trim().strip_prefix("args:") {
            args = parse_ints(a, path);
        } else if let Some(a) = h.trim().strip_prefix("bench-args:") {
            bench_args = Some(parse_ints(a, path));
        } else if let Some(a) = h.trim().strip_prefix("input:") {
            input = Some(root().join(a.trim()));
        } else if let Some(a) = h.trim().strip_prefix("expect-fnv1a64:") {
            let a = a.trim().trim_start_matches("0x");
            hash.0 = Some(u64::from_str_radix(a, 16).expect("hex hash"));
        } else if let Some(a) = h.trim().strip_prefix("expect-bytes:") {
            hash.1 = Some(a.trim().parse().expect("byte count"));
        }
    }
    let expect = match hash {
        (Some(fnv), Some(bytes)) => Expect::Hash { fnv, bytes },
        _ => Expect::Lines(lines),
    };
    Case {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        path: path.to_owned(),
        source,
        args,
        bench_args,
        input,
        expect,
    }
}

/// Every program in `programs/`, sorted by name.
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
    /// saying so) when the header names an input that is absent: the peer
    /// inputs live in `../shared`, which a plain clone does not have.
    pub fn input_or_skip(&self) -> Option<Vec<u8>> {
        match &self.input {
            Some(p) if !p.exists() => {
                eprintln!(
                    "skipping {}: its input {} is absent (../shared is not beside the repository)",
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
        match &self.expect {
            Expect::Lines(lines) => {
                let want: String = lines.iter().map(|l| format!("{l}\n")).collect();
                out == want.as_bytes()
            }
            Expect::Hash { fnv, bytes } => out.len() == *bytes && fnv1a64(out) == *fnv,
        }
    }

    /// The source with its expectation replaced by `out`.
    pub fn blessed(&self, out: &[u8]) -> String {
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
        for l in self.source.lines() {
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
}

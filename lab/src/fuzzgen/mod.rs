//! Differential fuzzing of the JIT: random valid programs, and a runner that
//! checks every one gives the interpreter's result under the JIT driven by
//! every profiler model.
//!
//! The interpreter is the oracle. [`generate`] builds a terminating program
//! (text assembly, with its arguments) from a [`Source`] of choices, so one
//! generator serves the seeded campaign ([`Seeded`]), the proptest strategy
//! and the `cargo fuzz` target (raw bytes through [`Bytes`], which answers
//! 0 once its bytes run out: every choice's first option is the small,
//! valid default). [`check`] runs a program interpreted and under each
//! [`DiffConfig`] of [`configs`] and reports the first [`Mismatch`] in
//! output bytes, exit value, or trap (message, function and pc).
//!
//! What the programs exercise is what the JIT specializes on: a hot outer
//! loop with nested counted loops, data-dependent forks and `jtab`s (also
//! out of range) whose arms rejoin, loads and stores (sometimes out of
//! bounds), sized loads and stores at byte addresses (unaligned, sometimes
//! out of bounds), `msize` and `mgrow` (the memory starts at half its
//! capacity), unsigned division, rotates, bit counts, extensions, `select`,
//! unsigned branches and `trap`,
//! `div`/`rem` by values that are sometimes 0 or `i64::MIN / -1`,
//! shifts by large counts, direct calls, `calli` through function values
//! that change part-way through the run (and, rarely, to a function of the
//! wrong arity or to a value that is no function), bounded recursion,
//! registers, memory cells and arguments that stay constant for a long time
//! and then change (value guards), and output. About a third of the
//! programs import the fuzz host's functions ([`HOST`], answered by
//! [`host_imports`]) and call them with `hcall`: calls that read and write
//! memory, return values worth specializing, and rarely fail. Those run
//! through [`toyvm::engine`] (the interpreter-only engine is the oracle),
//! and a run's [`Observed::host`] digests every call the host received, so
//! compiled code that calls the host once too often, too few times, with
//! other arguments or in another order is a mismatch.
//!
//! ```
//! use toyvm_lab::fuzzgen::{self, Seeded};
//!
//! let case = fuzzgen::generate(&mut Seeded::new(7));
//! let configs = fuzzgen::configs();
//! let summary = fuzzgen::check(&case, &configs[..2]).unwrap();
//! // Both configurations, one of them again under the oracle's fuel limit,
//! // and one under a limit that cuts the run short part-way.
//! assert_eq!(summary.runs, 4);
//! assert_eq!(summary.jit.fuel_cut, 1);
//! ```

use std::fmt::Write as _;

mod diff;
mod generate;

pub use diff::{
    DiffConfig, End, JitTotals, Mismatch, ORACLE_FUEL, Observed, RUN_DEADLINE, Summary, check,
    configs, run,
};
pub use generate::generate;

/// The fuzz host's functions, `(name, arguments)`, as generated programs
/// import them.
pub const HOST: [(&str, u8); 3] = [("mix", 2), ("peek", 1), ("flaky", 1)];

/// The fuzz host: deterministic functions of their arguments and memory.
/// `mix(a, b)` adds `b` to word `a & 31` and returns a hash of `a`, `b` and
/// word 1; `peek(a)` returns word `a mod 64`; `flaky(a)` returns `a ==
/// 12345` (nearly always 0) but fails when `a mod 257 == 13`. Every call
/// folds its import and arguments into `log`, in call order.
pub fn host_imports(log: std::sync::Arc<std::sync::Mutex<u64>>) -> toyvm::engine::Imports {
    let note = move |log: &std::sync::Mutex<u64>, what: i64, args: &[i64]| {
        let mut h = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for &x in std::iter::once(&what).chain(args) {
            *h = (*h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    let word = |mem: &[i64], i: i64| mem.get(i.rem_euclid(64) as usize).copied().unwrap_or(0);
    let mut imports = toyvm::engine::Imports::new();
    let (l1, l2, l3) = (log.clone(), log.clone(), log);
    imports
        .define("mix", 2, move |args, mem| {
            note(&l1, 1, args);
            if let Some(w) = mem.get_mut((args[0] & 31) as usize) {
                *w = w.wrapping_add(args[1]);
            }
            Ok(args[0].wrapping_mul(0x9e37_79b9).wrapping_add(args[1]) ^ word(mem, 1))
        })
        .define("peek", 1, move |args, mem| {
            note(&l2, 2, args);
            Ok(word(mem, args[0]))
        })
        .define("flaky", 1, move |args, _| {
            note(&l3, 3, args);
            if args[0].rem_euclid(257) == 13 {
                Err(format!("flaky fails at {}", args[0]).into())
            } else {
                Ok(i64::from(args[0] == 12345))
            }
        });
    imports
}

/// A deterministic stream of choices.
pub trait Source {
    /// The next byte of choice.
    fn byte(&mut self) -> u8;
}

/// Choices read from raw bytes (a fuzzer's input); 0 once they run out.
#[derive(Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// Choices that read `data` front to back, one byte per choice.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }
}

impl Source for Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
}

/// Choices from a seed (splitmix64), for campaigns.
#[derive(Debug)]
pub struct Seeded {
    state: u64,
    buf: u64,
    left: u32,
}

impl Seeded {
    /// The choices of `seed`: the splitmix64 sequence from it, each 64-bit
    /// output giving eight bytes, low byte first. The same seed gives the
    /// same program.
    pub fn new(seed: u64) -> Self {
        Seeded {
            state: seed,
            buf: 0,
            left: 0,
        }
    }
}

impl Source for Seeded {
    fn byte(&mut self) -> u8 {
        if self.left == 0 {
            self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            self.buf = z ^ (z >> 31);
            self.left = 8;
        }
        self.left -= 1;
        let b = self.buf as u8;
        self.buf >>= 8;
        b
    }
}

/// One generated program and the arguments `main` takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzProgram {
    /// The program as text assembly (with `main` as its entry).
    pub text: String,
    /// The arguments `main` is run with.
    pub args: Vec<i64>,
}

impl FuzzProgram {
    /// The program as a corpus file: an `# args:` header, then the text.
    pub fn to_corpus(&self, comment: &str) -> String {
        let mut s = String::new();
        for l in comment.lines() {
            let _ = writeln!(s, "# {l}");
        }
        let args: Vec<String> = self.args.iter().map(i64::to_string).collect();
        let _ = writeln!(s, "# args: {}", args.join(" "));
        s + &self.text
    }

    /// Reads a corpus file: its `# args:` header and its text.
    pub fn from_corpus(text: &str) -> Result<Self, crate::suite::BadArgument> {
        let mut args = Vec::new();
        for (i, l) in text.lines().enumerate() {
            if let Some(a) = l.trim().strip_prefix("# args:") {
                args = a
                    .split_whitespace()
                    .map(|a| {
                        toyvm::vm::parse_int(a)
                            .and_then(|v| i64::try_from(v).ok())
                            .ok_or_else(|| crate::suite::BadArgument {
                                line: i + 1,
                                arg: a.to_owned(),
                            })
                    })
                    .collect::<Result<_, _>>()?;
            }
        }
        Ok(FuzzProgram {
            text: text.to_owned(),
            args,
        })
    }
}

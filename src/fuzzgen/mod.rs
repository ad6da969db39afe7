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
//! bounds), `div`/`rem` by values that are sometimes 0 or `i64::MIN / -1`,
//! shifts by large counts, direct calls, `calli` through function values
//! that change part-way through the run (and, rarely, to a function of the
//! wrong arity or to a value that is no function), bounded recursion,
//! registers, memory cells and arguments that stay constant for a long time
//! and then change (value guards), and output.
//!
//! ```
//! use toyvm::fuzzgen::{self, Seeded};
//!
//! let case = fuzzgen::generate(&mut Seeded::new(7));
//! let configs = fuzzgen::configs();
//! let summary = fuzzgen::check(&case, &configs[..2]).unwrap();
//! // Both configurations, and one of them again under a fuel limit.
//! assert_eq!(summary.runs, 3);
//! ```

use std::fmt::Write as _;

mod diff;
mod generate;

pub use diff::{
    DiffConfig, End, JitTotals, Mismatch, ORACLE_FUEL, Observed, Summary, check, configs, run,
};
pub use generate::generate;

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
    pub fn from_corpus(text: &str) -> Result<Self, String> {
        let mut args = Vec::new();
        for l in text.lines() {
            if let Some(a) = l.trim().strip_prefix("# args:") {
                args = a
                    .split_whitespace()
                    .map(|a| a.parse().map_err(|_| format!("bad argument `{a}`")))
                    .collect::<Result<_, _>>()?;
            }
        }
        Ok(FuzzProgram {
            text: text.to_owned(),
            args,
        })
    }
}

//! The machinery under the engine and every run: the profiler model's
//! link to the interpreter (`link`) and its side of it (`model`), the
//! JIT and its policy (`tiering`: [`JitOptions`], [`SharedCode`]), the
//! limits a run or an instance honours ([`Limits`]), and the stacks
//! compiled code needs. [`crate::engine`] is built on it, and a whole run
//! ([`crate::Runtime`]) on the engine; nothing here knows either.
//!
//! Runs are deterministic: intervals are counted in tuples, and every
//! decision taken at an interval end takes effect a fixed number of tuples
//! later (the lag), at the same point of the program's execution on every
//! run, whether the model runs on the interpreter's thread or its own (see
//! `link`).

use serde::Serialize;
use toyvm_profiler::{Candidate, ProfilerSpec};
use toyvm_vm::Program;
use toyvm_vm::interp::Config;

pub mod link;
pub mod model;
mod tiering;

/// Least stack of the thread a JIT run uses: room for native recursion to
/// the interpreter's default depth limit of 65,536 frames of up to 240
/// bytes twice over (the optimizer measures 40-100 bytes for `fib`-like
/// frames); larger frames or a higher call-depth limit get what their
/// native frames need (see [`jit_stack_bytes`]). Small enough for the C
/// library to keep the stack of a finished thread for the next (it keeps
/// up to 40 MiB): with 256 MiB every JIT run mapped and unmapped its
/// stack, `cargo run --release --example run_cost` 390 -> 335 us per run.
const JIT_STACK_BYTES: usize = 32 << 20;

/// The highest call-depth limit a run accepts: the register stack (16 Mi
/// words) runs out before it for any function that uses four registers or
/// more, and native recursion to it needs a few GiB of machine stack at
/// most (reserved, not touched).
pub const MAX_CALL_DEPTH: usize = 1 << 22;

/// The cores this process may use, asked once: the answer reads cgroup
/// files on Linux, several system calls that were 8% of what a short run
/// costs before it does anything (`cargo run --release --example
/// run_cost`: perfect alone 101 -> 41 us, multihash 128 -> 86 us).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The stack for a run whose natives are compiled when first needed
/// ([`SharedCode::lazy`]), sized before their frames exist: twice a
/// generous estimate of the largest frame (64 bytes and a word for each
/// register of the function and of the largest function it calls, which
/// one level of inlining may add) times `max_depth`, at least
/// [`JIT_STACK_BYTES`]. The measured frames of the suite and the corpus
/// are 0-144 bytes against estimates of 104-576; where the natives, once
/// compiled, need more, a recursion that reaches the stack limit goes on
/// in the interpreter (see [`SharedCode::lazy`]).
pub(crate) fn lazy_jit_stack_bytes(program: &Program, max_depth: usize) -> usize {
    let regs = |f: u32| {
        program
            .functions
            .get(f as usize)
            .map_or(0, |f| f.regs as usize)
    };
    let frame = (0..program.functions.len() as u32)
        .map(|f| {
            let callees = program.functions[f as usize]
                .code
                .iter()
                .filter_map(|i| match *i {
                    toyvm_vm::isa::Instr::Call { f, .. } => Some(regs(f)),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            64 + 8 * (regs(f) + callees)
        })
        .max()
        .unwrap_or(64);
    frame
        .saturating_mul(max_depth)
        .saturating_add(1 << 20)
        .saturating_mul(2)
        .max(JIT_STACK_BYTES)
}

/// The stack a thread running compiled code from `code` needs at call
/// depth limit `max_depth`: twice what its native frames measure, at
/// least [`JIT_STACK_BYTES`].
pub(crate) fn jit_stack_bytes(code: &SharedCode, max_depth: usize) -> usize {
    code.native_stack_bytes(max_depth)
        .saturating_mul(2)
        .max(JIT_STACK_BYTES)
}

/// The limits a run or an instance honours, in the interpreter and in
/// compiled code alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Instructions a run may execute before an out-of-fuel trap.
    pub fuel: Option<u64>,
    /// Deepest call nesting before a stack-overflow trap that names it
    /// (1 to [`MAX_CALL_DEPTH`]; default 65,536).
    pub max_depth: usize,
    /// Most words of memory (`.memory`) a program may have: a program
    /// asking for more is refused before it runs ([`crate::Error::MemoryLimit`]).
    pub max_memory_words: Option<u64>,
}

impl Limits {
    /// Checks the call-depth limit against what a run can honour, and the
    /// program's memory against the memory limit: the errors a run with
    /// these limits would stop with before running anything.
    pub fn check(&self, program: &Program) -> crate::Result<()> {
        if !(1..=MAX_CALL_DEPTH).contains(&self.max_depth) {
            return Err(crate::Error::Usage(format!(
                "the call-depth limit must be between 1 and {MAX_CALL_DEPTH}, not {}",
                self.max_depth
            )));
        }
        if let Some(limit) = self.max_memory_words
            && program.memory_words > limit
        {
            return Err(crate::Error::MemoryLimit {
                words: program.memory_words,
                limit,
            });
        }
        Ok(())
    }
}

/// A profiler spec, or `none` for no model (what `profile_str` takes).
pub fn parse_profile(spec: &str) -> crate::Result<Option<ProfilerSpec>> {
    Ok(toyvm_profiler::Choice::parse(spec)?.into_spec())
}

/// A link error if `program` imports host functions: a whole run (this
/// runtime, `toyvm run`) has no host to offer them.
pub fn no_imports(program: &Program) -> crate::Result<()> {
    match program.imports.first() {
        Some(i) => Err(crate::Error::Link(format!(
            "the program imports host function `{}` ({} import{}); a whole run has no host to offer them: embed it with `toyvm::engine`",
            i.name,
            program.imports.len(),
            if program.imports.len() == 1 { "" } else { "s" }
        ))),
        None => Ok(()),
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: None,
            max_depth: Config::default().max_depth,
            max_memory_words: None,
        }
    }
}

/// One interval's candidates (a whole run keeps them when asked:
/// [`crate::RunReport::intervals`]).
#[derive(Clone, Debug, Serialize)]
pub struct IntervalCandidates {
    /// 0-based interval number.
    pub index: u64,
    /// The model's candidates for it, highest count first.
    pub candidates: Vec<Candidate>,
}

pub(crate) use link::Link;
pub use link::{
    BUFFER_TUPLES, FeedStats, MAX_BUFFER_TUPLES, MIN_THREADED_LAG, QUEUE_BUFFERS, THREAD_AFTER,
    Threads, buffer_tuples,
};
pub(crate) use model::RunModel;
pub(crate) use tiering::{Jit, JitHost, WithHost, stack_limit_here, with_host};
pub use tiering::{JitLimits, JitLog, JitOptions, JitStats, SharedCode};

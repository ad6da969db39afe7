//! The runtime: a program, a profiler model fed through the interval driver,
//! and statistics about where the time went.
//!
//! Runs are deterministic: intervals are counted in tuples, and every
//! decision taken at an interval end takes effect a fixed number of tuples
//! later (the lag), at the same point of the program's execution on every
//! run, whether the model runs on the interpreter's thread or its own (see
//! `link`).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use toyvm_profiler::{Candidate, ProfilerSpec};
use toyvm_vm::interp::{self, Config, Input, Outcome};
use toyvm_vm::{KindSet, Program};

use crate::engine::{Engine, EngineBuilder};

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

/// The least stack a JIT run's thread is given when the system refuses
/// larger ones: compiled regions need little; natives that need more than
/// it holds are not run (the interpreter runs their calls).
const MIN_JIT_STACK_BYTES: usize = 1 << 20;

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
/// are 0-144 bytes against estimates of 104-576; when the natives, once
/// compiled, need more than the stack holds twice over, they are not run
/// (see [`SharedCode::lazy`]).
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

pub(crate) use link::Link;
pub use link::{
    BUFFER_TUPLES, FeedStats, MAX_BUFFER_TUPLES, MIN_THREADED_LAG, QUEUE_BUFFERS, Threads,
    buffer_tuples,
};
pub(crate) use model::RunModel;
pub(crate) use tiering::{Jit, JitHost, WithHost, stack_limit_here, with_host};
pub use tiering::{JitLimits, JitLog, JitOptions, JitStats, SharedCode};

/// Configures and runs a program: one whole run from its entry function.
/// Its options are an [`Engine`]'s (the profiler model, the JIT, the
/// limits, the lag, counting: one set, [`EngineBuilder`]'s, which
/// [`RuntimeBuilder`] wraps) and two of a whole run's own (the model's
/// thread, keeping every interval's candidates).
#[derive(Clone, Debug)]
pub struct Runtime {
    program: Arc<Program>,
    engine: Engine,
    keep_candidates: bool,
    threads: Threads,
}

/// Builds a [`Runtime`]: an [`EngineBuilder`] for the options runs and
/// instances share, and a whole run's own.
#[derive(Clone, Debug)]
pub struct RuntimeBuilder {
    program: Arc<Program>,
    engine: EngineBuilder,
    keep_candidates: bool,
    threads: Threads,
}

impl RuntimeBuilder {
    /// Every option an engine has at once (replacing those set so far):
    /// the runtime runs as instances of that engine's modules would.
    pub fn engine(mut self, engine: EngineBuilder) -> Self {
        self.engine = engine;
        self
    }

    /// The profiler model driving the run (`None`: interpreter only); see
    /// [`EngineBuilder::profile`].
    pub fn profile(mut self, spec: Option<ProfilerSpec>) -> Self {
        self.engine = self.engine.profile(spec);
        self
    }

    /// Parses and sets the profile spec; `none` means no profiler.
    pub fn profile_str(mut self, spec: &str) -> crate::Result<Self> {
        self.engine = self.engine.profile_str(spec)?;
        Ok(self)
    }

    /// Stop with an out-of-fuel trap after this many instructions; see
    /// [`EngineBuilder::fuel`].
    pub fn fuel(mut self, fuel: Option<u64>) -> Self {
        self.engine = self.engine.fuel(fuel);
        self
    }

    /// The call-depth limit; see [`EngineBuilder::max_depth`].
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.engine = self.engine.max_depth(depth);
        self
    }

    /// The most memory, in words, the program may have; see
    /// [`EngineBuilder::max_memory_words`].
    pub fn max_memory_words(mut self, words: Option<u64>) -> Self {
        self.engine = self.engine.max_memory_words(words);
        self
    }

    /// Every limit at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.engine = self.engine.limits(limits);
        self
    }

    /// Count executed instructions and tuples per kind for [`Stats`]
    /// (costs a little interpreter speed; off by default).
    pub fn count_instructions(mut self, count: bool) -> Self {
        self.engine = self.engine.count_instructions(count);
        self
    }

    /// The JIT and its policy (`None`: interpret only). On by default; it
    /// acts only when a profiler model supplies candidates (with a fuel
    /// limit too: see [`fuel`](Self::fuel)).
    pub fn jit(mut self, jit: Option<JitOptions>) -> Self {
        self.engine = self.engine.jit(jit);
        self
    }

    /// Whether the profiler model runs on a thread of its own (see
    /// `link`); the decisions are the same either way.
    pub fn threads(mut self, threads: Threads) -> Self {
        self.threads = threads;
        self
    }

    /// Tuples between an interval's end and its decisions taking effect
    /// (`None`: one interval, the spec's L).
    pub fn lag(mut self, lag: Option<u64>) -> Self {
        self.engine = self.engine.lag(lag);
        self
    }

    /// Keep every interval's candidates in the report.
    pub fn keep_candidates(mut self, keep: bool) -> Self {
        self.keep_candidates = keep;
        self
    }

    /// The configured runtime.
    pub fn build(self) -> Runtime {
        Runtime {
            program: self.program,
            engine: self.engine.build(),
            keep_candidates: self.keep_candidates,
            threads: self.threads,
        }
    }
}

/// Where a run's time went and what the profiler did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Wall time of the whole run, set-up included.
    pub wall_seconds: f64,
    /// Wall time minus time inside the profiler model on the interpreter's
    /// thread (or waiting for the model thread), the JIT's decisions and
    /// compiled code.
    pub interpreter_seconds: f64,
    /// Time inside the profiler model (the interval driver and the model),
    /// on whichever thread it ran.
    pub profiler_seconds: f64,
    /// Instructions the interpreter executed (when counted); with a fuel
    /// limit, compiled code's too.
    pub instructions: u64,
    /// The run's fuel limit, if it had one.
    pub fuel: Option<u64>,
    /// Tuples emitted per kind (when counted).
    pub tuples: TupleCounts,
    /// The profiler spec, canonical form (`none` without one).
    pub profile: String,
    /// Intervals the model ended (the last, partial one included).
    pub intervals: u64,
    /// Candidates reported over all intervals.
    pub candidates: u64,
    /// The model's modeled hardware state.
    pub state_bytes: u64,
    /// Messages the model delivered to software, and their modeled cycles.
    pub messages: u64,
    /// The modeled cycles of those messages.
    pub cycles: u64,
    /// What the JIT did (absent when it was off).
    pub jit: Option<JitStats>,
    /// How the interpreter fed the model (absent without one).
    pub feed: Option<FeedStats>,
}

/// Tuples the interpreter emitted, per kind (compiled code emits none).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TupleCounts {
    /// `<pc, value>` tuples.
    pub value: u64,
    /// `<branch pc, next pc>` tuples.
    pub edge: u64,
    /// `<call site, callee>` tuples.
    pub call: u64,
}

/// One interval's candidates.
#[derive(Clone, Debug, Serialize)]
pub struct IntervalCandidates {
    /// 0-based interval number.
    pub index: u64,
    /// The model's candidates for it, highest count first.
    pub candidates: Vec<Candidate>,
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// What the program returned, and the interpreter's counts.
    pub outcome: Outcome,
    /// Where the time went and what the profiler and the JIT did.
    pub stats: Stats,
    /// Per-interval candidates, when asked for.
    pub intervals: Vec<IntervalCandidates>,
}

impl Runtime {
    /// A builder for running `program`: no profiler model, the JIT on
    /// (it acts once a model is set), the model on its own thread where
    /// there are two cores, a lag of one interval.
    pub fn builder(program: Program) -> RuntimeBuilder {
        RuntimeBuilder {
            program: Arc::new(program),
            engine: EngineBuilder::default(),
            keep_candidates: false,
            threads: Threads::Auto,
        }
    }

    /// The program this runtime runs.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The engine whose options the runtime runs with: a [`Module`] of
    /// [`program`](Self::program) made with it runs calls as this runtime
    /// runs the whole program.
    ///
    /// [`Module`]: crate::engine::Module
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Runs the program to completion.
    ///
    /// With the JIT on, the run happens on a thread of its own with a large
    /// stack: compiled functions call each other natively, so deep bytecode
    /// recursion becomes deep machine recursion, up to the interpreter's
    /// depth limit (where both trap alike) or to the stack limit compiled
    /// code checks, below which the interpreter makes the calls.
    pub fn run(&self, input: Input<'_>, out: &mut (dyn Write + Send)) -> crate::Result<RunReport> {
        no_imports(&self.program)?;
        self.run_with_host_fns(input, out, &mut interp::NoHostFunctions)
    }

    /// [`Runtime::run`] for a program with imports: its `hcall`s, interpreted
    /// or from compiled code, call `host_fns`, which must offer every import
    /// of the program by its index (a WebAssembly module's WASI host, say).
    pub fn run_with_host_fns(
        &self,
        input: Input<'_>,
        out: &mut (dyn Write + Send),
        host_fns: &mut (dyn interp::HostFunctions + Send),
    ) -> crate::Result<RunReport> {
        let config = self.engine.config();
        config.limits.check(&self.program)?;
        if let (Some(opts), Some(_)) = (&config.jit, &config.profile) {
            let mut stack = lazy_jit_stack_bytes(&self.program, config.limits.max_depth);
            // Taken by the thread that starts; kept for the next try when
            // the system refuses a thread.
            let out = std::sync::Mutex::new(Some((out, host_fns)));
            return std::thread::scope(|scope| {
                loop {
                    // The natives learn the stack they get: those whose
                    // recursion would not fit it are left to the
                    // interpreter.
                    let code = Some(Arc::new(SharedCode::lazy(
                        config.limits.fuel.is_some(),
                        opts.dump_clif.is_some(),
                        stack,
                        config.limits.max_depth,
                    )?));
                    let (out, input) = (&out, input.clone());
                    let spawned = std::thread::Builder::new()
                        .name("toyvm".into())
                        .stack_size(stack)
                        .spawn_scoped(scope, move || {
                            // Where the C library does not tell.
                            toyvm_optimizer::stack::assume_thread_stack(stack);
                            let (out, host_fns) = out
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .take()
                                .expect("one thread runs");
                            self.run_here(input, out, host_fns, code)
                        });
                    match spawned {
                        Ok(thread) => {
                            return thread
                                .join()
                                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                        }
                        // No room for a stack this large (an address-space
                        // limit): take what can be had, never refusing a
                        // run the interpreter can do.
                        Err(_) if stack > MIN_JIT_STACK_BYTES => {
                            stack = (stack / 2).max(MIN_JIT_STACK_BYTES);
                        }
                        Err(source) => {
                            return Err(crate::Error::Thread {
                                what: "run",
                                source,
                            });
                        }
                    }
                }
            });
        }
        self.run_here(input, out, host_fns, None)
    }

    /// The run, on this thread; `code` is the JIT's (when it is on).
    fn run_here(
        &self,
        input: Input<'_>,
        out: &mut (dyn Write + Send),
        host_fns: &mut (dyn interp::HostFunctions + Send),
        code: Option<Arc<SharedCode>>,
    ) -> crate::Result<RunReport> {
        let config = self.engine.config();
        let cfg = Config {
            fuel: config.limits.fuel,
            max_depth: config.limits.max_depth,
            count_steps: config.count,
            kinds: config.profile.as_ref().map_or(KindSet::EMPTY, |p| p.kinds),
        };
        let run = WholeRun {
            program: &self.program,
            input,
            out,
            host_fns,
            cfg: &cfg,
        };
        let start = Instant::now();
        let Some(spec) = &config.profile else {
            let outcome = with_host(None, None, cfg.kinds, run).0?;
            let wall = start.elapsed().as_secs_f64();
            return Ok(RunReport {
                stats: Stats {
                    wall_seconds: wall,
                    fuel: config.limits.fuel,
                    interpreter_seconds: wall,
                    profile: toyvm_profiler::spec::NONE.to_owned(),
                    ..Stats::from_outcome(&outcome)
                },
                outcome,
                intervals: Vec::new(),
            });
        };
        // The model thread lives in this scope: whatever ends the run below
        // (the program's end, a trap, a panic) drops the link, which ends
        // the thread before the scope joins it (see `link`).
        std::thread::scope(|scope| {
            let lag = config.lag.unwrap_or(spec.interval);
            let jit_opts = config.jit.clone();
            let want_ends = jit_opts.is_some();
            let keep = self.keep_candidates;
            let make = move || RunModel::new(spec, keep);
            let threaded = self.threads.model_thread(want_ends.then_some(lag));
            let mut link = if threaded {
                Link::spawn(scope, make, lag, want_ends).map_err(|source| crate::Error::Thread {
                    what: "profiler model",
                    source,
                })?
            } else {
                Link::inline(make(), lag, want_ends)
            };
            let mut jit = match (jit_opts, code) {
                (Some(mut opts), Some(code)) => {
                    opts.timing = opts.timing || config.count;
                    let limits = JitLimits {
                        fuel: config.limits.fuel,
                        max_depth: config.limits.max_depth,
                    };
                    let background = threaded;
                    let program = Arc::clone(&self.program);
                    Some(Jit::new(program, code, opts, background, limits)?)
                }
                _ => None,
            };
            let (result, decide_time) = with_host(Some(&mut link), jit.as_mut(), cfg.kinds, run);
            let jit_stats = jit.as_ref().map(Jit::stats);
            let (summary, feed) = link.finish();
            // A model that failed is a bug to report over the run's own end.
            let summary = summary?;
            let outcome = result?;
            let wall = start.elapsed();
            // What of the model's time the interpreter's thread spent.
            let model_here = if feed.threads == 1 {
                summary.time
            } else {
                Duration::from_secs_f64(feed.wait_seconds)
            };
            let stats = Stats {
                wall_seconds: wall.as_secs_f64(),
                fuel: config.limits.fuel,
                interpreter_seconds: (wall
                    .saturating_sub(model_here)
                    .saturating_sub(decide_time)
                    .as_secs_f64()
                    - jit_stats.as_ref().map_or(0.0, |j| j.compiled_seconds))
                .max(0.0),
                profiler_seconds: summary.time.as_secs_f64(),
                profile: spec.to_string(),
                intervals: summary.intervals,
                candidates: summary.candidates,
                state_bytes: summary.state_bytes,
                messages: summary.messages,
                cycles: summary.cycles,
                jit: jit_stats,
                feed: Some(feed),
                ..Stats::from_outcome(&outcome)
            };
            Ok(RunReport {
                outcome,
                stats,
                intervals: summary.kept,
            })
        })
    }
}

/// A whole run from the entry function, for [`with_host`] to run with the
/// host it chooses.
struct WholeRun<'r, 'i> {
    program: &'r Program,
    input: Input<'i>,
    out: &'r mut (dyn Write + Send),
    host_fns: &'r mut (dyn interp::HostFunctions + Send),
    cfg: &'r Config,
}

impl WithHost for WholeRun<'_, '_> {
    type Output = toyvm_vm::Result<Outcome>;

    fn run<H: interp::Host>(self, host: &mut H) -> Self::Output {
        interp::run_hosted(
            self.program,
            self.input,
            self.out,
            host,
            self.host_fns,
            self.cfg,
        )
    }
}

impl Stats {
    /// The interpreter's counts.
    fn from_outcome(outcome: &Outcome) -> Self {
        Stats {
            instructions: outcome.steps.unwrap_or(0),
            tuples: TupleCounts {
                value: outcome.tuples[0],
                edge: outcome.tuples[1],
                call: outcome.tuples[2],
            },
            ..Stats::default()
        }
    }
}

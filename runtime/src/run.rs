//! A whole run: a program run once from its entry function
//! ([`Runtime`], configured by [`RuntimeBuilder`]) and its report
//! ([`RunReport`], [`Stats`]). The top of the crate: built on
//! [`crate::engine`] (its options are an engine's; its one call goes the
//! way an instance's calls go, through the engine's `runner`), which is
//! built on [`crate::runtime`].

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use toyvm_profiler::ProfilerSpec;
use toyvm_vm::Program;
use toyvm_vm::interp::{self, Call, Input, Outcome};

use crate::engine::runner::{ModelThread, Runner, check_arity};
use crate::engine::{Engine, EngineBuilder};
use crate::runtime::{
    FeedStats, IntervalCandidates, Jit, JitOptions, JitStats, Limits, SharedCode, Threads,
    lazy_jit_stack_bytes, no_imports,
};

/// The least stack a JIT run's thread is given when the system refuses
/// larger ones: compiled regions need little; natives that need more than
/// it holds are not run (the interpreter runs their calls).
const MIN_JIT_STACK_BYTES: usize = 1 << 20;

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
                    let code = Some(Arc::new(SharedCode::lazy(
                        config.limits.fuel.is_some(),
                        opts.dump_clif.is_some(),
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

    /// The run, on this thread; `code` is the JIT's (when it is on): the
    /// entry function called once through a [`Runner`], as an instance
    /// calls a function, with the model on a thread of its own where that
    /// pays.
    fn run_here(
        &self,
        input: Input<'_>,
        out: &mut (dyn Write + Send),
        host_fns: &mut (dyn interp::HostFunctions + Send),
        code: Option<Arc<SharedCode>>,
    ) -> crate::Result<RunReport> {
        let config = self.engine.config();
        let program = &self.program;
        let start = Instant::now();
        // The model thread lives in this scope: whatever ends the run below
        // (the program's end, a trap, a panic) drops the link, which ends
        // the thread before the scope joins it (see `link`).
        std::thread::scope(|scope| {
            // A JIT run's model gets a thread only where waiting for it
            // at the lag point pays (see `Threads`).
            let threaded = config.model_lag().is_some_and(|lag| {
                self.threads
                    .model_thread(config.jit.is_some().then_some(lag))
            });
            // Where the choice is ours, a thread only once the run is
            // long enough for one to pay (see `link`).
            let model = match (threaded, self.threads) {
                (false, _) => ModelThread::Here,
                (true, Threads::Auto) => ModelThread::Later(scope),
                (true, _) => ModelThread::Own(scope),
            };
            let mut runner = Runner::new(config, program, code, model, self.keep_candidates)?;
            check_arity(program, program.entry, input.args.len())?;
            let mut mem = interp::memory(program, input.file)?;
            let call = Call {
                func: program.entry,
                args: input.args,
                input_len: input.file.len(),
            };
            let (result, _, decide_time) = runner.call(program, &mut mem, call, out, host_fns);
            let (Some(link), Some(spec)) = (runner.link, &config.profile) else {
                let outcome = result?;
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
            let jit_stats = runner.jit.as_ref().map(Jit::stats);
            let (summary, feed) = link.finish();
            // A model that failed is a bug to report over the run's own end.
            let summary = summary?;
            let outcome = result?;
            let wall = start.elapsed();
            // What of the model's time the interpreter's thread spent.
            let model_here = if feed.threads == 1 {
                summary.time
            } else {
                Duration::from_secs_f64(feed.wait_seconds + feed.inline_seconds)
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

//! Tiering, the runtime's JIT (named apart from `toyvm_optimizer::jit`, the
//! code cache it drives): the code table (installed regions by slot, the
//! per-instruction head index, entering compiled code and chaining between
//! regions, reporting the tuples of their exits) and its statistics. What
//! to compile, recompile or drop at each interval end, and what the JIT's
//! work may cost, is the policy in [`policy`]; the JIT acts on it at each
//! interval end (`interval`).

mod compiler;
mod enter;
mod host;
mod interval;
mod policy;
mod table;

use compiler::Compiler;
pub use compiler::SharedCode;
pub(crate) use enter::{run_region, stack_limit_here};
pub(crate) use host::{JitHost, WithHost, with_host};
use table::CodeTable;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use toyvm_optimizer::PlanConfig;
use toyvm_vm::Program;

/// Knobs of the JIT policy.
#[derive(Clone, Debug)]
pub struct JitOptions {
    /// Region formation and specialization.
    pub plan: PlanConfig,
    /// Intervals without an entry after which a region is dropped.
    pub idle_intervals: u32,
    /// Recompiles of one head after hot exits or failing guards before it
    /// is left to the interpreter.
    pub max_recompiles: u32,
    /// Times one head may be compiled again after going idle before it is
    /// left to the interpreter (the back-off grows every four).
    pub max_revivals: u32,
    /// An exit back into the region's own code taken on at least this share
    /// of entries (in an interval) makes the region be re-formed.
    pub hot_exit_share: f64,
    /// Guard failures on at least this share of entries make the region be
    /// re-specialized.
    pub guard_failure_share: f64,
    /// Fewer entries per interval than this are too few to judge exits by.
    pub min_entries: u64,
    /// A region that does not loop needs at least this many instructions:
    /// a short one entered often (an interpreter's dispatch loop cut at its
    /// `jtab`) costs more to enter and leave than it saves.
    pub min_straight_instrs: usize,
    /// Credit (in tuples of execution) planning regions costs; see the
    /// module doc.
    pub plan_cost: u64,
    /// Credit one compile costs.
    pub compile_cost: u64,
    /// Credit at the start: the first compiles of a short run.
    pub initial_credit: u64,
    /// Where to write every decision, one line each (`--jit-log`: standard
    /// error); `None` writes nothing.
    pub log: Option<JitLog>,
    /// Write each region's Cranelift IR here.
    pub dump_clif: Option<PathBuf>,
    /// Time compiled code (two clock reads per region entry).
    pub timing: bool,
    /// Install compiled code as soon as the compiler thread has it (at
    /// the next batch of tuples) instead of at the next interval end: the
    /// interpreter never waits for the compiler, but when code takes over
    /// depends on timing, so runs are not repeatable (HotSpot's way).
    pub async_install: bool,
    /// Tuples between planning a region and installing its code: the
    /// compiler thread's head start. 0 installs it at the interval end
    /// that planned it, waiting for the compile; otherwise it is
    /// installed at the first batch boundary at least this many tuples
    /// later. Counted in tuples, so the point is the same on one thread
    /// or two, whatever the machine's load.
    pub install_lag: u64,
}

/// Where the JIT's decisions are written (`--jit-log`): a writer shared by
/// the run's threads, each line written and flushed whole.
#[derive(Clone)]
pub struct JitLog(std::sync::Arc<parking_lot::Mutex<Box<dyn std::io::Write + Send>>>);

impl JitLog {
    /// Lines go to `w`.
    pub fn new(w: impl std::io::Write + Send + 'static) -> JitLog {
        JitLog(std::sync::Arc::new(parking_lot::Mutex::new(Box::new(w))))
    }

    /// Lines go to the process's standard error.
    pub fn stderr() -> JitLog {
        JitLog::new(std::io::stderr())
    }

    fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        let mut w = self.0.lock();
        w.write_all(line).and_then(|()| w.flush())
    }
}

impl std::fmt::Debug for JitLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JitLog(..)")
    }
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            plan: PlanConfig::default(),
            idle_intervals: 3,
            max_recompiles: 4,
            max_revivals: 32,
            hot_exit_share: 0.5,
            guard_failure_share: 0.1,
            min_entries: 8,
            min_straight_instrs: 16,
            plan_cost: 2_000,
            compile_cost: 10_000,
            initial_credit: 40_000,
            log: None,
            dump_clif: None,
            timing: false,
            async_install: false,
            install_lag: 0,
        }
    }
}

/// What the JIT did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JitStats {
    /// Regions and whole functions compiled and installed.
    pub compiles: u64,
    /// Of those, compiles of a head compiled before (after a drop, or a
    /// tree that grew).
    pub recompiles: u64,
    /// Installed regions dropped (idle, or leaving too often).
    pub drops: u64,
    /// Regions Cranelift or the code generator refused (the head stays
    /// interpreted).
    pub compile_failures: u64,
    /// Heads left to the interpreter for good by `max_recompiles` or
    /// `max_revivals`.
    pub given_up: u64,
    /// Interval ends whose candidates waited for credit to plan with.
    pub plans_deferred: u64,
    /// Compiles put off for lack of credit.
    pub compiles_deferred: u64,
    /// Times the interpreter entered compiled code.
    pub region_entries: u64,
    /// Exits off a region's trace (a branch direction not compiled).
    pub side_exits: u64,
    /// Exits through a failing specialization guard.
    pub guard_failures: u64,
    /// Exits that hand one instruction (a call, `ret`, output, a trap) to
    /// the interpreter.
    pub interpret_exits: u64,
    /// Multiplications by an induction variable that compiled regions
    /// carry around their loops as sums (strength reduction), summed
    /// over the compiles.
    pub reduced_products: u64,
    /// Tuples reported for compiled code by its side exits and failing
    /// guards (see `run_region`).
    pub exit_tuples: u64,
    /// Calls compiled code made into the interpreter (for a callee without
    /// native code) and went on after.
    pub interpreter_calls: u64,
    /// Of the calls compiled code would have made into the interpreter,
    /// those declined for want of machine stack: the region handed them
    /// to the interpreter through an exit instead.
    pub interpreter_calls_declined: u64,
    /// Time spent compiling, on whichever thread compiled.
    pub compile_seconds: f64,
    /// Time the interpreter waited for the compiler thread to finish a
    /// region due to be installed (0 when compiling on its own thread).
    pub compile_wait_seconds: f64,
    /// Whether a compiler thread compiled (else the interpreter's did).
    pub background: bool,
    /// Compiled regions not installed: their head was given up, or the
    /// region they were to replace was dropped, while they compiled.
    pub discarded: u64,
    /// Time inside compiled code (when timed).
    pub compiled_seconds: f64,
    /// Of the compiles and recompiles, those whose code another run of
    /// the same module had compiled (instances of one
    /// [`Module`](crate::engine::Module) share their code): Cranelift did
    /// not run for them, and their time and bytes are not counted here.
    pub shared: u64,
    /// Machine code bytes of every region compiled (dropped ones included).
    pub code_bytes: u64,
    /// Regions installed at the end of the run.
    pub live_regions: u64,
    /// The first failure to write the JIT log (`--jit-log`) or a
    /// `--dump-clif` file: the run goes on, and the command reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
}

/// The JIT of one run, or of one instance over its calls.
pub struct Jit {
    program: Arc<Program>,
    opts: JitOptions,
    /// What planning needs of the program, built once (see `interval`).
    planning: interval::Planning,
    compiler: Compiler,
    /// Compiled regions waiting for their point of installation, in the
    /// order they were submitted (see `interval`).
    installs: std::collections::VecDeque<interval::Install>,
    /// The installed regions, and where their heads are.
    table: CodeTable,
    /// Each head's state (see [`policy`]).
    heads: policy::Heads,
    /// What the JIT may still spend, and the candidates waiting for it.
    budget: policy::Budget,
    /// How far the run has come.
    clock: Clock,
    /// Running compiled code: its limits, nesting and time (see `enter`).
    native: enter::Native,
    /// The log (`--jit-log`) and the first output failure.
    log: Log,
    pub stats: JitStats,
}

/// How far the run has come, as the policy counts it.
#[derive(Debug, Default)]
struct Clock {
    /// The last interval end seen.
    last_index: u64,
    /// Tuples handed over so far (see [`Jit::ran`]).
    tuples: u64,
    /// Batches of them handed over so far, one per call of [`Jit::ran`]:
    /// what idleness is judged on (see [`policy`]).
    batches: u64,
}

/// Where the JIT's decisions are written, and the first output failure.
#[derive(Debug)]
struct Log {
    to: Option<JitLog>,
    /// Set when a line could not be written: logging stops.
    failed: std::cell::Cell<bool>,
    /// The first output failure (see [`JitStats::output_error`]).
    output_error: std::cell::RefCell<Option<String>>,
}

impl Log {
    fn new(to: Option<JitLog>) -> Log {
        Log {
            to,
            failed: std::cell::Cell::new(false),
            output_error: std::cell::RefCell::new(None),
        }
    }

    fn line(&self, interval: u64, msg: std::fmt::Arguments<'_>) {
        let Some(log) = &self.to else { return };
        if !self.failed.get() {
            let line = format!("jit: interval {interval}: {msg}\n");
            if let Err(e) = log.write_line(line.as_bytes()) {
                self.failed.set(true);
                // A closed pipe means the log is no longer wanted.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    self.output_failed(format!("cannot write the JIT log: {e}"));
                }
            }
        }
    }

    fn output_failed(&self, msg: String) {
        self.output_error.borrow_mut().get_or_insert(msg);
    }
}

/// The regions still installed when the run (or instance) ends: what
/// each counted, in the log.
impl Drop for Jit {
    fn drop(&mut self) {
        if self.log.to.is_some() {
            for r in self.table.live() {
                self.log_lifetime("live at the end", r);
            }
        }
    }
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// A region's head for the log: its function's name and offset, and the
/// source offset it was translated from where the program carries one
/// (`crc32_update`+17 (f3:17, wasm 0x3a2)).
fn describe(p: &Program, func: u32, head: u32) -> String {
    let source = p
        .source_offset(func, head)
        .map_or_else(String::new, |o| format!(", wasm {o:#x}"));
    format!(
        "`{}`+{head} (f{func}:{head}{source})",
        p.functions[func as usize].name
    )
}

/// The limits a JIT run honours in compiled code as the interpreter does.
#[derive(Clone, Copy, Debug)]
pub struct JitLimits {
    /// The fuel limit, if any: compiled code then counts the instructions
    /// it runs against it (see
    /// [`toyvm_optimizer::CompiledRegion::run_metered`]); the code must
    /// have been compiled metered.
    pub fuel: Option<u64>,
    /// The interpreter's call-depth limit, which native calls honour too
    /// (native recursion stops at the running thread's stack limit, where
    /// the interpreter takes over: see `enter`).
    pub max_depth: usize,
}

impl Jit {
    /// A JIT for `program` that takes its code from `code` (`program`'s,
    /// metered if `limits` has fuel), compiling there what is not there
    /// yet, on a thread of its own when `background`.
    pub fn new(
        program: Arc<Program>,
        code: Arc<SharedCode>,
        opts: JitOptions,
        background: bool,
        limits: JitLimits,
    ) -> crate::Result<Self> {
        if let Some(dir) = &opts.dump_clif {
            std::fs::create_dir_all(dir).map_err(|source| crate::Error::Io {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(Jit {
            planning: interval::Planning::new(&program),
            table: CodeTable::new(&program),
            compiler: Compiler::new(code, Arc::clone(&program), background),
            installs: std::collections::VecDeque::new(),
            heads: policy::Heads::default(),
            budget: policy::Budget::new(&opts),
            clock: Clock::default(),
            native: enter::Native::new(limits),
            log: Log::new(opts.log.clone()),
            stats: JitStats::default(),
            opts,
            program,
        })
    }

    /// The fuel limit compiled code's out-of-fuel traps name from now on
    /// (the interpreter's for the next call; metering itself is the
    /// code's, fixed when it was compiled).
    pub fn set_fuel_limit(&mut self, fuel: Option<u64>) {
        self.native.fuel_limit = fuel;
    }

    /// The program ran a batch of `tuples` tuples (of its own, or ones its
    /// compiled code's exits reported, about to be fed to the model): it
    /// earns credit, intervals ending from here on can count toward a
    /// region's idleness, and compiles due by now are installed.
    pub fn ran(&mut self, tuples: u64) {
        self.clock.batches += 1;
        self.budget.earn(tuples);
        self.clock.tuples += tuples;
        if self.opts.async_install {
            self.install_ready();
        } else {
            self.install_due();
        }
    }

    /// Writes `decision`, taken at interval `index` about `head`, to the
    /// log.
    fn decided(&self, index: u64, head: policy::Head, decision: &policy::Decision) {
        if self.log.to.is_some() {
            let what = describe(&self.program, head.0, head.1);
            self.log.line(index, format_args!("{}", decision.at(&what)));
        }
    }

    /// The region installed at `func`'s offset `pc`.
    #[inline(always)]
    pub fn region_at(&self, func: u32, pc: u32) -> Option<u32> {
        self.table.region_at(func, pc)
    }

    /// Uninstalls the region in `slot`, counting what it counted.
    fn uninstall(&mut self, slot: u32) {
        let r = self.table.take(slot);
        self.log_lifetime("retire", &r);
        table::account(&mut self.stats, &r);
    }

    /// Writes what region `r` counted over its life to the log.
    fn log_lifetime(&self, what: &str, r: &policy::Installed) {
        if self.log.to.is_some() {
            let head = describe(&self.program, r.code.func(), r.code.head());
            let index = self.clock.last_index;
            self.log
                .line(index, format_args!("{what} {head}: {}", r.lifetime()));
        }
    }

    /// The statistics so far, the regions still installed counted in,
    /// leaving them installed.
    pub fn stats(&self) -> JitStats {
        let mut stats = self.stats.clone();
        stats.live_regions = self.table.live().count() as u64;
        for r in self.table.live() {
            table::account(&mut stats, r);
        }
        stats.compiled_seconds = self.native.compiled_time.as_secs_f64();
        stats.compile_wait_seconds = self.compiler.waited.as_secs_f64();
        stats.background = self.compiler.background();
        stats.output_error = self.log.output_error.borrow().clone();
        stats
    }
}

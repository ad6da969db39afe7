//! The runtime's JIT: what to compile, recompile or drop at each interval
//! end, and entering compiled code.
//!
//! Each region head moves through a small state machine (after yk's):
//!
//! ```text
//!            candidates form a region             idle, hot exits or failing guards
//! Counting ---------------------------> Compiled ----------------------------------> Counting
//!    ^  (not before the back-off ends)     (hot exits, guards: k += 1, back-off 2^k intervals;  |
//!    |                                      idle: j += 1, back-off 2^(j/4) - 1 intervals)       |
//!    +---------------- k <= max_recompiles and j <= max_revivals ----------------------------+
//!                      otherwise: DontCompile (interpreted for good; counted in `given_up`)
//! ```
//!
//! Both counts are bounded, so no head compiles forever: a region that
//! goes idle is no fault of its own (the phase moved on) and comes back at
//! once the first few times, but a head that keeps going idle and coming
//! back (a compile/drop storm) backs off and stops at `max_revivals`.
//!
//! The JIT's own work is paid for by the program's, in tuples, so that no
//! interval length or phase pattern makes it cost more than it can win
//! (issue 12: at an interval of 100, planning every interval and compiling
//! on every new candidate made short and phase-rich programs many times
//! slower than interpreting them). Every tuple the program produces earns
//! one unit of credit (up to a cap); planning regions from the candidates
//! costs `plan_cost` (growing an installed tree, which plans its one
//! function, costs the same) and compiling one costs `compile_cost`. Candidates of
//! intervals that cannot pay for planning are kept and summed, and planned
//! together when the credit allows; a compile that cannot be paid for is
//! deferred (the head stays Counting and is planned again). The credit is
//! counted in tuples, not time, so decisions stay deterministic.
//!
//! Idleness is judged on what ran. The interpreter hands tuples over in
//! batches of [`toyvm_vm::BATCH`]; with a short interval one batch ends
//! several intervals at once, and nothing runs between them. A region
//! installed at the first of those must not count as idle at the next:
//! an interval counts toward idleness only if the program ran since the
//! region was last reviewed (`Jit::ran`).
//!
//! Compiled code emits no tuples, so a compiled region's own candidates
//! vanish from the profile as soon as it runs. What tells the runtime that a
//! region no longer fits is what the region itself counts: its entries
//! (none for `idle_intervals` intervals: the program's phase moved on, so
//! the region is dropped), its guard failures (a guarded value stopped
//! being constant) and its side exits that resume inside its own code (a
//! branch inside the trace changed direction). Dropped code is interpreted,
//! and so profiled, again, and the next intervals' candidates decide anew.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use toyvm_optimizer::{
    CodeCache, CompiledRegion, ExitKind, ExitReport, PlanConfig, Profile, Region, Step,
    plan_regions_at,
};
use toyvm_profiler::Candidate;
use toyvm_vm::{Kind, KindMask, Pc, Program, Tuple};

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
    /// Print every decision on standard error.
    pub log: bool,
    /// Write each region's Cranelift IR here.
    pub dump_clif: Option<PathBuf>,
    /// Time compiled code (two clock reads per region entry).
    pub timing: bool,
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
            log: false,
            dump_clif: None,
            timing: false,
        }
    }
}

/// What the JIT did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JitStats {
    pub compiles: u64,
    pub recompiles: u64,
    pub drops: u64,
    pub compile_failures: u64,
    /// Heads left to the interpreter for good by `max_recompiles` or
    /// `max_revivals`.
    pub given_up: u64,
    /// Interval ends whose candidates waited for credit to plan with.
    pub plans_deferred: u64,
    /// Compiles put off for lack of credit.
    pub compiles_deferred: u64,
    pub region_entries: u64,
    pub side_exits: u64,
    pub guard_failures: u64,
    /// Exits that hand one instruction (a call, `ret`, output, a trap) to
    /// the interpreter.
    pub interpret_exits: u64,
    /// Tuples reported for compiled code by its side exits and failing
    /// guards (see [`Jit::run`]).
    pub exit_tuples: u64,
    pub compile_seconds: f64,
    /// Time inside compiled code (when timed).
    pub compiled_seconds: f64,
    pub code_bytes: u64,
    pub live_regions: u64,
    /// The first failure to write the JIT log (`--jit-log`) or a
    /// `--dump-clif` file: the run goes on, and the command reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
}

/// What the log and the review need to know of a region beyond its code.
struct Meta {
    description: String,
    /// Offsets of the instructions the region compiles (its own code).
    covers: Vec<u32>,
    loops: bool,
    /// The candidates the region was planned from (empty for a whole
    /// native function).
    planned_from: Vec<(Tuple, u64)>,
}

struct Installed {
    code: CompiledRegion,
    /// Offsets of the instructions the region compiles (its own code).
    covers: Vec<u32>,
    /// Whether the region jumps back to its own head.
    loops: bool,
    /// The candidates it was planned from: a later interval's are added
    /// to them to see whether the tree would grow (see `grow`).
    planned_from: Vec<(Tuple, u64)>,
    /// Side exits taken in the last reviewed interval.
    recent_side_exits: u64,
    counters: Vec<u64>,
    seen: Vec<u64>,
    entries: u64,
    entries_seen: u64,
    idle: u32,
    /// `Jit::ran` when the region was installed or last reviewed.
    reviewed_at: u64,
}

/// How often a head was compiled again: after hot exits or failing
/// guards (`recompiles`), and after going idle (`revivals`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Again {
    recompiles: u32,
    revivals: u32,
}

#[derive(Clone, Copy, Debug)]
enum HeadState {
    Counting { again: Again, not_before: u64 },
    Compiled { slot: u32, again: Again },
    DontCompile,
}

/// The JIT of one run.
pub struct Jit<'p> {
    program: &'p Program,
    opts: JitOptions,
    cache: CodeCache,
    slots: Vec<Option<Installed>>,
    /// Per function, per instruction offset: installed slot + 1, or 0.
    heads: Vec<Vec<u32>>,
    states: HashMap<(u32, u32), HeadState>,
    versions: HashMap<(u32, u32), u32>,
    pub stats: JitStats,
    compiled_time: Duration,
    /// The interpreter's call-depth limit, which native calls honour too.
    max_depth: usize,
    /// Per function, the offsets control can transfer to: its entry and
    /// every branch or jump-table target.
    entry_points: Vec<std::collections::BTreeSet<u32>>,
    /// Batches of execution handed over so far (see [`Jit::ran`]).
    ran: u64,
    /// What the JIT may still spend, in tuples (see the module doc).
    credit: u64,
    /// Candidates of interval ends not planned from yet, summed.
    pending: HashMap<Tuple, u64>,
    /// Set when a log line could not be written: logging stops.
    log_failed: std::cell::Cell<bool>,
    /// The first output failure (see [`JitStats::output_error`]).
    output_error: std::cell::RefCell<Option<String>>,
}

impl std::fmt::Debug for Jit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn describe(p: &Program, func: u32, head: u32) -> String {
    format!(
        "`{}`+{head} (f{func}:{head})",
        p.functions[func as usize].name
    )
}

impl<'p> Jit<'p> {
    pub fn new(program: &'p Program, opts: JitOptions) -> crate::Result<Self> {
        let credit = opts.initial_credit;
        let mut cache = CodeCache::new().map_err(|e| crate::Error::Usage(format!("JIT: {e}")))?;
        // Every closed function, once: regions call them natively.
        cache
            .compile_natives(program)
            .map_err(|e| crate::Error::Usage(format!("JIT: compiling native functions: {e}")))?;
        if let Some(dir) = &opts.dump_clif {
            std::fs::create_dir_all(dir)
                .map_err(|e| crate::Error::Usage(format!("{}: {e}", dir.display())))?;
            cache.set_dump_clif(true);
        }
        Ok(Jit {
            program,
            heads: program
                .functions
                .iter()
                .map(|f| vec![0; f.code.len()])
                .collect(),
            opts,
            cache,
            slots: Vec::new(),
            states: HashMap::new(),
            versions: HashMap::new(),
            stats: JitStats::default(),
            compiled_time: Duration::ZERO,
            max_depth: toyvm_vm::interp::Config::default().max_depth,
            entry_points: program
                .functions
                .iter()
                .map(|f| {
                    let mut s: std::collections::BTreeSet<u32> =
                        f.code.iter().filter_map(|i| i.label()).collect();
                    s.extend(f.tables.iter().flatten());
                    s.insert(0);
                    s
                })
                .collect(),
            ran: 0,
            credit,
            pending: HashMap::new(),
            log_failed: std::cell::Cell::new(false),
            output_error: std::cell::RefCell::new(None),
        })
    }

    /// The program ran (a batch of its tuples, or of tuples its compiled
    /// code's exits reported, is about to be fed to the model): intervals
    /// ending from here on can count toward a region's idleness.
    pub fn ran(&mut self, tuples: u64) {
        self.ran += 1;
        let cap = self
            .opts
            .initial_credit
            .saturating_add(self.opts.compile_cost.saturating_mul(16));
        self.credit = self.credit.saturating_add(tuples).min(cap);
    }

    /// Takes `cost` from the credit if it is there.
    fn pay(&mut self, cost: u64) -> bool {
        let paid = self.credit >= cost;
        if paid {
            self.credit -= cost;
        }
        paid
    }

    fn log(&self, interval: u64, msg: std::fmt::Arguments<'_>) {
        if self.opts.log && !self.log_failed.get() {
            let line = format!("jit: interval {interval}: {msg}\n");
            if let Err(e) = crate::output::stderr(line.as_bytes()) {
                self.log_failed.set(true);
                // A closed pipe means the log is no longer wanted.
                if !crate::output::is_closed_pipe(&e) {
                    self.output_failed(format!("cannot write the JIT log: {e}"));
                }
            }
        }
    }

    fn output_failed(&self, msg: String) {
        self.output_error.borrow_mut().get_or_insert(msg);
    }

    /// The region installed at `func`'s offset `pc`.
    #[inline(always)]
    pub fn region_at(&self, func: u32, pc: u32) -> Option<u32> {
        let v = *self.heads.get(func as usize)?.get(pc as usize)?;
        (v != 0).then(|| v - 1)
    }

    /// Runs installed region `slot`; returns where to resume.
    ///
    /// A side exit to the head of another installed region of the same
    /// function goes straight on into that region (region chaining): the
    /// interpreter would enter it anyway at its next transfer, after
    /// running the head's first block once more, and a trace that leaves
    /// for a loop formed as a separate region (sieve's prime test for its
    /// marking loop) then never pays the round trip.
    ///
    /// Each side exit and failing guard taken pushes onto `report` the tuple
    /// the interpreter would have emitted there (see
    /// [`toyvm_optimizer::ExitReport`]), for the kinds in `kinds`: compiled
    /// code emits no tuples itself, and without these the profile would
    /// never see the paths that leave it, nor would intervals advance while
    /// compiled code runs.
    pub fn run(
        &mut self,
        slot: u32,
        regs: &mut [i64; 256],
        mem: &mut [i64],
        depth: usize,
        kinds: KindMask,
        report: &mut Vec<Tuple>,
    ) -> Result<u32, toyvm_vm::interp::Trap> {
        let start = self.opts.timing.then(Instant::now);
        let mut slot = slot;
        let exit = loop {
            let r = self.slots[slot as usize]
                .as_mut()
                .expect("only installed regions are offered");
            r.entries += 1;
            let func = r.code.func();
            let exit = r
                .code
                .run_site(regs, mem, &mut r.counters, depth, self.max_depth);
            let exit = match exit {
                Ok((e, site)) => {
                    let at = |o: u32| Pc::new(func, o).0;
                    match site.and_then(|i| r.code.exits()[i].report) {
                        Some(ExitReport::Edge { branch }) if kinds.contains(Kind::Edge) => report
                            .push(Tuple {
                                kind: Kind::Edge,
                                a: at(branch),
                                b: at(e.resume),
                            }),
                        Some(ExitReport::Value { pc, reg }) if kinds.contains(Kind::Value) => {
                            report.push(Tuple {
                                kind: Kind::Value,
                                a: at(pc),
                                b: regs[reg as usize] as u64,
                            })
                        }
                        _ => {}
                    }
                    Ok(e)
                }
                Err(t) => Err(t),
            };
            match exit {
                Ok(e) if e.kind == ExitKind::Side => match self.region_at(func, e.resume) {
                    Some(next) => slot = next,
                    None => break Ok(e),
                },
                other => break other,
            }
        };
        if let Some(start) = start {
            self.compiled_time += start.elapsed();
        }
        match exit {
            Ok(exit) => Ok(exit.resume),
            Err(trap) => Err(trap.to_trap(self.program)),
        }
    }

    fn uninstall(&mut self, slot: u32) -> Installed {
        let r = self.slots[slot as usize].take().expect("installed");
        self.heads[r.code.func() as usize][r.code.head() as usize] = 0;
        self.account(&r);
        r
    }

    fn account(&mut self, r: &Installed) {
        self.stats.region_entries += r.entries;
        for (site, n) in r.code.exits().iter().zip(&r.counters) {
            match site.kind {
                ExitKind::Side => self.stats.side_exits += n,
                ExitKind::Guard => self.stats.guard_failures += n,
                ExitKind::Interpret => self.stats.interpret_exits += n,
                // A trap ends the run; nothing to count toward policy.
                ExitKind::Trap => {}
            }
        }
    }

    /// Reviews installed regions and compiles what the candidates call for.
    pub fn on_interval(&mut self, index: u64, candidates: &[Candidate]) {
        self.review(index);
        for c in candidates {
            let kind = match c.tuple.kind {
                toyvm_profiler::Kind::Value => Kind::Value,
                toyvm_profiler::Kind::Edge => Kind::Edge,
                toyvm_profiler::Kind::Call => Kind::Call,
            };
            let t = Tuple {
                kind,
                a: c.tuple.a,
                b: c.tuple.b,
            };
            *self.pending.entry(t).or_insert(0) += c.count;
        }
        if self.pending.is_empty() {
            return;
        }
        if !self.pay(self.opts.plan_cost) {
            self.stats.plans_deferred += 1;
            return;
        }
        let mut pairs: Vec<(Tuple, u64)> = self.pending.drain().collect();
        pairs.sort_unstable_by_key(|&(t, _)| (t.kind as u8, t.a, t.b));
        let profile = Profile::from_candidates(&pairs);
        // Hot closed functions run whole and native from their entry, so
        // recursion (fib) stays in machine code.
        for (f, calls) in toyvm_optimizer::plan::hot_functions(self.program, &profile, 1) {
            let key = (f, 0);
            let again = match self.states.get(&key) {
                None => Again::default(),
                Some(HeadState::Counting { again, not_before }) if *not_before <= index => *again,
                Some(_) => continue,
            };
            if !self.pay(self.opts.compile_cost) {
                self.stats.compiles_deferred += 1;
                continue;
            }
            match self.cache.compile_function(self.program, f) {
                Ok(region) => self.install_compiled(
                    index,
                    key,
                    region,
                    again,
                    Meta {
                        description: format!(
                            "whole function, native ({calls} calls in the interval)"
                        ),
                        covers: Vec::new(),
                        loops: false,
                        planned_from: Vec::new(),
                    },
                ),
                Err(e) => {
                    self.stats.compile_failures += 1;
                    self.states.insert(key, HeadState::DontCompile);
                    let what = describe(self.program, f, 0);
                    self.log(index, format_args!("cannot compile {what} natively: {e}"));
                }
            }
        }
        if profile.edges.is_empty() {
            return;
        }
        let entry_points = &self.entry_points;
        let head = |f: u32, o: u32| entry_points[f as usize].contains(&o);
        for region in plan_regions_at(self.program, &profile, &self.opts.plan, &head) {
            let key = (region.func, region.head);
            // The interpreter looks for compiled code only where control
            // transfers (see `TupleSink`): a head nothing jumps to would
            // never be entered.
            if !self.entry_points[key.0 as usize].contains(&key.1) {
                continue;
            }
            // Entering and leaving compiled code costs a few dozen
            // instructions: a region must loop, or be long enough, to win.
            if !region.loops() && region.instr_count() < self.opts.min_straight_instrs {
                continue;
            }
            let again = match self.states.get(&key) {
                None => Again::default(),
                Some(HeadState::Counting { again, not_before }) if *not_before <= index => *again,
                Some(_) => continue,
            };
            self.install(index, region, again, pairs.clone());
        }
        self.grow(index, &pairs);
    }

    /// Regrows installed loops that keep leaving: a region formed from an
    /// early interval's candidates may lack arms that turn hot later, and
    /// a looping region leaves once per entry whatever its exits, so the
    /// per-entry review cannot tell. Its old candidates plus this
    /// interval's (which hold its exits' edges, reported as tuples) are
    /// planned again; if the tree at its head grows, it is recompiled in
    /// place. Each growth counts toward the head's recompile limit, and a
    /// tree only grows (up to the size cap), so this ends.
    fn grow(&mut self, index: u64, pairs: &[(Tuple, u64)]) {
        let mut candidates: Vec<((u32, u32), u32, Again)> = self
            .states
            .iter()
            .filter_map(|(k, s)| match *s {
                HeadState::Compiled { slot, again }
                    if again.recompiles < self.opts.max_recompiles =>
                {
                    Some((*k, slot, again))
                }
                _ => None,
            })
            .collect();
        // `states` is a hash map: visit heads in a fixed order, or which
        // head the budget pays for first would differ from run to run.
        candidates.sort_unstable_by_key(|&(key, _, _)| key);
        for (key, slot, again) in candidates {
            let r = self.slots[slot as usize].as_ref().expect("installed");
            if !r.loops || r.planned_from.is_empty() || r.recent_side_exits < self.opts.min_entries
            {
                continue;
            }
            // Only the head's function is planned again: every tuple that
            // can shape its tree (its edges, and the values and call sites
            // at its pcs) has its pc in that function. Planning every
            // function the candidates touch, once per installed loop and
            // interval, cost seconds on programs with dozens of loops.
            let mine = |t: &Tuple| Pc(t.a).func() == key.0;
            let mut merged: HashMap<Tuple, u64> = r
                .planned_from
                .iter()
                .copied()
                .filter(|(t, _)| mine(t))
                .collect();
            for &(t, n) in pairs.iter().filter(|(t, _)| mine(t)) {
                *merged.entry(t).or_insert(0) += n;
            }
            let (covered, recent) = (r.covers.len(), r.recent_side_exits);
            // Planning is paid for like the first plan (see `pay`).
            if !self.pay(self.opts.plan_cost) {
                self.stats.plans_deferred += 1;
                return;
            }
            let mut merged: Vec<(Tuple, u64)> = merged.into_iter().collect();
            merged.sort_unstable_by_key(|&(t, _)| (t.kind as u8, t.a, t.b));
            let profile = Profile::from_candidates(&merged);
            let entry_points = &self.entry_points;
            let head = |f: u32, o: u32| (f, o) == key && entry_points[f as usize].contains(&o);
            let Some(region) = plan_regions_at(self.program, &profile, &self.opts.plan, &head)
                .into_iter()
                .find(|r| (r.func, r.head) == key)
            else {
                continue;
            };
            if region.instr_count() <= covered {
                continue;
            }
            self.log(
                index,
                format_args!(
                    "grow {}: {} side exits in the interval; its tree grows from {} to {} instructions",
                    describe(self.program, key.0, key.1),
                    recent,
                    covered,
                    region.instr_count()
                ),
            );
            let again = Again {
                recompiles: again.recompiles + 1,
                ..again
            };
            self.install(index, region, again, merged);
        }
    }

    fn install(
        &mut self,
        index: u64,
        region: Region,
        again: Again,
        planned_from: Vec<(Tuple, u64)>,
    ) {
        let key = (region.func, region.head);
        let what = describe(self.program, region.func, region.head);
        if !self.pay(self.opts.compile_cost) {
            self.stats.compiles_deferred += 1;
            return;
        }
        let compiled = match self.cache.compile(&region) {
            Ok(c) => c,
            Err(e) => {
                self.stats.compile_failures += 1;
                self.states.insert(key, HeadState::DontCompile);
                self.log(
                    index,
                    format_args!("cannot compile {what}: {e}; left to the interpreter"),
                );
                return;
            }
        };
        let guards: Vec<String> = region
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Guard { reg, value, .. } => Some(format!("r{reg} == {value}")),
                _ => None,
            })
            .collect();
        let blocks = region
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Block { .. }))
            .count();
        let description = format!(
            "{blocks} blocks, {} instructions, head weight {}{}",
            region.instr_count(),
            toyvm_optimizer::plan::region_weight(&region),
            if guards.is_empty() {
                String::new()
            } else {
                format!(", guards [{}]", guards.join(", "))
            },
        );
        let covers = region
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Op { pc, .. } | Step::Branch { pc, .. } | Step::Switch { pc, .. } => {
                    Some(*pc)
                }
                _ => None,
            })
            .collect();
        let meta = Meta {
            description,
            covers,
            loops: region.loops(),
            planned_from,
        };
        self.install_compiled(index, key, compiled, again, meta);
    }

    fn install_compiled(
        &mut self,
        index: u64,
        key: (u32, u32),
        compiled: CompiledRegion,
        again: Again,
        meta: Meta,
    ) {
        let Meta {
            description,
            covers,
            loops,
            planned_from,
        } = meta;
        let what = describe(self.program, key.0, key.1);
        if let Some(HeadState::Compiled { slot, .. }) = self.states.get(&key).copied() {
            // A whole-function region replaces a superblock at the entry.
            self.uninstall(slot);
        }
        self.stats.compile_seconds += compiled.compile_time().as_secs_f64();
        self.stats.code_bytes += compiled.code_size() as u64;
        let version = self.versions.entry(key).or_insert(0);
        *version += 1;
        // A head compiled before (dropped when idle, or re-formed after hot
        // exits or failing guards) is a recompile.
        let seen_before = *version > 1;
        if seen_before {
            self.stats.recompiles += 1;
        } else {
            self.stats.compiles += 1;
        }
        if let (Some(dir), Some(clif)) = (&self.opts.dump_clif, compiled.clif()) {
            let path = dir.join(format!("f{}_{}_v{}.clif", key.0, key.1, version));
            if let Err(e) = std::fs::write(&path, clif) {
                self.output_failed(format!("cannot write {}: {e}", path.display()));
            }
        }
        self.log(
            index,
            format_args!(
                "{} {what}: {description}, {} exits, {:.3} ms, {} bytes",
                if again != Again::default() {
                    "recompile"
                } else {
                    "compile"
                },
                compiled.exits().len(),
                compiled.compile_time().as_secs_f64() * 1e3,
                compiled.code_size()
            ),
        );
        let n = compiled.exits().len();
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.heads[key.0 as usize][key.1 as usize] = slot as u32 + 1;
        self.slots[slot] = Some(Installed {
            code: compiled,
            covers,
            loops,
            planned_from,
            recent_side_exits: 0,
            counters: vec![0; n],
            seen: vec![0; n],
            entries: 0,
            entries_seen: 0,
            idle: 0,
            reviewed_at: self.ran,
        });
        self.states.insert(
            key,
            HeadState::Compiled {
                slot: slot as u32,
                again,
            },
        );
    }

    /// Drops regions that went idle and re-forms those whose exits or
    /// guards turned hot.
    fn review(&mut self, index: u64) {
        let mut keys: Vec<((u32, u32), u32, Again)> = self
            .states
            .iter()
            .filter_map(|(k, s)| match s {
                HeadState::Compiled { slot, again } => Some((*k, *slot, *again)),
                _ => None,
            })
            .collect();
        // A fixed order, as in `grow`: slots freed and reused, and the
        // budget spent, must not depend on the hash map's seed.
        keys.sort_unstable_by_key(|&(key, _, _)| key);
        for (key, slot, again) in keys {
            let r = self.slots[slot as usize].as_mut().expect("installed");
            let ever = r.entries;
            let entered = r.entries - r.entries_seen;
            r.entries_seen = r.entries;
            let mut guard_failures = 0;
            let mut side_exits = 0;
            let mut hot_exit: Option<(u32, u64)> = None;
            for (i, site) in r.code.exits().iter().enumerate() {
                let d = r.counters[i] - r.seen[i];
                r.seen[i] = r.counters[i];
                if site.kind == ExitKind::Side {
                    side_exits += d;
                }
                match site.kind {
                    ExitKind::Guard => guard_failures += d,
                    ExitKind::Side
                        if r.covers.contains(&site.resume)
                            && hot_exit.is_none_or(|(_, n)| d > n) =>
                    {
                        hot_exit = Some((site.resume, d));
                    }
                    _ => {}
                }
            }
            r.recent_side_exits = side_exits;
            // Nothing ran since the last review (another interval ended in
            // the same batch): there was no chance to enter the region.
            let ran = r.reviewed_at != self.ran;
            r.reviewed_at = self.ran;
            r.idle = match (entered, ran) {
                (0, true) => r.idle + 1,
                (0, false) => r.idle,
                _ => 0,
            };
            let what = describe(self.program, key.0, key.1);
            let reason = if r.idle >= self.opts.idle_intervals {
                Some(format!("idle for {} intervals (its phase is over)", r.idle))
            } else if !r.loops
                && entered >= self.opts.min_entries
                && guard_failures as f64 >= self.opts.guard_failure_share * entered as f64
            {
                // Only for regions that do not loop: a looping region is
                // re-entered right after each failure, so failures per entry
                // is near 1 even when the guard fails once in a thousand
                // iterations (its iterations are not counted).
                Some(format!(
                    "guards failed on {guard_failures} of {entered} entries"
                ))
            } else if let Some((at, n)) = hot_exit.filter(|&(_, n)| {
                entered >= self.opts.min_entries
                    && n as f64 >= self.opts.hot_exit_share * entered as f64
            }) {
                Some(format!(
                    "side exit to offset {at} taken on {n} of {entered} entries"
                ))
            } else {
                None
            };
            let Some(reason) = reason else { continue };
            // Idle after real use is the phase moving on; never entered at
            // all means the region was a poor choice.
            let idle = reason.starts_with("idle") && ever > 0;
            self.uninstall(slot);
            self.stats.drops += 1;
            // Going idle is no fault of the region: it may come back at
            // once, the first few times. Hot exits and failing guards back
            // off exponentially and count toward their own limit.
            let (next, not_before) = if idle {
                let next = Again {
                    revivals: again.revivals + 1,
                    ..again
                };
                (next, index + (1u64 << (next.revivals / 4).min(16)) - 1)
            } else {
                let next = Again {
                    recompiles: again.recompiles + 1,
                    ..again
                };
                (next, index + (1u64 << next.recompiles.min(16)))
            };
            let state = if next.recompiles > self.opts.max_recompiles
                || next.revivals > self.opts.max_revivals
            {
                self.stats.given_up += 1;
                HeadState::DontCompile
            } else {
                HeadState::Counting {
                    again: next,
                    not_before,
                }
            };
            match state {
                HeadState::DontCompile => self.log(
                    index,
                    format_args!(
                        "drop {what}: {reason}; recompiled {} times after exits or guards and {} after going idle: left to the interpreter",
                        again.recompiles, again.revivals
                    ),
                ),
                HeadState::Counting { not_before, .. } => self.log(
                    index,
                    format_args!("drop {what}: {reason}; may recompile from interval {not_before}"),
                ),
                HeadState::Compiled { .. } => unreachable!("just dropped"),
            }
            self.states.insert(key, state);
        }
    }

    /// Final statistics (folds in the regions still installed).
    pub fn finish(&mut self) -> JitStats {
        let live: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&s| self.slots[s as usize].is_some())
            .collect();
        self.stats.live_regions = live.len() as u64;
        for s in live {
            let r = self.slots[s as usize].take().expect("live");
            self.account(&r);
        }
        self.stats.compiled_seconds = self.compiled_time.as_secs_f64();
        self.stats.output_error = self.output_error.borrow().clone();
        self.stats.clone()
    }
}

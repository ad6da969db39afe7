//! What the JIT does at each interval end, as its [`policy`](super::policy)
//! decides: reviews installed regions and drops those it finds wanting,
//! plans regions from the candidates and grows installed trees, and hands
//! the compiles to the compiler; and installs compiled code when its point
//! comes.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use toyvm_optimizer::{CompiledRegion, NativesCompiled, Profile, Region, Step, plan_regions_at};
use toyvm_profiler::Candidate;
use toyvm_vm::{Pc, Program, Tuple};

use super::Jit;
use super::compiler::{CompileError, Done, Job};
use super::policy::{
    AfterDrop, Again, Decision, Head, Installation, Installed, Limits, Shape, Summed, Verdict,
    laid_out,
};

/// How many compiled trips through a loop's head an exit costs, with the
/// interpreter's run to the head and the entry after it; `grow` weighs a
/// tree's exits against its trips by it.
const EXIT_WEIGHT: f64 = 4.0;

/// What planning needs of a program that never changes while it runs,
/// built once, and the values it no longer guards.
#[derive(Debug)]
pub(super) struct Planning {
    /// The program's CFGs and closed functions.
    analysis: toyvm_optimizer::Analysis,
    /// Per function, the offsets control can transfer to: its entry and
    /// every branch or jump-table target.
    entry_points: Vec<BTreeSet<u32>>,
    /// Loads (and arguments) whose value guards a review found too costly
    /// in a loop (see `policy::review::COSTLY_GUARD`): their Value
    /// candidates are left out of every later plan, so no region guards
    /// them again in this run.
    unguarded: HashSet<Pc>,
}

impl Planning {
    pub(super) fn new(program: &Program) -> Planning {
        Planning {
            analysis: toyvm_optimizer::Analysis::new(program),
            entry_points: program
                .functions
                .iter()
                .map(|f| {
                    let mut s: BTreeSet<u32> = f.code.iter().filter_map(|i| i.label()).collect();
                    s.extend(f.tables.iter().flatten());
                    s.insert(0);
                    s
                })
                .collect(),
            unguarded: HashSet::new(),
        }
    }

    /// The profile planning reads from `candidates`: all of them but the
    /// values no longer guarded.
    fn profile<'a>(&self, candidates: impl IntoIterator<Item = &'a Candidate>) -> Profile {
        let mut profile = Profile::from_candidates(candidates);
        if !self.unguarded.is_empty() {
            profile.values.retain(|c| !self.unguarded.contains(&c.pc));
        }
        profile
    }

    /// Whether control can transfer to `func`'s offset `offset`.
    fn is_entry(&self, func: u32, offset: u32) -> bool {
        self.entry_points[func as usize].contains(&offset)
    }
}

/// What the log and the review need to know of a region beyond its code.
pub(super) struct Meta {
    description: String,
    shape: Shape,
}

impl Jit {
    /// Reviews installed regions and compiles what the candidates call for.
    pub fn on_interval(&mut self, index: u64, candidates: &[Candidate]) {
        self.clock.last_index = index;
        let hot = self.review(index);
        self.plan(index, candidates);
        // A loop that left hot into its own code may lack an arc the
        // interval's exits now name (an edge under the model's threshold
        // while interpreted, over it as the exit of compiled code):
        // planning grows it where it can (see `grow`); one that did not
        // grow is dropped as before.
        let compiled = if hot.is_empty() {
            Vec::new()
        } else {
            self.heads.compiled()
        };
        for (key, slot, again, verdict) in hot {
            let installed = compiled.iter().any(|&(k, s, _)| (k, s) == (key, slot));
            // Its exits' tuples reach the planner an interval after they
            // were taken (the model's lag): a region reviewed once has had
            // no chance to grow from them yet, and waits one more.
            let first = self.table.get(slot).is_some_and(|r| r.reviews() <= 1);
            if installed && !self.in_flight(key) && !first {
                self.drop_region(index, key, slot, again, verdict);
            }
        }
        self.install_now();
    }

    /// Plans regions from the candidates (and those of earlier intervals
    /// not planned yet), and submits what they call for to the compiler.
    fn plan(&mut self, index: u64, candidates: &[Candidate]) {
        self.budget.pending.add(candidates);
        if self.budget.pending.is_empty() {
            return;
        }
        if !self.budget.pay_plan() {
            self.stats.plans_deferred += 1;
            return;
        }
        let planned = self.budget.pending.take();
        let profile = self.planning.profile(planned.iter());
        // Hot closed functions run whole and native from their entry, so
        // recursion (fib) stays in machine code.
        for (f, calls) in toyvm_optimizer::plan::hot_functions(&self.planning.analysis, &profile, 1)
        {
            let key = (f, 0);
            let Some(again) = self.heads.may_compile(key, index) else {
                continue;
            };
            if self.in_flight(key) {
                continue;
            }
            let targets = self.call_targets(&profile, f);
            self.install_whole(f, again, format!("{calls} calls in the interval"), targets);
        }
        if profile.edges.is_empty() {
            return;
        }
        let planning = &self.planning;
        let head = |f: u32, o: u32| planning.is_entry(f, o);
        for region in plan_regions_at(
            &self.program,
            &self.planning.analysis,
            &profile,
            &self.opts.plan,
            &head,
        ) {
            let key = (region.func, region.head);
            // The interpreter looks for compiled code only where control
            // transfers (`toyvm_vm::interp::Host`, rule 1): a head nothing jumps to would
            // never be entered.
            if !self.planning.is_entry(key.0, key.1) {
                continue;
            }
            // Entering and leaving compiled code costs a few dozen
            // instructions: a region must loop, or be long enough, to win.
            if !region.loops() && region.instr_count() < self.opts.min_straight_instrs {
                continue;
            }
            if self.in_flight(key) {
                continue;
            }
            let Some(again) = self.heads.may_compile(key, index) else {
                continue;
            };
            // A trace from a function's entry: the function is hot. One
            // that runs natively without bailing (closed, or open: see
            // `toyvm_optimizer::native`) runs whole instead, its callees
            // natively, and leaves the profile (a C library's formatting
            // functions, whose edges each stay under a model's threshold
            // while the whole is most of the run).
            if key.1 == 0 && self.planning.analysis.runs_whole(key.0) {
                let weight = toyvm_optimizer::plan::region_weight(&region);
                let targets = self.call_targets(&profile, key.0);
                self.install_whole(
                    key.0,
                    again,
                    format!("a trace from its entry, weight {weight}"),
                    targets,
                );
                continue;
            }
            let f = key.0;
            self.install(region, again, Arc::clone(&planned));
            // A hot loop inside a function that runs whole and is called
            // again: its next calls run natively from their entry (a
            // recursive sort's, whose loops the region covers for the call
            // it was found in; not a C program's `main`, called once).
            if f != self.program.entry
                && self.planning.analysis.called_again(f)
                && self.planning.analysis.runs_whole(f)
                && !self.in_flight((f, 0))
                && let Some(again) = self.heads.may_compile((f, 0), index)
            {
                let targets = self.call_targets(&profile, f);
                self.install_whole(f, again, "a loop inside it".into(), targets);
            }
        }
        self.grow(index, &planned);
    }

    /// The call targets `profile` finds for function `f`'s `calli`s (see
    /// `toyvm_optimizer::plan::call_targets`; none under `--no-call-spec`,
    /// whose share is never reached).
    fn call_targets(&self, profile: &Profile, f: u32) -> BTreeMap<u32, u32> {
        toyvm_optimizer::plan::call_targets(&self.program, profile, &self.opts.plan.specialize, f)
    }

    /// Submits function `f` to be compiled whole and installed at its
    /// entry (see `toyvm_optimizer::CodeCache::compile_function_for`), its
    /// native code specialized for `targets` (a `calli`'s offset -> the
    /// callee the profile found dominant there); `why` goes into the log.
    fn install_whole(&mut self, f: u32, again: Again, why: String, targets: BTreeMap<u32, u32>) {
        if !self.budget.pay_compile() {
            self.stats.compiles_deferred += 1;
            return;
        }
        let mut description = format!("whole function, native ({why})");
        if !targets.is_empty() {
            let each: Vec<String> = targets
                .iter()
                .map(|(pc, g)| format!("{pc} -> f{g}"))
                .collect();
            description += &format!(", calling {} directly", each.join(", "));
        }
        let meta = Meta {
            description,
            shape: Shape {
                covers: Vec::new(),
                handed: Vec::new(),
                dispatches: Vec::new(),
                callees: 0,
                calls: Vec::new(),
                whole: true,
                loops: false,
                planned_from: Arc::from([]),
                head_weight: 0,
                exit_sites: 0,
            },
        };
        let job = Job::Function {
            func: f,
            targets: Arc::new(targets),
        };
        self.submit((f, 0), job, again, meta);
    }

    /// What may be installed at the end of `on_interval`: compiles due now
    /// (install lag 0), or those finished (asynchronous mode).
    fn install_now(&mut self) {
        if self.opts.async_install {
            self.install_ready();
        } else {
            self.install_due();
        }
    }

    /// Regrows installed loops that keep leaving: a region formed from an
    /// early interval's candidates may lack arms that turn hot later, and
    /// a looping region leaves once per entry whatever its exits, so the
    /// per-entry review cannot tell. Its old candidates and those of the
    /// function's other live regions, each weighed by the trips its code
    /// counted, plus this interval's (which hold its exits' edges,
    /// reported as tuples) are planned again (a region planned from
    /// another's candidates keeps them: a later growth may count them
    /// twice, which only weighs compiled paths more); if the tree at its
    /// head grows, it is recompiled in place. Each growth counts toward
    /// the head's recompile limit, and a tree only grows (up to the size
    /// cap), so this ends.
    fn grow(&mut self, index: u64, planned: &[Candidate]) {
        let max = self.opts.max_recompiles;
        let heads = self.heads.compiled();
        let growable = heads.iter().filter(|&&(_, _, a)| a.recompiles < max);
        for &(key, slot, again) in growable {
            if self.in_flight(key) {
                continue;
            }
            let r = self.table.get(slot).expect("installed");
            if !r.plannable_loop() || r.recent_side_exits() < self.opts.min_entries {
                continue;
            }
            // Only the head's function is planned again: every tuple that
            // can shape its tree (its edges, and the values and call sites
            // at its pcs) has its pc in that function. Planning every
            // function the candidates touch, once per installed loop and
            // interval, cost seconds on programs with dozens of loops.
            let mine = |t: &Tuple| Pc(t.a).func() == key.0;
            // The old candidates describe the paths inside the region,
            // which report no tuples while compiled; this interval's hold
            // its exits. The old ones are scaled to the trips the region
            // counted, over EXIT_WEIGHT (an exit and the re-entry after
            // it cost about as much as that many compiled trips), so its
            // arms keep their weight against the exits': summed as they
            // were, an interval's exits outweighed every arm of
            // bytecode.wasm's dispatch tree, whose plan came out smaller
            // than the tree it was to extend, and it left compiled code at
            // two missing arms on one trip in 21.
            //
            // The other live regions of the function are weighed in the
            // same way: their paths report no tuples either, and a tree
            // that grows through them (a nested loop's, whose outer loop
            // another region compiles) needs their arcs (lz77.wasm's
            // match loop and hash-insert loop each compiled part of the
            // outer loop, and neither grew through the other's part).
            let mut old: Vec<Candidate> = Vec::new();
            for &(k, s, _) in &heads {
                if k.0 != key.0 {
                    continue;
                }
                let Some(other) = self.table.get(s) else {
                    continue;
                };
                let trips = other.recent_trips() as f64;
                let scale = trips / EXIT_WEIGHT / other.shape.head_weight.max(1) as f64;
                let scale = scale.max(1.0);
                old.extend(
                    other
                        .shape
                        .planned_from
                        .iter()
                        .filter(|c| mine(&c.tuple))
                        .map(|c| Candidate {
                            tuple: c.tuple,
                            count: (c.count as f64 * scale) as u64,
                        }),
                );
            }
            let mut merged = Summed::default();
            merged.add(old.iter().chain(planned.iter().filter(|c| mine(&c.tuple))));
            let (covered, callees, recent) =
                (r.shape.covers.len(), r.shape.callees, r.recent_side_exits());
            // Planning is paid for like the first plan (see `pay_plan`).
            if !self.budget.pay_plan() {
                self.stats.plans_deferred += 1;
                return;
            }
            let merged = merged.take();
            let Some(region) = self.plan_head(key, &merged) else {
                continue;
            };
            // Only a tree that grew, dispatches among more callees, or, as
            // large, leaves at fewer places: an arc now over the share that
            // goes to a block the tree already compiles is a jump to it,
            // which adds no instructions (hashtable.wasm's empty-chain
            // branch, under the model's threshold while interpreted, over
            // it as the exit taken on 60% of the region's entries).
            let (exits, old_exits) = (region.control_exits().len(), r.shape.exit_sites);
            let fewer_exits = r.left_hot() && region.instr_count() >= covered && exits < old_exits;
            if region.instr_count() <= covered && native_callees(&region) <= callees && !fewer_exits
            {
                continue;
            }
            let grow = Decision::Grow {
                exits: recent,
                instrs: (covered, region.instr_count()),
                callees: (callees, native_callees(&region)),
            };
            self.decided(index, key, &grow);
            self.install(region, again.grown(), merged);
        }
    }

    /// The region `candidates` plan at `key`, the only head allowed (an
    /// installed tree planned again: see `grow` and `unguard`).
    fn plan_head(&self, key: Head, candidates: &[Candidate]) -> Option<Region> {
        let profile = self.planning.profile(candidates.iter());
        let planning = &self.planning;
        let head = |f: u32, o: u32| (f, o) == key && planning.is_entry(f, o);
        plan_regions_at(
            &self.program,
            &self.planning.analysis,
            &profile,
            &self.opts.plan,
            &head,
        )
        .into_iter()
        .find(|r| (r.func, r.head) == key)
    }

    /// Pays for compiling `region` and submits it.
    fn install(&mut self, region: Region, again: Again, planned_from: Arc<[Candidate]>) {
        let key = (region.func, region.head);
        if !self.budget.pay_compile() {
            self.stats.compiles_deferred += 1;
            return;
        }
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
        let head_weight = toyvm_optimizer::plan::region_weight(&region);
        let description = format!(
            "{blocks} blocks, {} instructions, head weight {}{}",
            region.instr_count(),
            head_weight,
            if guards.is_empty() {
                String::new()
            } else {
                format!(", guards [{}]", guards.join(", "))
            },
        );
        let (covers, handed) = laid_out(&region);
        let dispatches = region
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Dispatch { pc, .. } => Some(*pc),
                _ => None,
            })
            .collect();
        let mut calls: Vec<u32> = region.native_calls().map(|(f, _)| f).collect();
        calls.sort_unstable();
        calls.dedup();
        let meta = Meta {
            description,
            shape: Shape {
                covers,
                handed,
                dispatches,
                callees: native_callees(&region),
                calls,
                whole: false,
                loops: region.loops(),
                planned_from,
                head_weight,
                exit_sites: region.control_exits().len(),
            },
        };
        self.submit(key, Job::Region(region), again, meta);
    }

    /// Whether a compile for `key` is on its way to being installed.
    fn in_flight(&self, key: Head) -> bool {
        self.installs.iter().any(|i| i.key == key)
    }

    /// Hands a compile to the compiler; it is installed at the next
    /// interval end (or, asynchronously, when ready), replacing the
    /// region installed at `key` now, if any.
    fn submit(&mut self, key: Head, job: Job, again: Again, meta: Meta) {
        let replaces = self.heads.installed(key);
        self.compiler.submit(job);
        self.installs.push_back(Install {
            due: self.clock.tuples + self.opts.install_lag,
            key,
            again,
            meta,
            replaces,
        });
    }

    /// Installs the compiles whose point the stream has reached, waiting
    /// for the compiler thread if it is still at them.
    pub(super) fn install_due(&mut self) {
        let index = self.clock.last_index;
        while self
            .installs
            .front()
            .is_some_and(|i| i.due <= self.clock.tuples)
        {
            let install = self.installs.pop_front().expect("just seen");
            let done = self.compiler.wait().unwrap_or(Err(CompileError::NoResult));
            self.finish_install(index, install, done);
        }
    }

    /// Installs the compiles the compiler has finished, without waiting.
    pub(super) fn install_ready(&mut self) {
        while !self.installs.is_empty() {
            let Some(done) = self.compiler.ready() else {
                break;
            };
            let install = self.installs.pop_front().expect("one per job");
            self.finish_install(self.clock.last_index, install, done);
        }
    }

    fn finish_install(&mut self, index: u64, install: Install, done: Done) {
        let Install {
            key,
            again,
            meta,
            replaces,
            ..
        } = install;
        let (compiled, fresh) = match done {
            Ok(done) => done,
            Err(e) => {
                self.stats.compile_failures += 1;
                self.heads.failed(key);
                self.decided(index, key, &Decision::CompileFailed(e));
                return;
            }
        };
        // What happened at the head while it compiled decides whether the
        // code is still wanted.
        if let Some(stale) = self.heads.stale(key, replaces) {
            self.stats.discarded += 1;
            self.decided(index, key, &Decision::Discard(stale));
            return;
        }
        self.install_compiled(index, key, compiled, fresh, again, meta);
    }

    fn install_compiled(
        &mut self,
        index: u64,
        key: Head,
        compiled: Arc<CompiledRegion>,
        fresh: bool,
        again: Again,
        meta: Meta,
    ) {
        let Meta { description, shape } = meta;
        if let Some(slot) = self.heads.installed(key) {
            // A whole-function region replaces a superblock at the entry.
            self.uninstall(slot);
        }
        let slot = self.table.free_slot();
        let version = self.heads.install(key, slot, again);
        // Code another run compiled cost this one nothing.
        if fresh {
            let natives = compiled.natives_compiled().time;
            self.stats.compile_seconds += (compiled.compile_time() + natives).as_secs_f64();
            self.stats.code_bytes += compiled.code_size() as u64;
        }
        // A head compiled before (dropped when idle, or re-formed after hot
        // exits or failing guards) is a recompile.
        if version > 1 {
            self.stats.recompiles += 1;
        } else {
            self.stats.compiles += 1;
        }
        if !fresh {
            self.stats.shared += 1;
        }
        self.stats.reduced_products += compiled.reduced_products() as u64;
        if let (Some(dir), Some(clif)) = (&self.opts.dump_clif, compiled.clif()) {
            let path = dir.join(format!("f{}_{}_v{}.clif", key.0, key.1, version));
            if let Err(e) = std::fs::write(&path, clif) {
                self.log
                    .output_failed(format!("cannot write {}: {e}", path.display()));
            }
        }
        let installed = Installation {
            again: again != Again::default(),
            description,
            exits: compiled.exits().len(),
            compile_time: compiled.compile_time(),
            bytes: compiled.code_size(),
            inlined: compiled.inlined_calls(),
            // Natives another run compiled cost this one nothing either.
            natives: if fresh {
                compiled.natives_compiled()
            } else {
                NativesCompiled::default()
            },
            reduced: compiled.reduced_products(),
        };
        self.decided(index, key, &Decision::Install(installed));
        let installed = Installed::new(compiled, shape, self.clock.batches);
        self.table.put(slot, installed);
    }

    /// Drops regions that went idle, whose guards fail or exits turn hot,
    /// or whose entries leave at once (see [`super::policy::review`]).
    /// Returns the loops left hot into their own code that may still
    /// grow (`on_interval` drops those that do not).
    fn review(&mut self, index: u64) -> Vec<(Head, u32, Again, Verdict)> {
        // Functions live regions call natively (see the review's docs).
        let called: HashSet<u32> = self
            .table
            .live()
            .flat_map(|r| r.shape.calls.iter().copied())
            .collect();
        let mut hot = Vec::new();
        for (key, slot, again) in self.heads.compiled() {
            let r = self.table.get_mut(slot).expect("installed");
            let verdict = r.review(&self.opts, self.clock.batches, called.contains(&key.0));
            if !r.costly_guards.is_empty() {
                let costly = std::mem::take(&mut r.costly_guards);
                self.unguard(index, key, slot, again, costly);
                continue;
            }
            if verdict == Verdict::Keep {
                continue;
            }

            if matches!(verdict, Verdict::HotExit { .. })
                && r.plannable_loop()
                && again.recompiles < self.opts.max_recompiles
            {
                hot.push((key, slot, again, verdict));
                continue;
            }
            self.drop_region(index, key, slot, again, verdict);
        }
        hot
    }

    /// Plans the loop at `key` again without the value guards a review
    /// found too costly (`costly`: each guarded value's offset and its
    /// failures in the interval), from the candidates it was planned from,
    /// and recompiles it in place: the same tree with those values
    /// generic. The values stay unguarded for the rest of the run (see
    /// `Planning::unguarded`). The region stays installed until its
    /// replacement is; if planning cannot be paid for now, it is tried
    /// again at the next review that finds the guards costly.
    fn unguard(&mut self, index: u64, key: Head, slot: u32, again: Again, costly: Vec<(u32, u64)>) {
        self.planning
            .unguarded
            .extend(costly.iter().map(|&(pc, _)| Pc::new(key.0, pc)));
        if self.in_flight(key) || again.recompiles >= self.opts.max_recompiles {
            return;
        }
        let r = self.table.get(slot).expect("installed");
        let (from, trips) = (Arc::clone(&r.shape.planned_from), r.recent_trips());
        if from.is_empty() || !self.budget.pay_plan() {
            return;
        }
        let Some(region) = self.plan_head(key, &from) else {
            return;
        };
        let values = costly.iter().map(|&(pc, n)| (Pc::new(key.0, pc), n));
        let decision = Decision::Unguard {
            values: values.collect(),
            trips,
        };
        self.decided(index, key, &decision);
        self.install(region, again.grown(), from);
    }

    /// Uninstalls the region at `key` for `verdict`; its head's state
    /// decides when it may compile again.
    fn drop_region(&mut self, index: u64, key: Head, slot: u32, again: Again, verdict: Verdict) {
        self.uninstall(slot);
        self.stats.drops += 1;
        let limits = Limits {
            max_recompiles: self.opts.max_recompiles,
            max_revivals: self.opts.max_revivals,
        };
        let after = self.heads.dropped(key, again, verdict, index, limits);
        if let AfterDrop::GivenUp { .. } = after {
            self.stats.given_up += 1;
        }
        self.decided(index, key, &Decision::Drop { verdict, after });
    }
}

/// The callees of `region`'s native calls and dispatches, counted.
fn native_callees(region: &Region) -> usize {
    region
        .steps
        .iter()
        .map(|s| match s {
            Step::Call { .. } => 1,
            Step::Dispatch { callees, .. } => callees.len(),
            _ => 0,
        })
        .sum()
}

/// A submitted compile on its way to being installed.
pub(super) struct Install {
    /// Where it is installed (deterministic mode): at the first chance
    /// once this many tuples have been handed over.
    due: u64,
    key: Head,
    again: Again,
    meta: Meta,
    /// The slot installed at `key` when it was submitted: a recompile in
    /// place, installed only if that region is still there.
    replaces: Option<u32>,
}

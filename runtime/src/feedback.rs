//! The feedback component as a plug-in for another VM: your interpreter
//! streams tuples, describes its control-flow graph through [`HostGraph`],
//! and gets back, per interval, what toyvm's own JIT would act on: which
//! trace trees to compile (as your block ids, with arc weights), which
//! values to specialize where, which call sites are monomorphic or
//! polymorphic, and which compiled traces to drop or recompile after their
//! exits. Nothing here knows toyvm's instruction set: the profiler model is
//! any of toyvm's (`multihash`, `stratified`, `rap`, ...), the traces come
//! from the same tree selection as toyvm's regions
//! ([`toyvm_optimizer::superblock::grow_trees`]), the specialization
//! decisions from the same rule ([`Specializations::decide`]), and the
//! review of installed traces is the rule toyvm's JIT reviews its regions
//! by (`feedback::review`), with its thresholds ([`JitOptions`]).
//!
//! ```
//! use toyvm::feedback::{Feedback, HostGraph, Loc};
//!
//! /// One function: block 0 enters the loop at block 1, which repeats
//! /// or leaves to block 2.
//! struct Graph;
//! impl HostGraph for Graph {
//!     fn blocks(&self, _func: u32) -> u32 { 3 }
//!     fn successors(&self, _func: u32, block: u32) -> Vec<u32> {
//!         match block { 0 => vec![1], 1 => vec![1, 2], _ => vec![] }
//!     }
//! }
//!
//! let mut fb = Feedback::new("perfect:interval=1000")?;
//! let mut decisions = Vec::new();
//! fb.edge(Loc::new(0, 0), Loc::new(0, 1), &Graph, &mut decisions);
//! for i in 0..2000u64 {
//!     fb.edge(Loc::new(0, 1), Loc::new(0, 1), &Graph, &mut decisions);
//!     fb.value(Loc::new(0, 7), if i % 20 == 0 { 1 } else { 42 }, &Graph, &mut decisions);
//! }
//! // Two intervals ended; the loop at block 1 is the hot trace, and the
//! // value 42 at site 7 is worth a guard (95% of its executions).
//! let d = &decisions[0];
//! assert_eq!((d.traces[0].head, d.traces[0].loops), (Loc::new(0, 1), true));
//! assert_eq!(d.values[0].value, 42);
//! assert!((d.values[0].share - 0.95).abs() < 0.01);
//! # Ok::<(), toyvm::Error>(())
//! ```
//!
//! # The contract
//!
//! 1. **Locations.** The host numbers its functions and, within each, its
//!    basic blocks `0..blocks(func)` and its instruction sites (any
//!    numbering: a value or call site is only a name). A [`Loc`] is a
//!    function and a block or site.
//! 2. **Tuples.** The host reports, in execution order: every transfer of
//!    control between two blocks of one function ([`Feedback::edge`]),
//!    the value an instruction of interest produced ([`Feedback::value`]:
//!    loads, arguments), and the callee of an indirect call
//!    ([`Feedback::call`]), callees numbered by the host. Tuples of kinds
//!    the spec does not profile are counted toward nothing and dropped.
//!    Edges between functions are ignored by trace selection.
//! 3. **Intervals.** Every `interval` tuples of the spec's kinds (see the
//!    spec grammar in [`toyvm_profiler::spec`]) an interval ends; the call
//!    that ended it appends that interval's [`Decisions`] to `out`. The
//!    same tuples and graph give the same decisions, run after run.
//! 4. **The graph.** At an interval end the component asks [`HostGraph`]
//!    about the functions with hot edges only. Successor lists are the
//!    static graph; an edge the profile reports that the graph does not
//!    have is ignored, a successor the profile does not report weighs 0.
//!    A block's weight is the larger of its profiled flow in and out (node
//!    weights as in Conte et al., paper 002 section 3.3).
//! 5. **Decisions.** Trace trees are grown as toyvm grows its own
//!    (IMPACT superblocks from the heaviest block, extended to trees; see
//!    [`toyvm_optimizer::superblock`]), never through a block for which
//!    [`HostGraph::stops`] holds, only from blocks
//!    [`HostGraph::enterable`] allows, up to `max_instrs` of
//!    [`HostGraph::size`]. A value is specialized where it has at least
//!    `value_share` of its site's profiled executions; a call site is
//!    monomorphic where one callee has `call_share` of its calls, else
//!    polymorphic with every callee's share.
//! 6. **Exits.** A host that compiles a trace says so
//!    ([`Feedback::installed`]) and reports, while it runs, how often
//!    control passed through its head and the exits taken by target block
//!    ([`Feedback::exits`]). At each
//!    interval end the component reviews it: **drop** after
//!    `idle_intervals` intervals without an entry (its phase is over),
//!    **recompile** when at least `min_entries` entries ran and one exit
//!    to a block of the tree itself (a branch inside it changed
//!    direction) took at least `hot_exit_share` of them.
//!    A reviewed-out trace is forgotten: the host calls `installed` again
//!    for its replacement.
//!
//! Where this differs from toyvm's own JIT: the graph's arc weights are the
//! profile's alone (toyvm also recovers unprofiled arcs by flow
//! conservation, which needs its instruction set), and there is no credit
//! budget (the host decides what it can afford to compile).

use std::collections::{BTreeMap, HashMap};

use toyvm_optimizer::Profile;
use toyvm_optimizer::specialize::{CallCandidate, CallSite, Specializations, SpecializeConfig};
use toyvm_optimizer::superblock::{SuperblockConfig, TreeGraph, grow_trees};

use toyvm_profiler::{Candidate, IntervalDriver, Kind, Tuple};
use toyvm_vm::Pc;

pub(crate) mod review;

use review::ReviewRule;

use crate::runtime::JitOptions;

/// A function and a block or instruction site in it (contract item 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    /// The host's function id.
    pub func: u32,
    /// The host's block or instruction id within that function.
    pub at: u32,
}

impl Loc {
    /// Site `at` of function `func`.
    pub const fn new(func: u32, at: u32) -> Self {
        Loc { func, at }
    }

    fn pack(self) -> u64 {
        Pc::new(self.func, self.at).0
    }

    fn unpack(v: u64) -> Self {
        let pc = Pc(v);
        Loc::new(pc.func(), pc.offset())
    }
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "f{}:{}", self.func, self.at)
    }
}

/// The host's control-flow graph (contract item 4).
pub trait HostGraph {
    /// How many basic blocks function `func` has.
    fn blocks(&self, func: u32) -> u32;
    /// The static successors of a block.
    fn successors(&self, func: u32, block: u32) -> Vec<u32>;
    /// Its size in instructions (what `max_instrs` caps). Default 1.
    fn size(&self, _func: u32, _block: u32) -> usize {
        1
    }
    /// Whether compiled code cannot go on past this block (it holds
    /// something only the interpreter does). Default: never.
    fn stops(&self, _func: u32, _block: u32) -> bool {
        false
    }
    /// Whether compiled code may be entered at this block. Default: any.
    fn enterable(&self, _func: u32, _block: u32) -> bool {
        true
    }
}

/// Thresholds; the defaults are toyvm's own JIT's.
#[derive(Clone, Debug)]
pub struct FeedbackConfig {
    /// How traces grow (contract item 5): the likelihood a successor must
    /// have to extend a trace, tree arms, and the size cap.
    pub superblock: SuperblockConfig,
    /// When a value or a call site is worth specializing (contract item 5:
    /// `value_share`, `call_share`).
    pub specialize: SpecializeConfig,
    /// Intervals without an entry before a trace is dropped.
    pub idle_intervals: u32,
    /// Share of a trace's entries one exit must take to call for a
    /// recompile.
    pub hot_exit_share: f64,
    /// Entries in an interval before exits are judged.
    pub min_entries: u64,
}

impl Default for FeedbackConfig {
    fn default() -> Self {
        let jit = JitOptions::default();
        FeedbackConfig {
            superblock: jit.plan.superblock.clone(),
            specialize: jit.plan.specialize.clone(),
            idle_intervals: jit.idle_intervals,
            hot_exit_share: jit.hot_exit_share,
            min_entries: jit.min_entries,
        }
    }
}

impl FeedbackConfig {
    /// The review rule with these thresholds: a host's traces have no
    /// guards the component knows of, and no work estimate.
    fn rule(&self) -> ReviewRule {
        ReviewRule {
            idle_intervals: self.idle_intervals,
            min_entries: self.min_entries,
            hot_exit_share: self.hot_exit_share,
            guard_failure_share: None,
            least_work: None,
        }
    }
}

/// A trace tree to compile (contract item 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceDecision {
    /// Its first block: where compiled code is entered.
    pub head: Loc,
    /// The trace's blocks in order (the first is `head.at`).
    pub blocks: Vec<u32>,
    /// Arms grown off the trace, each a path of blocks that gets back into
    /// the tree.
    pub arms: Vec<Vec<u32>>,
    /// Every profiled arc out of a block of the tree: `(from, to, count)`.
    pub arcs: Vec<(u32, u32, u64)>,
    /// The head's weight in the interval.
    pub weight: u64,
    /// Whether an arc of the tree goes back to its head (a loop).
    pub loops: bool,
}

/// A value worth a guard.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueDecision {
    /// The site whose value the host reported.
    pub site: Loc,
    /// The dominant value there.
    pub value: i64,
    /// Its share of the site's profiled executions.
    pub share: f64,
}

/// What a call site's profile says.
#[derive(Clone, Debug, PartialEq)]
pub enum CallDecision {
    /// One callee dominates: guard on it and call it directly.
    Monomorphic {
        /// The call site.
        site: Loc,
        /// The dominant callee's function id.
        callee: u32,
        /// Its share of the site's profiled calls.
        share: f64,
    },
    /// No callee dominates: the callees with their shares, heaviest first.
    Polymorphic {
        /// The call site.
        site: Loc,
        /// Each callee's function id and share of the site's calls.
        callees: Vec<(u32, f64)>,
    },
}

/// What to do with a compiled trace (contract item 6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Review {
    /// Throw the trace away: it ran no entry for `idle_intervals`.
    Drop {
        /// The trace's head.
        head: Loc,
        /// Why, in words (for logs).
        reason: String,
    },
    /// Compile the trace again from the current profile: an exit to a
    /// block of the tree itself took `hot_exit_share` of its entries.
    Recompile {
        /// The trace's head.
        head: Loc,
        /// Why, in words (for logs).
        reason: String,
    },
}

/// One interval's decisions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decisions {
    /// 0-based interval number.
    pub interval: u64,
    /// Heaviest head first.
    pub traces: Vec<TraceDecision>,
    /// Values worth a guard, by site.
    pub values: Vec<ValueDecision>,
    /// What each profiled call site's callees say.
    pub calls: Vec<CallDecision>,
    /// Installed traces to drop or recompile (contract item 6).
    pub reviews: Vec<Review>,
}

#[derive(Debug, Default)]
struct Watch {
    /// The tree's blocks.
    blocks: Vec<u32>,
    entries: u64,
    exits: BTreeMap<u32, u64>,
    idle: u32,
}

/// The feedback component: a profiler model, its interval driver, and the
/// decisions drawn from each interval's candidates.
#[derive(Debug)]
pub struct Feedback {
    driver: IntervalDriver,
    cfg: FeedbackConfig,
    batch: Vec<Tuple>,
    installed: BTreeMap<Loc, Watch>,
}

impl Feedback {
    /// A component profiling with `spec` (e.g. `multihash:interval=10000`).
    pub fn new(spec: &str) -> crate::Result<Self> {
        Self::with_config(spec, FeedbackConfig::default())
    }

    /// ... with other thresholds.
    pub fn with_config(spec: &str, cfg: FeedbackConfig) -> crate::Result<Self> {
        let spec = toyvm_profiler::parse_spec(spec)?;
        Ok(Feedback {
            driver: IntervalDriver::new(&spec),
            cfg,
            batch: Vec::with_capacity(1),
            installed: BTreeMap::new(),
        })
    }

    /// Control went from block `from` to block `to`.
    pub fn edge(&mut self, from: Loc, to: Loc, g: &dyn HostGraph, out: &mut Vec<Decisions>) {
        self.observe(Kind::Edge, from.pack(), to.pack(), g, out);
    }

    /// The instruction at `site` produced `value`.
    pub fn value(&mut self, site: Loc, value: i64, g: &dyn HostGraph, out: &mut Vec<Decisions>) {
        self.observe(Kind::Value, site.pack(), value as u64, g, out);
    }

    /// The indirect call at `site` called `callee`.
    pub fn call(&mut self, site: Loc, callee: u32, g: &dyn HostGraph, out: &mut Vec<Decisions>) {
        self.observe(Kind::Call, site.pack(), u64::from(callee), g, out);
    }

    fn observe(&mut self, kind: Kind, a: u64, b: u64, g: &dyn HostGraph, out: &mut Vec<Decisions>) {
        self.batch.clear();
        self.batch.push(Tuple { kind, a, b });
        let Feedback {
            driver,
            cfg,
            batch,
            installed,
        } = self;
        driver.observe_batch(batch, |end| {
            let mut d = decide(end.index, end.candidates, g, cfg);
            d.reviews = review(installed, cfg);
            out.push(d);
        });
    }

    /// The host compiled `trace` (contract item 6).
    pub fn installed(&mut self, trace: &TraceDecision) {
        let mut blocks: Vec<u32> = trace
            .blocks
            .iter()
            .chain(trace.arms.iter().flatten())
            .copied()
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        self.installed.insert(
            trace.head,
            Watch {
                blocks,
                ..Watch::default()
            },
        );
    }

    /// The compiled trace at `head` ran through its head `entries` times
    /// (entries from the interpreter and loop iterations alike: a tree
    /// that runs a whole interval without leaving must not look idle) and
    /// left through `exits` (target block, times) since the last report.
    pub fn exits(&mut self, head: Loc, entries: u64, exits: &[(u32, u64)]) {
        if let Some(w) = self.installed.get_mut(&head) {
            w.entries += entries;
            for &(to, n) in exits {
                *w.exits.entry(to).or_insert(0) += n;
            }
        }
    }
}

/// Reviews every watched trace at an interval end with toyvm's own review
/// rule (the `review` module: no guards to judge, no work estimated);
/// removes those reviewed out.
fn review(installed: &mut BTreeMap<Loc, Watch>, cfg: &FeedbackConfig) -> Vec<Review> {
    let rule = cfg.rule();
    let mut out = Vec::new();
    installed.retain(|&head, w| {
        let entries = std::mem::take(&mut w.entries);
        let exits = std::mem::take(&mut w.exits);
        // Only an exit back into the tree's own blocks says the tree no
        // longer fits (a branch inside it changed direction): a loop leaves
        // through its exit once per entry whatever its shape. Exits come in
        // block order: the lowest block wins a tie.
        let hot_exit = review::hottest(
            exits
                .iter()
                .filter(|&(to, _)| w.blocks.binary_search(to).is_ok())
                .map(|(&to, &n)| (to, n)),
        );
        let counted = review::Counted {
            entries,
            trips: entries,
            hot_exit,
            program_ran: true,
            used: true,
            ..review::Counted::default()
        };
        let verdict;
        (w.idle, verdict) = rule.review(w.idle, &counted);
        let reason = || match verdict {
            review::Verdict::Idle { intervals, .. } => format!("idle for {intervals} intervals"),
            review::Verdict::HotExit { at, taken, entries } => {
                format!("exit to block {at} taken on {taken} of {entries} entries")
            }
            other => other.to_string(),
        };
        match verdict.action() {
            review::Action::Keep => return true,
            review::Action::Drop => out.push(Review::Drop {
                head,
                reason: reason(),
            }),
            review::Action::Recompile => out.push(Review::Recompile {
                head,
                reason: reason(),
            }),
        }
        false
    });
    out
}

/// One function's profiled graph as trace selection sees it: only the
/// blocks the profile names (an unprofiled block weighs 0, so trace
/// selection never reaches it), so what it allocates is bounded by the
/// interval's candidates, whatever the host's graph claims.
struct Weighted<'a> {
    func: u32,
    g: &'a dyn HostGraph,
    /// Host block ids, in increasing order (the dense ids' meaning).
    ids: Vec<u32>,
    out: Vec<Vec<(usize, u64)>>,
    weight: Vec<u64>,
}

impl TreeGraph for Weighted<'_> {
    fn blocks(&self) -> usize {
        self.out.len()
    }
    fn weight(&self, b: usize) -> u64 {
        self.weight[b]
    }
    fn out_arcs(&self, b: usize) -> &[(usize, u64)] {
        &self.out[b]
    }
    fn size(&self, b: usize) -> usize {
        self.g.size(self.func, self.ids[b])
    }
    fn stops(&self, b: usize) -> bool {
        self.g.stops(self.func, self.ids[b])
    }
    fn stops_at_once(&self, _b: usize) -> bool {
        false
    }
    fn seedable(&self, b: usize) -> bool {
        self.g.enterable(self.func, self.ids[b])
    }
}

fn weigh<'a>(func: u32, g: &'a dyn HostGraph, edges: &HashMap<(u32, u32), u64>) -> Weighted<'a> {
    let n = g.blocks(func);
    // Blocks the graph does not have are the host's error: ignored.
    let mut ids: Vec<u32> = edges
        .keys()
        .flat_map(|&(a, b)| [a, b])
        .filter(|&b| b < n)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let dense = |b: u32| ids.binary_search(&b).ok();
    let out: Vec<Vec<(usize, u64)>> = ids
        .iter()
        .map(|&b| {
            let mut succ: Vec<(usize, u64)> = g
                .successors(func, b)
                .into_iter()
                .filter_map(|s| Some((dense(s)?, edges.get(&(b, s)).copied().unwrap_or(0))))
                .collect();
            // The first mention of a successor stands (hosts may repeat it).
            let mut seen = std::collections::HashSet::new();
            succ.retain(|&(s, _)| seen.insert(s));
            succ
        })
        .collect();
    let mut flow_in = vec![0u64; ids.len()];
    for arcs in &out {
        for &(s, w) in arcs {
            flow_in[s] = flow_in[s].saturating_add(w);
        }
    }
    let weight = (0..ids.len())
        .map(|b| {
            let flow_out = out[b].iter().fold(0u64, |t, &(_, w)| t.saturating_add(w));
            flow_in[b].max(flow_out)
        })
        .collect();
    Weighted {
        func,
        g,
        ids,
        out,
        weight,
    }
}

fn decide(
    interval: u64,
    candidates: &[Candidate],
    g: &dyn HostGraph,
    cfg: &FeedbackConfig,
) -> Decisions {
    // The optimizer's reading of the candidates, as toyvm's JIT plans
    // from it; edges by function, within one function only.
    let Profile {
        edges: profiled,
        values,
        calls,
        ..
    } = Profile::from_candidates(candidates);
    let mut edges: BTreeMap<u32, HashMap<(u32, u32), u64>> = BTreeMap::new();
    for ((from, to), count) in profiled {
        if from.func() == to.func() {
            *edges
                .entry(from.func())
                .or_default()
                .entry((from.offset(), to.offset()))
                .or_insert(0) += count;
        }
    }
    let mut traces = Vec::new();
    for (func, e) in &edges {
        let w = weigh(*func, g, e);
        let id = |b: usize| w.ids[b];
        for t in grow_trees(&w, &cfg.superblock) {
            let head = t.trace[0];
            let tree: Vec<usize> = t
                .trace
                .iter()
                .chain(t.arms.iter().flatten())
                .copied()
                .collect();
            let arcs: Vec<(u32, u32, u64)> = tree
                .iter()
                .flat_map(|&b| w.out[b].iter().map(move |&(s, n)| (b, s, n)))
                .filter(|&(_, _, n)| n > 0)
                .map(|(b, s, n)| (id(b), id(s), n))
                .collect();
            traces.push(TraceDecision {
                head: Loc::new(*func, id(head)),
                loops: arcs.iter().any(|&(_, to, _)| to == id(head)),
                blocks: t.trace.iter().map(|&b| id(b)).collect(),
                arms: t
                    .arms
                    .iter()
                    .map(|a| a.iter().map(|&b| id(b)).collect())
                    .collect(),
                arcs,
                weight: w.weight[head],
            });
        }
    }
    traces.sort_by_key(|t| (std::cmp::Reverse(t.weight), t.head));
    let spec = Specializations::decide(&values, &calls, &HashMap::new(), &cfg.specialize);
    let value_share = |pc: Pc, value: i64| {
        let (mine, all) = values
            .iter()
            .filter(|c| c.pc == pc)
            .fold((0, 0), |(m, a), c| {
                (m + if c.value == value { c.count } else { 0 }, a + c.count)
            });
        if all == 0 {
            0.0
        } else {
            mine as f64 / all as f64
        }
    };
    let values_out = spec
        .values
        .iter()
        .map(|(&pc, &value)| ValueDecision {
            site: Loc::unpack(pc.0),
            value,
            share: value_share(pc, value),
        })
        .collect();
    let calls_out = spec
        .calls
        .iter()
        .map(|(&site, decision)| {
            let sites: Vec<&CallCandidate> = calls.iter().filter(|c| c.site == site).collect();
            let all: u64 = sites.iter().map(|c| c.count).sum();
            let of = |callee: u32| {
                let n: u64 = sites
                    .iter()
                    .filter(|c| c.callee == callee)
                    .map(|c| c.count)
                    .sum();
                if all == 0 { 0.0 } else { n as f64 / all as f64 }
            };
            match decision {
                CallSite::Monomorphic { callee } => CallDecision::Monomorphic {
                    site: Loc::unpack(site.0),
                    callee: *callee,
                    share: of(*callee),
                },
                CallSite::Megamorphic { targets } => CallDecision::Polymorphic {
                    site: Loc::unpack(site.0),
                    callees: targets.iter().map(|&(c, _)| (c, of(c))).collect(),
                },
            }
        })
        .collect();
    Decisions {
        interval,
        traces,
        values: values_out,
        calls: calls_out,
        reviews: Vec::new(),
    }
}

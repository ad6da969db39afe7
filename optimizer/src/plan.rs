//! From one interval's candidates to the regions worth compiling: the entry
//! point the runtime calls at each interval end.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use toyvm_vm::isa::Instr;
use toyvm_vm::{Candidate, Kind, Pc, Program};

use crate::cfg::{Cfg, EdgeCounts, WeightedCfg};
use crate::native::{Native, native_functions};
use crate::region::{Region, Step};
use crate::specialize::{
    self, CallCandidate, CallSite, Specializations, SpecializeConfig, ValueCandidate,
};
use crate::superblock::{NativeCall, SuperblockConfig, form_superblocks_with};

/// What planning needs of a program that never changes while it runs:
/// each function's control-flow graph and which functions run natively
/// ([`native_functions`]). A runtime that plans at every interval end
/// builds it once; rebuilding the graphs of every candidate function at
/// every plan cost more than compiled code saved on programs with dozens
/// of functions.
#[derive(Clone, Debug)]
pub struct Analysis {
    cfgs: Vec<Arc<Cfg>>,
    natives: Vec<Native>,
    /// Per function: whether it has a `ret` (a whole-function region
    /// returns through one).
    returns: Vec<bool>,
    /// Per function: its direct call sites in the program, and whether it
    /// calls itself.
    sites: Vec<(u32, bool)>,
}

impl Analysis {
    /// Analyses every function of `program`.
    pub fn new(program: &Program) -> Analysis {
        Analysis {
            cfgs: program
                .functions
                .iter()
                .enumerate()
                .map(|(i, f)| Arc::new(Cfg::new(i as u32, f)))
                .collect(),
            natives: native_functions(program),
            returns: program
                .functions
                .iter()
                .map(|f| f.code.iter().any(|i| matches!(i, Instr::Ret { .. })))
                .collect(),
            sites: {
                let mut sites = vec![(0u32, false); program.functions.len()];
                for (g, f) in program.functions.iter().enumerate() {
                    for i in &f.code {
                        if let Instr::Call { f: callee, .. } = *i
                            && let Some(s) = sites.get_mut(callee as usize)
                        {
                            s.0 += 1;
                            s.1 |= callee as usize == g;
                        }
                    }
                }
                sites
            },
        }
    }

    /// Whether function `func` is likely to be called again: it calls
    /// itself, or it has no direct call site (the host or a `calli` calls
    /// it) or several. A function called from one site only (a C
    /// program's `main`, called once by its start-up code) is not.
    pub fn called_again(&self, func: u32) -> bool {
        self.sites
            .get(func as usize)
            .is_some_and(|&(n, recursive)| recursive || n != 1)
    }

    /// The CFG of function `func` (shared, not copied).
    pub fn cfg(&self, func: u32) -> Option<&Arc<Cfg>> {
        self.cfgs.get(func as usize)
    }

    /// Whether function `func` runs natively whole without ever handing
    /// its call back: closed, pure or open (see [`Native`]), with a `ret`
    /// to return through ([`crate::CodeCache::compile_function`]); false
    /// for a bailing one and for one that does not exist.
    pub fn runs_whole(&self, func: u32) -> bool {
        let f = func as usize;
        self.returns.get(f) == Some(&true)
            && self
                .natives
                .get(f)
                .is_some_and(|&n| matches!(n, Native::Closed | Native::Pure | Native::Open))
    }

    /// Whether function `func` runs natively, closed, bailing or open
    /// (false for one that does not exist).
    pub fn is_native(&self, func: u32) -> bool {
        self.natives
            .get(func as usize)
            .is_some_and(|n| n.callable())
    }
}

/// A profile as the optimizer reads it.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Edge counts: `(branch pc, next pc) -> count`.
    pub edges: EdgeCounts,
    /// Value candidates (loaded values and arguments with their counts),
    /// for value specialization.
    pub values: Vec<ValueCandidate>,
    /// Call candidates (call sites with a callee and its count), for
    /// call-target specialization.
    pub calls: Vec<CallCandidate>,
    /// Executions per pc where the runtime knows them (loads, argument
    /// pseudo-pcs, call sites). Loads without one get their block's weight.
    pub totals: HashMap<Pc, u64>,
}

impl Profile {
    /// Groups a model's candidates (tuple and estimated count) by kind:
    /// the one reading of candidates that planning, toyvm's JIT and its
    /// feedback component share. Values and calls keep the candidates'
    /// order; a tuple given twice is two candidates (sum them first).
    pub fn from_candidates<'a>(candidates: impl IntoIterator<Item = &'a Candidate>) -> Profile {
        let mut p = Profile::default();
        for &Candidate { tuple: t, count } in candidates {
            match t.kind {
                Kind::Edge => *p.edges.entry((Pc(t.a), Pc(t.b))).or_insert(0) += count,
                Kind::Value => p.values.push(ValueCandidate {
                    pc: Pc(t.a),
                    value: t.b as i64,
                    count,
                }),
                Kind::Call => p.calls.push(CallCandidate {
                    site: Pc(t.a),
                    callee: t.b as u32,
                    count,
                }),
            }
        }
        p
    }
}

/// Knobs of region planning.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanConfig {
    /// How traces and trace trees are formed.
    pub superblock: SuperblockConfig,
    /// When a value or a call target is specialized.
    pub specialize: SpecializeConfig,
    /// Regions with fewer bytecode instructions are not worth an entry.
    pub min_instrs: usize,
    /// Compile calls to closed and bailing functions (direct, or `calli` sites found
    /// monomorphic) as native calls that traces continue past. Regions
    /// with native calls need [`crate::CodeCache::compile_natives`] before
    /// they compile, and [`crate::CompiledRegion::run_with`] to run.
    pub native_calls: bool,
    /// Most targets of a polymorphic `calli` site compiled as a native
    /// dispatch (its most frequent closed targets); 0 leaves polymorphic
    /// sites to the interpreter.
    pub max_dispatch: usize,
    /// Compile every other call as a call into the interpreter that
    /// traces continue past ([`Step::Interpreted`]), instead of ending the
    /// region there with an exit.
    pub interpreter_calls: bool,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            superblock: SuperblockConfig::default(),
            specialize: SpecializeConfig::default(),
            min_instrs: 2,
            native_calls: true,
            max_dispatch: 8,
            interpreter_calls: true,
        }
    }
}

/// The weight of a region's head block.
pub fn region_weight(r: &Region) -> u64 {
    r.steps
        .iter()
        .find_map(|s| match s {
            Step::Block { weight, .. } => Some(*weight),
            _ => None,
        })
        .unwrap_or(0)
}

/// The specialized superblocks of every function the profile's edges
/// touch, heaviest head first. Each function's regions have distinct heads.
pub fn plan_regions(program: &Program, profile: &Profile, cfg: &PlanConfig) -> Vec<Region> {
    plan_regions_at(program, &Analysis::new(program), profile, cfg, &|_, _| true)
}

/// [`plan_regions`] with regions headed only where `head(func, offset)`
/// allows (where the runtime can enter compiled code): a heavier block
/// elsewhere does not seed a region of its own, so a tree can grow from a
/// head before it through that block. `analysis` is `program`'s.
pub fn plan_regions_at(
    program: &Program,
    analysis: &Analysis,
    profile: &Profile,
    cfg: &PlanConfig,
    head: &dyn Fn(u32, u32) -> bool,
) -> Vec<Region> {
    let funcs: BTreeSet<u32> = profile
        .edges
        .keys()
        .map(|(from, _)| from.func())
        .filter(|&f| (f as usize) < program.functions.len())
        .collect();
    let mut totals = profile.totals.clone();
    let mut regions = Vec::new();
    let mut wcfgs = Vec::new();
    for f in funcs {
        let graph = analysis.cfg(f).expect("function index checked");
        let w = WeightedCfg::from_cfg(Arc::clone(graph), &profile.edges);
        let code = &program.functions[f as usize].code;
        for c in &profile.values {
            let at = c.pc.offset() as usize;
            if c.pc.func() == f
                && !c.pc.is_arg()
                && code.get(at).and_then(crate::region::emits_value).is_some()
                && let Some(b) = w.cfg().block_at(at as u32)
            {
                totals.entry(c.pc).or_insert(w.weight(b));
            }
        }
        // A call site's executions are its block's too: where only some of
        // a site's callees clear the profile's threshold, their sum alone
        // would make the heaviest look dominant (a megamorphic dispatch
        // guarded as monomorphic, its guard failing on most trips).
        for c in &profile.calls {
            let at = c.site.offset() as usize;
            if c.site.func() == f
                && matches!(code.get(at), Some(Instr::Call { .. } | Instr::Calli { .. }))
                && let Some(b) = w.cfg().block_at(at as u32)
            {
                totals.entry(c.site).or_insert(w.weight(b));
            }
        }
        wcfgs.push((f, w));
    }
    let spec = Specializations::decide(&profile.values, &profile.calls, &totals, &cfg.specialize);
    let is_native = |g: u32| cfg.native_calls && analysis.is_native(g);
    for (f, w) in &wcfgs {
        let func = &program.functions[*f as usize];
        // The arity must match too: otherwise the interpreter traps.
        let callable = |g: u32, n: u8| is_native(g) && program.functions[g as usize].params == n;
        let native_call = |pc: u32, i: &Instr| match *i {
            Instr::Call { f: callee, .. } if is_native(callee) => Some(NativeCall::Callee(callee)),
            Instr::Calli { n, .. } => match spec.calls.get(&Pc::new(*f, pc)) {
                Some(&CallSite::Monomorphic { callee }) if callable(callee, n) => {
                    Some(NativeCall::Callee(callee))
                }
                Some(CallSite::Megamorphic { targets }) => {
                    let callees: Vec<u32> = targets
                        .iter()
                        .map(|&(g, _)| g)
                        .filter(|&g| callable(g, n))
                        .take(cfg.max_dispatch)
                        .collect();
                    (!callees.is_empty()).then_some(NativeCall::Dispatch(callees))
                }
                _ => None,
            },
            _ => None,
        };
        // Every other call, the interpreter makes for compiled code.
        let native = |pc: u32, i: &Instr| {
            native_call(pc, i).or_else(|| {
                let call = matches!(i, Instr::Call { .. } | Instr::Calli { .. });
                (call && cfg.interpreter_calls).then_some(NativeCall::Interpreter)
            })
        };
        let seedable = |offset: u32| head(*f, offset);
        for mut r in form_superblocks_with(w, func, &cfg.superblock, &native, &seedable) {
            if r.instr_count() >= cfg.min_instrs {
                specialize::apply(&mut r, &spec);
                regions.push(r);
            }
        }
    }
    regions.sort_by_key(|r| std::cmp::Reverse(region_weight(r)));
    regions
}

/// The call targets function `func`'s native code is specialized for
/// when it runs whole ([`crate::CodeCache::compile_function_for`]): each
/// of its `calli` sites where one callee takes at least `cfg.call_share` of
/// the calls the profile counts there, by offset; and where every such
/// site of an arity names the same callee, the sites of that arity the
/// profile does not count too (a function that calls one callback from
/// several sites, as a sort calls its comparator from its partition loops
/// and from its insertion sort, whose calls are each under the model's
/// threshold). A guess either way (a site's other callees may be under the
/// threshold and so uncounted), which costs a compare where it misses.
pub fn call_targets(
    program: &Program,
    profile: &Profile,
    cfg: &SpecializeConfig,
    func: u32,
) -> BTreeMap<u32, u32> {
    let Some(f) = program.functions.get(func as usize) else {
        return BTreeMap::new();
    };
    let calls: Vec<CallCandidate> = profile
        .calls
        .iter()
        .filter(|c| {
            c.site.func() == func
                && matches!(
                    f.code.get(c.site.offset() as usize),
                    Some(Instr::Calli { .. })
                )
        })
        .copied()
        .collect();
    if calls.is_empty() {
        return BTreeMap::new();
    }
    let spec = Specializations::decide(&[], &calls, &profile.totals, cfg);
    let mut targets: BTreeMap<u32, u32> = spec
        .calls
        .iter()
        .filter_map(|(site, decision)| match *decision {
            CallSite::Monomorphic { callee } => Some((site.offset(), callee)),
            CallSite::Megamorphic { .. } => None,
        })
        .collect();
    // Per arity: the one callee every decided site names, if they agree.
    let mut by_arity: HashMap<u8, Option<u32>> = HashMap::new();
    for (&pc, &g) in &targets {
        if let Some(&Instr::Calli { n, .. }) = f.code.get(pc as usize) {
            let one = by_arity.entry(n).or_insert(Some(g));
            if *one != Some(g) {
                *one = None;
            }
        }
    }
    for (pc, i) in f.code.iter().enumerate() {
        let site = Pc::new(func, pc as u32);
        if let &Instr::Calli { n, .. } = i
            && !spec.calls.contains_key(&site)
            && let Some(&Some(g)) = by_arity.get(&n)
        {
            targets.insert(pc as u32, g);
        }
    }
    targets
}

/// Closed and bailing functions worth compiling whole ([`crate::CodeCache::compile_function`]):
/// those the profile's Call candidates show called at least `min_calls`
/// times (all call sites summed), most called first. For a recursive
/// function like `fib`, whose time is all in calls, this is the only way
/// into compiled code: its blocks end in calls and returns, and its
/// superblocks' heads are not where the interpreter looks for regions.
pub fn hot_functions(analysis: &Analysis, profile: &Profile, min_calls: u64) -> Vec<(u32, u64)> {
    let mut calls: HashMap<u32, u64> = HashMap::new();
    for c in &profile.calls {
        if analysis.is_native(c.callee) {
            *calls.entry(c.callee).or_insert(0) += c.count;
        }
    }
    let mut hot: Vec<(u32, u64)> = calls.into_iter().filter(|&(_, n)| n >= min_calls).collect();
    hot.sort_by_key(|&(f, n)| (std::cmp::Reverse(n), f));
    hot
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tuples;
    use toyvm_vm::Tuple;
    use toyvm_vm::asm::assemble;

    #[test]
    fn a_dominant_loaded_divisor_becomes_a_guard_in_the_hot_loop() {
        let p = assemble(
            "
            .memory 64
            .func main(n)
                .reg i, x, d, q, t
                li i, 0
                li x, 1000
                li q, 0
                li t, 8
                st i, 5, t      # word 5 = 8, word 4 = 0
            top:
                andi t, i, 15
                lti t, t, 15
                addi t, t, 4    # word 5, or word 4 when i % 16 == 15
                ld d, t, 0      # 8: d = 8 in 15 of 16 iterations
                beqi d, 0, skip
                div t, x, d
                add q, q, t
            skip:
                addi i, i, 1
                blt i, n, top
                ret q
            .end",
        )
        .unwrap();
        let mut counts: HashMap<Tuple, u64> = HashMap::new();
        for t in tuples(&p, &[160], &[]) {
            *counts.entry(t).or_insert(0) += 1;
        }
        let cands: Vec<Candidate> = counts
            .into_iter()
            .map(|(tuple, count)| Candidate { tuple, count })
            .collect();
        let profile = Profile::from_candidates(&cands);
        let regions = plan_regions(&p, &profile, &PlanConfig::default());
        assert_eq!(
            regions[0].to_string(),
            "\
region f0:5
  block 5 weight=160
    5: andi r5, r1, 15
    6: lti r5, r5, 15
    7: addi r5, r5, 4
    8: ld r3, r5, 0
    guard r3 == 8 | fail 9
    9: beqi r3, 0, L12 -> block 12 | next
  block 10 weight=150
    10: div r5, r2, r3
    11: add r4, r4, r5
  block 12 weight=160 dup
    12: addi r1, r1, 1
    13: blt r1, r0, L5 -> head | exit 14
"
        );
    }

    #[test]
    fn hot_closed_functions_come_from_call_counts() {
        let src =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../programs/fib.tasm"))
                .unwrap();
        let p = assemble(&src).unwrap();
        let mut counts: HashMap<Tuple, u64> = HashMap::new();
        for t in tuples(&p, &[15], &[]) {
            *counts.entry(t).or_insert(0) += 1;
        }
        let cands: Vec<Candidate> = counts
            .into_iter()
            .map(|(tuple, count)| Candidate { tuple, count })
            .collect();
        let profile = Profile::from_candidates(&cands);
        // fib(15) makes 1973 calls of fib, main's included.
        assert_eq!(
            hot_functions(&Analysis::new(&p), &profile, 100),
            [(0, 1973)]
        );
        assert_eq!(hot_functions(&Analysis::new(&p), &profile, 2000), []);
    }

    #[test]
    fn call_targets_are_the_dominant_callees_and_where_they_agree_the_uncounted_sites_too() {
        // `sort`'s `calli`s at offsets 1, 2 and 3 (arity 1), 4 (arity 2,
        // on `x` and `y`).
        let p = assemble(
            ".func one(x)\n ret x\n.end\n.func two(x)\n ret x\n.end\n\
             .func pair(x, y)\n ret x\n.end\n\
             .func sort(f, g, x)\n .reg y\n li y, 0\n calli x, f, x, 1\n calli x, f, x, 1\n calli x, f, x, 1\n\
             calli x, g, x, 2\n ret x\n.end\n.entry sort",
        )
        .unwrap();
        let call = |pc: u32, callee: u64, count: u64| Candidate {
            tuple: Tuple::call(Pc::new(3, pc).0, callee),
            count,
        };
        let cfg = SpecializeConfig::default();
        let targets = |cands: &[Candidate]| {
            call_targets(&p, &Profile::from_candidates(cands), &cfg, 3)
                .into_iter()
                .collect::<Vec<_>>()
        };
        // Site 1 counted, one callee: it, and the uncounted 2 and 3 of its
        // arity; not 4 (another arity, uncounted).
        assert_eq!(targets(&[call(1, 0, 500)]), [(1, 0), (2, 0), (3, 0)]);
        // Sites that disagree: each its own, the uncounted one none.
        assert_eq!(
            targets(&[call(1, 0, 500), call(2, 1, 500)]),
            [(1, 0), (2, 1)]
        );
        // A site split between two callees: none there, and none spread.
        assert_eq!(targets(&[call(1, 0, 300), call(1, 1, 300)]), []);
        assert_eq!(targets(&[call(4, 2, 40)]), [(4, 2)]);
        // Not a `calli`: no target.
        assert_eq!(targets(&[call(0, 0, 40)]), []);
        assert_eq!(targets(&[]), []);
    }
}

//! The review at each interval end: what each installed region counted
//! since the last one, judged by the review rule toyvm shares with its
//! feedback component ([`crate::feedback::review`]: the rule, its order
//! and its thresholds are documented there), with the JIT's thresholds
//! ([`rule`]).
//!
//! What the JIT counts for the rule: entries are entries from the
//! interpreter; trips add the loop trips the region's code counted at its
//! head; the exits back in are its side exits that resume inside its own
//! code; the work is the instructions of compiled code its entries ran,
//! estimated from where its exits were taken ([`exit_reach`]) and how often
//! it looped. A whole native function (see
//! `toyvm_optimizer::CodeCache::compile_function`) that a live region
//! calls natively is kept alive, however rarely the interpreter enters it:
//! that region's calls bypass it, and the interpreter's calls (a
//! dispatch's miss, a bail) would find it gone.
//!
//! Going idle after real use is no fault of the region: it may come back
//! at once, the first few times. The others back off exponentially and
//! count toward their own limit (see the policy's state machine).

use std::collections::BTreeMap;
use std::sync::Arc;

use toyvm_optimizer::{CompiledRegion, ExitKind, ExitReport, Region, Step};
use toyvm_profiler::Candidate;

use crate::feedback::review::{Counted, ReviewRule, hottest};
use crate::runtime::JitOptions;

pub(crate) use crate::feedback::review::Verdict;

/// How far into a region each exit site is: the instructions of the
/// region's own code an entry runs before leaving there, estimated from
/// the region's layout (`covers`, its instructions' offsets in layout
/// order); for a whole native function, its `ret` exit ran the function
/// (counted as `WHOLE_CALL`) and its bail ran nothing that stays.
pub(crate) fn exit_reach(code: &CompiledRegion, shape: &Shape) -> Vec<u32> {
    let (covers, whole) = (&shape.covers, shape.whole);
    let at = |pc: u32| covers.iter().position(|&c| c == pc).map(|i| i as u32);
    // An instruction a path ends by handing over (its `ret`, a call
    // without native code): the instructions laid out before it.
    let handed = |pc: u32| {
        shape
            .handed
            .iter()
            .find(|&&(h, _)| h == pc)
            .map(|&(_, before)| before)
    };
    let all = covers.len() as u32;
    code.exits()
        .iter()
        .map(|site| {
            if whole {
                // Sites: the `ret` (the native body ran), a trap, a bail.
                return match site.kind {
                    ExitKind::Interpret if site.resume != 0 => WHOLE_CALL,
                    _ => 0,
                };
            }
            match (site.kind, site.report) {
                (ExitKind::Side, Some(ExitReport::Edge { branch })) => {
                    at(branch).map_or(all, |i| i + 1)
                }
                (ExitKind::Side, _) => all,
                (ExitKind::Trap, _) => 0,
                (ExitKind::Interpret | ExitKind::Guard, _) => at(site.resume)
                    .or_else(|| handed(site.resume))
                    .unwrap_or(all / 2),
            }
        })
        .collect()
}

/// The offsets of the instructions `region` compiles, in layout order,
/// and of those its paths end by handing to the interpreter, each with
/// how many compiled ones are laid out before it (see [`Shape`]).
pub(crate) fn laid_out(region: &Region) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut covers = Vec::new();
    let mut handed = Vec::new();
    for s in &region.steps {
        match s {
            Step::Op { pc, .. }
            | Step::Branch { pc, .. }
            | Step::Switch { pc, .. }
            | Step::Call { pc, .. }
            | Step::Dispatch { pc, .. }
            | Step::Interpreted { pc, .. } => covers.push(*pc),
            Step::Interpret { pc, .. } => handed.push((*pc, covers.len() as u32)),
            _ => {}
        }
    }
    (covers, handed)
}

/// What one call of a whole native function counts as in the work
/// estimate: a call that returned ran its body, at least one instruction
/// and nearly always more than a region needs to pay for its entry.
const WHOLE_CALL: u32 = 1_000;

/// What the review and the growing of trees need to know of a region
/// beyond its code.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Offsets of the instructions the region compiles (its own code), in
    /// layout order.
    pub(crate) covers: Vec<u32>,
    /// The instructions its paths end by handing to the interpreter (a
    /// `ret`, a call the interpreter makes), which it does not compile:
    /// each one's offset and how many of `covers` are laid out before it.
    /// An entry that leaves there ran its path to the end.
    pub(crate) handed: Vec<(u32, u32)>,
    /// Offsets of its native dispatches: an `Interpret` exit there is a
    /// call target the dispatch lacks (or a callee that bailed).
    pub(crate) dispatches: Vec<u32>,
    /// The callees of its native calls and dispatches, counted: a tree
    /// planned again that dispatches among more is worth recompiling.
    pub(crate) callees: usize,
    /// The functions it calls natively (see the module docs).
    pub(crate) calls: Vec<u32>,
    /// A whole native function rather than a planned region.
    pub(crate) whole: bool,
    /// Whether the region jumps back to its own head.
    pub(crate) loops: bool,
    /// The candidates it was planned from, shared with every region of
    /// the same plan (empty for a whole native function): a later
    /// interval's are added to them to see whether the tree would grow
    /// (see `grow`).
    pub(crate) planned_from: Arc<[Candidate]>,
    /// The head's weight in `planned_from` (0 for a whole function): the
    /// trips those candidates' counts stand for.
    pub(crate) head_weight: u64,
    /// Its exit sites where control leaves the tree (side exits, guards,
    /// interpreted instructions), as planned.
    pub(crate) exit_sites: usize,
}

/// An installed region: its code, its shape, and what it counted.
pub(crate) struct Installed {
    pub(crate) code: Arc<CompiledRegion>,
    pub(crate) shape: Shape,
    /// Per exit site: the instructions of compiled code an entry runs
    /// before leaving there (estimated: see [`exit_reach`]).
    reach: Vec<u32>,
    /// Its activations on the machine stack (compiled code that called
    /// the interpreter, which entered it again): while any runs, its
    /// counters are theirs (see `enter`) and the review leaves it alone.
    pub(crate) busy: u32,
    /// Per exit site, times taken, and last the arrivals at its head
    /// (entries and loop trips), counted by its code.
    pub(crate) counters: Vec<u64>,
    /// Entries from the interpreter.
    pub(crate) entries: u64,
    /// What the last review saw.
    watch: Watch,
    /// The value guards the last review found too costly to keep in a
    /// region it otherwise kept (see [`COSTLY_GUARD`]): the offset of each
    /// guarded load (or argument pseudo-offset), and its failures in the
    /// interval (summed over the tree's sites that guard it).
    pub(crate) costly_guards: Vec<(u32, u64)>,
}

/// A loop whose value guards fail, together, on at least one trip in this
/// many through its head is planned again without guarding the values that
/// failed, for the rest of the run. A failing guard leaves compiled code:
/// the exit, the few instructions interpreted back to the head and the
/// entry cost about 20 trips of a tight loop (bytecode.wasm's dispatch
/// loop: 128,621 failures, under 0.5% of its 25.8M trips, made the run 7%
/// slower than compiling it with no value guard at all), so at one trip in
/// 200 the failures cost about a tenth of the loop's time, more than most
/// constants save; a constant that saves more keeps its guards below that
/// (valuelocality.tasm's divisor, 8 on 99.9% of its trips, turns a
/// division into a shift: its guards fail on 0.3% of the trips and stay).
/// The share rule of the review (`guard_failure_share`, a tenth of the
/// trips) drops a region whose guards fail on many trips; this one
/// judges a loop the other rules keep.
pub(crate) const COSTLY_GUARD: u64 = 200;

/// What the review saw of an installed region, to tell what it counted
/// since.
#[derive(Debug)]
struct Watch {
    /// The counters at the last review.
    seen: Vec<u64>,
    entries_seen: u64,
    /// Reviews in a row with no entry in an interval that ran.
    idle: u32,
    /// The JIT's count of batches run (`Jit::ran`) when the region was
    /// installed or last reviewed.
    reviewed_at: u64,
    /// Side exits, and `Interpret` exits at its dispatches, taken in the
    /// last reviewed interval.
    recent_side_exits: u64,
    /// Trips through its head (entries and loop trips) in the last
    /// reviewed interval.
    recent_trips: u64,
    /// Reviews since it was installed.
    reviews: u32,
    /// Whether the last review found it leaving hot into its own code.
    left_hot: bool,
}

impl Installed {
    /// `code` of a region of `shape`, installed after `batches` batches
    /// ran.
    pub(crate) fn new(code: Arc<CompiledRegion>, shape: Shape, batches: u64) -> Installed {
        let reach = exit_reach(&code, &shape);
        let n = code.counters_len();
        Installed {
            code,
            shape,
            reach,
            busy: 0,
            counters: vec![0; n],
            entries: 0,
            costly_guards: Vec::new(),
            watch: Watch {
                seen: vec![0; n],
                entries_seen: 0,
                idle: 0,
                reviewed_at: batches,
                recent_side_exits: 0,
                recent_trips: 0,
                reviews: 0,
                left_hot: false,
            },
        }
    }

    /// What the region counted over its life, for the log: its entries,
    /// the arrivals at its head, and each exit site taken, most taken first
    /// (`side 52 x 1200`: 1,200 side exits resuming at offset 52). Empty
    /// while an activation holds its counters.
    pub(crate) fn lifetime(&self) -> String {
        let exits = self.code.exits();
        if self.counters.len() != exits.len() + 1 {
            return String::new();
        }
        let mut taken: Vec<(u64, usize)> = self.counters[..exits.len()]
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(i, &n)| (n, i))
            .collect();
        taken.sort_unstable_by_key(|&(n, i)| (std::cmp::Reverse(n), i));
        let mut s = format!(
            "{} entries, {} arrivals at its head",
            self.entries,
            self.counters[exits.len()]
        );
        for (k, (n, i)) in taken.into_iter().enumerate() {
            let site = &exits[i];
            let kind = match site.kind {
                ExitKind::Side => "side",
                ExitKind::Guard => "guard",
                ExitKind::Interpret => "interpret",
                ExitKind::Trap => "trap",
            };
            s += if k == 0 { "; exits " } else { ", " };
            s += &format!("{kind} {} x {n}", site.resume);
        }
        s
    }

    /// Side exits (and `Interpret` exits at its dispatches) taken in the
    /// last reviewed interval.
    pub(crate) fn recent_side_exits(&self) -> u64 {
        self.watch.recent_side_exits
    }

    /// Whether `grow` may plan it again: a loop planned from candidates.
    pub(crate) fn plannable_loop(&self) -> bool {
        self.shape.loops && !self.shape.planned_from.is_empty()
    }

    /// Trips through its head (entries plus loop trips) in the last
    /// reviewed interval.
    pub(crate) fn recent_trips(&self) -> u64 {
        self.watch.recent_trips
    }

    /// Whether the last review found it leaving hot into its own code
    /// (see `Verdict::HotExit`).
    pub(crate) fn left_hot(&self) -> bool {
        self.watch.left_hot
    }

    /// Reviews that judged it since it was installed.
    pub(crate) fn reviews(&self) -> u32 {
        self.watch.reviews
    }

    /// What the region counted since its last review, and the verdict.
    /// `batches` is the JIT's count of batches run; `called` whether a
    /// live region calls the region's function natively.
    pub(crate) fn review(&mut self, opts: &JitOptions, batches: u64, called: bool) -> Verdict {
        let w = &mut self.watch;
        if self.busy > 0 {
            // On the machine stack (it called the interpreter, which is where
            // this review runs from): in use, and its counts are away until it
            // returns. Judged at a later review, over both intervals.
            w.idle = 0;
            w.reviewed_at = batches;
            return Verdict::Keep;
        }
        let shape = &self.shape;
        let ever = self.entries;
        let entered = self.entries - w.entries_seen;
        w.entries_seen = self.entries;
        let mut guard_failures = 0;
        let mut side_exits = 0;
        let mut work: u64 = 0;
        // Side exits back into its own code, in site order.
        let mut back_in = Vec::new();
        // Value guards' failures, by the offset of the value guarded.
        let mut failed = Vec::new();
        for (i, site) in self.code.exits().iter().enumerate() {
            let d = self.counters[i] - w.seen[i];
            w.seen[i] = self.counters[i];
            work += d * u64::from(self.reach[i]);
            if site.kind == ExitKind::Side
                || (site.kind == ExitKind::Interpret && shape.dispatches.contains(&site.resume))
            {
                side_exits += d;
            }
            match site.kind {
                ExitKind::Guard => {
                    guard_failures += d;
                    if let Some(ExitReport::Value { pc, .. }) = site.report {
                        failed.push((pc, d));
                    }
                }
                ExitKind::Side if shape.covers.contains(&site.resume) => {
                    back_in.push((site.resume, d));
                }
                _ => {}
            }
        }
        // Arrivals at the head: the entries that passed the entry guards and
        // every loop trip (the counter after the exits').
        let last = self.code.exits().len();
        let arrivals = self.counters[last] - w.seen[last];
        w.seen[last] = self.counters[last];
        let trips = entered.max(arrivals);
        // Every trip past an entry's first went around the whole loop.
        work += (trips - entered) * shape.covers.len() as u64;
        w.recent_side_exits = side_exits;
        w.recent_trips = trips;
        w.reviews = w.reviews.saturating_add(1);
        let counted = Counted {
            entries: entered,
            trips,
            guard_failures,
            hot_exit: hottest(back_in),
            work,
            // Nothing ran since the last review (another interval ended in
            // the same batch): there was no chance to enter the region.
            program_ran: w.reviewed_at != batches,
            // A whole native function a live region calls natively (see
            // the module docs).
            kept_alive: called && shape.whole,
            used: ever > 0,
        };
        w.reviewed_at = batches;
        let verdict;
        (w.idle, verdict) = rule(opts).review(w.idle, &counted);
        w.left_hot = matches!(verdict, Verdict::HotExit { .. });
        // A kept loop's guards that fail too often for their constants to
        // pay (see `COSTLY_GUARD`); the same value may be guarded at
        // several sites (a tree's arms): their failures are summed.
        self.costly_guards.clear();
        if verdict == Verdict::Keep && shape.loops && trips >= opts.min_entries {
            let mut by_value: BTreeMap<u32, u64> = BTreeMap::new();
            for (pc, d) in failed {
                *by_value.entry(pc).or_default() += d;
            }
            let failing = by_value.into_iter().filter(|&(_, n)| n >= opts.min_entries);
            self.costly_guards.extend(failing);
            let all: u64 = self.costly_guards.iter().map(|&(_, n)| n).sum();
            if all.saturating_mul(COSTLY_GUARD) < trips {
                self.costly_guards.clear();
            }
        }
        verdict
    }
}

/// The review rule with the JIT's thresholds.
pub(crate) fn rule(opts: &JitOptions) -> ReviewRule {
    ReviewRule {
        idle_intervals: opts.idle_intervals,
        min_entries: opts.min_entries,
        hot_exit_share: opts.hot_exit_share,
        guard_failure_share: Some(opts.guard_failure_share),
        least_work: Some(opts.min_straight_instrs as u64),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use toyvm_optimizer::CodeCache;

    use super::*;

    /// `main`'s loop (offsets 2-3) compiled: exit sites `[side exit to 4]`.
    const LOOP: &str = "\
region f0:2
  block 2 weight=100
    2: add r1, r1, r2
    3: loop r2, r0, L2 -> head | exit 4
";

    fn installed(whole: bool) -> Installed {
        let region = Region::parse(LOOP).unwrap();
        let code = Arc::new(CodeCache::new().unwrap().compile(&region).unwrap());
        let shape = Shape {
            covers: vec![2, 3],
            handed: Vec::new(),
            dispatches: Vec::new(),
            callees: 0,
            calls: Vec::new(),
            whole,
            loops: true,
            planned_from: Arc::from([]),
            head_weight: 0,
            exit_sites: 0,
        };
        Installed::new(code, shape, 0)
    }

    #[test]
    fn a_native_function_a_live_region_calls_is_not_idle() {
        let opts = JitOptions::default();
        let mut r = installed(true);
        // Reviews after intervals that ran, with no entry: called natively
        // by a live region, it stays.
        for ran in 1..=10 {
            assert_eq!(r.review(&opts, ran, true), Verdict::Keep);
            assert_eq!(r.watch.idle, 0);
        }
        // Nobody calls it: idle after `idle_intervals`.
        let mut verdict = Verdict::Keep;
        for ran in 11..=13 {
            verdict = r.review(&opts, ran, false);
        }
        assert_eq!(
            verdict,
            Verdict::Idle {
                intervals: opts.idle_intervals,
                used: false
            }
        );
        assert_eq!(verdict.to_string(), "never entered in 3 intervals");
        // A planned region is idle whoever calls its function.
        let mut r = installed(false);
        r.entries = 5;
        r.watch.entries_seen = 5;
        for ran in 1..=3 {
            verdict = r.review(&opts, ran, true);
        }
        assert!(verdict.is_revival(), "{verdict:?}");
        assert_eq!(verdict.to_string(), "not entered for 3 intervals");
    }

    #[test]
    fn a_region_on_the_stack_is_kept_and_judged_later() {
        let opts = JitOptions::default();
        let mut r = installed(false);
        r.busy = 1;
        // Its activation holds the counters.
        r.counters.clear();
        r.entries = 1000;
        for ran in 1..=10 {
            assert_eq!(r.review(&opts, ran, false), Verdict::Keep);
        }
        assert_eq!(r.watch.entries_seen, 0, "judged later, over the whole time");
    }

    #[test]
    fn entries_that_leave_at_once_drop_the_region() {
        let opts = JitOptions::default();
        // Every entry takes the exit after two instructions, without
        // looping: less than `min_straight_instrs` each.
        let mut r = installed(false);
        r.entries = 100;
        r.counters = vec![100, 100];
        let v = r.review(&opts, 1, false);
        assert_eq!(
            v,
            Verdict::LeavesAtOnce {
                entries: 100,
                work: 200,
                least: 16
            }
        );
        assert!(!v.is_revival());
        assert!(v.to_string().contains("about 2.0 instructions"), "{v}");
        // The same entries looping 50 times each pay.
        let mut r = installed(false);
        r.entries = 100;
        r.counters = vec![100, 5000];
        assert_eq!(r.review(&opts, 1, false), Verdict::Keep);
        // Too few entries to judge.
        let mut r = installed(false);
        r.entries = 4;
        r.counters = vec![4, 4];
        assert_eq!(r.review(&opts, 1, false), Verdict::Keep);
    }

    /// A straight path of 18 instructions that ends by handing its `ret`
    /// to the interpreter (musl's `__fwritex` on `snprintf`'s path is
    /// one): exit sites `[interpret 18]`.
    fn straight_to_ret() -> Installed {
        let mut text = String::from("region f0:0\n  block 0 weight=100\n");
        for pc in 0..18 {
            text += &format!("    {pc}: addi r1, r1, 1\n");
        }
        text += "    18: interpret ret r1\n";
        let region = Region::parse(&text).unwrap();
        let code = Arc::new(CodeCache::new().unwrap().compile(&region).unwrap());
        let (covers, handed) = laid_out(&region);
        assert_eq!(handed, [(18, 18)]);
        let shape = Shape {
            covers,
            handed,
            dispatches: Vec::new(),
            callees: 0,
            calls: Vec::new(),
            whole: false,
            loops: false,
            planned_from: Arc::from([]),
            head_weight: 0,
            exit_sites: 0,
        };
        Installed::new(code, shape, 0)
    }

    #[test]
    fn entries_that_run_to_the_handed_over_ret_do_not_leave_at_once() {
        let opts = JitOptions::default();
        let mut r = straight_to_ret();
        let sites: Vec<_> = r.code.exits().iter().map(|s| (s.kind, s.resume)).collect();
        assert_eq!(sites, [(ExitKind::Interpret, 18)]);
        // Every entry ran all 18 instructions: it pays (it was estimated
        // at half the region, 9, and dropped as leaving at once).
        assert_eq!(r.reach, [18]);
        r.entries = 150;
        r.counters = vec![150, 150];
        assert_eq!(r.review(&opts, 1, false), Verdict::Keep);
        assert!(
            r.lifetime().ends_with("exits interpret 18 x 150"),
            "{}",
            r.lifetime()
        );
    }

    /// A host's graph: blocks that each loop on themselves (only the
    /// intervals matter here).
    struct Graph;
    impl crate::feedback::HostGraph for Graph {
        fn blocks(&self, _func: u32) -> u32 {
            8
        }
        fn successors(&self, _func: u32, block: u32) -> Vec<u32> {
            vec![block]
        }
    }

    #[test]
    fn the_runtime_and_feedback_agree_on_the_same_numbers() {
        use crate::feedback::review::Action;
        use crate::feedback::{Feedback, Loc, Review, TraceDecision};

        // The feedback component judges no work: neither may the JIT here.
        let opts = JitOptions {
            min_straight_instrs: 0,
            ..JitOptions::default()
        };
        // Per interval: entries, and exits to offset 4, which the region
        // (and the host's trace) covers: back into its own code.
        let scenarios: [&[(u64, u64)]; 4] = [
            &[(20, 15)],
            &[(20, 5), (20, 9), (0, 0), (0, 0), (0, 0)],
            &[(4, 4), (7, 7), (8, 4)],
            &[(9, 4), (0, 0), (1, 1), (0, 0), (0, 0), (0, 0)],
        ];
        let mut fb = Feedback::new("perfect:interval=100").unwrap();
        let head = Loc::new(0, 2);
        let trace = TraceDecision {
            head,
            blocks: vec![2, 3, 4],
            arms: vec![],
            arcs: vec![],
            weight: 1,
            loops: true,
        };
        let mut out = Vec::new();
        let mut batches = 0;
        let mut actions = Vec::new();
        for intervals in scenarios {
            let mut r = installed(false);
            r.shape.covers = vec![2, 3, 4];
            fb.installed(&trace);
            for &(entries, exits) in intervals {
                // The runtime: entries, each through the head once, and the
                // side exit's counter.
                r.entries += entries;
                r.counters[0] += exits;
                r.counters[1] += entries;
                batches += 1;
                let runtime = r.review(&opts, batches, false).action();
                // The host reports the same, and an interval ends.
                fb.exits(head, entries, &[(4, exits)]);
                let before = out.len();
                for _ in 0..100 {
                    fb.edge(Loc::new(0, 1), Loc::new(0, 1), &Graph, &mut out);
                }
                assert_eq!(out.len(), before + 1);
                let feedback = match &out[before].reviews[..] {
                    [] => Action::Keep,
                    [Review::Drop { head: h, .. }] if *h == head => Action::Drop,
                    [Review::Recompile { head: h, .. }] if *h == head => Action::Recompile,
                    other => panic!("{other:?}"),
                };
                assert_eq!(runtime, feedback, "{intervals:?} at ({entries}, {exits})");
                actions.push(runtime);
            }
        }
        use Action::{Drop, Keep, Recompile};
        assert_eq!(
            actions,
            [
                Recompile, // 15 of 20 entries left back in
                Keep, Keep, Keep, Keep, Drop, // three intervals without an entry
                Keep, // too few entries to judge
                Keep, Recompile, // 4 of 8
                Keep,      // 4 of 9
                Keep, Keep, // entered: idleness starts over
                Keep, Keep, Drop,
            ]
        );
    }
}

//! The feedback component as a plug-in (issue 16 item 5): a foreign stack
//! machine (`examples/foreign_vm.rs`) gets decisions that match the known
//! hot spots of the program it runs, the same every run; a lying graph or a
//! bad spec is an error or ignored, never a panic.

#[path = "../examples/foreign_vm.rs"]
#[allow(dead_code)]
mod foreign_vm;

use foreign_vm::{Blocks, two_phases};
use toyvm::feedback::{CallDecision, Feedback, HostGraph, Loc, Review, TraceDecision};

const SPEC: &str = "perfect:interval=5000,threshold=0.1%";

#[test]
fn decisions_name_the_known_hot_loops_values_and_call_sites() {
    let (funcs, marks) = two_phases();
    let blocks = Blocks::new(&funcs[0].code);
    let inner = Loc::new(0, blocks.of[marks.inner]);
    let second = Loc::new(0, blocks.of[marks.second]);
    let log = foreign_vm::run(&funcs, 20_000, SPEC, 100).unwrap();
    let n = log.decisions.len();
    assert!(n > 100, "{n} intervals");
    // Phase 1 (the first tenth of the run is well inside it): the inner
    // loop is the heaviest trace and loops; its bound is a constant.
    for d in &log.decisions[..n / 10] {
        let t = &d.traces[0];
        assert_eq!((t.head, t.loops), (inner, true), "interval {}", d.interval);
        assert!(
            d.values
                .iter()
                .any(|v| v.site == Loc::new(0, marks.bound_load as u32) && v.value == 40),
            "{:?}",
            d.values
        );
        assert!(d.calls.is_empty());
    }
    // Phase 2 (the last intervals): the second loop; one site nearly
    // monomorphic (15 of 16 calls to f1), one spread over three callees.
    let last = &log.decisions[n - 3];
    assert_eq!(last.traces[0].head, second);
    assert!(last.traces[0].loops);
    let mono = Loc::new(0, marks.mono as u32);
    let poly = Loc::new(0, marks.poly as u32);
    let mut seen = 0;
    for c in &last.calls {
        match c {
            CallDecision::Monomorphic {
                site,
                callee,
                share,
            } if *site == mono => {
                assert_eq!(*callee, 1);
                assert!((share - 15.0 / 16.0).abs() < 0.02, "{share}");
                seen += 1;
            }
            CallDecision::Polymorphic { site, callees } if *site == poly => {
                let ids: Vec<u32> = callees.iter().map(|&(c, _)| c).collect();
                let mut sorted = ids.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, [1, 2, 3]);
                assert!(callees.iter().all(|&(_, s)| (s - 1.0 / 3.0).abs() < 0.02));
                seen += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, 2, "{:?}", last.calls);
    // The first phase's trace was installed, then dropped when idle; the
    // second's installed.
    assert_eq!(log.installs, [inner, second]);
    assert_eq!(log.drops, [inner]);
    // The result is the program's (the plug-in only watches).
    let again = foreign_vm::run(&funcs, 20_000, "multihash:interval=3000", 100).unwrap();
    assert_eq!(again.result, log.result);
}

#[test]
fn the_same_run_gives_the_same_decisions() {
    let (funcs, _) = two_phases();
    let a = foreign_vm::run(&funcs, 5_000, "multihash:interval=2000", 50).unwrap();
    let b = foreign_vm::run(&funcs, 5_000, "multihash:interval=2000", 50).unwrap();
    assert_eq!(a.decisions, b.decisions);
    assert!(!a.decisions.is_empty());
}

/// One function, blocks 0 -> 1 -> {1, 2}, 2 -> {1, 3}.
struct Diamond;
impl HostGraph for Diamond {
    fn blocks(&self, _: u32) -> u32 {
        4
    }
    fn successors(&self, _: u32, b: u32) -> Vec<u32> {
        match b {
            0 => vec![1],
            1 => vec![1, 2],
            2 => vec![1, 3],
            _ => vec![],
        }
    }
}

#[test]
fn exits_back_into_the_tree_call_for_a_recompile_and_idleness_for_a_drop() {
    let mut fb = Feedback::new("perfect:interval=100").unwrap();
    let mut out = Vec::new();
    let trace = TraceDecision {
        head: Loc::new(0, 1),
        blocks: vec![1, 2],
        arms: vec![],
        arcs: vec![],
        weight: 1,
        loops: true,
    };
    fb.installed(&trace);
    // Most entries leave to block 2, inside the tree: a branch changed.
    fb.exits(trace.head, 20, &[(2, 15), (3, 5)]);
    for _ in 0..100 {
        fb.edge(Loc::new(0, 1), Loc::new(0, 1), &Diamond, &mut out);
    }
    assert_eq!(out.len(), 1);
    assert!(
        matches!(&out[0].reviews[..], [Review::Recompile { head, .. }] if *head == trace.head),
        "{:?}",
        out[0].reviews
    );
    // Leaving through the loop's exit on every entry is no reason.
    fb.installed(&trace);
    for i in 0..3 {
        fb.exits(trace.head, 20, &[(3, 20)]);
        for _ in 0..100 {
            fb.edge(Loc::new(0, 1), Loc::new(0, 1), &Diamond, &mut out);
        }
        assert!(out[1 + i].reviews.is_empty(), "{:?}", out[1 + i].reviews);
    }
    // No entries for three intervals: dropped.
    for _ in 0..300 {
        fb.edge(Loc::new(0, 1), Loc::new(0, 1), &Diamond, &mut out);
    }
    assert!(
        matches!(&out[6].reviews[..], [Review::Drop { .. }]),
        "{:?}",
        out[6].reviews
    );
}

/// A graph that lies: more blocks than it describes, successors out of
/// range, a block count far beyond any real function.
struct Liar;
impl HostGraph for Liar {
    fn blocks(&self, func: u32) -> u32 {
        if func == 0 { 3 } else { u32::MAX }
    }
    fn successors(&self, _: u32, b: u32) -> Vec<u32> {
        vec![b + 1, u32::MAX, b, b]
    }
}

#[test]
fn hostile_graphs_and_specs_are_errors_or_ignored_never_panics() {
    let mut fb = Feedback::new("multihash:interval=50").unwrap();
    let mut out = Vec::new();
    for i in 0..500u32 {
        fb.edge(
            Loc::new(0, i % 7),
            Loc::new(0, (i + 1) % 7),
            &Liar,
            &mut out,
        );
        fb.edge(Loc::new(1, i), Loc::new(1, i + 1), &Liar, &mut out);
        fb.edge(Loc::new(2, 0), Loc::new(3, 0), &Liar, &mut out);
        fb.value(Loc::new(u32::MAX, u32::MAX), -1, &Liar, &mut out);
        fb.call(Loc::new(0, 0), u32::MAX, &Liar, &mut out);
    }
    assert!(!out.is_empty());
    for bad in [
        "",
        "nosuchmodel",
        "multihash:interval=0",
        "perfect:threshold=x",
    ] {
        assert!(Feedback::new(bad).is_err(), "{bad:?} was accepted");
    }
}

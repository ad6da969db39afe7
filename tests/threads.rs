//! The profiler model on its own thread (issue 15): the same program, spec
//! and lag make the same decisions on one thread and two, no tuple is lost
//! between the interpreter and the model, and nothing that ends a run early
//! leaves the model thread hanging.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use toyvm::runtime::{JitOptions, THREAD_AFTER, Threads};
use toyvm::{RunReport, Runtime};
use toyvm_profiler::spec::MODEL_NAMES;
use toyvm_vm::asm;
use toyvm_vm::interp::Input;

/// Runs `f` on a thread; fails the test if it takes longer than `secs`
/// (a deadlock between the interpreter and the model thread).
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no answer in {secs} s (a hang?)"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the run panicked"),
    }
}

struct Run {
    out: Vec<u8>,
    report: toyvm::Result<RunReport>,
}

fn run(
    program: &toyvm_vm::Program,
    args: &[i64],
    file: &[u8],
    spec: &str,
    threads: Threads,
    lag: Option<u64>,
    jit: bool,
) -> Run {
    run_with(
        program,
        args,
        file,
        spec,
        threads,
        lag,
        jit.then(JitOptions::default),
    )
}

fn run_with(
    program: &toyvm_vm::Program,
    args: &[i64],
    file: &[u8],
    spec: &str,
    threads: Threads,
    lag: Option<u64>,
    jit: Option<JitOptions>,
) -> Run {
    let mut out = Vec::new();
    let report = Runtime::builder(program.clone())
        .profile_str(spec)
        .unwrap()
        .jit(jit)
        .threads(threads)
        .lag(lag)
        .keep_candidates(true)
        .count_instructions(true)
        .build()
        .run(Input { args, file }, &mut out);
    Run { out, report }
}

/// The statistics that must not depend on timing: everything but the
/// clocks and the queue's occupancy (which records how far ahead the
/// interpreter ran, not what it decided).
fn decisions(r: &RunReport) -> serde_json::Value {
    let mut s = serde_json::to_value(&r.stats).unwrap();
    let o = s.as_object_mut().unwrap();
    for k in ["wall_seconds", "interpreter_seconds", "profiler_seconds"] {
        o.remove(k);
    }
    if let Some(j) = o.get_mut("jit").and_then(|j| j.as_object_mut()) {
        for k in ["compile_seconds", "compile_wait_seconds", "background"] {
            j.remove(k);
        }
        j.remove("compiled_seconds");
    }
    let f = o["feed"].as_object_mut().unwrap();
    for k in [
        "threads",
        "wait_seconds",
        "queue_wait_seconds",
        "lag_wait_seconds",
        "inline_seconds",
        "buffers_sent",
        "queue_full",
        "queue_capacity",
        "queue_peak",
        "queue_mean",
    ] {
        f.remove(k);
    }
    serde_json::json!({ "value": r.outcome.value, "stats": s })
}

/// Asserts two runs decided alike: same statistics, same candidates in
/// every interval (reporting only the first interval that differs).
fn same_decisions(what: &str, a: &RunReport, b: &RunReport) {
    assert_eq!(decisions(a), decisions(b), "{what}");
    assert_eq!(a.intervals.len(), b.intervals.len(), "{what}");
    for (x, y) in a.intervals.iter().zip(&b.intervals) {
        let key = |i: &toyvm::runtime::IntervalCandidates| {
            i.candidates
                .iter()
                .map(|c| (c.tuple, c.count))
                .collect::<Vec<_>>()
        };
        assert_eq!((x.index, key(x)), (y.index, key(y)), "{what}");
    }
}

/// Checks that the model saw exactly the tuples the interpreter emitted
/// and its compiled code's exits reported.
fn no_tuple_lost(what: &str, r: &RunReport) {
    let f = r.stats.feed.as_ref().expect("a profiled run");
    let t = &r.stats.tuples;
    let exits = r.stats.jit.as_ref().map_or(0, |j| j.exit_tuples);
    assert_eq!(f.model_tuples, f.tuples_sent, "{what}");
    assert_eq!(
        f.tuples_sent,
        t.value + t.edge + t.call + exits,
        "{what}: {f:?}"
    );
}

/// Runs every program of the suite on one thread, on two, and as the
/// runtime chooses (the model moving to its own thread after
/// `THREAD_AFTER` tuples, where a thread pays): all three decide alike.
/// Returns the compiles of the two-thread runs and how many runs the
/// model moved in.
fn compare_modes(spec: &str, lag: Option<u64>, jit: bool) -> (u64, usize) {
    let mut compiles = 0;
    let mut moved = 0;
    for case in common::all() {
        let program = asm::assemble(&case.source).unwrap();
        let Some(input) = case.input_or_skip() else {
            continue;
        };
        let what = format!("{} under {spec} (lag {lag:?}, jit {jit})", case.name);
        let one = run(&program, &case.args, &input, spec, Threads::One, lag, jit);
        let two = run(&program, &case.args, &input, spec, Threads::Two, lag, jit);
        let auto = run(&program, &case.args, &input, spec, Threads::Auto, lag, jit);
        let (r1, r2, r3) = (
            one.report.unwrap(),
            two.report.unwrap(),
            auto.report.unwrap(),
        );
        assert_eq!(one.out, two.out, "{what}");
        assert_eq!(one.out, auto.out, "{what}");
        assert_eq!(r1.stats.feed.as_ref().unwrap().threads, 1, "{what}");
        assert_eq!(r2.stats.feed.as_ref().unwrap().threads, 2, "{what}");
        let f3 = r3.stats.feed.as_ref().unwrap();
        if f3.threads == 2 {
            assert!(f3.tuples_sent >= THREAD_AFTER, "{what}: {f3:?}");
            moved += 1;
        } else {
            assert_eq!(f3.inline_seconds, 0.0, "{what}");
        }
        same_decisions(&what, &r1, &r2);
        same_decisions(&format!("{what}, auto"), &r1, &r3);
        no_tuple_lost(&what, &r1);
        no_tuple_lost(&what, &r2);
        no_tuple_lost(&what, &r3);
        compiles += r2.stats.jit.map_or(0, |j| j.compiles + j.recompiles);
    }
    (compiles, moved)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn one_thread_and_two_decide_alike_over_the_suite_under_every_model() {
    within(1200, "the suite", || {
        for model in MODEL_NAMES {
            let spec = format!("{model}:interval=2000");
            // At a lag of one interval (2,000 tuples) the runtime keeps a
            // JIT run's model inline (`MIN_THREADED_LAG`).
            let (compiles, _) = compare_modes(&spec, None, true);
            assert!(compiles > 0, "{spec}: nothing was compiled");
        }
    });
}

#[test]
fn one_thread_and_two_decide_alike_at_any_lag() {
    within(600, "the lags", || {
        // 0: the old synchronous behaviour; 1500: inside a batch; a lag
        // longer than any run: nothing is ever acted on.
        // a lag of 10,000: the model moves to its thread in the longer runs.
        for lag in [0, 1500, 10_000, 1 << 40] {
            let (compiles, moved) = compare_modes("multihash:interval=1000", Some(lag), true);
            assert_eq!(
                compiles == 0,
                lag == 1 << 40,
                "lag {lag}: {compiles} compiles"
            );
            if lag == 10_000 {
                assert_eq!(moved > 0, cores() > 1, "lag {lag}: {moved} moved");
            }
        }
    });
}

#[test]
fn without_a_jit_the_profile_is_the_same_on_two_threads() {
    within(600, "--no-jit", || {
        let (_, moved) = compare_modes("stratified:interval=500", None, false);
        assert_eq!(moved > 0, cores() > 1, "{moved} moved");
    });
}

/// Many short generated programs (half of them trap) under every model on
/// two threads, at lags that make the interpreter wait at every boundary
/// and at none: every run ends, the model sees every tuple, and the results
/// match one thread's.
#[test]
fn stress_many_short_programs_on_two_threads() {
    within(1200, "the stress run", || {
        let (mut ended, mut trapped) = (0, 0);
        for seed in 0..24 {
            let case =
                toyvm_lab::fuzzgen::generate(&mut toyvm_lab::fuzzgen::Seeded::new(1000 + seed));
            let program = asm::assemble(&case.text).unwrap();
            for model in MODEL_NAMES {
                let spec = format!("{model}:interval=300");
                for lag in [Some(0), None] {
                    let what = format!("seed {} under {spec}, lag {lag:?}", 1000 + seed);
                    let two = run(&program, &case.args, &[], &spec, Threads::Two, lag, true);
                    let one = run(&program, &case.args, &[], &spec, Threads::One, lag, true);
                    assert_eq!(one.out, two.out, "{what}");
                    match (one.report, two.report) {
                        (Ok(r1), Ok(r2)) => {
                            no_tuple_lost(&what, &r2);
                            same_decisions(&what, &r1, &r2);
                            ended += 1;
                        }
                        (Err(e1), Err(e2)) => {
                            assert_eq!(e1.to_string(), e2.to_string(), "{what}");
                            trapped += 1;
                        }
                        (a, b) => panic!("{what}: {:?} vs {:?}", a.err(), b.err()),
                    }
                }
            }
        }
        assert!(
            ended > 50 && trapped > 10,
            "{ended} ended, {trapped} trapped"
        );
    });
}

/// A long loop that traps at the end, after many batches.
const TRAPS_LATE: &str = "
.func main(n)
    li r1, 0
    li r2, 0
top:
    add r2, r2, r1
    loop r1, n, top
    li r3, 0
    div r4, r2, r3
    ret r4
.end
";

#[test]
fn traps_and_fuel_end_the_model_thread() {
    within(300, "traps", || {
        let program = asm::assemble(TRAPS_LATE).unwrap();
        for model in MODEL_NAMES {
            let spec = format!("{model}:interval=500");
            for jit in [true, false] {
                let r = run(&program, &[200_000], &[], &spec, Threads::Two, None, jit);
                let e = r.report.unwrap_err().to_string();
                assert!(e.contains("division by zero"), "{spec}: {e}");
            }
            // Fuel turns the JIT off; the model still runs on its thread.
            let mut out = Vec::new();
            let e = Runtime::builder(program.clone())
                .profile_str(&spec)
                .unwrap()
                .threads(Threads::Two)
                .fuel(Some(50_000))
                .build()
                .run(
                    Input {
                        args: &[200_000],
                        file: &[],
                    },
                    &mut out,
                )
                .unwrap_err()
                .to_string();
            assert!(e.contains("fuel"), "{spec}: {e}");
        }
    });
}

/// By default a short run keeps the model on the interpreter's thread; a long one
/// moves it to a thread of its own on a machine with two cores, after
/// `THREAD_AFTER` tuples.
#[test]
fn the_default_moves_the_model_to_a_thread_once_the_run_is_long() {
    let program =
        asm::assemble(TRAPS_LATE.replace("div r4, r2, r3", "mov r4, r2").as_str()).unwrap();
    for (n, long) in [(1000, false), (100_000, true)] {
        let mut out = Vec::new();
        let r = Runtime::builder(program.clone())
            .profile_str("multihash")
            .unwrap()
            .build()
            .run(
                Input {
                    args: &[n],
                    file: &[],
                },
                &mut out,
            )
            .unwrap();
        let f = r.stats.feed.unwrap();
        assert_eq!(f.tuples_sent >= THREAD_AFTER, long, "n {n}: {f:?}");
        assert_eq!(f.threads, if long && cores() > 1 { 2 } else { 1 }, "n {n}");
        assert_eq!(f.lag, 10_000, "one interval");
        assert_eq!(f.model_tuples, f.tuples_sent, "n {n}");
    }
}

/// Compiling on a thread of its own (two threads) or the interpreter's
/// (one) installs the same code at the same points, at any install lag.
#[test]
fn the_compiler_thread_installs_at_the_same_points_at_any_install_lag() {
    within(600, "install lags", || {
        let case = common::all()
            .into_iter()
            .find(|c| c.name == "phase")
            .unwrap();
        let program = asm::assemble(&case.source).unwrap();
        let mut compiles = Vec::new();
        for install_lag in [0, 1500, 20_000] {
            let opts = JitOptions {
                install_lag,
                ..JitOptions::default()
            };
            let spec = "multihash:interval=1000";
            let what = format!("phase, install lag {install_lag}");
            let args = (&program, &case.args[..], &[][..], spec);
            let one = run_with(
                args.0,
                args.1,
                args.2,
                args.3,
                Threads::One,
                None,
                Some(opts.clone()),
            );
            let two = run_with(
                args.0,
                args.1,
                args.2,
                args.3,
                Threads::Two,
                None,
                Some(opts),
            );
            let (r1, r2) = (one.report.unwrap(), two.report.unwrap());
            assert_eq!(one.out, two.out, "{what}");
            assert!(!r1.stats.jit.as_ref().unwrap().background, "{what}");
            assert!(r2.stats.jit.as_ref().unwrap().background, "{what}");
            same_decisions(&what, &r1, &r2);
            compiles.push(r2.stats.jit.unwrap().compiles);
        }
        assert!(compiles.iter().all(|&c| c > 0), "{compiles:?}");
    });
}

/// Installing code as soon as the compiler has it (`--async`) changes when
/// code takes over, never what the program computes.
#[test]
fn the_async_mode_computes_what_the_interpreter_does() {
    within(1200, "async", || {
        let mut compiles = 0;
        for case in common::all() {
            let program = asm::assemble(&case.source).unwrap();
            let Some(input) = case.input_or_skip() else {
                continue;
            };
            let want = run(
                &program,
                &case.args,
                &input,
                "none",
                Threads::One,
                None,
                false,
            );
            for model in ["multihash", "rap", "stratified"] {
                let spec = format!("{model}:interval=1000");
                let opts = JitOptions {
                    async_install: true,
                    ..JitOptions::default()
                };
                let got = run_with(
                    &program,
                    &case.args,
                    &input,
                    &spec,
                    Threads::Two,
                    None,
                    Some(opts),
                );
                let what = format!("{} under {spec}, async", case.name);
                assert_eq!(want.out, got.out, "{what}");
                let (w, g) = (want.report.as_ref().unwrap(), got.report.unwrap());
                assert_eq!(w.outcome.value, g.outcome.value, "{what}");
                no_tuple_lost(&what, &g);
                compiles += g.stats.jit.unwrap().compiles;
            }
        }
        assert!(compiles > 0, "nothing was compiled");
    });
}

//! What tuple emission costs, measured so the host's drift cancels out.
//!
//! `cargo bench -p toyvm-vm --bench emission` (set `TOYVM_BENCH_ROUNDS`,
//! default 30).  Criterion's `dispatch` bench times each variant for
//! seconds one after the other; on a shared machine the speed of the core
//! drifts over that time by more than the effect measured.  Here every
//! round runs each variant once, in a rotating order, and the report gives
//! the median of the per-round ratios next to the median times, and the
//! ratio of the fastest runs (the best state each loop reaches; on this
//! class of machine a process sometimes runs a loop up to 2x slower
//! throughout, so compare several invocations):
//! - `off`: `NoSink`, emission compiled out;
//! - `masked`: a discarding sink with every kind switched off at run time
//!   (the same loop as `off`, compiled separately, so its speed shows how
//!   much code placement alone moves these loops);
//! - `all`: every tuple kind emitted into a sink that discards batches.
//!
//! A second table gives the cost per emitted tuple: the tuples one `all`
//! run emits (counted by the sink, the same in every run), (median `all` -
//! median `off`) / tuples in ns, and the median and range of the per-round
//! (`all` - `off`) / tuples; `masked` - `off` per tuple, beside it, shows
//! how far placement alone moves that figure.
//!
//! `TOYVM_EMISSION_ONLY=off` (or `masked`, `all`) runs each selected
//! program once in that mode and prints the tuples emitted, for
//! deterministic instruction counts (`valgrind --tool=callgrind`: the
//! difference between the `all` and `off` processes' totals, divided by
//! the tuples).

use std::hint::black_box;
use std::time::Instant;

use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::tuple::{Discard, NoSink};
use toyvm_vm::{KindSet, Program, asm};

const PROGRAMS: &[(&str, &[i64])] = &[
    ("fib", &[25]),
    ("loop", &[1500]),
    ("sieve", &[2_000_000]),
    ("poly", &[2_000_000]),
];

const MODES: [&str; 3] = ["off", "masked", "all"];

fn load(name: &str) -> Program {
    let path = format!("{}/../programs/{name}.tasm", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    asm::assemble(&src).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs `p` once in `mode`; returns the seconds it took and the tuples the
/// sink received.
fn run(p: &Program, args: &[i64], mode: usize) -> (f64, u64) {
    let input = Input { args, file: &[] };
    let out = &mut std::io::sink();
    let mut sink = Discard::default();
    let t = Instant::now();
    let r = match mode {
        0 => interp::run_with_sink(p, input, out, &mut NoSink, &Config::default()),
        1 => {
            let cfg = Config {
                kinds: KindSet::EMPTY,
                ..Config::default()
            };
            interp::run_with_sink(p, input, out, &mut sink, &cfg)
        }
        _ => interp::run_with_sink(p, input, out, &mut sink, &Config::default()),
    };
    let dt = t.elapsed().as_secs_f64();
    black_box(r.expect("benchmark program runs"));
    (dt, sink.tuples)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One program's per-tuple figures, printed after the ratio table.
struct PerTuple {
    name: &'static str,
    tuples: u64,
    /// (median all - median off) / tuples, ns.
    of_medians: f64,
    /// Per-round (all - off) / tuples, ns.
    rounds: Vec<f64>,
    /// Per-round (masked - off) / tuples, ns.
    masked: Vec<f64>,
}

fn main() {
    // `cargo bench` passes `--bench`; a filter selects programs by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let rounds: usize = std::env::var("TOYVM_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
        .max(1);
    if let Ok(only) = std::env::var("TOYVM_EMISSION_ONLY") {
        let mode = MODES
            .iter()
            .position(|&m| m == only)
            .unwrap_or_else(|| panic!("TOYVM_EMISSION_ONLY={only}: one of {MODES:?}"));
        for &(name, args) in PROGRAMS {
            if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
                println!("{name} {only}: {} tuples", run(&load(name), args, mode).1);
            }
        }
        return;
    }
    println!("interleaved rounds: {rounds}; medians of times (ms) and of per-round ratios");
    println!(
        "{:<8} {:>9} {:>9} {:>9} {:>10} {:>10} {:>12} {:>14}",
        "program", "off", "masked", "all", "all/off", "all/masked", "masked/off", "min all/off"
    );
    let mut per_tuple = vec![];
    for &(name, args) in PROGRAMS {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let p = load(name);
        // One untimed run of each warms caches and predictors; the `all`
        // run's sink counts the tuples every `all` run emits.
        let mut tuples = 0;
        for mode in 0..MODES.len() {
            tuples = run(&p, args, mode).1;
        }
        let mut times = [vec![], vec![], vec![]];
        let (mut all_off, mut all_masked, mut masked_off) = (vec![], vec![], vec![]);
        let (mut ns_all, mut ns_masked) = (vec![], vec![]);
        let per = |dt: f64| dt * 1e9 / tuples.max(1) as f64;
        for round in 0..rounds {
            let mut t = [0.0; 3];
            for k in 0..MODES.len() {
                let mode = (round + k) % MODES.len();
                let (dt, n) = run(&p, args, mode);
                if mode == 2 {
                    assert_eq!(n, tuples, "{name}: every `all` run emits as many tuples");
                }
                t[mode] = dt;
            }
            for (mode, &dt) in t.iter().enumerate() {
                times[mode].push(dt);
            }
            all_off.push(t[2] / t[0]);
            all_masked.push(t[2] / t[1]);
            masked_off.push(t[1] / t[0]);
            ns_all.push(per(t[2] - t[0]));
            ns_masked.push(per(t[1] - t[0]));
        }
        let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let min_ratio = fastest(&times[2]) / fastest(&times[0]);
        let [off, masked, all] = times.each_mut().map(|v| median(v));
        println!(
            "{:<8} {:>9.2} {:>9.2} {:>9.2} {:>10.3} {:>10.3} {:>12.3} {:>14.3}",
            name,
            off * 1e3,
            masked * 1e3,
            all * 1e3,
            median(&mut all_off),
            median(&mut all_masked),
            median(&mut masked_off),
            min_ratio,
        );
        per_tuple.push(PerTuple {
            name,
            tuples,
            of_medians: per(all - off),
            rounds: ns_all,
            masked: ns_masked,
        });
    }
    println!();
    println!("ns per emitted tuple: (all - off) / tuples emitted by an `all` run");
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>18} {:>14}",
        "program", "tuples", "of medians", "per-round", "per-round range", "masked-off"
    );
    for mut r in per_tuple {
        let lo = r.rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "{:<8} {:>12} {:>12.3} {:>12.3} {:>18} {:>14.3}",
            r.name,
            r.tuples,
            r.of_medians,
            median(&mut r.rounds),
            format!("{lo:.3} .. {hi:.3}"),
            median(&mut r.masked),
        );
    }
}

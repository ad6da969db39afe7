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

/// Runs `p` once in `mode` and returns the seconds it took.
fn run(p: &Program, args: &[i64], mode: usize) -> f64 {
    let input = Input { args, file: &[] };
    let out = &mut std::io::sink();
    let t = Instant::now();
    let r = match mode {
        0 => interp::run_with_sink(p, input, out, &mut NoSink, &Config::default()),
        1 => {
            let cfg = Config {
                kinds: KindSet::EMPTY,
                ..Config::default()
            };
            interp::run_with_sink(p, input, out, &mut Discard::default(), &cfg)
        }
        _ => interp::run_with_sink(p, input, out, &mut Discard::default(), &Config::default()),
    };
    let dt = t.elapsed().as_secs_f64();
    black_box(r.expect("benchmark program runs"));
    dt
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
    println!("interleaved rounds: {rounds}; medians of times (ms) and of per-round ratios");
    println!(
        "{:<8} {:>9} {:>9} {:>9} {:>10} {:>10} {:>12} {:>14}",
        "program", "off", "masked", "all", "all/off", "all/masked", "masked/off", "min all/off"
    );
    for &(name, args) in PROGRAMS {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let p = load(name);
        // One untimed run of each warms caches and predictors.
        for mode in 0..MODES.len() {
            run(&p, args, mode);
        }
        let mut times = [vec![], vec![], vec![]];
        let (mut all_off, mut all_masked, mut masked_off) = (vec![], vec![], vec![]);
        for round in 0..rounds {
            let mut t = [0.0; 3];
            for k in 0..MODES.len() {
                let mode = (round + k) % MODES.len();
                t[mode] = run(&p, args, mode);
            }
            for (mode, &dt) in t.iter().enumerate() {
                times[mode].push(dt);
            }
            all_off.push(t[2] / t[0]);
            all_masked.push(t[2] / t[1]);
            masked_off.push(t[1] / t[0]);
        }
        let ms = |v: &mut Vec<f64>| median(v) * 1e3;
        let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let min_ratio = fastest(&times[2]) / fastest(&times[0]);
        println!(
            "{:<8} {:>9.2} {:>9.2} {:>9.2} {:>10.3} {:>10.3} {:>12.3} {:>14.3}",
            name,
            ms(&mut times[0]),
            ms(&mut times[1]),
            ms(&mut times[2]),
            median(&mut all_off),
            median(&mut all_masked),
            median(&mut masked_off),
            min_ratio,
        );
    }
}

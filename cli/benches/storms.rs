//! Compile/drop storms (issue 12): does any model at a short interval make
//! a program slower than interpreting it? Every program of the suite (at
//! its test arguments) and the storm shapes of `tests/corpus/storm_*` run
//! under every model at intervals 100, 200 and 1000 with the JIT, against
//! two baselines: the interpreter alone (`--profile none --no-jit`) and the
//! interpreter with the same model (`--no-jit`, what the model itself
//! costs). In-process, medians of `TOYVM_BENCH_RUNS` (default 3) runs,
//! contenders alternated. The report lists each row's worst ratio and every
//! pair over 2x the interpreter, counting apart those whose model alone is
//! already over 2x (the model's simulation, the floor under the JIT's run)
//! and those whose JIT run is over 2x the model alone (the JIT's own cost).
//!
//! With `TOYVM_STORMS_SIZE=bench` every program runs at its `bench-args`
//! instead (tens of milliseconds to a second interpreted; the storm shapes
//! at the sizes), where a run's fixed costs (threads, a Cranelift
//! module, the first compiles) no longer decide the ratio: what is left is
//! the model's simulation and the JIT's decisions at short intervals.
//!
//! `cargo bench --bench storms [FILTER]`

use std::time::{Duration, Instant};

use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm_vm::interp::Input;

#[path = "../../tests/common/mod.rs"]
mod common;

const INTERVALS: [u64; 3] = [100, 200, 1000];

fn time(program: &toyvm_vm::Program, args: &[i64], file: &[u8], spec: &str, jit: bool) -> Duration {
    let rt = Runtime::builder(program.clone())
        .profile_str(spec)
        .expect("a valid spec")
        .jit(jit.then(JitOptions::default))
        .build();
    let mut out = Vec::new();
    let start = Instant::now();
    let r = rt.run(Input { args, file }, &mut out);
    let t = start.elapsed();
    match r {
        // A trap is a result like any other.
        Ok(_) | Err(toyvm::Error::Vm(toyvm_vm::Error::Trap(_))) => {}
        Err(e) => panic!("{spec}: {e}"),
    }
    t
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let runs: usize = std::env::var("TOYVM_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let bench_size = match std::env::var("TOYVM_STORMS_SIZE").as_deref() {
        Ok("bench") => true,
        Ok("test") | Err(_) => false,
        Ok(other) => panic!("TOYVM_STORMS_SIZE is `test` or `bench`, not `{other}`"),
    };
    let mut cases = common::all();
    let corpus = common::root().join("tests/corpus");
    for name in ["storm_call_and_print", "storm_calli_recursion"] {
        cases.push(common::load(&corpus.join(format!("{name}.tasm"))));
    }
    println!(
        "{:<24} {:>9} {:>12} {:>12}  worst (model:interval)",
        "program", "interp ms", "max jit/int", "max jit/mdl"
    );
    let mut over = Vec::new();
    // Of the pairs over 2x: those whose model alone (no JIT) is already over
    // 2x the interpreter, and those whose JIT run is over 2x the model alone.
    let (mut model_floor, mut jit_cost) = (0usize, 0usize);
    for case in &cases {
        if filter
            .as_ref()
            .is_some_and(|f| !case.name.contains(f.as_str()))
        {
            continue;
        }
        let Some(file) = case.input_or_skip() else {
            continue;
        };
        let program = toyvm_vm::asm::assemble(&case.source).expect("the suite assembles");
        let args = match (&case.bench_args, bench_size) {
            (Some(b), true) => b.clone(),
            _ => case.args.clone(),
        };
        let mut worst_int: (f64, String) = (0.0, String::new());
        let mut worst_mdl: (f64, String) = (0.0, String::new());
        let mut interp = Vec::new();
        for model in toyvm_profiler::spec::MODEL_NAMES {
            for interval in INTERVALS {
                let spec = format!("{model}:interval={interval}");
                let (mut j, mut m) = (Vec::new(), Vec::new());
                for _ in 0..runs {
                    interp.push(time(&program, &args, &file, "none", false));
                    m.push(time(&program, &args, &file, &spec, false));
                    j.push(time(&program, &args, &file, &spec, true));
                }
                let (j, m) = (median(j), median(m));
                let i = median(interp.clone());
                if j / i > worst_int.0 {
                    worst_int = (j / i, spec.clone());
                }
                if j / m > worst_mdl.0 {
                    worst_mdl = (j / m, spec.clone());
                }
                if j / i > 2.0 {
                    model_floor += usize::from(m / i > 2.0);
                    jit_cost += usize::from(j / m > 2.0);
                    over.push(format!(
                        "{} {spec}: jit {:.1} ms = {:.2}x interpreted ({:.2}x the model alone)",
                        case.name,
                        j * 1e3,
                        j / i,
                        j / m
                    ));
                }
            }
        }
        println!(
            "{:<24} {:>9.2} {:>12.2} {:>12.2}  {} / {}",
            case.name,
            median(interp) * 1e3,
            worst_int.0,
            worst_mdl.0,
            worst_int.1,
            worst_mdl.1
        );
    }
    println!(
        "\n{} pairs over 2x the interpreter ({model_floor} with the model alone over 2x the \
         interpreter, {jit_cost} with the JIT over 2x the model alone):",
        over.len()
    );
    for o in over {
        println!("  {o}");
    }
}

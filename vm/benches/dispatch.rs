//! Interpreter speed: ns per executed bytecode, and what tuple emission
//! costs.  Each program runs at a modest size; criterion's throughput is set
//! to the number of executed instructions, so "elements/s" is bytecodes/s.
//!
//! Variants per program:
//! - `off`: `NoSink`, emission compiled out (the interpreter without profiling);
//! - `masked`: a real sink with every kind switched off at run time;
//! - `all`: every tuple kind emitted into a sink that discards batches.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::tuple::{Discard, NoSink};
use toyvm_vm::{KindSet, Program, asm};

const PROGRAMS: &[(&str, &[i64])] = &[
    ("fib", &[24]),
    ("loop", &[1000]),
    ("sieve", &[1_000_000]),
    ("poly", &[1_000_000]),
];

fn load(name: &str) -> Option<Program> {
    let path = format!("{}/../programs/{name}.tasm", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).ok()?;
    Some(asm::assemble(&src).unwrap_or_else(|e| panic!("{path}: {e}")))
}

fn steps(p: &Program, args: &[i64]) -> u64 {
    let cfg = Config {
        count_steps: true,
        ..Config::default()
    };
    interp::run(p, Input { args, file: &[] }, &mut std::io::sink(), &cfg)
        .unwrap()
        .steps
        .unwrap()
}

fn dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("interp");
    for &(name, args) in PROGRAMS {
        let Some(p) = load(name) else {
            eprintln!("skipping {name}: programs/{name}.tasm not found");
            continue;
        };
        g.throughput(Throughput::Elements(steps(&p, args)));
        let input = || Input { args, file: &[] };
        g.bench_function(BenchmarkId::new(name, "off"), |b| {
            b.iter(|| {
                interp::run_with_sink(
                    &p,
                    input(),
                    &mut std::io::sink(),
                    &mut NoSink,
                    &Config::default(),
                )
            })
        });
        let masked = Config {
            kinds: KindSet::EMPTY,
            ..Config::default()
        };
        g.bench_function(BenchmarkId::new(name, "masked"), |b| {
            b.iter(|| {
                interp::run_with_sink(
                    &p,
                    input(),
                    &mut std::io::sink(),
                    &mut Discard::default(),
                    &masked,
                )
            })
        });
        g.bench_function(BenchmarkId::new(name, "all"), |b| {
            b.iter(|| {
                interp::run_with_sink(
                    &p,
                    input(),
                    &mut std::io::sink(),
                    &mut Discard::default(),
                    &Config::default(),
                )
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = dispatch
}
criterion_main!(benches);

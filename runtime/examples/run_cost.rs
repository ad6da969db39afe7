//! What a run costs before the program does anything: `Runtime::run` of a
//! two-instruction program, 200 times per configuration (no model, each
//! model alone, each model with the JIT), median and fastest. This is the
//! floor under every short run's ratio in `cargo bench --bench storms`:
//! a model's thread, tables and buffers; the JIT's code cache, natives and
//! compiler thread.
//!
//! Given a program (`.tasm` or `.bc`) and its arguments, the same table for
//! that program instead, with an optional `--interval N` for every model,
//! `--model NAME` for one model only and `--runs N` (default 200):
//!
//! `cargo run --release --example run_cost [-- PROGRAM [ARGS...] [--interval N] [--model NAME] [--runs N]]`

use std::time::Instant;

use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm::vm::interp::Input;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rest = Vec::new();
    let (mut interval, mut runs, mut only) = (None, 200usize, None);
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--interval" => interval = Some(argv.next().ok_or("--interval N")?.parse::<u64>()?),
            "--model" => only = Some(argv.next().ok_or("--model NAME")?),
            "--runs" => runs = argv.next().ok_or("--runs N")?.parse::<usize>()?.max(1),
            _ => rest.push(a),
        }
    }
    let (program, args) = match rest.split_first() {
        None => (
            toyvm::vm::asm::assemble(".func main(n)\n  li r1, 0\n  ret r1\n.end\n")?,
            vec![0],
        ),
        Some((path, args)) => (
            toyvm::vm::Program::load_any(&std::fs::read(path)?)?,
            args.iter()
                .map(|a| a.parse::<i64>())
                .collect::<Result<_, _>>()?,
        ),
    };
    println!(
        "{:<12} {:>22} {:>22} {:>12}",
        "profile", "run (us)", "run with JIT (us)", "model (us)"
    );
    for &model in std::iter::once(&"none").chain(toyvm::profiler::spec::MODEL_NAMES) {
        if only.as_ref().is_some_and(|m| m != model) {
            continue;
        }
        let spec = match interval {
            Some(i) if model != "none" => format!("{model}:interval={i}"),
            _ => model.to_owned(),
        };
        let mut cells = Vec::new();
        // The model's own time (inside the driver and the model) in the runs
        // without the JIT.
        let mut model_us = Vec::with_capacity(runs);
        for jit in [false, true] {
            let mut us = Vec::with_capacity(runs);
            for _ in 0..runs {
                let rt = Runtime::builder(program.clone())
                    .profile_str(&spec)?
                    .jit(jit.then(JitOptions::default))
                    .build();
                let start = Instant::now();
                let r = rt.run(
                    Input {
                        args: &args,
                        file: &[],
                    },
                    &mut std::io::sink(),
                );
                us.push(start.elapsed().as_secs_f64() * 1e6);
                match r {
                    Ok(report) if !jit => model_us.push(report.stats.profiler_seconds * 1e6),
                    // A trap is a result like any other.
                    Ok(_) | Err(toyvm::Error::Vm(toyvm::vm::Error::Trap(_))) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            us.sort_by(f64::total_cmp);
            cells.push(format!("{:8.1} (min {:6.1})", us[us.len() / 2], us[0]));
        }
        model_us.sort_by(f64::total_cmp);
        let model = model_us.get(model_us.len() / 2).copied().unwrap_or(0.0);
        println!("{spec:<12} {:>22} {:>22} {model:>12.1}", cells[0], cells[1]);
    }
    Ok(())
}

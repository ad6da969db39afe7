//! The WebAssembly differential campaign with the JIT: modules from
//! wasm-smith (the configuration of wasm/tests/common/fuzz.rs), each export
//! with integer parameters run under wasmi, toyvm's interpreter, and
//! toyvm's JIT under every profiler model (lab/tests/wasm_jit), on all
//! cores.
//!
//! ```sh
//! cargo run -p toyvm-lab --release --example wasm_campaign -- --modules 2000 --seed 1
//! cargo run -p toyvm-lab --release --example wasm_campaign -- --seed 1 --only 417   # one module again
//! ```
//!
//! Module `k` of seed `s` is wasm-smith's module for seed
//! `s * 1_000_003 + k` (as `wasm_fuzz` numbers them). Every mismatch is
//! printed with its seed; the status is 1 when there is one.

#[path = "../../wasm/tests/common/mod.rs"]
mod common;
#[path = "../tests/wasm_jit/mod.rs"]
mod wasm_jit;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use common::fuzz::{Stats, fuzz_with, module_seed};
use wasm_jit::Totals;

fn usage(msg: &str) -> ! {
    eprintln!(
        "wasm_campaign: {msg}\nusage: wasm_campaign [--modules N] [--seed S] [--only K] [--save DIR]"
    );
    std::process::exit(2)
}

/// Module seeds being checked, for the panic hook.
static IN_FLIGHT: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn main() {
    let (mut modules, mut seed, mut only, mut save) = (2000u64, 1u64, None, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let num = || -> u64 {
            value
                .parse()
                .unwrap_or_else(|_| usage(&format!("bad number `{value}`")))
        };
        match flag.as_str() {
            "--modules" => modules = num(),
            "--seed" => seed = num(),
            "--only" => only = Some(num()),
            "--save" => save = Some(std::path::PathBuf::from(&value)),
            _ => usage(&format!("unknown flag `{flag}`")),
        }
    }
    std::panic::set_hook(Box::new(|info| {
        eprintln!("PANIC: {info}");
        for s in IN_FLIGHT.lock().map(|v| v.clone()).unwrap_or_default() {
            eprintln!("  in flight: module seed {s}");
        }
    }));
    let indices: Vec<u64> = match only {
        Some(k) => vec![k],
        None => (0..modules).collect(),
    };
    let configs = wasm_jit::configs();
    let total = indices.len() as u64;
    eprintln!(
        "{total} modules x {} models on {} threads, seed {seed}",
        configs.len(),
        rayon::current_num_threads()
    );
    let start = Instant::now();
    let done = AtomicU64::new(0);
    let all = Mutex::new((Stats::default(), Totals::default()));
    let step = (total / 20).max(1);
    indices.par_iter().for_each(|&k| {
        let s = module_seed(seed, k);
        IN_FLIGHT.lock().unwrap().push(s);
        let mut stats = Stats::default();
        let mut totals = Totals::default();
        fuzz_with(s, &mut stats, &mut |case| {
            wasm_jit::check(case, &configs, &mut totals)
        });
        IN_FLIGHT.lock().unwrap().retain(|&x| x != s);
        if !stats.mismatches.is_empty() {
            for m in &stats.mismatches {
                eprintln!("MISMATCH (module {k}) {m}");
            }
            if let (Some(dir), Some(wasm)) = (&save, common::fuzz::module_for(s)) {
                let _ = std::fs::create_dir_all(dir);
                let path = dir.join(format!("seed{seed}-module{k}.wasm"));
                match std::fs::write(&path, wasm) {
                    Ok(()) => eprintln!("  written to {}", path.display()),
                    Err(e) => eprintln!("  cannot write {}: {e}", path.display()),
                }
            }
        }
        {
            let mut a = all.lock().unwrap();
            a.0.add(stats);
            a.1.add(&totals);
        }
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(step) || n == total {
            let a = all.lock().unwrap();
            eprintln!(
                "{n}/{total} modules, {} JIT runs ({} entered compiled code), {} mismatches, {:.0} s",
                a.1.runs,
                a.1.compiled_runs,
                a.0.mismatches.len(),
                start.elapsed().as_secs_f64()
            );
        }
    });
    let (stats, t) = all.into_inner().unwrap();
    println!(
        "{} modules ({} with bulk memory operators); {} export runs compared wasmi / interpreter; \
         {} JIT runs ({} models) compared with the interpreter, {} of them entered compiled code ({} compiles, \
         {} region entries); {} fuel-limited Runtime::run runs; {} mismatches; {:.0} s",
        stats.modules,
        stats.bulk,
        stats.compared,
        t.runs,
        configs.len(),
        t.compiled_runs,
        t.compiles,
        t.region_entries,
        t.fuel_runs,
        stats.mismatches.len(),
        start.elapsed().as_secs_f64()
    );
    for (spec, (runs, compiled)) in &t.by_model {
        println!("  --profile {spec}: {runs} runs, {compiled} entered compiled code");
    }
    for (why, n) in &stats.skipped {
        println!("skipped {n}: {why}");
    }
    for m in &stats.mismatches {
        println!("MISMATCH {m}");
    }
    if !stats.mismatches.is_empty() {
        std::process::exit(1);
    }
}

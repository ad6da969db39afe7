//! The long differential campaign: modules from wasm-smith run under wasmi
//! and toyvm's interpreter (see wasm/tests/common/fuzz.rs).
//!
//! `cargo run -p toyvm-wasm --release --example wasm_fuzz -- --modules 2000 --seed 1`

#[path = "../tests/common/mod.rs"]
mod common;

use common::fuzz::{Stats, fuzz, module_seed};

fn main() {
    let mut modules = 2000u64;
    let mut seed = 1u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match (a.as_str(), value) {
            ("--modules", Some(v)) => modules = v,
            ("--seed", Some(v)) => seed = v,
            _ => {
                eprintln!("usage: wasm_fuzz [--modules N] [--seed S]");
                std::process::exit(2);
            }
        }
    }
    let mut stats = Stats::default();
    let start = std::time::Instant::now();
    for i in 0..modules {
        fuzz(module_seed(seed, i), &mut stats);
    }
    println!(
        "{} modules ({} with bulk memory operators), {} export runs compared, {} mismatches, {:.1} s",
        stats.modules,
        stats.bulk,
        stats.compared,
        stats.mismatches.len(),
        start.elapsed().as_secs_f64()
    );
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

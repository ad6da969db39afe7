//! A short run of the WebAssembly campaign with the JIT (fixed seeds): 30
//! wasm-smith modules, each export under wasmi, the interpreter and the JIT
//! with every model. The long campaign is
//! `cargo run -p toyvm-lab --release --example wasm_campaign -- --modules N --seed S`.

#[path = "../../wasm/tests/common/mod.rs"]
mod common;
mod wasm_jit;

use common::fuzz::{Stats, corpus, fuzz_module, fuzz_with, module_seed};

#[test]
fn generated_modules_run_alike_under_wasmi_the_interpreter_and_the_jit() {
    let configs = wasm_jit::configs();
    let mut stats = Stats::default();
    let mut totals = wasm_jit::Totals::default();
    for k in 0..30 {
        fuzz_with(module_seed(20261127, k), &mut stats, &mut |case| {
            wasm_jit::check(case, &configs, &mut totals)
        });
    }
    eprintln!("{stats:?}\n{totals:?}");
    assert!(stats.mismatches.is_empty(), "{:#?}", stats.mismatches);
    assert!(totals.runs >= 30 * configs.len() as u64 / 2, "{totals:?}");
    // The short intervals make the JIT compile: some runs enter its code.
    assert!(totals.compiled_runs > 0, "{totals:?}");
}

#[test]
fn the_corpus_runs_alike_under_the_jit() {
    let configs = wasm_jit::configs();
    let mut stats = Stats::default();
    let mut totals = wasm_jit::Totals::default();
    for (_, wasm) in corpus() {
        for seed in 0..3 {
            fuzz_module(seed, &wasm, &mut stats, &mut |case| {
                wasm_jit::check(case, &configs, &mut totals)
            });
        }
    }
    assert!(stats.mismatches.is_empty(), "{:#?}", stats.mismatches);
    assert!(totals.runs > 0, "{totals:?}");
}

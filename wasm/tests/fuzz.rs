//! A short run of the differential fuzzer (fixed seeds); the long campaign
//! is `cargo run -p toyvm-wasm --release --example wasm_fuzz -- --modules N --seed S`.

mod common;

use common::fuzz::{Stats, fuzz};

#[test]
fn generated_modules_run_alike_under_wasmi_and_toyvm() {
    let mut stats = Stats::default();
    for seed in 0..300u64 {
        fuzz(seed.wrapping_mul(0x9e37_79b9) ^ 20261127, &mut stats);
    }
    eprintln!("{stats:?}");
    assert!(stats.mismatches.is_empty(), "{:#?}", stats.mismatches);
    // The subset is what the generator makes: most runs compare.
    assert!(stats.compared >= 300, "{stats:?}");
    // Bulk memory is in the configuration, and in the modules.
    assert!(stats.bulk >= 30, "{stats:?}");
    // So are its table operators.
    assert!(stats.table_ops >= 10, "{stats:?}");
}

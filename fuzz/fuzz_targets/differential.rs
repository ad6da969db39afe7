//! Differential fuzzing of the JIT: the input's bytes are the choices of
//! `toyvm_lab::fuzzgen::generate` (the same generator the proptest and the
//! campaign use), and the program must give the interpreter's output, value
//! and trap under every JIT configuration.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use toyvm_lab::fuzzgen::{self, Bytes, DiffConfig};

fn configs() -> &'static [DiffConfig] {
    static CONFIGS: OnceLock<Vec<DiffConfig>> = OnceLock::new();
    CONFIGS.get_or_init(fuzzgen::configs)
}

fuzz_target!(|data: &[u8]| {
    let case = fuzzgen::generate(&mut Bytes::new(data));
    if let Err(m) = fuzzgen::check(&case, configs()) {
        panic!("{m}");
    }
});

//! Any byte string given to the loader is either rejected with an error or
//! is a verified program that runs (within a fuel budget) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::Program;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Program::load_any(data) {
        // The canonical encoding must load back to the same program.
        assert_eq!(Program::load(&p.to_bytes()).unwrap(), p);
        let cfg = Config { fuel: Some(100_000), ..Config::default() };
        let args = vec![7i64; p.entry_function().params as usize];
        let _ = interp::run(&p, Input { args: &args, file: b"input" }, &mut std::io::sink(), &cfg);
    }
});

//! The WebAssembly front-end on arbitrary bytes: translation returns a
//! verified program or an error, never panics; a translated program runs
//! (with a fuel limit and no host) to an outcome or a trap, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toyvm_vm::interp::{self, Call, Config, NoHostFunctions, NoJit};
use toyvm_vm::tuple::NoSink;
use toyvm_wasm::{Entry, Options, translate};

fuzz_target!(|data: &[u8]| {
    let opts = Options {
        entry: Entry::InstantiateOnly,
        max_memory_pages: 16,
        ..Options::default()
    };
    let Ok(t) = translate(data, &opts) else {
        return;
    };
    let Ok(mut mem) = interp::memory(&t.program, &[]) else {
        return;
    };
    let cfg = Config {
        fuel: Some(100_000),
        max_depth: 1000,
        ..Config::default()
    };
    // Instantiation first, then every export without parameters.
    let funcs = std::iter::once(t.init)
        .chain(t.exports.iter().filter(|e| e.params.is_empty()).map(|e| e.function));
    for func in funcs {
        let call = Call {
            func,
            args: &[],
            input_len: 0,
        };
        let (result, _) = interp::call_with_host(
            &t.program,
            &mut mem,
            call,
            &mut std::io::sink(),
            &mut NoJit(&mut NoSink),
            &mut NoHostFunctions,
            &cfg,
        );
        if result.is_err() {
            return;
        }
    }
});

//! Times `fib(n)` (programs/fib.tasm's function) interpreted and as a
//! native function entered through its whole-function region.
//!
//! ```text
//! cargo run --release -p toyvm-optimizer --example native_fib -- 32
//! ```

use std::time::Instant;

use toyvm_optimizer::{CodeCache, DEFAULT_MAX_DEPTH};
use toyvm_vm::{asm, interp};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: i64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(32);
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../programs/fib.tasm"))?;
    let program = asm::assemble(&src)?;
    let fib = program.function_index("fib").ok_or("no fib")?;

    let start = Instant::now();
    let mut out = Vec::new();
    let input = interp::Input {
        args: &[n],
        file: &[],
    };
    interp::run(&program, input, &mut out, &Default::default())?;
    let interpreted = start.elapsed();
    let expected: i64 = String::from_utf8(out)?.trim().parse()?;

    let start = Instant::now();
    let mut cache = CodeCache::new()?;
    let region = cache.compile_function(&program, fib)?;
    let compile = start.elapsed();
    let stack = cache.native_stack_bytes(DEFAULT_MAX_DEPTH);
    let (value, native) = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let mut regs = [0i64; 256];
            regs[0] = n;
            let mut counters = vec![0; region.counters_len()];
            let start = Instant::now();
            let exit = region
                .run_with(
                    &mut regs,
                    &mut interp::Memory::from(Vec::new()),
                    &mut counters,
                    1,
                    DEFAULT_MAX_DEPTH,
                )
                .expect("fib does not trap");
            let elapsed = start.elapsed();
            let ret = &program.functions[fib as usize].code[exit.resume as usize];
            let toyvm_vm::isa::Instr::Ret { a } = *ret else {
                panic!("not a ret: {ret:?}")
            };
            (regs[a as usize], elapsed)
        })?
        .join()
        .expect("the native run does not panic");
    assert_eq!(value, expected);
    println!(
        "fib({n}) = {value}: interpreter {interpreted:?}, native {native:?} ({:.1}x), compile {compile:?}, stack {stack} bytes",
        interpreted.as_secs_f64() / native.as_secs_f64()
    );
    Ok(())
}

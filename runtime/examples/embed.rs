//! Embedding toyvm: run a program under a profiler model with the JIT and
//! read back what happened.
//!
//! `cargo run --example embed`

use toyvm::Runtime;
use toyvm::engine::{Engine, Instance, Module};
use toyvm::vm::asm;
use toyvm::vm::interp::Input;

const SOURCE: &str = "
    # Sum of i * (i % 8) for i in 1..=n: a hot loop the JIT compiles.
    .func main(n)
        .reg acc, i, t
        li acc, 0
        li i, 1
    top:
        remi t, i, 8
        mul t, t, i
        add acc, acc, t
        loop i, n, top
        putn acc
        li t, 10
        putc t
        ret acc
    .end
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let program = asm::assemble(SOURCE)?;
    let runtime = Runtime::builder(program)
        .profile_str("multihash:interval=10000,threshold=1%")?
        .count_instructions(true)
        .build();
    let mut out = Vec::new();
    let report = runtime.run(
        Input {
            args: &[5_000_000],
            file: &[],
        },
        &mut out,
    )?;
    print!("program printed {}", String::from_utf8_lossy(&out));
    let s = &report.stats;
    println!(
        "{} intervals, {} candidates, model state {} bytes",
        s.intervals, s.candidates, s.state_bytes
    );
    if let Some(jit) = &s.jit {
        println!(
            "{} regions compiled in {:.3} ms, {} region entries, {:.3} s in compiled code",
            jit.compiles,
            jit.compile_seconds * 1e3,
            jit.region_entries,
            jit.compiled_seconds
        );
    }
    println!(
        "{:.3} s wall, {:.3} s interpreting",
        s.wall_seconds, s.interpreter_seconds
    );

    // Embedded instead: the program as a module, `main` looked up once
    // (checked to take one argument) and called as often as the host
    // likes, the compiled loop kept from call to call.
    let engine = Engine::builder()
        .profile_str("multihash:interval=10000,threshold=1%")?
        .build();
    let module = Module::new(&engine, runtime.program().clone())?;
    let mut instance = Instance::new(&module)?;
    instance.set_output(std::io::sink());
    let main = instance.get_typed_func::<1>("main")?;
    for n in [100_000, 1_000_000] {
        let value = main.call(&mut instance, [n])?;
        let compiles = instance.stats().jit.map_or(0, |j| j.compiles);
        println!("main({n}) = {value}; {compiles} regions compiled so far");
    }
    Ok(())
}

//! What a run costs before the program does anything: `Runtime::run` of a
//! two-instruction program, 200 times per configuration (no model, each
//! model alone, each model with the JIT), median and fastest. This is the
//! floor under every short run's ratio in `cargo bench --bench storms`:
//! a model's thread, tables and buffers; the JIT's code cache, natives and
//! compiler thread.
//!
//! `cargo run --release --example run_cost`

use std::time::Instant;

use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm_vm::interp::Input;

fn main() -> Result<(), toyvm::Error> {
    let p = toyvm_vm::asm::assemble(".func main(n)\n  li r1, 0\n  ret r1\n.end\n")
        .map_err(toyvm::Error::from)?;
    println!(
        "{:<12} {:>22} {:>22}",
        "profile", "run (us)", "run with JIT (us)"
    );
    for &spec in std::iter::once(&"none").chain(toyvm_profiler::spec::MODEL_NAMES) {
        let mut cells = Vec::new();
        for jit in [false, true] {
            let mut us = Vec::with_capacity(200);
            for _ in 0..200 {
                let rt = Runtime::builder(p.clone())
                    .profile_str(spec)?
                    .jit(jit.then(JitOptions::default))
                    .build();
                let start = Instant::now();
                rt.run(
                    Input {
                        args: &[0],
                        file: &[],
                    },
                    &mut std::io::sink(),
                )?;
                us.push(start.elapsed().as_secs_f64() * 1e6);
            }
            us.sort_by(f64::total_cmp);
            cells.push(format!("{:8.1} (min {:6.1})", us[us.len() / 2], us[0]));
        }
        println!("{spec:<12} {:>22} {:>22}", cells[0], cells[1]);
    }
    Ok(())
}

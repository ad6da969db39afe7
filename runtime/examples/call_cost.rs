//! What one host-to-guest call costs: 20,000 calls of a function that
//! returns its argument, on an interpreter-only engine and on one with the
//! JIT on (both on the caller's thread: compiled code checks the stack
//! against a limit near the end of the thread's stack, see
//! `toyvm::optimizer::stack`). Before compiled code ran on the caller's
//! thread, a JIT call was handed to the instance's own thread and back:
//! 1.5 us against 0.1 us (issue 38).
//!
//! `cargo run --release --example call_cost`

use toyvm::engine::{Engine, Instance, Module};

fn main() -> Result<(), toyvm::Error> {
    let src = ".func id(n)\n  ret n\n.end\n.func main()\n  li r0, 0\n  ret r0\n.end\n";
    for profile in ["none", "multihash"] {
        let engine = Engine::builder().profile_str(profile)?.build();
        let module = Module::from_bytes(&engine, src.as_bytes())?;
        let mut instance = Instance::new(&module)?;
        let n = 20_000;
        let start = std::time::Instant::now();
        for k in 0..n {
            assert_eq!(instance.call("id", &[k])?, k);
        }
        let per_call = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("--profile {profile}: {per_call:.1} us per call");
    }
    Ok(())
}

//! What one host-to-guest call costs: 20,000 calls of a function that
//! returns its argument, on an interpreter-only engine and on one with the
//! JIT on (both on the caller's thread: compiled code checks the stack
//! against a limit near the end of the thread's stack, see
//! `toyvm::optimizer::stack`). Before compiled code ran on the caller's
//! thread, a JIT call was handed to the instance's own thread and back:
//! 1.5 us against 0.1 us (issue 38).
//!
//! Each engine is timed calling by name (`Instance::call`) and through a
//! handle looked up once (`Instance::get_typed_func`).
//!
//! `cargo run --release --example call_cost` (7 alternated rounds: median
//! and range in nanoseconds).

use toyvm::engine::{Engine, Instance, Module};

fn main() -> Result<(), toyvm::Error> {
    let src = ".func id(n)\n  ret n\n.end\n.func main()\n  li r0, 0\n  ret r0\n.end\n";
    let profiles = ["none", "multihash"];
    let mut instances = Vec::new();
    for profile in profiles {
        let engine = Engine::builder().profile_str(profile)?.build();
        let module = Module::from_bytes(&engine, src.as_bytes())?;
        instances.push(Instance::new(&module)?);
    }
    // Rounds alternate the engines and the two ways to call (by name, and
    // through a handle looked up once); each round times 20,000 calls.
    let (rounds, n) = (7, 20_000);
    let ways = ["by name", "by handle"];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); profiles.len() * ways.len()];
    for _ in 0..rounds {
        for (e, instance) in instances.iter_mut().enumerate() {
            let id = instance.get_typed_func::<1>("id")?;
            for (w, _) in ways.iter().enumerate() {
                let start = std::time::Instant::now();
                for k in 0..n {
                    let v = if w == 0 {
                        instance.call("id", &[k])?
                    } else {
                        id.call(instance, [k])?
                    };
                    assert_eq!(v, k);
                }
                ns[e * ways.len() + w].push(start.elapsed().as_secs_f64() * 1e9 / n as f64);
            }
        }
    }
    for (i, mut t) in ns.into_iter().enumerate() {
        t.sort_by(f64::total_cmp);
        println!(
            "--profile {}, {}: {:.0} ns per call (median of {rounds} rounds; range {:.0}-{:.0})",
            profiles[i / ways.len()],
            ways[i % ways.len()],
            t[t.len() / 2],
            t[0],
            t[t.len() - 1]
        );
    }
    Ok(())
}

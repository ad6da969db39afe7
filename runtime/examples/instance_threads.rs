//! Instances of one module on several threads: each has its own memory,
//! profile and installed regions, and they share the module's compiled
//! code, so a region one instance compiled is installed by the others
//! without running Cranelift again.
//!
//! `cargo run --example instance_threads`

use toyvm::engine::{Engine, Instance, Module};

const GUEST: &str = "
# collatz(n): the steps n takes to reach 1.
.func collatz(n)
  li r1, 0
top:
  beqi n, 1, done
  andi r2, n, 1
  jz r2, even
  muli n, n, 3
  addi n, n, 1
  jmp next
even:
  shri n, n, 1
next:
  addi r1, r1, 1
  jmp top
done:
  ret r1
.end
# longest(lo, hi): the most steps of any start in lo..=hi.
.func longest(lo, hi)
  li r3, 0
loop:
  call r4, collatz, lo, 1
  ble r4, r3, skip
  mov r3, r4
skip:
  loop lo, hi, loop
  ret r3
.end
.func main()
  li r0, 0
  ret r0
.end
";

/// Runs the example on `threads` threads; returns what it prints.
pub fn run(threads: i64) -> Result<String, toyvm::Error> {
    let engine = Engine::builder()
        .profile_str("multihash:interval=5000")?
        .build();
    let module = Module::from_bytes(&engine, GUEST.as_bytes())?;
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let module = module.clone();
                s.spawn(move || -> Result<_, toyvm::Error> {
                    let mut instance = Instance::new(&module)?;
                    let lo = 1 + t * 20_000;
                    let best = instance.call("longest", &[lo, lo + 19_999])?;
                    Ok((lo, best, instance.stats().jit.unwrap_or_default()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let mut text = String::new();
    for (lo, best, jit) in &results {
        text += &format!(
            "{lo}..={}: longest {best} steps; {} compiles, {} of them shared\n",
            lo + 19_999,
            jit.compiles + jit.recompiles,
            jit.shared
        );
    }
    text += &format!(
        "Cranelift compiled {} regions for all {threads} instances\n",
        module.compiled()
    );
    Ok(text)
}

#[allow(dead_code)]
fn main() -> Result<(), toyvm::Error> {
    print!("{}", run(4)?);
    Ok(())
}

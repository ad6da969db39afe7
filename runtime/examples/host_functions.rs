//! Host functions: the guest imports functions by name (`.import NAME N`)
//! and calls them with `hcall`; the host offers them when it makes the
//! instance. Here the guest asks the host for each element of a series
//! (the host keeps state between calls: a random-number generator) and
//! reports progress through a host function that reads guest memory.
//!
//! `cargo run --example host_functions`

use std::sync::{Arc, Mutex};

use toyvm::engine::{Engine, Imports, Instance, Module};

const GUEST: &str = "
.import next_random 1
.import report 2
.memory 1024
# stats(n): draws n numbers below 1000 from the host; keeps their sum at
# address 0 and their maximum at 1, tells the host every 10000 draws.
.func stats(n)
  li r1, 0
  li r2, 0
  li r3, 1
  li r9, 1000
top:
  hcall r4, next_random, r9, 1
  add r1, r1, r4
  ble r4, r2, small
  mov r2, r4
small:
  remi r5, r3, 10000
  jnz r5, next
  li r6, 0
  st r6, 0, r1
  st r6, 1, r2
  mov r7, r6
  mov r8, r3
  hcall r5, report, r7, 2
next:
  loop r3, n, top
  li r6, 0
  st r6, 0, r1
  st r6, 1, r2
  ret r1
.end
.func main()
  li r0, 0
  ret r0
.end
";

/// Runs the example; returns what it prints.
pub fn run() -> Result<String, toyvm::Error> {
    let engine = Engine::builder()
        .profile_str("multihash:interval=5000")?
        .build();
    let module = Module::from_bytes(&engine, GUEST.as_bytes())?;
    let log = Arc::new(Mutex::new(String::new()));
    let mut imports = Imports::new();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    imports.define("next_random", 1, move |args, _mem| {
        // xorshift64*, below args[0].
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33;
        let bound = u64::try_from(args[0]).map_err(|_| "a negative bound".to_owned())?;
        Ok((r % bound.max(1)) as i64)
    });
    let sink = Arc::clone(&log);
    imports.define("report", 2, move |args, mem| {
        let at = usize::try_from(args[0]).map_err(|_| "a negative address".to_owned())?;
        let words = mem.get(at..at + 2).ok_or("report: address out of bounds")?;
        let line = format!(
            "after {} draws: sum {}, max {}\n",
            args[1], words[0], words[1]
        );
        sink.lock().expect("the log").push_str(&line);
        Ok(0)
    });
    let mut instance = Instance::with_imports(&module, imports, &[])?;
    let sum = instance.call("stats", &[50_000])?;
    let mut text = log.lock().expect("the log").clone();
    text += &format!(
        "stats(50000) = {sum}; mean {:.1}; {} regions compiled, {} region entries\n",
        sum as f64 / 50_000.0,
        instance.stats().jit.unwrap_or_default().compiles,
        instance.stats().jit.unwrap_or_default().region_entries
    );
    // A module importing something the host does not offer is refused.
    if let Err(e) = Instance::new(&module) {
        text += &format!("without imports: {e}\n");
    }
    Ok(text)
}

#[allow(dead_code)]
fn main() -> Result<(), toyvm::Error> {
    print!("{}", run()?);
    Ok(())
}

//! Limits with the JIT on: fuel that compiled code counts exactly, a
//! call-depth limit that native recursion honours, and a memory limit
//! checked before anything runs. Each failure says which limit it hit.
//!
//! `cargo run --example limits`

use toyvm::engine::{Engine, Instance, Module};
use toyvm::runtime::Limits;

const GUEST: &str = "
.memory 100000
# spin(n): n iterations of a loop the JIT compiles.
.func spin(n)
  li r1, 0
  li r2, 1
top:
  add r1, r1, r2
  loop r2, n, top
  ret r1
.end
# depth(n): recursion n calls deep.
.func depth(n)
  jz n, base
  subi r1, n, 1
  call r2, depth, r1, 1
  addi r2, r2, 1
  ret r2
base:
  li r2, 0
  ret r2
.end
.func main()
  li r0, 0
  ret r0
.end
";

fn engine(limits: Limits) -> Result<Engine, toyvm::Error> {
    Ok(Engine::builder()
        .profile_str("multihash:interval=1000")?
        .limits(limits)
        .build())
}

/// Runs the example; returns what it prints.
pub fn run() -> Result<String, toyvm::Error> {
    let mut text = String::new();
    // Fuel: the instance's budget spans its calls.
    let fueled = engine(Limits {
        fuel: Some(1_000_000),
        ..Limits::default()
    })?;
    let mut instance = Instance::new(&Module::from_bytes(&fueled, GUEST.as_bytes())?)?;
    for _ in 0..3 {
        match instance.call("spin", &[200_000]) {
            Ok(v) => text += &format!("spin = {v}, fuel left {:?}\n", instance.fuel()),
            Err(e) => text += &format!("{e}\n"),
        }
    }
    text += &format!(
        "region entries under the limit: {}\n",
        instance.stats().jit.unwrap_or_default().region_entries
    );
    // Call depth: native recursion stops where the interpreter would.
    let shallow = engine(Limits {
        max_depth: 500,
        ..Limits::default()
    })?;
    let mut instance = Instance::new(&Module::from_bytes(&shallow, GUEST.as_bytes())?)?;
    for n in [400, 400, 400, 600] {
        match instance.call("depth", &[n]) {
            Ok(v) => text += &format!("depth({n}) = {v}\n"),
            Err(e) => text += &format!("depth({n}): {e}\n"),
        }
    }
    // Memory: a module over the limit is refused before it runs.
    let small = engine(Limits {
        max_memory_words: Some(65_536),
        ..Limits::default()
    })?;
    if let Err(e) = Module::from_bytes(&small, GUEST.as_bytes()) {
        text += &format!("{e}\n");
    }
    Ok(text)
}

#[allow(dead_code)]
fn main() -> Result<(), toyvm::Error> {
    print!("{}", run()?);
    Ok(())
}

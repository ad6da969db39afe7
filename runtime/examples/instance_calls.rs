//! One instance, many calls: the host writes guest memory, calls guest
//! functions by name again and again, and the profile and compiled code
//! carry over from call to call (the second call of `sum` runs natively
//! what the first one compiled: `sum` whole, found by its hot loop).
//!
//! `cargo run --example instance_calls`

use toyvm::engine::{Engine, Instance, Module};

const GUEST: &str = "
.memory 65536
# sum(addr, len): the sum of memory words addr .. addr+len.
.func sum(addr, len)
  li r2, 0
  jz len, done
  add r3, addr, len
top:
  ld r4, addr, 0
  add r2, r2, r4
  addi addr, addr, 1
  blt addr, r3, top
done:
  ret r2
.end
# scale(addr, len, k): multiplies each word by k in place.
.func scale(addr, len, k)
  jz len, done
  add r3, addr, len
top:
  ld r4, addr, 0
  mul r4, r4, k
  st addr, 0, r4
  addi addr, addr, 1
  blt addr, r3, top
done:
  ret len
.end
.func main()
  li r0, 0
  ret r0
.end
";

/// Runs the example; returns what it prints.
pub fn run() -> Result<String, toyvm::Error> {
    let engine = Engine::builder()
        .profile_str("multihash:interval=2000")?
        .count_instructions(true)
        .build();
    let module = Module::from_bytes(&engine, GUEST.as_bytes())?;
    let mut instance = Instance::new(&module)?;
    let data: Vec<i64> = (1..=50_000).collect();
    instance.write(0, &data)?;
    let mut text = String::new();
    for call in 1..=3 {
        let before = instance.stats();
        let total = instance.call("sum", &[0, 50_000])?;
        let after = instance.stats();
        let jit = after.jit.clone().unwrap_or_default();
        let was = before.jit.unwrap_or_default();
        text += &format!(
            "call {call}: sum = {total}; interpreted {} instructions, {} new compiles, {} region entries\n",
            after.instructions - before.instructions,
            jit.compiles - was.compiles,
            jit.region_entries - was.region_entries,
        );
    }
    instance.call("scale", &[0, 50_000, 3])?;
    text += &format!(
        "after scale(.., 3): sum = {}, word 9 = {}\n",
        instance.call("sum", &[0, 50_000])?,
        instance.read(9, 1)?[0]
    );
    text += &format!(
        "{} regions compiled for the module; {} calls\n",
        module.compiled(),
        instance.stats().calls
    );
    Ok(text)
}

#[allow(dead_code)]
fn main() -> Result<(), toyvm::Error> {
    print!("{}", run()?);
    Ok(())
}

//! Open native functions (see `toyvm::optimizer::native`): a function that
//! stores and calls functions with output (or a `calli` that may reach
//! one) runs compiled whole, calls the interpreter for those callees and
//! goes on. Its output, value, trap and fuel count are the interpreter's,
//! whichever callee prints, bails, traps or halts.

use toyvm::Runtime;
use toyvm::optimizer::Native;
use toyvm::runtime::JitOptions;
use toyvm::vm::asm;
use toyvm::vm::interp::Input;

/// `main(n)`: `n / 10` calls of `work(i)` (which counts them in word 62,
/// printed at the end: a call run twice would show), under mode `n % 10` (kept in
/// word 63): 1 makes `work`'s `calli` value bad at i = 500, 2 makes `show`
/// divide by zero at x = 700, 3 makes it `halt` at x = 800.
const SRC: &str = "
.memory 64
.func show(x)            # f0: output: interpreted
  .reg m, t
  putn x
  li t, 63
  ld m, t, 0
  bnei m, 2, nodiv
  subi t, x, 700
  li m, 1000
  div m, m, t
nodiv:
  li t, 63
  ld m, t, 0
  bnei m, 3, nohalt
  bnei x, 800, nohalt
  halt x
nohalt:
  ret x
.end
.func odd(x)             # f1: no side effect but output on odd values: bails
  .reg t
  andi t, x, 1
  jz t, even
  putn x
  ret x
even:
  addi x, x, 1
  ret x
.end
.func triple(x)          # f2: pure
  muli x, x, 3
  ret x
.end
.func deep(x)            # f3: stores, recurses, calls show at the bottom: open
  .reg t, v
  andi t, x, 63
  st t, 0, x
  jz x, bottom
  subi t, x, 1
  call v, deep, t, 1
  addi v, v, 1
  ret v
bottom:
  call v, show, x, 1
  ret v
.end
.func work(i)            # f4: counts its calls, calli among all four, show every 8th: open
  .reg f, v, t, m
  li t, 62
  ld m, t, 0
  addi m, m, 1
  st t, 0, m
  andi f, i, 3
  li t, 63
  ld m, t, 0
  bnei m, 1, call
  bnei i, 500, call
  li f, 77
call:
  andi t, i, 7
  calli v, f, i, 1
  jnz t, done
  call t, show, v, 1
  andi t, i, 15
  call t, deep, t, 1
  add v, v, t
done:
  ret v
.end
.func main(n)
  .reg i, m, k, s, t
  remi m, n, 10
  divi k, n, 10
  li t, 63
  st t, 0, m
  li i, 0
  li s, 0
top:
  call t, work, i, 1
  add s, s, t
  xor s, s, i
  loop i, k, top
  putn s
  li t, 62
  ld t, t, 0
  putn t
  ret s
.end
";

/// The run's value (or error), output, and the JIT's interpreter calls
/// and compiles.
fn run(arg: i64, spec: Option<&str>, fuel: Option<u64>) -> (Result<i64, String>, Vec<u8>, u64) {
    let program = asm::assemble(SRC).unwrap();
    let mut out = Vec::new();
    let r = Runtime::builder(program)
        .profile_str(spec.unwrap_or("none"))
        .unwrap()
        .jit(spec.map(|_| JitOptions::default()))
        .fuel(fuel)
        .build()
        .run(
            Input {
                args: &[arg],
                file: &[],
            },
            &mut out,
        );
    let calls = r
        .as_ref()
        .ok()
        .and_then(|r| r.stats.jit.as_ref())
        .map_or(0, |j| j.interpreter_calls);
    (
        r.map(|r| r.outcome.value).map_err(|e| e.to_string()),
        out,
        calls,
    )
}

#[test]
fn the_functions_are_what_the_test_says() {
    let program = asm::assemble(SRC).unwrap();
    assert_eq!(
        toyvm::optimizer::native_functions(&program),
        [
            Native::No,
            Native::Bails,
            Native::Pure,
            Native::Open,
            Native::Open,
            Native::No
        ]
    );
}

#[test]
fn open_functions_call_the_interpreter_and_go_on_exactly() {
    let specs = ["perfect:interval=200", "multihash:interval=500"];
    // Modes 0 to 3 (none, a bad `calli` value, division by zero in the
    // interpreted callee, `halt` there), each interpreted and under the
    // JIT.
    for arg in [30_000, 30_001, 30_002, 30_003] {
        let (want, want_out, _) = run(arg, None, None);
        for spec in specs {
            let (got, got_out, calls) = run(arg, Some(spec), None);
            assert_eq!(got, want, "{arg} {spec}");
            assert_eq!(
                String::from_utf8_lossy(&got_out),
                String::from_utf8_lossy(&want_out),
                "{arg} {spec}"
            );
            // Compiled code called the interpreter: `work` ran natively
            // and carried on after its interpreted callees.
            assert!(calls > 100, "{arg} {spec}: {calls} interpreter calls");
        }
    }
    // Fuel that ends the run partway: compiled code counts a block at a
    // time, so it may stop up to a block later than the interpreter, with
    // the interpreter's output so far and no more than the whole run's.
    let out_of_fuel =
        |r: &Result<i64, String>| r.as_ref().is_err_and(|e| e.contains("out of fuel"));
    let (_, whole, _) = run(30_000, None, None);
    for fuel in [5_000, 150_000, 333_333] {
        let (cut, cut_out, _) = run(30_000, None, Some(fuel));
        assert!(out_of_fuel(&cut), "{cut:?}");
        for spec in specs {
            let (got, got_out, _) = run(30_000, Some(spec), Some(fuel));
            assert!(out_of_fuel(&got), "{spec} {fuel}: {got:?}");
            assert!(
                got_out.starts_with(&cut_out) && whole.starts_with(&got_out),
                "{spec} {fuel}"
            );
        }
    }
}

/// `a` stores and calls `b`, which calls the host and then `a`: `a` is
/// open, `b` interpreted, so each level nests native code, the
/// interpreter and native code again on the machine stack.
const MUTUAL: &str = "
.memory 64
.import where 1
.func a(n)
  andi r1, n, 63
  ld r2, r1, 0
  addi r2, r2, 1
  st r1, 0, r2
  jz n, done
  subi r1, n, 1
  call r2, b, r1, 1
  addi r2, r2, 1
  ret r2
done:
  ret n
.end
.func b(n)
  hcall r1, where, n, 1
  call r2, a, n, 1
  ret r2
.end
.func run(n)
  call r1, a, n, 1
  ret r1
.end
.entry run
";

#[test]
fn recursion_through_the_interpreter_on_host_threads_matches_it() {
    use toyvm::engine::{Engine, Imports, Instance, Module};
    use toyvm::runtime::Limits;
    let program = asm::assemble(MUTUAL).unwrap();
    assert_eq!(
        toyvm::optimizer::native_functions(&program)[..2],
        [Native::Open, Native::No]
    );
    let instance = |profile: &str| {
        let engine = Engine::builder()
            .profile_str(profile)
            .unwrap()
            .limits(Limits {
                max_depth: 50_000,
                ..Limits::default()
            })
            .build();
        let module = Module::from_bytes(&engine, MUTUAL.as_bytes()).unwrap();
        let mut imports = Imports::new();
        imports.define("where", 1, |args, _| Ok(args[0]));
        Instance::with_imports(&module, imports, &[]).unwrap()
    };
    // A small thread, where the stack limit comes after a few levels, and
    // a large one, where thousands nest natively first.
    let mut calls = Vec::new();
    for stack in [256 << 10, 32 << 20] {
        let t = std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || {
                let mut jit = instance("multihash:interval=500");
                let mut plain = instance("none");
                // Shallow calls first (the JIT compiles `a` whole), then ones
                // whose nesting far outgrows 256 KiB, to the depth limit (two
                // frames a level) and over it.
                for n in [10, 300, 300, 5_000, 12_000, 24_998, 24_999, 25_000, 40_000] {
                    let x = jit.call("run", &[n]).map_err(|e| e.to_string());
                    let y = plain.call("run", &[n]).map_err(|e| e.to_string());
                    assert_eq!(x, y, "run({n})");
                }
                assert_eq!(jit.memory(), plain.memory());
                let stats = jit.stats().jit.unwrap();
                assert!(stats.compiles >= 1, "{stats:?}");
                // Native `a` called the interpreter for `b` (near the top of
                // each recursion: below the stack limit, `a`'s entry hands its
                // calls to the interpreter, which runs the rest on the heap).
                assert!(stats.interpreter_calls > 0, "{stats:?}");
                assert!(stats.interpret_exits > 0, "{stats:?}");
                stats.interpreter_calls
            })
            .unwrap();
        calls.push(t.join().unwrap());
    }
    // The large stack nested far deeper natively before the limit.
    assert!(calls[1] > 10 * calls[0], "{calls:?}");
}

//! Compiled code on the caller's thread: native recursion checks the
//! stack against a limit near the end of the calling thread's stack and
//! hands the rest of a deep recursion to the interpreter, so a host thread
//! with a small stack runs it to the interpreter's result, or to its
//! call-depth trap, and never overflows.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use toyvm::engine::{Engine, Imports, Instance, Module};
use toyvm::runtime::Limits;

/// `down(n)` recurses n deep and stores on the way back (a closed native
/// function that writes memory: it cannot bail), `sum(n)` recurses n deep
/// without storing (pure), and `run(n)` asks the host which thread it runs
/// on, then calls both.
const SRC: &str = "
.memory 64
.import where 1
.func down(n)
  jz n, done
  subi r1, n, 1
  call r2, down, r1, 1
  addi r2, r2, 3
  andi r3, n, 63
  ld r4, r3, 0
  add r4, r4, r2
  st r3, 0, r4
  ret r2
done:
  ret n
.end
.func sum(n)
  jz n, zero
  subi r1, n, 1
  call r1, sum, r1, 1
  add r1, r1, n
  ret r1
zero:
  ret n
.end
.func run(n)
  hcall r1, where, n, 1
  call r2, down, n, 1
  call r3, sum, n, 1
  add r2, r2, r3
  ret r2
.end
.entry run
";

const MAX_DEPTH: usize = 50_000;

/// An instance (the JIT on with `profile`, or `none`) whose `where`
/// records the thread it is called on.
fn instance(profile: &str, threads: &Arc<Mutex<Vec<ThreadId>>>) -> Instance {
    let limits = Limits {
        max_depth: MAX_DEPTH,
        ..Limits::default()
    };
    let engine = Engine::builder()
        .profile_str(profile)
        .unwrap()
        .limits(limits)
        .build();
    let module = Module::from_bytes(&engine, SRC.as_bytes()).unwrap();
    let mut imports = Imports::new();
    let seen = Arc::clone(threads);
    imports.define("where", 1, move |args, _| {
        seen.lock().unwrap().push(std::thread::current().id());
        Ok(args[0])
    });
    Instance::with_imports(&module, imports, &[]).unwrap()
}

/// A call's value, or its error's message.
fn outcome(i: &mut Instance, n: i64) -> Result<i64, String> {
    i.call("run", &[n]).map_err(|e| e.to_string())
}

#[test]
fn deep_recursion_on_a_small_host_thread_runs_here_and_matches_the_interpreter() {
    let t = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(|| {
            let here = std::thread::current().id();
            let threads = Arc::new(Mutex::new(Vec::new()));
            let mut jit = instance("multihash:interval=500", &threads);
            let mut plain = instance("none", &threads);
            // Shallow calls first (the JIT compiles `down` and `sum`), then
            // ones far deeper than 256 KiB of native frames, to the limit
            // and over it.
            let depths = [10, 200, 300, 20_000, 40_000, 49_998, 49_999, 50_000, 80_000];
            for round in 0..3 {
                for n in depths {
                    let (x, y) = (outcome(&mut jit, n), outcome(&mut plain, n));
                    assert_eq!(x, y, "run({n}), round {round}");
                    if n >= 50_000 {
                        let e = x.unwrap_err();
                        assert!(e.contains("50000"), "{e}");
                    }
                }
            }
            assert_eq!(jit.memory(), plain.memory());
            let stats = jit.stats().jit.unwrap();
            assert!(stats.compiles >= 1, "{stats:?}");
            assert!(stats.region_entries > 0, "{stats:?}");
            // Native recursion reached the stack limit and the interpreter
            // took the rest of it.
            assert!(stats.interpreter_calls > 0, "{stats:?}");
            // Every call ran on this thread, the JIT's too.
            let threads = threads.lock().unwrap();
            assert_eq!(threads.len(), 2 * 3 * depths.len());
            assert!(threads.iter().all(|&t| t == here));
        })
        .unwrap();
    t.join().unwrap();
}

#[test]
fn a_thread_without_room_hands_calls_to_the_instance_thread() {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let mut jit = instance("multihash:interval=500", &threads);
    let mut plain = instance("none", &threads);
    let expected: Vec<_> = [10, 5000, 60_000]
        .into_iter()
        .map(|n| outcome(&mut plain, n))
        .collect();
    threads.lock().unwrap().clear();
    // Too small a stack for compiled code's reserve: the calls go to the
    // instance's own thread, and give the same results.
    let small = std::thread::Builder::new()
        .stack_size(64 << 10)
        .spawn(move || {
            let here = std::thread::current().id();
            for (n, want) in [10, 5000, 60_000].into_iter().zip(expected) {
                assert_eq!(outcome(&mut jit, n), want, "run({n})");
            }
            (here, jit)
        })
        .unwrap();
    let (small_id, jit) = small.join().unwrap();
    let seen = threads.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|&t| t != small_id));
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "one instance thread");
    drop(jit);
}

#[test]
fn fuel_is_counted_exactly_across_the_interpreter_calls_at_the_limit() {
    let t = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(|| {
            let threads = Arc::new(Mutex::new(Vec::new()));
            let make = |profile: &str| {
                let limits = Limits {
                    max_depth: MAX_DEPTH,
                    fuel: Some(2_000_000),
                    ..Limits::default()
                };
                let engine = Engine::builder()
                    .profile_str(profile)
                    .unwrap()
                    .limits(limits)
                    .build();
                let module = Module::from_bytes(&engine, SRC.as_bytes()).unwrap();
                let mut imports = Imports::new();
                let seen = Arc::clone(&threads);
                imports.define("where", 1, move |args, _| {
                    seen.lock().unwrap().push(std::thread::current().id());
                    Ok(args[0])
                });
                Instance::with_imports(&module, imports, &[]).unwrap()
            };
            let mut jit = make("multihash:interval=500");
            let mut plain = make("none");
            let mut ran_out = false;
            for n in [10, 300, 300, 20_000, 30_000, 40_000, 40_000, 40_000, 40_000] {
                let (x, y) = (outcome(&mut jit, n), outcome(&mut plain, n));
                match (&x, &y) {
                    (Ok(_), Ok(_)) => {
                        assert_eq!(x, y, "run({n})");
                        // Every instruction counted, natively or not.
                        assert_eq!(jit.fuel(), plain.fuel(), "run({n})");
                    }
                    (Err(a), Err(b)) => {
                        // Native code charges a block at a time: the same
                        // trap, perhaps a block later.
                        assert!(
                            a.contains("out of fuel") && b.contains("out of fuel"),
                            "{a} / {b}"
                        );
                        ran_out = true;
                        break;
                    }
                    _ => panic!("run({n}): the JIT gave {x:?}, the interpreter {y:?}"),
                }
            }
            assert!(ran_out, "the calls use more than the fuel");
            let stats = jit.stats().jit.unwrap();
            assert!(stats.interpreter_calls > 0, "{stats:?}");
        })
        .unwrap();
    t.join().unwrap();
}

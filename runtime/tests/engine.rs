//! The embedding API: repeated calls on one instance keep their compiled
//! code and profile, the host reads and writes guest memory, instances of
//! one module share compiled code across threads, and the limits hold with
//! the JIT on, every result checked against an interpreter-only engine.

use std::sync::{Arc, Mutex};

use toyvm::Error;
use toyvm::engine::{Engine, Instance, Module};
use toyvm::runtime::Limits;
use toyvm::vm::interp::TrapKind;

const GUEST: &str = "
.memory 4096
# tri(n, acc): acc + n + (n-1) + ... + 1; its loop starts at instruction 0.
.func tri(n, acc)
top:
  jz n, done
  add acc, acc, n
  subi n, n, 1
  jmp top
done:
  ret acc
.end
# depth(n): recursion n calls deep; returns n.
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
# deep(n, times): depth(n), `times` times; returns the sum.
.func deep(n, times)
  li r2, 0
  li r3, 1
top:
  call r4, depth, n, 1
  add r2, r2, r4
  loop r3, times, top
  ret r2
.end
# sum(addr, len): the sum of memory words addr .. addr+len; also doubles
# each of them in place.
.func sum(addr, len)
  li r2, 0
  jz len, done
  add r3, addr, len
top:
  ld r4, addr, 0
  add r2, r2, r4
  add r4, r4, r4
  st addr, 0, r4
  addi addr, addr, 1
  blt addr, r3, top
done:
  ret r2
.end
.func quot(a, b)
  div r2, a, b
  ret r2
.end
.func say(n)
  putn n
  li r1, 10
  putc r1
  ret n
.end
.func main()
  li r0, 0
  ret r0
.end
";

fn engine(profile: &str, limits: Limits) -> Engine {
    Engine::builder()
        .profile_str(profile)
        .expect("a valid spec")
        .limits(limits)
        .count_instructions(true)
        .build()
}

fn jit_engine() -> Engine {
    engine("multihash:interval=500", Limits::default())
}

fn module(engine: &Engine) -> Module {
    Module::from_bytes(engine, GUEST.as_bytes()).expect("the guest assembles")
}

fn trap_kind(e: Error) -> TrapKind {
    match e {
        Error::Vm(toyvm::vm::Error::Trap(t)) => t.kind,
        other => panic!("expected a trap, got {other}"),
    }
}

#[test]
fn the_second_call_runs_the_first_calls_code_from_its_first_instruction() {
    let m = module(&jit_engine());
    let mut inst = Instance::new(&m).unwrap();
    assert_eq!(inst.call("tri", &[50_000, 0]).unwrap(), 1_250_025_000);
    let first = inst.stats();
    let jit = first.jit.clone().unwrap();
    assert!(jit.compiles >= 1, "the loop compiled during the first call");

    assert_eq!(inst.call("tri", &[50_000, 7]).unwrap(), 1_250_025_007);
    let second = inst.stats();
    let jit2 = second.jit.unwrap();
    assert_eq!(jit2.compiles, jit.compiles, "nothing new compiled");
    assert_eq!(jit2.recompiles, jit.recompiles);
    assert_eq!(m.compiled(), (jit.compiles + jit.recompiles) as usize);
    assert!(jit2.region_entries > jit.region_entries);
    // Entered at instruction 0: the interpreter ran only the `ret` the
    // loop's exit hands back (the first call interpreted the loop until
    // it compiled).
    let interpreted = second.instructions - first.instructions;
    assert!(
        interpreted <= 2,
        "the second call interpreted {interpreted} instructions"
    );
    assert!(first.instructions > 1000);
}

#[test]
fn repeated_calls_agree_with_the_interpreter_and_keep_memory() {
    let jit = module(&jit_engine());
    let plain = module(&engine("none", Limits::default()));
    let mut a = Instance::new(&jit).unwrap();
    let mut b = Instance::new(&plain).unwrap();
    for inst in [&mut a, &mut b] {
        inst.write(100, &(1..=1000).collect::<Vec<i64>>()).unwrap();
    }
    for round in 0..20 {
        let n = 1000 + 37 * round;
        assert_eq!(
            a.call("tri", &[n, round]).unwrap(),
            b.call("tri", &[n, round]).unwrap()
        );
        assert_eq!(a.call("deep", &[20, 50]).unwrap(), 1000);
        assert_eq!(b.call("deep", &[20, 50]).unwrap(), 1000);
        // Each call doubles the words it sums, in place.
        let (x, y) = (
            a.call("sum", &[100, 1000]).unwrap(),
            b.call("sum", &[100, 1000]).unwrap(),
        );
        assert_eq!(x, y);
        assert_eq!(x, 500_500i64.wrapping_mul(1 << round));
    }
    assert_eq!(a.memory(), b.memory());
    assert_eq!(a.read(100, 2).unwrap(), &[1 << 20, 2 << 20]);
    assert!(a.stats().jit.unwrap().region_entries > 0);
    assert_eq!(a.stats().calls, 60);
}

#[test]
fn host_memory_access_is_bounds_checked() {
    let m = module(&engine("none", Limits::default()));
    let mut inst = Instance::new(&m).unwrap();
    assert_eq!(inst.memory().len(), 4096);
    assert!(matches!(
        inst.read(4090, 7),
        Err(Error::MemoryAccess {
            addr: 4090,
            len: 7,
            size: 4096
        })
    ));
    assert!(inst.read(u64::MAX, 2).is_err());
    assert!(inst.write(4095, &[1, 2]).is_err());
    assert_eq!(inst.memory()[4095], 0, "a failed write writes nothing");
    inst.write(4094, &[5, 6]).unwrap();
    assert_eq!(inst.read(4094, 2).unwrap(), &[5, 6]);
    inst.memory_mut()[0] = 9;
    assert_eq!(inst.call("sum", &[0, 1]).unwrap(), 9);
    assert_eq!(inst.read(0, 1).unwrap(), &[18]);
    // A guest access out of bounds is the guest's trap.
    assert!(matches!(
        trap_kind(inst.call("sum", &[4095, 2]).unwrap_err()),
        TrapKind::OutOfBounds { addr: 4096, .. }
    ));
}

#[test]
fn bad_calls_are_errors_and_a_trap_ends_only_the_call() {
    let m = module(&jit_engine());
    let mut inst = Instance::new(&m).unwrap();
    assert!(matches!(inst.call("nope", &[]), Err(Error::NoSuchFunction(n)) if n == "nope"));
    assert!(inst.call_index(99, &[]).is_err());
    let e = inst.call("tri", &[1]).unwrap_err().to_string();
    assert!(e.contains("takes 2 arguments, 1 given"), "{e}");
    assert_eq!(
        trap_kind(inst.call("quot", &[1, 0]).unwrap_err()),
        TrapKind::DivisionByZero
    );
    assert_eq!(inst.call("quot", &[7, 2]).unwrap(), 3);
}

#[test]
fn output_goes_where_the_host_says() {
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let m = module(&jit_engine());
    let mut inst = Instance::new(&m).unwrap();
    let out = Shared::default();
    inst.set_output(out.clone());
    inst.call("say", &[42]).unwrap();
    inst.call("say", &[-1]).unwrap();
    assert_eq!(&*out.0.lock().unwrap(), b"42\n-1\n");
}

#[test]
fn instances_on_several_threads_share_the_modules_code() {
    let m = module(&jit_engine());
    let threads = 4;
    let stats: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let m = m.clone();
                s.spawn(move || {
                    let mut inst = Instance::new(&m).unwrap();
                    for round in 0..10 {
                        let n = 20_000 + round;
                        assert_eq!(inst.call("tri", &[n, 0]).unwrap(), n * (n + 1) / 2);
                        assert_eq!(inst.call("deep", &[30, 100]).unwrap(), 3000);
                    }
                    inst.stats().jit.unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let installed: u64 = stats.iter().map(|j| j.compiles + j.recompiles).sum();
    let shared: u64 = stats.iter().map(|j| j.shared).sum();
    // Every instance made the same decisions; Cranelift compiled each
    // region once, for whichever instance wanted it first.
    assert!(stats.iter().all(|j| j.compiles == stats[0].compiles));
    assert!(stats[0].compiles >= 2, "{:?}", stats[0]);
    assert_eq!(installed - shared, m.compiled() as u64);
    assert_eq!(shared, installed * (threads - 1) / threads);
}

#[test]
fn fuel_spans_calls_and_compiled_code_counts_it_exactly() {
    let limits = Limits {
        fuel: Some(2_000_000),
        ..Limits::default()
    };
    let jit = module(&engine("multihash:interval=500", limits));
    let plain = module(&engine("none", limits));
    let mut a = Instance::new(&jit).unwrap();
    let mut b = Instance::new(&plain).unwrap();
    let mut calls = 0;
    loop {
        let (x, y) = (a.call("tri", &[30_000, 0]), b.call("tri", &[30_000, 0]));
        match (x, y) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x, y);
                assert_eq!(a.fuel(), b.fuel(), "call {calls}");
            }
            (Err(x), Err(y)) => {
                assert!(matches!(trap_kind(x), TrapKind::OutOfFuel { .. }));
                assert!(matches!(trap_kind(y), TrapKind::OutOfFuel { .. }));
                break;
            }
            (x, y) => panic!("call {calls}: the JIT gave {x:?}, the interpreter {y:?}"),
        }
        calls += 1;
    }
    // 4 instructions an iteration: 16 calls fit in 2M.
    assert_eq!(calls, 16);
    assert!(a.stats().jit.unwrap().region_entries > 0);
    assert_eq!(a.fuel(), Some(0));
    a.set_fuel(1_000_000).unwrap();
    assert_eq!(a.call("tri", &[1000, 0]).unwrap(), 500_500);
    assert!(a.fuel().unwrap() < 1_000_000);
    let mut unmetered = Instance::new(&module(&jit_engine())).unwrap();
    assert!(unmetered.set_fuel(10).is_err());
}

#[test]
fn the_call_depth_limit_holds_in_native_code() {
    let limits = Limits {
        max_depth: 1000,
        ..Limits::default()
    };
    let jit = module(&engine("multihash:interval=500", limits));
    let plain = module(&engine("none", limits));
    let mut a = Instance::new(&jit).unwrap();
    let mut b = Instance::new(&plain).unwrap();
    // Deep enough to compile `depth` natively, within the limit.
    assert_eq!(a.call("deep", &[998, 200]).unwrap(), 998 * 200);
    assert!(a.stats().jit.unwrap().compiles >= 1);
    for n in [998, 999, 1000, 5000] {
        let (x, y) = (a.call("deep", &[n, 3]), b.call("deep", &[n, 3]));
        match (x, y) {
            (Ok(x), Ok(y)) => assert_eq!(x, y),
            (Err(x), Err(y)) => {
                let (x, y) = (trap_kind(x), trap_kind(y));
                assert_eq!(x, y);
                assert_eq!(x, TrapKind::StackOverflow { depth: 1000 });
            }
            (x, y) => panic!("depth {n}: the JIT gave {x:?}, the interpreter {y:?}"),
        }
    }
    assert!(b.call("deep", &[1000, 1]).is_err());
}

#[test]
fn a_module_over_the_memory_limit_is_refused() {
    let limits = Limits {
        max_memory_words: Some(1024),
        ..Limits::default()
    };
    let e = Module::from_bytes(&engine("none", limits), GUEST.as_bytes()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::MemoryLimit {
                words: 4096,
                limit: 1024
            }
        ),
        "{e}"
    );
    let bad = Limits {
        max_depth: 0,
        ..Limits::default()
    };
    assert!(Module::from_bytes(&engine("none", bad), GUEST.as_bytes()).is_err());
}

const HOSTED: &str = "
.import mix 2
.import check 1
.func work(n)
  li r1, 0
  li r2, 1
top:
  mov r3, r1
  mov r4, r2
  hcall r1, mix, r3, 2
  addi r1, r1, 3
  loop r2, n, top
  hcall r5, check, r1, 1
  ret r1
.end
.func main()
  li r0, 0
  ret r0
.end
";

fn hosted_imports(calls: std::sync::Arc<std::sync::atomic::AtomicU64>) -> toyvm::engine::Imports {
    let mut imports = toyvm::engine::Imports::new();
    imports.define("mix", 2, move |args, mem| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        mem[0] += 1;
        Ok(args[0].wrapping_mul(31).wrapping_add(args[1]) % 1_000_003)
    });
    imports.define("check", 1, |args, _| {
        if args[0] < 0 {
            Err(format!("negative: {}", args[0]).into())
        } else {
            Ok(0)
        }
    });
    imports
}

#[test]
fn host_functions_agree_under_the_jit_and_the_interpreter() {
    let counted = |profile: &str| {
        let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let m = Module::from_bytes(&engine(profile, Limits::default()), HOSTED.as_bytes()).unwrap();
        let mut inst = Instance::with_imports(&m, hosted_imports(Arc::clone(&calls)), &[]).unwrap();
        let results: Vec<i64> = (0..5)
            .map(|_| inst.call("work", &[20_000]).unwrap())
            .collect();
        (
            results,
            calls.load(std::sync::atomic::Ordering::Relaxed),
            inst.read(0, 1).unwrap()[0],
        )
    };
    let (jit, jit_calls, jit_mem) = counted("multihash:interval=500");
    let (plain, plain_calls, plain_mem) = counted("none");
    assert_eq!(jit, plain);
    assert_eq!((jit_calls, jit_mem), (100_000, 100_000));
    assert_eq!((plain_calls, plain_mem), (100_000, 100_000));
}

#[test]
fn missing_or_mismatched_imports_are_link_errors_and_host_failures_traps() {
    let m = Module::from_bytes(&jit_engine(), HOSTED.as_bytes()).unwrap();
    let e = Instance::new(&m).unwrap_err().to_string();
    assert_eq!(
        e,
        "link: the module imports `mix` (taking 2 arguments), which the host does not offer"
    );
    let mut wrong = toyvm::engine::Imports::new();
    wrong
        .define("mix", 1, |_, _| Ok(0))
        .define("check", 1, |_, _| Ok(0));
    let e = Instance::with_imports(&m, wrong, &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "link: the module imports `mix` taking 2 arguments; the host offers it taking 1 argument"
    );
    let mut failing = toyvm::engine::Imports::new();
    failing
        .define("mix", 2, |_, _| Ok(-10))
        .define("check", 1, |a, _| {
            if a[0] < 0 {
                Err(format!("negative: {}", a[0]).into())
            } else {
                Ok(0)
            }
        });
    let mut inst = Instance::with_imports(&m, failing, &[]).unwrap();
    assert_eq!(
        trap_kind(inst.call("work", &[3]).unwrap_err()),
        TrapKind::Host {
            name: "check".into(),
            message: "negative: -7".into()
        }
    );
    // A whole run has no host: refused before it starts.
    let rt = toyvm::Runtime::builder(m.program().clone()).build();
    let e = rt
        .run(
            toyvm::vm::interp::Input {
                args: &[],
                file: &[],
            },
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("link: the program imports host function `mix`"),
        "{e}"
    );
}

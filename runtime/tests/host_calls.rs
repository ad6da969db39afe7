//! Host calls in compiled code: a loop that calls host functions compiles
//! whole (the `hcall`s through the trampoline, not exits to the
//! interpreter), and everything the host can see agrees with the
//! interpreter: results, the calls it received and their order, memory
//! written on either side, a host failure's trap, a host panic, and where
//! fuel runs out.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use toyvm::engine::{Engine, Imports, Instance, Module};
use toyvm::runtime::Limits;
use toyvm::vm::interp::{self, HostFunctions};
use toyvm::vm::{Kind, Pc, Tuple};

/// `work(n, k)`: for i in 1..=n, stores i at word 0, calls `bump(i)` (which
/// reads word 0 and writes word 1), loads word 1, and calls `probe(i, k)`
/// (7 but for i == k: a value worth specializing, and a guard that fails
/// once); sums everything.
const GUEST: &str = "
.memory 16
.import bump 1
.import probe 2
.func work(n, k)
  li r2, 0
  li r3, 1
  li r9, 0
top:
  st r9, 0, r3
  hcall r4, bump, r3, 1
  ld r5, r9, 1
  add r2, r2, r4
  add r2, r2, r5
  mov r10, r3
  mov r11, k
  hcall r6, probe, r10, 2
  mul r7, r6, r3
  add r2, r2, r7
  loop r3, n, top
  ret r2
.end
.func main()
  li r0, 0
  ret r0
.end
";

/// What the host saw: every call, in order.
type Log = Arc<Mutex<Vec<(&'static str, i64)>>>;

/// `bump` and `probe`; `fail_at`/`panic_at` make `bump` fail or panic when
/// called with that argument.
fn imports(log: &Log, fail_at: i64, panic_at: i64) -> Imports {
    let mut imports = Imports::new();
    let l = Arc::clone(log);
    imports.define("bump", 1, move |args, mem| {
        l.lock().unwrap().push(("bump", args[0]));
        if args[0] == fail_at {
            return Err(format!("bump refuses {}", args[0]).into());
        }
        if args[0] == panic_at {
            panic!("bump panics at {}", args[0]);
        }
        mem[1] = args[0] * 2;
        Ok(mem[0] + args[0])
    });
    let l = Arc::clone(log);
    imports.define("probe", 2, move |args, _| {
        l.lock().unwrap().push(("probe", args[0]));
        Ok(if args[0] == args[1] { 8 } else { 7 })
    });
    imports
}

fn engine(profile: &str, fuel: Option<u64>) -> Engine {
    Engine::builder()
        .profile_str(profile)
        .unwrap()
        .limits(Limits {
            fuel,
            ..Limits::default()
        })
        .count_instructions(true)
        .build()
}

struct Run {
    result: Result<i64, String>,
    log: Vec<(&'static str, i64)>,
    memory: Vec<i64>,
    instance: Instance,
}

fn run(profile: &str, fuel: Option<u64>, args: [i64; 2], fail_at: i64) -> Run {
    let log = Log::default();
    let module = Module::from_bytes(&engine(profile, fuel), GUEST.as_bytes()).unwrap();
    let mut instance = Instance::with_imports(&module, imports(&log, fail_at, -1), &[]).unwrap();
    let result = instance.call("work", &args).map_err(|e| e.to_string());
    let memory = instance.memory().to_vec();
    let log = log.lock().unwrap().clone();
    Run {
        result,
        log,
        memory,
        instance,
    }
}

const JIT: &str = "multihash:interval=500";

#[test]
fn a_loop_calling_the_host_runs_compiled_and_agrees_with_the_interpreter() {
    let n = 30_000;
    let jit = run(JIT, None, [n, 20_000], -1);
    let plain = run("none", None, [n, 20_000], -1);
    assert_eq!(jit.result, plain.result);
    assert_eq!(jit.log, plain.log);
    assert_eq!(jit.memory, plain.memory);
    let stats = jit.instance.stats().jit.unwrap();
    assert!(stats.compiles >= 1, "{stats:?}");
    // The loop runs in compiled code, host calls included: it leaves
    // compiled code a handful of times, not once per host call.
    assert!(
        stats.interpret_exits + stats.side_exits < 100,
        "host calls should not leave compiled code: {stats:?}"
    );
    // `probe`'s result (7 nearly always) is specialized: its guard fails
    // at i == k, and the result stays right.
    assert!(stats.guard_failures >= 1, "{stats:?}");
}

#[test]
fn a_host_failure_in_compiled_code_is_the_interpreters_trap() {
    let jit = run(JIT, None, [30_000, 0], 25_000);
    let plain = run("none", None, [30_000, 0], 25_000);
    assert!(jit.instance.stats().jit.unwrap().compiles >= 1);
    assert_eq!(
        jit.result,
        Err(
            "trap in `work` at instruction 4 (pc f0:4): host function `bump` failed: bump refuses 25000"
                .into()
        )
    );
    assert_eq!(jit.result, plain.result);
    assert_eq!(jit.log, plain.log);
    assert_eq!(jit.memory, plain.memory);
}

#[test]
fn a_host_panic_in_compiled_code_reaches_the_caller() {
    let log = Log::default();
    let module = Module::from_bytes(&engine(JIT, None), GUEST.as_bytes()).unwrap();
    let mut instance = Instance::with_imports(&module, imports(&log, -1, 25_000), &[]).unwrap();
    let panicked = catch_unwind(AssertUnwindSafe(|| instance.call("work", &[30_000, 0])));
    let payload = panicked.expect_err("the host function's panic reaches the caller");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains("bump panics at 25000"), "{message}");
    // The host saw the calls up to the panicking one, in order.
    {
        let log = log.lock().unwrap();
        assert_eq!(log.last(), Some(&("bump", 25_000)));
        assert_eq!(log.len(), 2 * 24_999 + 1);
    }
    // The instance is still usable: a later call runs (compiled code and
    // all) and agrees with a fresh interpreter run of the same call on the
    // memory the panic left.
    let memory = instance.memory().to_vec();
    let again = instance.call("work", &[1_000, 0]).unwrap();
    let plain_log = Log::default();
    let plain = Module::from_bytes(&engine("none", None), GUEST.as_bytes()).unwrap();
    let mut fresh = Instance::with_imports(&plain, imports(&plain_log, -1, -1), &[]).unwrap();
    fresh.memory_mut().copy_from_slice(&memory);
    assert_eq!(again, fresh.call("work", &[1_000, 0]).unwrap());
}

#[test]
fn fuel_runs_out_before_the_same_host_call_under_the_jit() {
    // Limits falling on every instruction of the loop's block (11 long).
    for fuel in (0..22).map(|i| 100_000 + 7 * i) {
        let jit = run(JIT, Some(fuel), [1_000_000, 0], -1);
        let plain = run("none", Some(fuel), [1_000_000, 0], -1);
        assert!(jit.instance.stats().jit.unwrap().compiles >= 1);
        let e = jit.result.clone().unwrap_err();
        assert!(e.contains("fuel") || e.contains("step limit"), "{e}");
        // The host saw exactly the calls the interpreter made before the
        // limit: compiled code never calls the host past it.
        assert_eq!(jit.log, plain.log, "fuel {fuel}");
    }
}

#[test]
fn host_functions_are_value_and_call_tuples() {
    // The interpreter reports each hcall as a Call tuple to callee
    // `functions + import` and its result as a Value tuple at its pc.
    struct Probe;
    impl HostFunctions for Probe {
        fn call(
            &mut self,
            index: u16,
            args: &[i64],
            _: &mut [i64],
        ) -> Result<i64, interp::HostError> {
            Ok(match index {
                0 => args[0] * 10,
                _ if args[0] == args[1] => 8,
                _ => 7,
            })
        }
    }
    let program = toyvm::vm::asm::assemble(GUEST).unwrap();
    let mut tuples: Vec<Tuple> = Vec::new();
    let mut mem = interp::memory(&program, &[]).unwrap();
    let call = interp::Call {
        func: 0,
        args: &[3, 2],
        input_len: 0,
    };
    let (r, _) = interp::call_with_host(
        &program,
        &mut mem,
        call,
        &mut std::io::sink(),
        &mut interp::NoJit(&mut tuples),
        &mut Probe,
        &interp::Config::default(),
    );
    r.unwrap();
    let functions = program.functions.len() as u64;
    let at = |t: &Tuple| Pc(t.a).offset();
    let calls: Vec<(u32, u64)> = tuples
        .iter()
        .filter(|t| t.kind == Kind::Call)
        .map(|t| (at(t), t.b))
        .collect();
    assert_eq!(
        calls,
        [(4, functions), (10, functions + 1)].repeat(3),
        "bump is import 0, probe import 1"
    );
    let values = |pc: u32| -> Vec<u64> {
        tuples
            .iter()
            .filter(|t| t.kind == Kind::Value && at(t) == pc)
            .map(|t| t.b)
            .collect()
    };
    assert_eq!(values(10), [7, 8, 7]);
    assert_eq!(values(4), [10, 20, 30]);
}

/// A whole run (`Runtime`, as `toyvm run` makes it) of a program with
/// imports: the host functions given to `run_with_host_fns` answer its
/// `hcall`s, interpreted and from compiled code alike; `run` refuses it.
#[test]
fn whole_runs_call_the_host_functions_they_are_given() {
    use toyvm::Runtime;
    use toyvm::vm::interp::Input;

    /// `bump(i)` = 3 * word 0 + i, counting its calls.
    struct Host(u64);
    impl HostFunctions for Host {
        fn call(
            &mut self,
            index: u16,
            args: &[i64],
            mem: &mut [i64],
        ) -> Result<i64, interp::HostError> {
            assert_eq!(index, 0, "one import");
            self.0 += 1;
            Ok(3 * mem[0] + args[0])
        }
    }
    let src = "
.memory 4
.import bump 1
.func main(n)
  li r1, 0
  li r2, 1
  li r9, 0
top:
  st r9, 0, r2
  hcall r3, bump, r2, 1
  add r1, r1, r3
  loop r2, n, top
  ret r1
.end
";
    let program = toyvm::vm::asm::assemble(src).unwrap();
    let n = 20_000i64;
    let want = (1..=n).map(|i| 4 * i).sum::<i64>();
    for spec in ["none", "multihash:interval=1000"] {
        for jit in [false, true] {
            let rt = Runtime::builder(program.clone())
                .profile_str(spec)
                .unwrap()
                .jit(jit.then(Default::default))
                .build();
            let mut host = Host(0);
            let input = Input {
                args: &[n],
                file: &[],
            };
            let report = rt
                .run_with_host_fns(input, &mut std::io::sink(), &mut host)
                .unwrap();
            assert_eq!(report.outcome.value, want, "{spec}, jit {jit}");
            assert_eq!(host.0, n as u64, "{spec}, jit {jit}: one call per trip");
            let input = Input {
                args: &[n],
                file: &[],
            };
            let refused = rt.run(input, &mut std::io::sink()).unwrap_err();
            assert!(
                refused.to_string().contains("imports host function `bump`"),
                "{refused}"
            );
        }
    }
}

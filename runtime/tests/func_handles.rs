//! Function handles: a function looked up once (`get_func`,
//! `get_typed_func`) and called without a name lookup; a wrong argument
//! count is `Error::Arity`, an unknown name `Error::NoSuchFunction`, a
//! handle of another module a usage error, all before anything runs.

use toyvm::Error;
use toyvm::engine::{Engine, Func, Instance, Module, TypedFunc};

const GUEST: &str = "
# tri(n, acc): acc + n + (n-1) + ... + 1.
.func tri(n, acc)
top:
  jz n, done
  add acc, acc, n
  subi n, n, 1
  jmp top
done:
  ret acc
.end
.func one(n)
  addi n, n, 1
  ret n
.end
.func main()
  li r0, 0
  ret r0
.end
";

fn module(profile: &str) -> Module {
    let engine = Engine::builder()
        .profile_str(profile)
        .unwrap()
        .count_instructions(true)
        .build();
    Module::from_bytes(&engine, GUEST.as_bytes()).unwrap()
}

#[test]
fn a_handle_calls_as_the_name_does_and_keeps_the_compiled_code() {
    let jit = module("multihash:interval=500");
    let plain = module("none");
    let mut a = Instance::new(&jit).unwrap();
    let mut b = Instance::new(&plain).unwrap();
    let tri: TypedFunc<2> = a.get_typed_func("tri").unwrap();
    let one: Func = jit.get_func("one").unwrap();
    assert_eq!(one.params(), 1);
    assert_eq!(Some(one.index()), jit.function("one"));
    for round in 0..10 {
        let n = 20_000 + 7 * round;
        assert_eq!(
            tri.call(&mut a, [n, round]).unwrap(),
            b.call("tri", &[n, round]).unwrap()
        );
        assert_eq!(one.call(&mut a, &[n]).unwrap(), n + 1);
    }
    let stats = a.stats();
    assert_eq!(stats.calls, 20);
    let jit_stats = stats.jit.unwrap();
    assert!(jit_stats.compiles >= 1 && jit_stats.region_entries >= 9);
    // The untyped handle of a typed one is the same function.
    assert_eq!(tri.func(), jit.get_func("tri").unwrap());
    assert_eq!(tri.func().call(&mut a, &[3, 0]).unwrap(), 6);
}

#[test]
fn a_wrong_argument_count_is_a_matchable_error_and_runs_nothing() {
    let m = module("multihash:interval=500");
    let mut inst = Instance::new(&m).unwrap();
    let arity = |e: Error| match e {
        Error::Arity {
            function,
            expected,
            given,
        } => (function, expected, given),
        other => panic!("expected an arity error, got {other:?}"),
    };
    let e = inst.call("tri", &[1]).unwrap_err();
    assert_eq!(e.to_string(), "`tri` takes 2 arguments, 1 given");
    assert_eq!(arity(e), ("tri".to_owned(), 2, 1));
    let index = m.function("one").unwrap();
    let e = inst.call_index(index, &[1, 2, 3]).unwrap_err();
    assert_eq!(e.to_string(), "`one` takes 1 argument, 3 given");
    assert_eq!(arity(e), ("one".to_owned(), 1, 3));
    let tri = inst.get_func("tri").unwrap();
    assert_eq!(
        arity(tri.call(&mut inst, &[]).unwrap_err()),
        ("tri".to_owned(), 2, 0)
    );
    // A typed handle is checked once, at lookup.
    assert_eq!(
        arity(inst.get_typed_func::<3>("tri").unwrap_err()),
        ("tri".to_owned(), 2, 3)
    );
    assert_eq!(
        arity(m.get_typed_func::<0>("one").unwrap_err()),
        ("one".to_owned(), 1, 0)
    );
    assert_eq!(inst.stats().calls, 0, "no call ran");
    assert_eq!(inst.call("tri", &[4, 0]).unwrap(), 10);
}

#[test]
fn an_unknown_function_stays_no_such_function() {
    let m = module("none");
    let mut inst = Instance::new(&m).unwrap();
    assert!(matches!(inst.get_func("nope"), Err(Error::NoSuchFunction(n)) if n == "nope"));
    assert!(matches!(
        m.get_typed_func::<1>("nope"),
        Err(Error::NoSuchFunction(n)) if n == "nope"
    ));
    assert!(matches!(inst.call("nope", &[]), Err(Error::NoSuchFunction(n)) if n == "nope"));
    assert!(matches!(
        inst.call_index(99, &[]),
        Err(Error::NoSuchFunction(n)) if n == "#99"
    ));
}

#[test]
fn a_handle_serves_every_instance_of_its_module_and_no_other() {
    let m = module("multihash:interval=500");
    let tri = m.get_typed_func::<2>("tri").unwrap();
    // Instances of the module and of its clones, on other threads too.
    let results: Vec<i64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|k| {
                let m = m.clone();
                s.spawn(move || {
                    let mut inst = Instance::new(&m).unwrap();
                    tri.call(&mut inst, [1000, k]).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results, [500_500, 500_501]);
    // The same text loaded again is another module: its instances refuse
    // the handle rather than call whatever function has its index.
    let other = module("multihash:interval=500");
    let mut inst = Instance::new(&other).unwrap();
    let e = tri.call(&mut inst, [3, 0]).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    assert!(e.to_string().contains("another module"), "{e}");
    assert_eq!(inst.stats().calls, 0);
}

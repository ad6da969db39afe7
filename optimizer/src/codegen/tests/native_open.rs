//! Open native functions (see `native`): compiled whole, but they need an
//! interpreter for their calls, so without one their code does not run.

use super::*;
use crate::{DEFAULT_MAX_DEPTH, Native};
use toyvm_vm::interp::Memory;

/// `log` prints; `tally` stores and calls it: open. `many` stores and its
/// `calli` could reach nine functions: open too.
const OPEN: &str = "
    .memory 4
    .func log(x)
        putn x
        ret x
    .end
    .func tally(x)
        st x, 0, x
        call x, log, x, 1
        ret x
    .end
    .func many(v, x)
        st x, 1, x
        calli x, v, x, 1
        ret x
    .end
    .func a0(x)
        ret x
    .end
    .func a1(x)
        ret x
    .end
    .func a2(x)
        ret x
    .end
    .func a3(x)
        ret x
    .end
    .func a4(x)
        ret x
    .end
    .func a5(x)
        ret x
    .end
    .func a6(x)
        ret x
    .end
    .entry tally";

#[test]
fn open_functions_are_compiled_whole_but_run_only_with_an_interpreter() {
    let p = assemble(OPEN).unwrap();
    let natives = crate::native_functions(&p);
    assert_eq!(natives[..3], [Native::No, Native::Open, Native::Open]);
    assert!(natives[3..].iter().all(|&n| n == Native::Pure));
    let mut cache = CodeCache::new().unwrap();
    for f in [1, 2] {
        let c = cache.compile_function(&p, f).unwrap();
        let mut regs = [0i64; 256];
        regs[..2].copy_from_slice(&[3, 1]);
        let mut counters = vec![0; c.counters_len()];
        let mut mem = Memory::from(vec![0i64; 4]);
        // No interpreter lent: the region leaves at its head at once, for
        // the interpreter to run the function, and nothing was stored.
        let e = c
            .run_with(&mut regs, &mut mem, &mut counters, 1, DEFAULT_MAX_DEPTH)
            .unwrap();
        assert_eq!((e.kind, e.resume), (ExitKind::Interpret, 0), "f{f}");
        assert_eq!(counters, [0, 0, 0, 0], "f{f}");
        assert_eq!(mem[..], [0, 0, 0, 0], "f{f}");
    }
}

/// An interpreter for the test: answers `1000 + callee * 100 + x` and
/// counts its calls.
struct Fake(u64);

impl crate::Interpreter for Fake {
    fn call(
        &mut self,
        call: toyvm_vm::interp::CallSite<'_>,
        _: &mut Memory,
        _: &mut dyn toyvm_vm::interp::HostFunctions,
        _: &mut u64,
    ) -> crate::Called {
        self.0 += 1;
        crate::Called::Returned(1000 + call.callee * 100 + call.args[0])
    }
}

/// `tally`'s whole-function region run once with a fake interpreter:
/// its value and the interpreter's calls.
fn run_open(c: &CompiledRegion, x: i64, fake: &mut Fake) -> i64 {
    run_args(c, &[x], 0, fake)
}

/// A whole-function region run once on `args` with a fake interpreter:
/// register `result` after it.
fn run_args(c: &CompiledRegion, args: &[i64], result: usize, fake: &mut Fake) -> i64 {
    let mut regs = [0i64; 256];
    regs[..args.len()].copy_from_slice(args);
    let mut counters = vec![0; c.counters_len()];
    let mut mem = Memory::from(vec![0i64; 4]);
    let mut none = toyvm_vm::interp::NoHostFunctions;
    let mut host = crate::HostCalls::new(&mut none, &[]).with_interpreter(fake);
    let mut fuel = crate::Fuel::UNLIMITED;
    let (e, _) = c
        .run_hosted(
            &mut regs,
            &mut mem,
            &mut counters,
            1,
            DEFAULT_MAX_DEPTH,
            &mut fuel,
            &mut host,
        )
        .unwrap();
    assert_eq!(e.kind, ExitKind::Interpret);
    regs[result]
}

/// `pick`'s `calli` may reach `log` (output): open; `twice` is pure.
const PICK: &str = "
    .memory 4
    .func log(x)
        putn x
        ret x
    .end
    .func twice(x)
        add x, x, x
        ret x
    .end
    .func pick(x)
        li r1, 1
        st r1, 0, x
        calli x, r1, x, 1
        ret x
    .end
    .entry pick";

#[test]
fn natives_compiled_later_are_found_by_code_compiled_before() {
    // `pick` is compiled alone first; `twice` in a later batch.
    let p = assemble(PICK).unwrap();
    assert_eq!(
        crate::native_functions(&p),
        [Native::No, Native::Pure, Native::Open]
    );
    let mut cache = CodeCache::new().unwrap();
    let c = cache.compile_function(&p, 2).unwrap();
    let mut fake = Fake(0);
    // `twice` has no native code yet: the interpreter calls it.
    assert_eq!(run_open(&c, 5, &mut fake), 1105);
    assert_eq!(fake.0, 1);
    // Compiled now, the same code calls it natively.
    cache.compile_natives_for(&p, [1]).unwrap();
    assert_eq!(run_open(&c, 5, &mut fake), 10);
    assert_eq!(fake.0, 1);
}

#[test]
fn a_region_reports_the_natives_compiled_for_it() {
    // `pick` (open) is compiled natively for its own entry; `twice`
    // (pure, which its `calli` finds by value) only when asked for, and
    // that batch is the next compile's; `log` never runs natively.
    let p = assemble(PICK).unwrap();
    let mut cache = CodeCache::new().unwrap();
    let c = cache.compile_function(&p, 2).unwrap();
    let n = c.natives_compiled();
    assert_eq!((n.functions, n.instructions), (1, 4));
    assert!(n.time > std::time::Duration::ZERO);
    // Compiled again (its natives exist): nothing new.
    let again = cache.compile_function(&p, 2).unwrap();
    assert_eq!(again.natives_compiled(), crate::NativesCompiled::default());
    // A batch asked for outright is the next compile's.
    cache.compile_natives_for(&p, [1]).unwrap();
    let n = cache.compile_function(&p, 2).unwrap().natives_compiled();
    assert_eq!((n.functions, n.instructions), (1, 2));
    // Natives compiled up front are no region's.
    let mut eager = CodeCache::new().unwrap();
    eager.compile_natives(&p).unwrap();
    let c = eager.compile_function(&p, 2).unwrap();
    assert_eq!(c.natives_compiled(), crate::NativesCompiled::default());
}

/// `apply`'s `calli` (offset 2) may reach `log` (output): open, like
/// `apply2`; `twice` and `thrice` are pure. `countdown` calls itself by
/// value (its `calli`, offset 4, may reach `log2`: open).
const APPLY: &str = "
    .memory 4
    .func log(x)
        putn x
        ret x
    .end
    .func twice(x)
        add x, x, x
        ret x
    .end
    .func thrice(x)
        muli x, x, 3
        ret x
    .end
    .func apply(v, x)
        .reg t
        li t, 1
        st t, 0, x
        calli x, v, x, 1
        ret x
    .end
    .func apply2(v, x)
        .reg t
        li t, 2
        st t, 0, x
        calli x, v, x, 1
        ret x
    .end
    .func log2(a, b)
        putn a
        ret a
    .end
    .func countdown(v, x)
        .reg t
        li t, 3
        st t, 0, x
        blti x, 1, done
        subi x, x, 1
        calli x, v, v, 2
    done:
        ret x
    .end
    .entry apply";

/// A whole-function region of `apply` or `apply2` run once on `(v, x)` with
/// a fake interpreter: its value (in `r1`, where its `ret` reads it).
fn run_apply(c: &CompiledRegion, v: i64, x: i64, fake: &mut Fake) -> i64 {
    run_args(c, &[v, x], 1, fake)
}

#[test]
fn an_open_function_calls_its_profiled_call_target_directly_and_is_compiled_again_for_another() {
    use std::collections::BTreeMap;
    let p = assemble(APPLY).unwrap();
    assert_eq!(
        crate::native_functions(&p),
        [
            Native::No,
            Native::Pure,
            Native::Pure,
            Native::Open,
            Native::Open,
            Native::No,
            Native::Open
        ]
    );
    let mut cache = CodeCache::new().unwrap();
    // `thrice` has native code from the start (the table finds it).
    cache.compile_natives_for(&p, [2]).unwrap();
    let (mut fake, mut calls) = (Fake(0), 0);
    // Every value, whatever the targets: `twice` and `thrice` natively,
    // `log` (no native code) and a value naming no function (the
    // interpreter traps: the fake answers) through the interpreter.
    let mut check = |c: &CompiledRegion, fake: &mut Fake| {
        assert_eq!(run_apply(c, 1, 5, fake), 10);
        assert_eq!(run_apply(c, 2, 5, fake), 15);
        assert_eq!(run_apply(c, 0, 5, fake), 1005);
        assert_eq!(run_apply(c, 9, 5, fake), 1905);
        calls += 2;
        assert_eq!(fake.0, calls);
    };
    let for_twice = BTreeMap::from([(2, 1)]);
    let c = cache.compile_function_for(&p, 3, &for_twice).unwrap();
    // `thrice`'s batch (the next compile's), its callee, then `apply`
    // with the direct call, inlined.
    assert_eq!(c.natives_compiled().functions, 3);
    assert_eq!(cache.inlined_calls(), 1);
    check(&c, &mut fake);
    // The same targets: nothing compiled again; none asked: the same.
    let again = cache.compile_function_for(&p, 3, &for_twice).unwrap();
    assert_eq!(again.natives_compiled(), crate::NativesCompiled::default());
    let none = cache.compile_function(&p, 3).unwrap();
    assert_eq!(none.natives_compiled(), crate::NativesCompiled::default());
    check(&none, &mut fake);
    // Another target: `apply` compiled again, the old code still right.
    let for_thrice = BTreeMap::from([(2, 2)]);
    let c2 = cache.compile_function_for(&p, 3, &for_thrice).unwrap();
    assert_eq!(c2.natives_compiled().functions, 1);
    assert_eq!(cache.inlined_calls(), 2);
    check(&c2, &mut fake);
    check(&c, &mut fake);
    // A target that does not fit (`apply`'s `li`, no `calli`; a callee
    // without native code) is no target, and another function not compiled
    // yet compiles with none asked.
    let odd = BTreeMap::from([(0, 1), (2, 0)]);
    check(&cache.compile_function_for(&p, 3, &odd).unwrap(), &mut fake);
    let c3 = cache.compile_function(&p, 4).unwrap();
    assert_eq!(c3.natives_compiled().functions, 1);
    check(&c3, &mut fake);
    // A function that is its own call target is compiled once.
    let own = BTreeMap::from([(4, 6)]);
    let c4 = cache.compile_function_for(&p, 6, &own).unwrap();
    assert_eq!(c4.natives_compiled().functions, 1);
    assert_eq!(run_args(&c4, &[6, 3], 1, &mut fake), 0);
    assert_eq!(fake.0, calls);
}

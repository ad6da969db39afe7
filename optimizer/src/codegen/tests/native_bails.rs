//! Bailing functions (see `crate::native`): natively where they have no
//! side effects, handing their call to the interpreter where they need it.

use super::native::{FIB, compile_all};
use super::*;
use crate::DEFAULT_MAX_DEPTH;
use crate::region::Step;
use toyvm_vm::interp::Memory;

/// `check` has no store: it runs natively and bails at its `putn`, which
/// only `x % 64 == 0` reaches; `loud` prints on every path (it would bail
/// on every call: not native); `store` writes memory (closed, not pure);
/// `main` loops calling `check`.
const BAILS: &str = "
    .memory 4
    .func check(x)              # 0: bails at 3
        andi r1, x, 63
        bnei r1, 0, quiet
        putn x
        li r1, 10
        putc r1
    quiet:
        muli r1, x, 3
        ret r1
    .end
    .func loud(x)               # 1: every path prints
        putn x
        ret x
    .end
    .func store(x)              # 2: a store
        st x, 0, x
        ret x
    .end
    .func twice(x)              # 3: closed and store-free
        add x, x, x
        ret x
    .end
    .func main(n)               # 4
        li r1, 0
        li r2, 0
    top:
        call r3, check, r2, 1
        add r1, r1, r3
        addi r2, r2, 1
        blt r2, n, top
        putn r1
        ret r1
    .end";

#[test]
fn functions_without_side_effects_bail_and_the_rest_stay_as_they_were() {
    use crate::native::{Native, native_functions};
    let p = assemble(BAILS).unwrap();
    assert_eq!(
        native_functions(&p),
        [
            Native::Bails,
            Native::No,
            Native::Closed,
            Native::Pure,
            Native::No
        ]
    );
    let p = assemble(FIB).unwrap();
    assert_eq!(native_functions(&p), [Native::Pure, Native::Pure]);
}

#[test]
fn a_bailing_function_hands_its_call_to_the_interpreter_with_nothing_changed() {
    let p = assemble(BAILS).unwrap();
    let mut cache = CodeCache::new().unwrap();
    // Whole, from its entry: natively where it does not print; where it
    // does, an `Interpret` exit at offset 0 with the registers untouched.
    for (x, value) in [(5, Some(15)), (64, None), (-128, None), (65, Some(195))] {
        let c = cache.compile_function(&p, 0).unwrap();
        let mut regs = [0i64; 256];
        regs[0] = x;
        let mut counters = vec![0; c.counters_len()];
        let e = c
            .run_with(
                &mut regs,
                &mut Memory::from(vec![0; 4]),
                &mut counters,
                1,
                DEFAULT_MAX_DEPTH,
            )
            .unwrap();
        assert_eq!(e.kind, ExitKind::Interpret);
        match value {
            Some(v) => {
                assert_eq!(
                    (e.resume, regs[1], &counters[..]),
                    (6, v, &[1, 0, 0, 0][..])
                );
            }
            None => {
                assert_eq!((e.resume, &counters[..]), (0, &[0, 0, 1, 0][..]));
                assert_eq!(regs[..2], [x, 0], "registers as the call left them");
            }
        }
    }
    // Called from a region: the loop stays compiled between prints, and
    // the run's output and value are the interpreter's.
    let regions = profile_and_plan(&p, &[1000], &[]);
    let top = regions
        .iter()
        .find(|r| (r.func, r.head) == (4, 2))
        .expect("a region at the loop head");
    assert!(
        top.steps
            .iter()
            .any(|s| matches!(s, Step::Call { callee: 0, .. })),
        "{top}"
    );
    let compiled = compile_all(&mut cache, &p, &regions);
    let (mixed, stats) = run_mixed(&p, &[1000], &[], &compiled, 100_000);
    assert_eq!(mixed, run_oracle(&p, &[1000], &[]));
    // A couple of entries per print (16 of them), not one per call.
    assert!(stats.entries <= 2 * 16 + 1, "{stats:?}");
    // Every print but the first (x = 0, before the loop's first back
    // edge enters the region) is a bail.
    assert_eq!(
        stats.exits.get(&ExitKind::Interpret),
        Some(&15),
        "{stats:?}"
    );
}

/// `via` has no store: its `calli` runs natively when the function value
/// names a pure or bailing function taking one argument, and bails for any
/// other value.
const VIA: &str = "
    .memory 4
    .func leaf(x)               # 0: pure
        muli x, x, 3
        ret x
    .end
    .func writer(x)             # 1: closed, stores
        li r1, 0
        st r1, 0, x
        ret x
    .end
    .func via(f, x)             # 2: bailing, calls through f
        calli r2, f, x, 1
        addi r2, r2, 1
        ret r2
    .end
    .func main(n)               # 3
        li r1, 0
        li r2, 0
    top:
        andi r4, r2, 15
        li r3, 0
        bnei r4, 5, go
        li r3, 1                # every 16th call: the storing target
    go:
        bnei r4, 9, call
        li r3, 4                # and one of another arity (traps at the end)
        blt r2, n, call
        li r3, 0
    call:
        mov r5, r2
        call r6, via, r3, 2
        add r1, r1, r6
        addi r2, r2, 1
        blt r2, n, top
        putn r1
        ret r1
    .end
    .func pair(a, b)            # 4: pure, but two arguments
        add a, a, b
        ret a
    .end";

#[test]
fn a_bailing_calli_calls_native_targets_and_bails_for_the_rest() {
    use crate::native::{Native, native_functions};
    let p = assemble(VIA).unwrap();
    assert_eq!(
        native_functions(&p),
        [
            Native::Pure,
            Native::Closed,
            Native::Bails,
            Native::No,
            Native::Pure
        ]
    );
    let mut cache = CodeCache::new().unwrap();
    for (f, value) in [
        (0, Some(22)),
        (1, None),
        (2, None),
        (3, None),
        (4, None),
        (5, None),
        (-1, None),
        (i64::MIN, None),
    ] {
        let c = cache.compile_function(&p, 2).unwrap();
        let mut regs = [0i64; 256];
        regs[..2].copy_from_slice(&[f, 7]);
        let mut mem = Memory::from(vec![0i64; 4]);
        let mut counters = vec![0; c.counters_len()];
        let e = c
            .run_with(&mut regs, &mut mem, &mut counters, 1, DEFAULT_MAX_DEPTH)
            .unwrap();
        assert_eq!(e.kind, ExitKind::Interpret);
        match value {
            Some(v) => assert_eq!((e.resume, regs[2]), (2, v), "f = {f}"),
            None => {
                assert_eq!((e.resume, &counters[..]), (0, &[0, 0, 1, 0][..]), "f = {f}");
                assert_eq!(
                    (&regs[..3], &mem[..]),
                    (&[f, 7, 0][..], &[0; 4][..]),
                    "nothing changed"
                );
            }
        }
    }
    // In a run: the interpreter's output, and its trap for the call of
    // wrong arity (at n = 25: `via` is called with f = 4 at i = 9).
    let regions = profile_and_plan(&p, &[8], &[]);
    let mut compiled = compile_all(&mut cache, &p, &regions);
    compiled.insert((2, 0), cache.compile_function(&p, 2).unwrap());
    for n in [8, 200, 25] {
        let (mixed, _) = run_mixed(&p, &[n], &[], &compiled, 100_000);
        assert_eq!(mixed, run_oracle(&p, &[n], &[]), "n = {n}");
    }
}

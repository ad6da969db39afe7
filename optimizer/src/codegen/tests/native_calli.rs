//! A closed function's `calli` (see `native`), against the interpreter.

use super::native::{interpret, run_function};
use super::*;
use crate::DEFAULT_MAX_DEPTH;
use toyvm_vm::interp::Memory;

/// A closed function's `calli`: every function of the call's arity is a
/// possible callee, so it is compared against each and called directly;
/// other values trap as in the interpreter (a bad value, or a function of
/// another arity).
const CLOSED_CALLI: &str = "
    .memory 4
    .func inc(x, y)             # 0: stores
        st y, 0, x
        addi x, x, 1
        ret x
    .end
    .func dbl(x, y)             # 1
        add x, x, x
        ret x
    .end
    .func one(x)                # 2: another arity
        ret x
    .end
    .func dispatch(v, x)        # 3: may call itself
        addi r2, x, 0
        li r3, 0
        calli r4, v, r2, 2      # 2: the call
        ret r4
    .end
    .func main(v, x, z)         # 4: output, and a third arity
        call r3, dispatch, v, 2
        putn r3
        ret r3
    .end";

#[test]
fn a_closed_calli_calls_every_function_of_its_arity_and_traps_for_the_rest() {
    let p = assemble(CLOSED_CALLI).unwrap();
    let natives = crate::native_functions(&p);
    assert_eq!(
        natives,
        [
            crate::Native::Closed,
            crate::Native::Pure,
            crate::Native::Pure,
            crate::Native::Closed,
            crate::Native::No
        ]
    );
    let mut cache = CodeCache::new().unwrap();
    cache.compile_natives(&p).unwrap();
    for v in [0, 1, 2, 3, 4, 5, -1, i64::MIN, i64::MAX] {
        for x in [1, 3, 7] {
            let mut mem = Memory::from(vec![9i64; 4]);
            let native = run_function(&mut cache, &p, 3, &[v, x], &mut mem, 1, DEFAULT_MAX_DEPTH);
            let expected = interpret(&p, &[v, x, 0], DEFAULT_MAX_DEPTH);
            assert_eq!(native, expected, "dispatch({v}, {x})");
            // `inc` stored, as interpreted: directly, or through
            // dispatch(3, 0) and dispatch(0, 0).
            assert_eq!(
                mem[0] != 9,
                v == 0 || (v == 3 && x == 3),
                "dispatch({v}, {x})"
            );
        }
    }
    let t = interpret(&p, &[4, 1, 0], DEFAULT_MAX_DEPTH).unwrap_err();
    assert_eq!(
        t.to_string(),
        "trap in `dispatch` at instruction 2 (pc f3:2): indirect call to `main` passes 2 arguments but it takes 3"
    );
}

#[test]
fn a_calli_that_could_reach_an_open_function_or_too_many_keeps_the_caller_open() {
    // `one` now takes two arguments and prints: the `calli` could reach it.
    let open = CLOSED_CALLI.replace(
        ".func one(x)                # 2: another arity",
        ".func one(x, y)\n        putn x",
    );
    // Not closed; free of stores, so it bails where it cannot go on (its
    // `calli` then calls pure and bailing functions only).
    let natives = crate::native_functions(&assemble(&open).unwrap());
    assert_eq!(natives[3], crate::Native::Bails);
    // Nine functions of the call's arity: more than a closed `calli`
    // compares against.
    let mut many = CLOSED_CALLI.to_owned();
    for i in 0..6 {
        many.push_str(&format!("\n.func extra{i}(a, b)\n    ret a\n.end"));
    }
    let p = assemble(&many).unwrap();
    assert_eq!(crate::native::calli_targets(&p, 2).count(), 9);
    assert_eq!(crate::native_functions(&p)[3], crate::Native::Bails);
}

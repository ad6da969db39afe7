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

//! Calls from compiled code into the interpreter ([`interp::Reentry`]),
//! checked without a real JIT: hosts whose "compiled code" is Rust that
//! calls the interpreter where the bytecode calls a function, and must be
//! indistinguishable from interpreting (output, value, trap and its pc,
//! fuel, depth, the callee's tuples in order).

use toyvm_vm::interp::{
    self, CallSite, Config, HostFunctions, Input, Memory, Reentry, Trap, TrapKind,
};
use toyvm_vm::{Error, Kind, Pc, Program, Tuple, TupleSink, asm};

/// `main` loops `n + 1` times calling `f(i)` at offset 2 and summing; `f`
/// prints its argument's square, and does what `tail` says at `x == 3`.
fn looping(tail: &str) -> Program {
    let src = format!(
        "
        .func main(n)
            li r1, 0            # acc
            li r2, 0            # i
        top:
            call r3, f, r2, 1   # 2: the call the host makes through the interpreter
            add r1, r1, r3
            loop r2, n, top     # 4
            ret r1              # 5
        .end
        .func f(x)
            .reg y, t
            mul y, x, x
            putn y
            li t, 32
            putc t
            bnei x, 3, done
            {tail}
        done:
            ret y
        .end"
    );
    asm::assemble(&src).unwrap()
}

/// A host that runs `main`'s loop (offsets 2-4) itself, making its call
/// through the interpreter and counting its own instructions against fuel
/// as the interpreter would.
struct LoopHost {
    tuples: Vec<Tuple>,
    entries: u32,
    calls: u32,
}

impl TupleSink for LoopHost {
    fn accept(&mut self, batch: &[Tuple]) {
        self.tuples.extend_from_slice(batch);
    }
}

impl interp::Host for LoopHost {
    const JIT: bool = true;
    fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
        (func == 0 && pc == 2).then_some(0)
    }
    fn run_region(
        &mut self,
        _: u32,
        regs: &mut [i64; 256],
        mem: &mut Memory,
        host_fns: &mut dyn HostFunctions,
        depth: usize,
        fuel: &mut u64,
        vm: &mut Reentry<'_>,
    ) -> Result<u32, Trap> {
        self.entries += 1;
        loop {
            // Three instructions a trip: hand back what fuel cannot pay.
            if *fuel < 3 {
                return Ok(2);
            }
            *fuel -= 1;
            let call = CallSite {
                site: Pc::new(0, 2),
                callee: 1,
                args: &[regs[2]],
                depth,
            };
            self.calls += 1;
            let Some(v) = vm.call(self, call, mem, host_fns, fuel) else {
                assert!(vm.stopped());
                // Whatever is returned is ignored.
                return Ok(0);
            };
            regs[3] = v;
            if *fuel < 2 {
                return Ok(3);
            }
            *fuel -= 2;
            regs[1] = regs[1].wrapping_add(regs[3]);
            regs[2] += 1;
            if regs[2] > regs[0] {
                return Ok(5);
            }
        }
    }
}

fn run_with<H: interp::Host + TupleSink>(
    p: &Program,
    host: &mut H,
    args: &[i64],
    cfg: &Config,
) -> (Result<i64, Error>, String) {
    let mut out = Vec::new();
    let r = interp::run_with_host(p, Input { args, file: &[] }, &mut out, host, cfg);
    (r.map(|o| o.value), String::from_utf8(out).unwrap())
}

fn interpreted(
    p: &Program,
    args: &[i64],
    cfg: &Config,
) -> (Result<i64, Error>, String, Vec<Tuple>) {
    let mut tuples = Vec::new();
    let mut out = Vec::new();
    let r = interp::run_with_sink(p, Input { args, file: &[] }, &mut out, &mut tuples, cfg);
    (r.map(|o| o.value), String::from_utf8(out).unwrap(), tuples)
}

fn trap(r: &Result<i64, Error>) -> Option<(&TrapKind, Pc)> {
    match r {
        Err(Error::Trap(t)) => Some((&t.kind, t.pc)),
        _ => None,
    }
}

/// Without the loop's own tuples (compiled code emits none), the streams
/// agree: the callee's Call, argument and body tuples, in order.
fn callee_tuples(tuples: &[Tuple]) -> Vec<Tuple> {
    tuples
        .iter()
        .copied()
        .filter(|t| !(t.kind == Kind::Edge && Pc(t.a).func() == 0))
        .collect()
}

fn host() -> LoopHost {
    LoopHost {
        tuples: Vec::new(),
        entries: 0,
        calls: 0,
    }
}

#[test]
fn compiled_code_calls_the_interpreter_and_goes_on() {
    let p = looping("nop");
    let cfg = Config::default();
    let (want, want_out, want_tuples) = interpreted(&p, &[2000], &cfg);
    let mut h = host();
    let (got, out) = run_with(&p, &mut h, &[2000], &cfg);
    assert_eq!(got.unwrap(), want.unwrap());
    assert_eq!(out, want_out);
    // The first call is interpreted; the taken back edge enters the region
    // once, which makes every other call.
    assert_eq!((h.entries, h.calls), (1, 2000));
    assert_eq!(callee_tuples(&h.tuples), callee_tuples(&want_tuples));
    // Full batches went to the sink from inside the calls.
    assert!(h.tuples.len() > 3 * toyvm_vm::tuple::BATCH);
}

#[test]
fn halt_in_the_callee_ends_the_run() {
    let p = looping("halt y");
    let cfg = Config::default();
    let (want, want_out, want_tuples) = interpreted(&p, &[10], &cfg);
    assert_eq!(want.as_ref().unwrap(), &9);
    let mut h = host();
    let (got, out) = run_with(&p, &mut h, &[10], &cfg);
    assert_eq!(got.unwrap(), 9);
    assert_eq!(out, want_out);
    assert_eq!(callee_tuples(&h.tuples), callee_tuples(&want_tuples));
}

#[test]
fn a_trap_in_the_callee_is_the_interpreters() {
    let p = looping("li t, 0\n div y, y, t");
    let cfg = Config::default();
    let (want, want_out, _) = interpreted(&p, &[10], &cfg);
    let (kind, pc) = trap(&want).expect("the interpreter traps");
    assert_eq!((kind, pc.func()), (&TrapKind::DivisionByZero, 1));
    let mut h = host();
    let (got, out) = run_with(&p, &mut h, &[10], &cfg);
    assert_eq!(trap(&got), Some((kind, pc)));
    assert_eq!(out, want_out);
}

#[test]
fn fuel_runs_out_in_the_callee_exactly_where_the_interpreter_does() {
    let p = looping("nop");
    let total = {
        let cfg = Config {
            count_steps: true,
            ..Config::default()
        };
        let mut out = Vec::new();
        let o = interp::run(
            &p,
            Input {
                args: &[50],
                file: &[],
            },
            &mut out,
            &cfg,
        )
        .unwrap();
        o.steps.unwrap()
    };
    let mut inside = 0;
    for limit in (total / 3)..(total / 3 + 12) {
        let cfg = Config {
            fuel: Some(limit),
            ..Config::default()
        };
        let (want, want_out, want_tuples) = interpreted(&p, &[50], &cfg);
        let (kind, pc) = trap(&want).expect("out of fuel");
        assert_eq!(kind, &TrapKind::OutOfFuel { limit });
        inside += usize::from(pc.func() == 1);
        let mut h = host();
        let (got, out) = run_with(&p, &mut h, &[50], &cfg);
        assert_eq!(trap(&got), Some((kind, pc)), "limit {limit}");
        assert_eq!(out, want_out, "limit {limit}");
        assert_eq!(callee_tuples(&h.tuples), callee_tuples(&want_tuples));
    }
    assert!(inside >= 4, "the limits fall inside the callee");
    // With enough fuel, the count is the interpreter's.
    let cfg = Config {
        fuel: Some(total),
        ..Config::default()
    };
    let mut h = host();
    let mut out = Vec::new();
    let o = interp::run_with_host(
        &p,
        Input {
            args: &[50],
            file: &[],
        },
        &mut out,
        &mut h,
        &cfg,
    );
    assert_eq!(o.unwrap().steps, Some(total));
}

/// `main` calls `down(n)`, which recurses to 0; the host runs `down`'s
/// recursive call (offset 2) through the interpreter, which enters the
/// host again at the callee's entry: compiled code, the interpreter and
/// compiled code nest, one call deeper each time.
struct Recursing {
    deepest: usize,
}

impl TupleSink for Recursing {
    fn accept(&mut self, _: &[Tuple]) {}
}

impl interp::Host for Recursing {
    const JIT: bool = true;
    fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
        (func == 1 && pc == 0).then_some(0)
    }
    fn run_region(
        &mut self,
        _: u32,
        regs: &mut [i64; 256],
        mem: &mut Memory,
        host_fns: &mut dyn HostFunctions,
        depth: usize,
        fuel: &mut u64,
        vm: &mut Reentry<'_>,
    ) -> Result<u32, Trap> {
        self.deepest = self.deepest.max(depth);
        if regs[0] == 0 {
            return Ok(0);
        }
        // `beqi`, `subi r1, n, 1` and `call`, as compiled code.
        *fuel -= 3;
        regs[1] = regs[0] - 1;
        let call = CallSite {
            site: Pc::new(1, 2),
            callee: 1,
            args: &[regs[1]],
            depth,
        };
        match vm.call(self, call, mem, host_fns, fuel) {
            Some(v) => {
                regs[1] = v;
                Ok(3)
            }
            None => Ok(0),
        }
    }
}

#[test]
fn nesting_is_bounded_by_the_call_depth_limit() {
    let p = asm::assemble(
        "
        .func main(n)
            call r1, down, n, 1
            ret r1
        .end
        .func down(n)
            beqi n, 0, done     # 0
            subi r1, n, 1
            call r1, down, r1, 1   # 2
            addi n, r1, 2       # 3
        done:
            ret n
        .end",
    )
    .unwrap();
    for (n, max_depth) in [(100, 1000), (100, 60), (100, 101), (100, 100)] {
        let cfg = Config {
            max_depth,
            count_steps: true,
            ..Config::default()
        };
        let mut out = Vec::new();
        let want = interp::run(
            &p,
            Input {
                args: &[n],
                file: &[],
            },
            &mut out,
            &cfg,
        );
        let mut h = Recursing { deepest: 0 };
        let got = interp::run_with_host(
            &p,
            Input {
                args: &[n],
                file: &[],
            },
            &mut out,
            &mut h,
            &cfg,
        );
        match (want, got) {
            (Ok(w), Ok(g)) => {
                assert_eq!(
                    (w.value, w.steps),
                    (g.value, g.steps),
                    "n {n} depth {max_depth}"
                );
                assert_eq!(h.deepest, n as usize + 1);
            }
            (Err(Error::Trap(w)), Err(Error::Trap(g))) => {
                assert_eq!(w, g, "n {n} depth {max_depth}");
                assert_eq!(w.kind, TrapKind::StackOverflow { depth: max_depth });
                assert!(h.deepest <= max_depth);
            }
            (w, g) => panic!("n {n} depth {max_depth}: {w:?} against {g:?}"),
        }
    }
}

#[test]
fn a_bad_function_value_traps_at_the_call() {
    let p = looping("nop");
    struct Bad(i64, Vec<i64>);
    impl TupleSink for Bad {
        fn accept(&mut self, _: &[Tuple]) {}
    }
    impl interp::Host for Bad {
        const JIT: bool = true;
        fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
            (func == 0 && pc == 2).then_some(0)
        }
        fn run_region(
            &mut self,
            _: u32,
            _: &mut [i64; 256],
            mem: &mut Memory,
            host_fns: &mut dyn HostFunctions,
            depth: usize,
            fuel: &mut u64,
            vm: &mut Reentry<'_>,
        ) -> Result<u32, Trap> {
            let args = self.1.clone();
            let call = CallSite {
                site: Pc::new(0, 2),
                callee: self.0,
                args: &args,
                depth,
            };
            assert_eq!(vm.call(self, call, mem, host_fns, fuel), None);
            assert!(vm.stopped());
            Ok(0)
        }
    }
    // A `calli` whose register holds 7 (no function).
    let (got, _) = run_with(&p, &mut Bad(7, vec![1]), &[3], &Config::default());
    let at = Pc::new(0, 2);
    assert_eq!(trap(&got), Some((&TrapKind::BadFunctionValue(7), at)));
    // `main` (one parameter) with two arguments.
    let (got, _) = run_with(&p, &mut Bad(0, vec![1, 2]), &[3], &Config::default());
    let arity = TrapKind::ArityMismatch {
        callee: "main".into(),
        expected: 1,
        given: 2,
    };
    assert_eq!(trap(&got), Some((&arity, at)));
}

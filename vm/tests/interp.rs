//! Interpreter behaviour: results, traps, tuple emission, verifier rules.

use toyvm_vm::interp::{self, Config, Input, TrapKind};
use toyvm_vm::{Error, Kind, KindSet, Pc, Tuple, asm};

fn run_src(src: &str, args: &[i64]) -> (Result<i64, Error>, String) {
    let p = asm::assemble(src).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    let cfg = Config::default();
    let r = interp::run(&p, Input { args, file: &[] }, &mut out, &cfg).map(|o| o.value);
    (r, String::from_utf8(out).unwrap())
}

fn trap_of(src: &str, args: &[i64]) -> (TrapKind, u32, String) {
    match run_src(src, args).0 {
        Err(Error::Trap(t)) => {
            let msg = t.to_string();
            (t.kind, t.pc.offset(), msg)
        }
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn arithmetic_calls_and_output() {
    let src = "
        .func main(n)
            call r1, square, n, 1
            putn r1
            li r2, '!'
            putc r2
            neg r3, r1
            putn r3
            ret r1
        .end
        .func square(x)
            mul x, x, x
            ret x
        .end";
    let (r, out) = run_src(src, &[12]);
    assert_eq!(r.unwrap(), 144);
    assert_eq!(out, "144!-144");
}

#[test]
fn traps_carry_the_pc_and_a_message() {
    let (k, pc, msg) = trap_of(
        ".func main(n)\n li r1, 0\n div r2, n, r1\n ret r2\n.end",
        &[5],
    );
    assert_eq!(k, TrapKind::DivisionByZero);
    assert_eq!(pc, 1);
    assert!(
        msg.contains("`main` at instruction 1") && msg.contains("division by zero"),
        "{msg}"
    );

    let (k, pc, _) = trap_of(
        ".memory 8\n.func main(n)\n ld r1, n, 0\n ret r1\n.end",
        &[8],
    );
    assert_eq!(k, TrapKind::OutOfBounds { addr: 8, size: 8 });
    assert_eq!(pc, 0);
    let (k, _, _) = trap_of(".memory 8\n.func main(n)\n st n, -1, n\n ret n\n.end", &[0]);
    assert_eq!(k, TrapKind::OutOfBounds { addr: -1, size: 8 });

    let (k, _, msg) = trap_of(".func main(n)\n call r1, main, n, 1\n ret r1\n.end", &[1]);
    assert!(matches!(k, TrapKind::StackOverflow { .. }), "{msg}");

    let (k, _, _) = trap_of(
        ".func main(n)\n li r1, 99\n calli r2, r1, n, 1\n ret r2\n.end",
        &[1],
    );
    assert_eq!(k, TrapKind::BadFunctionValue(99));
    let (k, _, _) = trap_of(
        ".func main(n)\n fref r1, two\n calli r2, r1, n, 1\n ret r2\n.end\n.func two(a, b)\n ret a\n.end",
        &[1],
    );
    assert!(matches!(
        k,
        TrapKind::ArityMismatch {
            expected: 2,
            given: 1,
            ..
        }
    ));
}

#[test]
fn fuel_stops_an_infinite_loop() {
    let p = asm::assemble(".func main()\n top: jmp top\n.end").unwrap();
    let cfg = Config {
        fuel: Some(1000),
        ..Config::default()
    };
    let e = interp::run(&p, Input::default(), &mut std::io::sink(), &cfg).unwrap_err();
    assert!(
        matches!(e, Error::Trap(ref t) if t.kind == TrapKind::OutOfFuel { limit: 1000 }),
        "{e}"
    );
}

#[test]
fn wrong_argument_count_is_a_usage_error() {
    let e = run_src(".func main(a, b)\n ret a\n.end", &[1])
        .0
        .unwrap_err();
    assert_eq!(e.to_string(), "`main` takes 2 arguments, 1 given");
}

#[test]
fn input_file_is_loaded_at_the_input_address() {
    let p = asm::assemble(
        ".memory 16\n.input 10\n.func main()\n inlen r0\n ld r1, r0, 9\n putn r1\n ret r0\n.end",
    )
    .unwrap();
    let mut out = Vec::new();
    let o = interp::run(
        &p,
        Input {
            args: &[],
            file: b"abc",
        },
        &mut out,
        &Config::default(),
    )
    .unwrap();
    assert_eq!(o.value, 3);
    assert_eq!(out, b"99");
    let e = interp::run(
        &p,
        Input {
            args: &[],
            file: b"0123456789",
        },
        &mut out,
        &Config::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("does not fit"), "{e}");
}

#[test]
fn tuples_follow_the_documented_encoding() {
    let src = "
        .memory 4
        .data 0: 42
        .func main(n)          # f0
            li r1, 0
        top:
            ld r2, r1, 0       # 1: Value <f0:1, 42>
            fref r3, id
            calli r2, r3, r2, 1  # 3: Call <f0:3, 1>, then Value <f1:arg0, 42>
            li r4, 1
            jtab r4, [top, out]  # 5: Edge <f0:5, f0:6>
        out:
            loop r1, n, top    # 6: Edge taken <f0:6, f0:1>, then not taken <f0:6, f0:7>
            ret r1
        .end
        .func id(x)            # f1
            ret x
        .end";
    let p = asm::assemble(src).unwrap();
    let mut tuples: Vec<Tuple> = Vec::new();
    interp::run_with_sink(
        &p,
        Input {
            args: &[1],
            file: &[],
        },
        &mut std::io::sink(),
        &mut tuples,
        &Config::default(),
    )
    .unwrap();
    let pc = |f, o| Pc::new(f, o).0;
    let v = |a, b| Tuple {
        kind: Kind::Value,
        a,
        b,
    };
    let e = |a, b| Tuple {
        kind: Kind::Edge,
        a,
        b,
    };
    let c = |a, b| Tuple {
        kind: Kind::Call,
        a,
        b,
    };
    // The loaded word is mem[r1]: 42, then 0.
    let iteration = |last: bool| {
        let loaded = if last { 0 } else { 42 };
        vec![
            v(pc(0, 1), loaded),
            c(pc(0, 3), 1),
            v(Pc::arg(1, 0).0, loaded),
            e(pc(0, 5), pc(0, 6)),
            e(pc(0, 6), if last { pc(0, 7) } else { pc(0, 1) }),
        ]
    };
    let mut want = vec![v(Pc::arg(0, 0).0, 1)];
    want.extend(iteration(false));
    want.extend(iteration(true));
    assert_eq!(tuples, want);

    // Kind selection: only calls.
    let mut calls: Vec<Tuple> = Vec::new();
    let cfg = Config {
        kinds: KindSet::only(Kind::Call),
        ..Config::default()
    };
    interp::run_with_sink(
        &p,
        Input {
            args: &[1],
            file: &[],
        },
        &mut std::io::sink(),
        &mut calls,
        &cfg,
    )
    .unwrap();
    assert_eq!(calls, vec![c(pc(0, 3), 1); 2]);
}

/// The all-kinds loop (its kinds fixed at compile time) and the loops that
/// check a mask per tuple emit the same stream, filtered; over several
/// batches, and through calls with zero to three arguments.
#[test]
fn every_kind_selection_sees_the_same_stream() {
    let src = "
        .memory 8
        .data 0: 5, 7, 9
        .func main(n)
            li r1, 0
        top:
            andi r2, r1, 3
            ld r3, r2, 0
            call r4, zero, r0, 0
            call r4, one, r3, 1
            call r4, three, r1, 3
            fref r5, one
            calli r4, r5, r4, 1
            loop r1, n, top
            ret r4
        .end
        .func zero()
            li r0, 1
            ret r0
        .end
        .func one(x)
            addi x, x, 1
            ret x
        .end
        .func three(a, b, c)
            add a, a, b
            blt a, c, small
            ret a
        small:
            ret c
        .end";
    let p = asm::assemble(src).unwrap();
    let run = |kinds: KindSet| {
        let mut tuples: Vec<Tuple> = Vec::new();
        let cfg = Config {
            kinds,
            ..Config::default()
        };
        let input = Input {
            args: &[700],
            file: &[],
        };
        interp::run_with_sink(&p, input, &mut std::io::sink(), &mut tuples, &cfg).unwrap();
        tuples
    };
    let all = run(KindSet::ALL);
    assert!(all.len() > 3 * toyvm_vm::tuple::BATCH, "{}", all.len());
    for k in Kind::ALL {
        let only: Vec<Tuple> = all.iter().copied().filter(|t| t.kind == k).collect();
        assert!(!only.is_empty());
        assert_eq!(run(KindSet::only(k)), only, "{k:?} alone");
        let others: Vec<Tuple> = all.iter().copied().filter(|t| t.kind != k).collect();
        let mask = Kind::ALL
            .into_iter()
            .filter(|&j| j != k)
            .fold(KindSet::EMPTY, |m, j| m.with(j));
        assert_eq!(run(mask), others, "all but {k:?}");
    }
}

#[test]
fn batches_are_bounded_and_complete() {
    struct Sizes(Vec<usize>);
    impl toyvm_vm::TupleSink for Sizes {
        fn accept(&mut self, batch: &[Tuple]) {
            self.0.push(batch.len());
        }
    }
    let p =
        asm::assemble(".func main(n)\n li r1, 0\n top: loop r1, n, top\n ret r1\n.end").unwrap();
    let mut s = Sizes(Vec::new());
    let cfg = Config {
        count_steps: true,
        ..Config::default()
    };
    let o = interp::run_with_sink(
        &p,
        Input {
            args: &[5000],
            file: &[],
        },
        &mut std::io::sink(),
        &mut s,
        &cfg,
    )
    .unwrap();
    assert!(s.0.iter().all(|&n| n <= toyvm_vm::tuple::BATCH));
    // One argument value, then 5001 loop edges (5000 taken, 1 not).
    assert_eq!(s.0.iter().sum::<usize>(), 5002);
    assert_eq!(o.tuples, [1, 5001, 0]);
}

#[test]
fn verifier_rejects_reads_of_unwritten_registers() {
    let e = asm::assemble(".func main(n)\n jz n, skip\n li r1, 1\n skip:\n ret r1\n.end")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("function `main`, instruction 2")
            && e.contains("reads r1, which is not written on every path"),
        "{e}"
    );
    // Written on both paths: accepted.
    asm::assemble(".func main(n)\n li r1, 0\n jz n, skip\n li r1, 1\n skip:\n ret r1\n.end")
        .unwrap();
}

#[test]
fn verifier_names_function_offset_and_problem() {
    let bad_arity = asm::assemble(
        ".func main()\n li r0, 1\n call r0, f, r0, 1\n ret r0\n.end\n.func f(a, b)\n ret a\n.end",
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad_arity.contains(
            "function `main`, instruction 1: call to `f` passes 1 arguments but it takes 2"
        ),
        "{bad_arity}"
    );
    let window = asm::assemble(".func main()\n .regs 2\n li r0, 1\n li r1, 1\n call r0, f, r1, 2\n ret r0\n.end\n.func f(a, b)\n ret a\n.end")
        .unwrap_err()
        .to_string();
    assert!(window.contains("run past the 2 registers"), "{window}");
}

/// A host that "compiles" one loop by hand: the protocol of `interp::Host`, checked without a real JIT.
#[test]
fn hosts_can_run_compiled_regions_and_resume() {
    struct Host {
        entered: u32,
        edges: u64,
    }
    impl toyvm_vm::TupleSink for Host {
        fn accept(&mut self, batch: &[Tuple]) {
            self.edges += batch.iter().filter(|t| t.kind == Kind::Edge).count() as u64;
        }
    }
    impl interp::Host for Host {
        const JIT: bool = true;
        fn region_at(&mut self, func: u32, pc: u32) -> Option<u32> {
            (func == 0 && pc == 2).then_some(7)
        }
        fn run_region(
            &mut self,
            id: u32,
            regs: &mut [i64; 256],
            _mem: &mut interp::Memory,
            _host_fns: &mut dyn interp::HostFunctions,
            _depth: usize,
            _fuel: &mut u64,
            _vm: &mut interp::Reentry<'_>,
        ) -> Result<u32, toyvm_vm::interp::Trap> {
            assert_eq!(id, 7);
            self.entered += 1;
            // The loop `top: add r1, r1, r2; loop r2, n, top`, run natively
            // to its exit, then resume after it.
            loop {
                regs[1] = regs[1].wrapping_add(regs[2]);
                regs[2] += 1;
                if regs[2] > regs[0] {
                    return Ok(4);
                }
            }
        }
    }
    let src = ".func main(n)\n li r1, 0\n li r2, 1\n top:\n add r1, r1, r2\n loop r2, n, top\n ret r1\n.end";
    let p = asm::assemble(src).unwrap();
    let mut host = Host {
        entered: 0,
        edges: 0,
    };
    let o = interp::run_with_host(
        &p,
        Input {
            args: &[100],
            file: &[],
        },
        &mut std::io::sink(),
        &mut host,
        &Config::default(),
    )
    .unwrap();
    assert_eq!(o.value, 5050);
    // The first iteration is interpreted; its taken back edge enters the region.
    assert_eq!(host.entered, 1);
    assert_eq!(host.edges, 1);
}

/// Runs on one thread reuse a register stack and its frame slots (see
/// `frames::take_spare`); a run with a lower depth limit than the last
/// must still trap at its own limit, and the same program must still
/// return under a higher one.
#[test]
fn a_reused_call_stack_keeps_each_runs_depth_limit() {
    let p = asm::assemble(
        "
        .func main(n)
            beqi n, 0, done
            subi r1, n, 1
            call r1, main, r1, 1
            addi n, r1, 1
        done:
            ret n
        .end",
    )
    .unwrap();
    let run = |n: i64, max_depth: usize| {
        let cfg = Config {
            max_depth,
            ..Config::default()
        };
        let mut out = Vec::new();
        interp::run(
            &p,
            Input {
                args: &[n],
                file: &[],
            },
            &mut out,
            &cfg,
        )
        .map(|o| o.value)
    };
    for _ in 0..3 {
        assert_eq!(run(500, 1000).unwrap(), 500);
        match run(500, 40) {
            Err(Error::Trap(t)) => assert_eq!(t.kind, TrapKind::StackOverflow { depth: 40 }),
            other => panic!("expected a stack overflow at 40, got {other:?}"),
        }
        assert_eq!(run(39, 40).unwrap(), 39);
    }
}

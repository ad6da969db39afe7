//! Native functions and native calls from regions against the interpreter:
//! values, traps (kind, function, pc, address, depth) and machine state.

use super::*;
use crate::region::Step;
use crate::{DEFAULT_MAX_DEPTH, NativeTrap};
use toyvm_vm::interp::Memory;
use toyvm_vm::interp::{self, Trap};

pub(super) const FIB: &str = "
    .func fib(n)
        blti n, 2, base
        subi r1, n, 1
        call r1, fib, r1, 1
        subi r2, n, 2
        call r2, fib, r2, 1
        add r1, r1, r2
        ret r1
    base:
        ret n
    .end
    .func main(n)
        call r1, fib, n, 1
        ret r1
    .end";

/// The interpreter's value or trap for a whole run.
pub(super) fn interpret(p: &Program, args: &[i64], max_depth: usize) -> Result<i64, Trap> {
    let cfg = interp::Config {
        max_depth,
        ..Default::default()
    };
    let input = interp::Input { args, file: &[] };
    match interp::run(p, input, &mut Vec::new(), &cfg) {
        Ok(o) => Ok(o.value),
        Err(toyvm_vm::Error::Trap(t)) => Err(t),
        Err(e) => panic!("{e}"),
    }
}

/// Runs `func`'s whole-function region as the interpreter would on
/// entering it at frame count `depth`: the value its `ret` returns, or the
/// trap as the interpreter would report it.
pub(super) fn run_function(
    cache: &mut CodeCache,
    p: &Program,
    func: u32,
    args: &[i64],
    mem: &mut Memory,
    depth: usize,
    max_depth: usize,
) -> Result<i64, Trap> {
    let c = cache.compile_function(p, func).unwrap();
    assert!(c.calls_native());
    let mut regs = [0i64; 256];
    regs[..args.len()].copy_from_slice(args);
    let mut counters = vec![0; c.counters_len()];
    match c.run_with(&mut regs, mem, &mut counters, depth, max_depth) {
        Ok(e) => {
            assert_eq!(e.kind, ExitKind::Interpret);
            let Instr::Ret { a } = p.functions[func as usize].code[e.resume as usize] else {
                panic!("the exit is not at a `ret`: {e}");
            };
            assert_eq!(counters, [1, 0, 0, 0]);
            Ok(regs[a as usize])
        }
        Err(t) => {
            assert_eq!(counters, [0, 1, 0, 0]);
            Err(t.to_trap(p))
        }
    }
}

use toyvm_vm::isa::Instr;

/// The program's natives, then each region's first plan at its head,
/// compiled: what `run_mixed` runs.
pub(super) fn compile_all(
    cache: &mut CodeCache,
    p: &Program,
    regions: &[Region],
) -> HashMap<(u32, u32), CompiledRegion> {
    cache.compile_natives(p).unwrap();
    let mut compiled = HashMap::new();
    for r in regions {
        compiled
            .entry((r.func, r.head))
            .or_insert(cache.compile(r).unwrap());
    }
    compiled
}

#[test]
fn native_fib_matches_the_interpreter() {
    let p = assemble(FIB).unwrap();
    let mut cache = CodeCache::new().unwrap();
    for n in 20..=25 {
        let native = run_function(
            &mut cache,
            &p,
            0,
            &[n],
            &mut no_memory(),
            1,
            DEFAULT_MAX_DEPTH,
        );
        assert_eq!(native, interpret(&p, &[n], DEFAULT_MAX_DEPTH), "fib({n})");
    }
    // And in a mixed run: the interpreter enters `fib` once, natively.
    let mut compiled = HashMap::new();
    compiled.insert((0, 0), cache.compile_function(&p, 0).unwrap());
    let (mixed, stats) = run_mixed(&p, &[22], &[], &compiled, 1_000);
    assert_eq!(mixed, run_oracle(&p, &[22], &[]));
    assert_eq!(stats.entries, 1);
}

#[test]
fn small_native_callees_are_inlined_one_level_and_keep_their_semantics() {
    // fib's two calls are inlined into fib (one level: the inlined
    // bodies' own calls stay calls) and `main`'s one (this `main` is
    // closed), `down`'s one, `work` into `mid`; the
    // other tests of this file run these programs against the
    // interpreter (values, depth traps at every limit, traps inside the
    // inlined callee with their function and pc).
    for (src, inlined) in [(FIB, 3), (DOWN, 1), (TRAPS, 1)] {
        let mut cache = CodeCache::new().unwrap();
        cache.compile_natives(&assemble(src).unwrap()).unwrap();
        assert_eq!(cache.inlined_calls(), inlined, "{src}");
    }
    // A callee over the size limit stays a call.
    let mut big = String::from(".func big(n)\n");
    for _ in 0..40 {
        big.push_str("    addi n, n, 3\n    muli n, n, 5\n");
    }
    big.push_str("    ret n\n.end\n.func small(n)\n    call r1, big, n, 1\n    ret r1\n.end\n");
    // (`main` prints: not native.)
    big.push_str(".func main(n)\n    call r1, small, n, 1\n    putn r1\n    ret r1\n.end");
    let p = assemble(&big).unwrap();
    let mut cache = CodeCache::new().unwrap();
    cache.compile_natives(&p).unwrap();
    assert_eq!(cache.inlined_calls(), 0);
    let native = run_function(
        &mut cache,
        &p,
        1,
        &[9],
        &mut no_memory(),
        1,
        DEFAULT_MAX_DEPTH,
    );
    assert_eq!(native, interpret(&p, &[9], DEFAULT_MAX_DEPTH));
}

#[test]
fn the_program_suite_fib_runs_natively() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../programs/fib.tasm"))
        .unwrap();
    let p = assemble(&src).unwrap();
    let closed = crate::closed_functions(&p);
    assert_eq!(closed, [true, false], "fib is closed, main prints");
    let mut cache = CodeCache::new().unwrap();
    let e = cache.compile_function(&p, 1).unwrap_err();
    assert!(e.to_string().contains("cannot run natively"), "{e}");
    let mut compiled = HashMap::new();
    compiled.insert((0, 0), cache.compile_function(&p, 0).unwrap());
    let (mixed, stats) = run_mixed(&p, &[24], &[], &compiled, 1_000);
    assert_eq!(mixed, run_oracle(&p, &[24], &[]));
    assert_eq!(stats.entries, 1);
}

const DOWN: &str = "
    .func down(n)
        beqi n, 0, done
        subi r1, n, 1
        call r1, down, r1, 1    # 2: the call that overflows
        addi r1, r1, 1
        ret r1
    done:
        ret n
    .end
    .func main(n)
        call r1, down, n, 1
        putn r1
        ret r1
    .end";

#[test]
fn call_depth_traps_exactly_where_the_interpreter_does() {
    let p = assemble(DOWN).unwrap();
    let mut cache = CodeCache::new().unwrap();
    for max_depth in [1, 2, 100] {
        for n in [0, 1, 97, 98, 99, 100, 101, 150] {
            let native = run_function(&mut cache, &p, 0, &[n], &mut no_memory(), 1, max_depth);
            assert_eq!(native, interpret(&p, &[n], max_depth), "n = {n}");
        }
    }
    let t = interpret(&p, &[150], 100).unwrap_err();
    assert_eq!(
        t.to_string(),
        "trap in `down` at instruction 2 (pc f0:2): stack overflow: call depth 100 exceeded"
    );
}

#[test]
fn deep_native_recursion_fits_the_stack_the_cache_asks_for() {
    let p = assemble(DOWN).unwrap();
    let mut cache = CodeCache::new().unwrap();
    cache.compile_natives(&p).unwrap();
    let frame = cache.native_frame_bytes();
    let need = cache.native_stack_bytes(DEFAULT_MAX_DEPTH);
    eprintln!("native frame: {frame} bytes; stack for depth 65536: {need} bytes");
    assert!(frame > 0 && frame <= 128, "{frame}");
    assert!(need <= 8 << 20, "{need}");
    // The default depth limit, hit natively, on an 8 MiB stack (a main
    // thread's usual size): 60,000 deep returns, 70,000 traps at the
    // interpreter's depth, both as interpreted.
    let expected: Vec<_> = [60_000, 70_000]
        .iter()
        .map(|&n| interpret(&p, &[n], DEFAULT_MAX_DEPTH))
        .collect();
    assert_eq!(expected[0], Ok(60_000));
    let got = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            [60_000, 70_000]
                .iter()
                .map(|&n| {
                    run_function(
                        &mut cache,
                        &p,
                        0,
                        &[n],
                        &mut no_memory(),
                        1,
                        DEFAULT_MAX_DEPTH,
                    )
                })
                .collect::<Vec<_>>()
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(got, expected);
}

const TRAPS: &str = "
    .memory 16
    .func work(p, d)
        st p, 0, p          # 0: out of bounds unless 0 <= p < 16
        li r2, 100
        div r2, r2, d       # 2: division by zero
        beqi p, 7, boom
        ret r2
    boom:
        remi r3, r2, 0      # 5: only reached when d != 0 and p == 7
        ret r2
    .end
    .func mid(p, d)
        call r2, work, p, 2
        addi r2, r2, 1
        ret r2
    .end
    .func main(p, d)
        call r2, mid, p, 2
        putn r2
        ret r2
    .end";

#[test]
fn traps_inside_native_callees_are_the_interpreters() {
    let p = assemble(TRAPS).unwrap();
    let mut cache = CodeCache::new().unwrap();
    for (a, d) in [
        (3, 0),
        (16, 5),
        (-1, 5),
        (i64::MIN, 1),
        (3, 7),
        (7, 3),
        (15, -1),
    ] {
        let mut mem = Memory::from(vec![0i64; 16]);
        let native = run_function(&mut cache, &p, 1, &[a, d], &mut mem, 1, DEFAULT_MAX_DEPTH);
        let expected = interpret(&p, &[a, d], DEFAULT_MAX_DEPTH);
        assert_eq!(native, expected, "work({a}, {d})");
        // The store before a division trap happened, as interpreted.
        if (0..16).contains(&a) {
            assert_eq!(mem[a as usize], a);
        }
    }
    let t = interpret(&p, &[16, 5], DEFAULT_MAX_DEPTH).unwrap_err();
    assert_eq!(
        t.to_string(),
        "trap in `work` at instruction 0 (pc f0:0): memory access at address 16 is out of bounds (memory has 16 words)"
    );
}

#[test]
fn a_trap_exit_reports_the_native_trap() {
    // A region of `main` calling `mid` natively (mid and work are closed).
    let p = assemble(TRAPS).unwrap();
    let text = "\
region f2:0
  block 0 weight=1
    0: native f1 call r2, f1, r0, 2
    goto exit 1
";
    let r = Region::parse(text).unwrap();
    let mut cache = CodeCache::new().unwrap();
    let e = cache.compile(&r).unwrap_err();
    assert!(e.to_string().contains("compile_natives"), "{e}");
    cache.compile_natives(&p).unwrap();
    let c = cache.compile(&r).unwrap();
    assert!(c.calls_native());
    let mut counters = vec![0; c.counters_len()];
    let mut regs = [0i64; 256];
    regs[..2].copy_from_slice(&[5, 0]);
    let mut mem = Memory::from(vec![0; 16]);
    let got = c.run_with(&mut regs, &mut mem, &mut counters, 0, DEFAULT_MAX_DEPTH);
    assert_eq!(
        got,
        Err(NativeTrap {
            kind: toyvm_vm::interp::TrapKind::DivisionByZero,
            func: 0,
            pc: 2
        })
    );
    let trap_site = c
        .exits()
        .iter()
        .position(|e| e.kind == ExitKind::Trap)
        .unwrap();
    assert_eq!(counters[trap_site], 1);
    assert_eq!(mem[5], 5);
    // Without a trap: the value, and on to the side exit.
    regs[..2].copy_from_slice(&[5, 4]);
    let got = c.run_with(&mut regs, &mut mem, &mut counters, 0, DEFAULT_MAX_DEPTH);
    assert_eq!(got.map(|e| e.resume), Ok(1));
    assert_eq!(regs[2], 26);
    // `mid` calls `work`: it stays a native call; `work` calls nothing and
    // is inlined where a region calls it, its trap still its own.
    assert_eq!(c.inlined_calls(), 0);
    let leaf = Region::parse(&text.replace("native f1 call r2, f1", "native f0 call r2, f0"));
    let c = cache.compile(&leaf.unwrap()).unwrap();
    assert_eq!(c.inlined_calls(), 1);
    let mut counters = vec![0; c.counters_len()];
    // (p, d): the trap's kind and pc in `work`, or the value.
    let div0 = toyvm_vm::interp::TrapKind::DivisionByZero;
    let oob = toyvm_vm::interp::TrapKind::OutOfBounds { addr: 16, size: 16 };
    for (args, expected) in [
        ([6, 0], Err((div0.clone(), 2))),
        ([7, 4], Err((div0, 5))),
        ([16, 4], Err((oob, 0))),
        ([5, 4], Ok(25)),
    ] {
        regs[..2].copy_from_slice(&args);
        let got = c.run_with(&mut regs, &mut mem, &mut counters, 0, DEFAULT_MAX_DEPTH);
        match expected {
            Ok(v) => {
                assert_eq!(got.map(|e| e.resume), Ok(1));
                assert_eq!(regs[2], v);
            }
            Err((kind, pc)) => assert_eq!(got, Err(NativeTrap { kind, func: 0, pc }), "{args:?}"),
        }
    }
    assert_eq!(mem[6], 6, "the store before the trap happened");
    // A call with the wrong arity or to a function that is not closed is
    // refused.
    let bad = Region::parse(&text.replace("native f1 call r2, f1", "native f2 call r2, f2"));
    assert!(cache.compile(&bad.unwrap()).is_err());
}

const LOOP: &str = "
    .memory 64
    .func kernel(x, k)
        mul r2, x, k
        andi r3, r2, 63
        ld r3, r3, 0
        add r2, r2, r3
        st x, 0, r2
        ret r2
    .end
    .func main(n)
        .reg acc, i, x, k, m, v
        li acc, 0
        li i, 0
        li k, 3
        fref m, kernel
    top:
        andi x, i, 31
        call v, kernel, x, 2        # 5: direct
        add acc, acc, v
        calli v, m, x, 2            # 7: monomorphic
        xor acc, acc, v
        addi i, i, 1
        blt i, n, top
        putn acc
        ret acc
    .end";

#[test]
fn a_loop_calling_a_closed_function_stays_in_one_region() {
    let p = assemble(LOOP).unwrap();
    let regions = profile_and_plan(&p, &[300], &[]);
    let top = regions
        .iter()
        .find(|r| (r.func, r.head) == (1, 4))
        .expect("a region at the loop head");
    assert_eq!(
        top.to_string(),
        "\
region f1:4
  block 4 weight=300
    4: andi r3, r2, 31
    5: native f0 call r6, f0, r3, 2
  block 6 weight=300
    6: add r1, r1, r6
    guard r5 == 0 | fail 7
    7: native f0 calli r6, r5, r3, 2
  block 8 weight=300
    8: xor r1, r1, r6
    9: addi r2, r2, 1
    10: blt r2, r0, L4 -> head | exit 11
"
    );
    let mut cache = CodeCache::new().unwrap();
    let compiled = compile_all(&mut cache, &p, &regions);
    let (mixed, stats) = run_mixed(&p, &[1000], &[], &compiled, 100_000);
    assert_eq!(mixed, run_oracle(&p, &[1000], &[]));
    assert!(stats.entries <= 3, "{stats:?}");

    // From random-ish states, registers and memory exactly as the
    // reference's (calls evaluated by it, one frame deeper).
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as i64
    };
    for m in [0, 0, 0, 2] {
        let mut regs = [0i64; 256];
        regs[0] = next().rem_euclid(40);
        regs[1] = next();
        regs[2] = next().rem_euclid(10);
        regs[3] = next();
        regs[4] = next();
        regs[5] = m;
        let mem = Memory::from((0..64).map(|_| next()).collect::<Vec<i64>>());
        let e = check_against_reference(&p, top, regs, mem);
        let kind = if m == 0 {
            ExitKind::Side
        } else {
            ExitKind::Guard
        };
        assert_eq!(e.kind, kind);
    }
    assert!(top.steps.iter().any(|s| matches!(s, Step::Call { .. })));
}

fn poly() -> Program {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../programs/poly.tasm"
    ))
    .unwrap();
    assert_eq!(
        crate::closed_functions(&assemble(&src).unwrap()),
        [true, true, true, true, false]
    );
    assemble(&src).unwrap()
}

#[test]
fn a_polymorphic_calli_dispatches_among_its_closed_targets() {
    let p = poly();
    let regions = profile_and_plan(&p, &[300], &[]);
    let body = regions
        .iter()
        .find(|r| r.steps.iter().any(|s| matches!(s, Step::Dispatch { .. })))
        .expect("the main loop dispatches natively");
    assert!(body.loops(), "{body}");
    assert!(
        body.to_string()
            .contains("24: native [f0, f1, f2, f3] calli r6, r5, r2, 2"),
        "{body}"
    );
    let mut cache = CodeCache::new().unwrap();
    let compiled = compile_all(&mut cache, &p, &regions);
    // The four methods call nothing: inlined at the dispatch.
    assert!(compiled.values().any(|c| c.inlined_calls() == 4));
    let (mixed, stats) = run_mixed(&p, &[5000], &[], &compiled, 1_000_000);
    assert_eq!(mixed, run_oracle(&p, &[5000], &[]));
    assert!(stats.entries <= 3, "{stats:?}");

    // A function value outside the dispatch with native code of the
    // call's arity is called through the natives' table (kind_c(obj, 7) =
    // 7 + 7 + 10); any other leaves for the interpreter before the call
    // (no interpreter is lent here), registers written back.
    let text = "\
region f4:24
  block 24 weight=1
    24: native [f0, f1] calli r6, r5, r2, 2
    goto exit 25
";
    let c = cache.compile(&Region::parse(text).unwrap()).unwrap();
    assert_eq!(c.inlined_calls(), 2);
    let mut mem = Memory::from(vec![0i64; 64]);
    mem[1] = 10;
    for (method, expected) in [
        (0, Ok(17)),
        (1, Ok(-3)),
        (2, Ok(24)),
        (-5, Err(24)),
        (9, Err(24)),
    ] {
        let mut regs = [0i64; 256];
        regs[2] = 0; // obj
        regs[3] = 7; // i
        regs[5] = method;
        regs[6] = 99;
        let mut counters = vec![0; c.counters_len()];
        let e = c
            .run_with(&mut regs, &mut mem, &mut counters, 0, DEFAULT_MAX_DEPTH)
            .unwrap();
        let got = match e.kind {
            ExitKind::Side => Ok(regs[6]),
            ExitKind::Interpret => {
                assert_eq!(regs[6], 99);
                Err(e.resume)
            }
            k => panic!("{k:?}"),
        };
        assert_eq!(got, expected, "method {method}");
    }

    // From random-ish object tables (methods out of range included), the
    // loop region against the reference.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as i64
    };
    for _ in 0..8 {
        let mut regs = [0i64; 256];
        regs[1] = next().rem_euclid(1000);
        regs[3] = next().rem_euclid(5);
        regs[4] = regs[3] + next().rem_euclid(30);
        let words: Vec<i64> = (0..64)
            .map(|i| {
                let v = next();
                if i % 2 == 0 { v.rem_euclid(6) } else { v }
            })
            .collect();
        let mem = Memory::from(words);
        check_against_reference(&p, body, regs, mem);
    }
}

#[test]
fn register_stack_limits_leave_native_code_to_the_interpreter() {
    // 256 registers a frame: at the default depth limit the interpreter's
    // register stack (2^24 words) runs out first.
    let p = assemble(&DOWN.replace(".func down(n)", ".func down(n)\n .regs 256")).unwrap();
    let mut cache = CodeCache::new().unwrap();
    let c = cache.compile_function(&p, 0).unwrap();
    let mut counters = vec![0; c.counters_len()];
    let mut regs = [0i64; 256];
    regs[0] = 10;
    let e = c
        .run_with(
            &mut regs,
            &mut no_memory(),
            &mut counters,
            1,
            DEFAULT_MAX_DEPTH,
        )
        .unwrap();
    assert_eq!(
        e,
        Exit {
            kind: ExitKind::Interpret,
            resume: 0
        }
    );
    assert_eq!(counters, [0, 0, 0, 0]);
    // Under a smaller depth limit it runs natively.
    let native = run_function(&mut cache, &p, 0, &[10], &mut no_memory(), 1, 1000);
    assert_eq!(native, Ok(10));
    let t = interpret(&p, &[70_000], DEFAULT_MAX_DEPTH).unwrap_err();
    assert!(
        matches!(t.kind, toyvm_vm::interp::TrapKind::RegisterStackFull { depth, .. } if depth <= DEFAULT_MAX_DEPTH),
        "{t}"
    );
}

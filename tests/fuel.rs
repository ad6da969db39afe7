//! Fuel with the JIT on: compiled code counts the instructions it runs,
//! exactly, and a run that reaches the limit in compiled code stops at most
//! one basic block past it with the interpreter's out-of-fuel trap.

use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm_vm::asm;
use toyvm_vm::interp::{Input, TrapKind};

mod common;

/// Runs `program` with `fuel`; the output, and the instruction count or the
/// trap.
fn run(
    program: &toyvm_vm::Program,
    args: &[i64],
    file: &[u8],
    spec: &str,
    jit: bool,
    fuel: u64,
) -> (Vec<u8>, Result<(i64, u64), toyvm_vm::interp::Trap>) {
    let rt = Runtime::builder(program.clone())
        .profile_str(spec)
        .unwrap()
        .jit(jit.then(JitOptions::default))
        .fuel(Some(fuel))
        .build();
    let mut out = Vec::new();
    let r = rt.run(Input { args, file }, &mut out);
    let r = match r {
        Ok(rep) => Ok((rep.outcome.value, rep.stats.instructions)),
        Err(toyvm::Error::Vm(toyvm_vm::Error::Trap(t))) => Err(t),
        Err(e) => panic!("{spec}: {e}"),
    };
    (out, r)
}

const SPECS: [&str; 2] = ["multihash:interval=500", "perfect:interval=200"];

#[test]
fn compiled_code_counts_every_instruction_it_runs() {
    let mut compiled_somewhere = false;
    for case in common::all() {
        let Some(file) = case.input_or_skip() else {
            continue;
        };
        let program = asm::assemble(&case.source).unwrap();
        let (out, r) = run(&program, &case.args, &file, "none", false, u64::MAX / 2);
        let (value, n) = r.unwrap_or_else(|t| panic!("{}: {t}", case.name));
        for spec in SPECS {
            let rt = Runtime::builder(program.clone())
                .profile_str(spec)
                .unwrap()
                .fuel(Some(u64::MAX / 2))
                .build();
            let mut jit_out = Vec::new();
            let rep = rt
                .run(
                    Input {
                        args: &case.args,
                        file: &file,
                    },
                    &mut jit_out,
                )
                .unwrap_or_else(|e| panic!("{} {spec}: {e}", case.name));
            assert_eq!(jit_out, out, "{} {spec}: output", case.name);
            assert_eq!(rep.outcome.value, value, "{} {spec}: value", case.name);
            assert_eq!(
                rep.stats.instructions, n,
                "{} {spec}: the JIT run counts {} instructions, the interpreter {n}",
                case.name, rep.stats.instructions
            );
            compiled_somewhere |= rep.stats.jit.as_ref().is_some_and(|j| j.compiles > 0);
        }
    }
    assert!(
        compiled_somewhere,
        "no program compiled anything under fuel"
    );
}

#[test]
fn a_limit_reached_in_compiled_code_traps_within_one_block() {
    // A hot loop and a hot recursive function (native code): the limit
    // falls in compiled code.
    let src = "
        .func fib(n)
            blti n, 2, done
            subi r1, n, 1
            call r1, fib, r1, 1
            subi r2, n, 2
            call r2, fib, r2, 1
            add n, r1, r2
        done:
            ret n
        .end
        .func main(n)
            li r1, 0
            li r2, 0
        top:
            andi r3, r2, 7
            add r1, r1, r3
            loop r2, n, top
            putn r1
            li r4, 24
            call r5, fib, r4, 1
            putn r5
            ret r5
        .end";
    let program = asm::assemble(src).unwrap();
    let args = [200_000];
    let (full, r) = run(&program, &args, &[], "none", false, u64::MAX / 2);
    let (_, total) = r.unwrap();
    // In the loop, and inside the native recursion.
    for limit in [total / 5, total - total / 10] {
        let (interp_out, r) = run(&program, &args, &[], "none", false, limit);
        let t = r.unwrap_err();
        assert_eq!(t.kind, TrapKind::OutOfFuel { limit });
        for spec in SPECS {
            let (jit_out, r) = run(&program, &args, &[], spec, true, limit);
            let t = r.expect_err("the JIT run must run out of fuel too");
            assert_eq!(t.kind, TrapKind::OutOfFuel { limit }, "{spec}");
            // It ran at least as far as the interpreter, and not past the
            // end of the unlimited run.
            assert!(jit_out.starts_with(&interp_out), "{spec}");
            assert!(full.starts_with(&jit_out), "{spec}");
        }
    }
    // With enough fuel the limit changes nothing.
    for spec in SPECS {
        let (out, r) = run(&program, &args, &[], spec, true, total);
        assert_eq!(out, full, "{spec}");
        assert_eq!(r.unwrap().1, total, "{spec}");
        let (_, r) = run(&program, &args, &[], spec, true, total - 1);
        assert!(r.is_err(), "{spec}: one instruction short must trap");
    }
}

/// A limit that falls inside a function compiled code called through the
/// interpreter traps exactly where the interpreter's does: compiled code
/// hands the interpreter the fuel the interpreter would have had left at
/// the call.
#[test]
fn a_limit_reached_in_an_interpreted_callee_traps_where_the_interpreter_does() {
    // `note` stores and prints (no native code) and has no loop (no
    // region of its own); `main`'s loop compiles and calls it.
    let src = "
        .memory 64
        .func note(x, y)
            .reg t
            andi t, x, 31
            st t, 0, y
            andi t, x, 4095
            bnei t, 0, quiet
            putn y
            li t, 10
            putc t
        quiet:
            add y, y, x
            xori y, y, 5
            ret y
        .end
        .func main(n)
            .reg i, acc, a, b
            li i, 0
            li acc, 0
        top:
            mov a, i
            mov b, acc
            call acc, note, a, 2
            loop i, n, top
            ret acc
        .end";
    let program = asm::assemble(src).unwrap();
    let args = [100_000];
    let (_, r) = run(&program, &args, &[], "none", false, u64::MAX / 2);
    let (_, total) = r.unwrap();
    let spec = "perfect:interval=500";
    let full = Runtime::builder(program.clone())
        .profile_str(spec)
        .unwrap()
        .fuel(Some(total))
        .build()
        .run(
            Input {
                args: &args,
                file: &[],
            },
            &mut Vec::new(),
        )
        .unwrap();
    let calls = full.stats.jit.as_ref().unwrap().interpreter_calls;
    assert!(
        calls > args[0] as u64 / 2,
        "{calls} calls into the interpreter"
    );
    let mut in_callee = 0;
    for k in 1..=40 {
        let limit = total / 2 + k * 997;
        let (interp_out, r) = run(&program, &args, &[], "none", false, limit);
        let want = r.unwrap_err();
        assert_eq!(want.kind, TrapKind::OutOfFuel { limit });
        if want.pc.func() != 0 {
            continue;
        }
        in_callee += 1;
        let (jit_out, r) = run(&program, &args, &[], spec, true, limit);
        assert_eq!(r.unwrap_err(), want, "limit {limit}");
        assert_eq!(jit_out, interp_out, "limit {limit}");
    }
    assert!(in_callee >= 10, "{in_callee} limits fell inside `note`");
}

//! Random valid programs give the same result, output and trap interpreted
//! and under the JIT (the interpreter is the oracle).

use proptest::prelude::*;
use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm::vm::asm;
use toyvm::vm::interp::Input;

/// One loop-body instruction over r2..r7 and memory of 64 words.
fn arb_instr(body_len: usize, at: usize) -> impl Strategy<Value = String> {
    let reg = || (2u8..8).prop_map(|r| format!("r{r}"));
    let imm = prop_oneof![-9i32..10, Just(64), Just(-1), any::<i32>()];
    let arith = prop::sample::select(vec![
        "add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "ushr", "eq", "lt",
        "le",
    ]);
    let arith_i = prop::sample::select(vec![
        "addi", "subi", "muli", "divi", "remi", "andi", "xori", "shli", "lti",
    ]);
    let cond = prop::sample::select(vec!["beq", "bne", "blt", "bge"]);
    // Forward branches only (to a later body label), so every program ends.
    let target = ((at + 1)..=body_len).prop_map(|t| format!("b{t}"));
    prop_oneof![
        (arith, reg(), reg(), reg()).prop_map(|(o, d, a, b)| format!("{o} {d}, {a}, {b}")),
        (arith_i, reg(), reg(), imm.clone()).prop_map(|(o, d, a, i)| format!("{o} {d}, {a}, {i}")),
        (reg(), reg(), -2i32..66)
            .prop_map(|(d, a, i)| format!("andi {a}, {a}, 63\n ld {d}, {a}, {i}")),
        (reg(), reg(), 0i32..64)
            .prop_map(|(a, b, i)| format!("andi {a}, {a}, 31\n st {a}, {i}, {b}")),
        (cond, reg(), reg(), target).prop_map(|(c, a, b, t)| format!("{c} {a}, {b}, {t}")),
    ]
}

fn arb_program() -> impl Strategy<Value = String> {
    (3usize..14).prop_flat_map(|len| {
        let body: Vec<_> = (0..len).map(|i| arb_instr(len, i)).collect();
        (body, prop::collection::vec(-50i64..50, 6)).prop_map(move |(body, init)| {
            let mut s = String::from(".memory 64\n.func main(n)\n li r1, 0\n");
            for (r, v) in (2..8).zip(&init) {
                s += &format!(" li r{r}, {v}\n");
            }
            s += "top:\n";
            for (i, ins) in body.iter().enumerate() {
                s += &format!("b{i}:\n {ins}\n");
            }
            s += &format!("b{len}:\n loop r1, n, top\n");
            s += " add r2, r2, r3\n xor r2, r2, r4\n add r2, r2, r5\n xor r2, r2, r6\n add r2, r2, r7\n";
            s += " putn r2\n ret r2\n.end\n";
            s
        })
    })
}

static COMPILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static ENTRIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn run(src: &str, jit: bool) -> (Result<i64, String>, Vec<u8>) {
    let program = asm::assemble(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let (r, out) = run_spec(&program, 3000, jit.then_some("perfect:interval=200"));
    let r = r.map(|r| {
        if let Some(j) = &r.stats.jit {
            COMPILES.fetch_add(j.compiles, std::sync::atomic::Ordering::Relaxed);
            ENTRIES.fetch_add(j.region_entries, std::sync::atomic::Ordering::Relaxed);
        }
        r.outcome.value
    });
    (r, out)
}

/// Runs `program` on `arg`, with the JIT driven by `spec`'s model or
/// interpreted only.
fn run_spec(
    program: &toyvm::vm::Program,
    arg: i64,
    spec: Option<&str>,
) -> (Result<toyvm::RunReport, String>, Vec<u8>) {
    let mut out = Vec::new();
    let r = Runtime::builder(program.clone())
        .profile_str(spec.unwrap_or("none"))
        .unwrap()
        .jit(spec.map(|_| JitOptions::default()))
        .build()
        .run(
            Input {
                args: &[arg],
                file: &[],
            },
            &mut out,
        )
        .map_err(|e| e.to_string());
    (r, out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn jit_matches_the_interpreter_on_random_programs(src in arb_program()) {
        let (want, want_out) = run(&src, false);
        let (got, got_out) = run(&src, true);
        prop_assert_eq!(&got, &want, "\n{}", src);
        prop_assert_eq!(got_out, want_out);
    }
}

#[test]
fn random_programs_really_run_compiled_code() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..32 {
        let src = arb_program().new_tree(&mut runner).unwrap().current();
        let (want, _) = run(&src, false);
        let (got, _) = run(&src, true);
        assert_eq!(got, want, "{src}");
    }
    let compiles = COMPILES.load(std::sync::atomic::Ordering::Relaxed);
    let entries = ENTRIES.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        compiles >= 8 && entries >= 8,
        "compiles {compiles}, entries {entries}"
    );
}

/// Native recursion to the default depth limit with frames far larger than
/// `fib`'s (120 registers live across the call): the stack of the thread
/// that runs compiled code is sized from the frames the optimizer measured
/// (at least 32 MiB), so the deepest call returns and the next one traps
/// exactly as interpreted, with no crash.
#[test]
fn deep_native_recursion_with_large_frames_fits_the_jit_stack() {
    let mut src = String::from(".func big(n)\n  .regs 128\n");
    for r in 2..122 {
        src += &format!("  addi r{r}, n, {r}\n");
    }
    src += "  beqi n, 0, done\n  subi r1, n, 1\n  call r1, big, r1, 1\n";
    for r in 2..122 {
        src += &format!("  add r1, r1, r{r}\n");
    }
    src += "  ret r1\ndone:\n  ret n\n.end\n";
    src += ".func main(n)\n  call r1, big, n, 1\n  putn r1\n  ret r1\n.end\n";
    let program = asm::assemble(&src).unwrap();
    // The deepest run that returns, and one call deeper.
    for n in [65_535, 65_536] {
        let value = |(r, out): (Result<toyvm::RunReport, String>, Vec<u8>)| {
            (r.map(|r| r.outcome.value), out)
        };
        let want = value(run_spec(&program, n, None));
        let jitted = run_spec(&program, n, Some("multihash:interval=100"));
        // The natives ran: none of the compiles was refused for want of
        // stack (natives are compiled when first needed, on a stack sized
        // from an estimate of their frames).
        if let Ok(r) = &jitted.0 {
            let jit = r.stats.jit.as_ref().expect("a JIT run");
            assert!(jit.compiles > 0 && jit.compile_failures == 0, "{jit:?}");
        }
        let got = value(jitted);
        assert_eq!(got, want, "n = {n}");
        assert_eq!(want.0.is_ok(), n == 65_535, "{want:?}");
    }
}

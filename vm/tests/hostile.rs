//! Hostile inputs: the loader, the assembler and the interpreter must answer
//! every byte string with a clean result or error, never a panic, a hang or
//! an unbounded allocation.

use proptest::prelude::*;
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::isa::{Instr, Op, Operand, OperandKind};
use toyvm_vm::program::{DataSegment, Function};
use toyvm_vm::{Error, Program, asm};

const SAMPLE: &str = "
    .memory 32
    .data 4: 7, 8, 9
    .func main(n)
        li r1, 0
        li r2, 0
    top:
        ld r3, r2, 4
        add r1, r1, r3
        fref r4, twice
        calli r1, r4, r1, 1
        jtab r2, [top, out]
    out:
        addi r2, r2, 1
        blt r2, n, top
        putn r1
        ret r1
    .end
    .func twice(x)
        add x, x, x
        ret x
    .end
";

fn sample() -> Program {
    asm::assemble(SAMPLE).unwrap()
}

/// A random valid program: straight-line code over a few registers with
/// branches to in-range targets, ending in `ret`, plus a helper function.
fn arb_program() -> impl Strategy<Value = Program> {
    let op = prop::sample::select(
        Op::ALL
            .iter()
            .copied()
            .filter(|o| !matches!(o, Op::Call | Op::Calli | Op::Jtab | Op::Halt))
            .collect::<Vec<_>>(),
    );
    (
        prop::collection::vec((op, prop::collection::vec(any::<i64>(), 4)), 1..40),
        0u64..64,
    )
        .prop_map(|(body, mem)| {
            let len = body.len() as u32 + 1;
            let mut code: Vec<Instr> = body
                .iter()
                .map(|(op, raw)| {
                    let ops: Vec<Operand> = op
                        .operand_kinds()
                        .iter()
                        .zip(raw)
                        .map(|(k, &v)| match k {
                            OperandKind::Reg => Operand::Reg((v as u64 % 4) as u8),
                            OperandKind::Imm => Operand::Imm(v as i32),
                            OperandKind::Wide => Operand::Wide(v),
                            OperandKind::Label => Operand::Label(v as u32 % len),
                            OperandKind::Func => Operand::Func(v as u32 % 2),
                            OperandKind::Count => Operand::Count(0),
                            OperandKind::Table => Operand::Table(0),
                            OperandKind::HostFn => Operand::HostFn(0),
                        })
                        .collect();
                    Instr::from_operands(*op, &ops).unwrap()
                })
                .collect();
            code.push(Instr::Ret { a: 0 });
            let main = Function {
                name: "main".into(),
                params: 4,
                regs: 4,
                code,
                tables: vec![],
            };
            let helper = Function {
                name: "helper".into(),
                params: 0,
                regs: 1,
                code: vec![Instr::Li { d: 0, imm: 5 }, Instr::Ret { a: 0 }],
                tables: vec![],
            };
            Program {
                functions: vec![main, helper],
                data: vec![DataSegment {
                    addr: 0,
                    words: vec![1, 2, 3],
                }],
                memory_words: mem.max(3),
                memory_len: mem.max(3) * 8,
                input_base: 0,
                entry: 0,
                // `hcall`s call it; no host provides it, so they trap.
                imports: vec![toyvm_vm::Import {
                    name: "h".into(),
                    params: 0,
                }],
                source_offsets: Vec::new(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_bytes_are_rejected_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        // Either form: random bytes rarely carry the magic, so also try
        // them behind a valid header.
        let _ = Program::load_any(&bytes);
        let mut with_magic = toyvm_vm::bytecode::MAGIC.to_vec();
        with_magic.extend_from_slice(&1u16.to_le_bytes());
        with_magic.extend_from_slice(&bytes);
        prop_assert!(Program::load(&with_magic).is_err() || bytes.len() > 4);
    }

    #[test]
    fn mutated_bytecode_is_rejected_or_verified(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = sample().to_bytes();
        for (at, v) in flips {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        match Program::load(&bytes) {
            // Anything that loads must run safely, within a fuel budget.
            Ok(p) => {
                let cfg = Config { fuel: Some(10_000), ..Config::default() };
                let args = vec![3i64; p.entry_function().params as usize];
                let _ = interp::run(&p, Input { args: &args, file: &[] }, &mut std::io::sink(), &cfg);
            }
            Err(e) => prop_assert!(matches!(e, Error::Decode { .. } | Error::Verify { .. }), "{e}"),
        }
    }

    #[test]
    fn random_text_is_rejected_cleanly(text in "(\\PC|\\n|[.:,\\[\\]r0-9a-z ]){0,200}") {
        let _ = asm::assemble(&text);
    }

    #[test]
    fn mutated_assembly_is_rejected_or_runs(at in any::<prop::sample::Index>(), c in any::<char>()) {
        let mut chars: Vec<char> = SAMPLE.chars().collect();
        let i = at.index(chars.len());
        chars[i] = c;
        let text: String = chars.into_iter().collect();
        if let Ok(p) = asm::assemble(&text) {
            let cfg = Config { fuel: Some(10_000), ..Config::default() };
            let args = vec![3i64; p.entry_function().params as usize];
            let _ = interp::run(&p, Input { args: &args, file: &[] }, &mut std::io::sink(), &cfg);
        }
    }

    #[test]
    fn valid_programs_round_trip_through_bytes_and_text(p in arb_program()) {
        match toyvm_vm::verify::verify(&p) {
            Ok(()) => {
                let bytes = p.to_bytes();
                let back = Program::load(&bytes).unwrap();
                prop_assert_eq!(&back, &p);
                let text = asm::disassemble(&p);
                let again = asm::assemble(&text).unwrap();
                prop_assert_eq!(again.to_bytes(), bytes);
                let cfg = Config { fuel: Some(5_000), ..Config::default() };
                let _ = interp::run(&p, Input { args: &[1, 2, 3, 4], file: &[] }, &mut std::io::sink(), &cfg);
            }
            // Random code may read a register before writing it; the
            // verifier must say so with a location.
            Err(e) => prop_assert!(e.to_string().contains("function `main`, instruction"), "{e}"),
        }
    }
}

#[test]
fn huge_declared_counts_do_not_allocate() {
    // A FUNCTIONS section claiming 4 billion functions in 4 bytes.
    let mut b = toyvm_vm::bytecode::MAGIC.to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 0, 0]);
    b.extend_from_slice(&4u32.to_le_bytes());
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    let e = Program::load(&b).unwrap_err().to_string();
    assert!(e.contains("function count 4294967295 cannot fit"), "{e}");
}

#[test]
fn header_problems_are_named() {
    let good = sample().to_bytes();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"NOTTOYVM".to_vec(), "bad magic"),
        (good[..5].to_vec(), "truncated"),
        (
            {
                let mut b = good.clone();
                b[8] = 9;
                b
            },
            "unsupported version 9",
        ),
        (
            {
                let mut b = good.clone();
                b.push(0);
                b
            },
            "trailing bytes",
        ),
    ];
    for (bytes, want) in cases {
        let e = Program::load(&bytes).unwrap_err().to_string();
        assert!(e.contains(want), "got {e:?}, want {want:?}");
    }
}

#[test]
fn memory_over_the_limit_is_rejected_before_allocation() {
    let e = asm::assemble(".memory 0xffffffffffff\n.func main()\n li r0, 0\n ret r0\n.end")
        .unwrap_err()
        .to_string();
    assert!(e.contains("exceeds the limit"), "{e}");
}

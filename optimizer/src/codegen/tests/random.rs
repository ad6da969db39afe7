//! Random looping arithmetic programs: the interpreter is the oracle
//! for whole runs with their hot regions compiled, and the reference
//! evaluator for single region runs from random states.

use super::*;
use proptest::prelude::*;
use toyvm_vm::isa::{Instr, Op, Operand};
use toyvm_vm::{Function, verify};

/// One generated unit of code; `Branch` skips `skip` units forward.
#[derive(Clone, Debug)]
enum Unit {
    Plain(Instr),
    /// `andi r5, a, 31` then the load or store through r5 (memory's
    /// length is 64 words until `mgrow`s: out of bounds only at the edges
    /// of `imm`'s range).
    Mem {
        load: bool,
        a: u8,
        r: u8,
        imm: i32,
    },
    /// `andi r5, a, 1023` then the sized load or store `op` through r5 at
    /// byte offset `imm` (the length is 512 bytes, growing up to 1024:
    /// out of bounds often, below zero and past the end).
    Sized {
        op: Op,
        a: u8,
        r: u8,
        imm: i32,
    },
    /// `andi r5, a, 63` then `mgrow d, r5`.
    Grow {
        d: u8,
        a: u8,
    },
    Branch {
        instr: Instr,
        skip: usize,
    },
    /// `call d, h, a, 2`.
    Call {
        d: u8,
        a: u8,
    },
}

fn reg() -> impl Strategy<Value = u8> {
    0u8..8
}
fn dest() -> impl Strategy<Value = u8> {
    0u8..5
}
fn imm() -> impl Strategy<Value = i32> {
    prop_oneof![
        -4i32..5,
        any::<i32>(),
        Just(i32::MIN),
        Just(-1),
        Just(63),
        Just(64)
    ]
}

fn unit() -> impl Strategy<Value = Unit> {
    use toyvm_vm::isa::OperandKind;
    // The binary operations: the register and immediate forms, the
    // unsigned, rotate and `leu` ones, and the 32-bit ones (`addw` ..
    // `ushriw`).
    let codes = prop_oneof![0x10u8..0x30, 0x80u8..0x87, 0x88u8..0x92];
    let arith = (codes, dest(), reg(), reg(), imm()).prop_map(|(code, d, a, b, k)| {
        let op = Op::from_byte(code).unwrap();
        let ops: Vec<Operand> = op
            .operand_kinds()
            .iter()
            .enumerate()
            .map(|(i, kind)| match (i, kind) {
                (0, _) => Operand::Reg(d),
                (1, _) => Operand::Reg(a),
                (_, OperandKind::Reg) => Operand::Reg(b),
                _ => Operand::Imm(k),
            })
            .collect();
        Unit::Plain(Instr::from_operands(op, &ops).unwrap())
    });
    let simple = prop_oneof![
        (dest(), imm()).prop_map(|(d, imm)| Unit::Plain(Instr::Li { d, imm })),
        (dest(), any::<i64>()).prop_map(|(d, k)| Unit::Plain(Instr::Lk { d, k })),
        (dest(), reg()).prop_map(|(d, a)| Unit::Plain(Instr::Mov { d, a })),
        (dest(), reg()).prop_map(|(d, a)| Unit::Plain(Instr::Neg { d, a })),
        (dest(), reg()).prop_map(|(d, a)| Unit::Plain(Instr::Not { d, a })),
        // sext8 .. popcnt
        (0x07u8..0x0e, dest(), reg()).prop_map(|(code, d, a)| {
            let op = Op::from_byte(code).unwrap();
            let ops = [Operand::Reg(d), Operand::Reg(a)];
            Unit::Plain(Instr::from_operands(op, &ops).unwrap())
        }),
        (dest(), reg(), reg(), reg()).prop_map(|(d, c, a, b)| Unit::Plain(Instr::Select {
            d,
            c,
            a,
            b
        })),
        dest().prop_map(|d| Unit::Plain(Instr::Msize { d })),
        (dest(), reg()).prop_map(|(d, a)| Unit::Grow { d, a }),
    ];
    let sized =
        (0x32u8..0x3d, reg(), 0u8..5, -9i32..1040).prop_map(|(code, a, r, imm)| Unit::Sized {
            op: Op::from_byte(code).unwrap(),
            a,
            r,
            imm,
        });
    let trap = (0i32..7).prop_map(|imm| Unit::Plain(Instr::Trap { imm }));
    let mem = (any::<bool>(), reg(), 0u8..5, -1i32..34).prop_map(|(load, a, r, imm)| Unit::Mem {
        load,
        a,
        r,
        imm,
    });
    let branches = prop_oneof![8 => 0x41u8..0x4f, 2 => 0x51u8..0x53];
    let branch =
        (branches, reg(), reg(), -3i32..4, 0usize..6).prop_map(|(code, a, b, imm, skip)| {
            use toyvm_vm::isa::OperandKind;
            let op = Op::from_byte(code).unwrap();
            let ops: Vec<Operand> = op
                .operand_kinds()
                .iter()
                .enumerate()
                .map(|(i, kind)| match (i, kind) {
                    (0, _) => Operand::Reg(a),
                    (_, OperandKind::Reg) => Operand::Reg(b),
                    (_, OperandKind::Imm) => Operand::Imm(imm),
                    _ => Operand::Label(0),
                })
                .collect();
            Unit::Branch {
                instr: Instr::from_operands(op, &ops).unwrap(),
                skip,
            }
        });
    prop_oneof![8 => arith, 6 => simple, 4 => mem, 4 => sized, 4 => branch, 1 => trap]
}

/// A unit of `main`: also calls of the helper.
fn main_unit() -> impl Strategy<Value = Unit> {
    let call = (dest(), 0u8..7).prop_map(|(d, a)| Unit::Call { d, a });
    prop_oneof![9 => unit(), 2 => call]
}

/// Appends `units` to `code`.
fn emit(units: &[Unit], code: &mut Vec<Instr>) {
    let body = code.len() as u32;
    // Offsets of each unit, and of the instruction after them.
    let mut at = Vec::new();
    let mut o = body;
    for u in units {
        at.push(o);
        // The two-instruction units: `andi` first.
        o += if matches!(u, Unit::Mem { .. } | Unit::Sized { .. } | Unit::Grow { .. }) {
            2
        } else {
            1
        };
    }
    at.push(o);
    for (i, u) in units.iter().enumerate() {
        match *u {
            Unit::Plain(instr) => code.push(instr),
            Unit::Mem { load, a, r, imm } => {
                code.push(Instr::Andi { d: 5, a, imm: 31 });
                code.push(if load {
                    Instr::Ld { d: r, a: 5, imm }
                } else {
                    Instr::St { a: 5, imm, b: r }
                });
            }
            Unit::Sized { op, a, r, imm } => {
                code.push(Instr::Andi { d: 5, a, imm: 1023 });
                let ops = if op.is_load() {
                    [Operand::Reg(r), Operand::Reg(5), Operand::Imm(imm)]
                } else {
                    [Operand::Reg(5), Operand::Imm(imm), Operand::Reg(r)]
                };
                code.push(Instr::from_operands(op, &ops).unwrap());
            }
            Unit::Grow { d, a } => {
                code.push(Instr::Andi { d: 5, a, imm: 63 });
                code.push(Instr::Mgrow { d, a: 5 });
            }
            Unit::Branch { instr, skip } => {
                let target = at[(i + 1 + skip).min(units.len())];
                let mut ops = instr.operands().to_vec();
                for op in &mut ops {
                    if let toyvm_vm::isa::Operand::Label(l) = op {
                        *l = target;
                    }
                }
                code.push(Instr::from_operands(instr.op(), &ops).unwrap());
            }
            Unit::Call { d, a } => code.push(Instr::Call { d, f: 1, a, n: 2 }),
        }
    }
}

/// Lays the units out as `main(a, b)` with a counted loop around them,
/// and `helper` as the body of `h(x, y)` (function 1, closed), which
/// `Call` units call.
fn program(units: &[Unit], helper: &[Unit], inits: &[i64; 4], bound: i32) -> Program {
    let mut code = Vec::new();
    for (i, &k) in inits.iter().enumerate() {
        code.push(Instr::Lk { d: 2 + i as u8, k });
    }
    code.push(Instr::Li { d: 6, imm: bound });
    code.push(Instr::Li { d: 7, imm: 0 });
    let body = code.len() as u32;
    emit(units, &mut code);
    code.push(Instr::Loop {
        a: 7,
        b: 6,
        target: body,
    });
    for r in 0..6 {
        code.push(Instr::Putn { a: r });
    }
    code.push(Instr::Ret { a: 0 });
    let mut h = Vec::new();
    for (i, &k) in inits.iter().rev().enumerate() {
        h.push(Instr::Lk { d: 2 + i as u8, k });
    }
    h.push(Instr::Li { d: 6, imm: 7 });
    // -1, 0 or 1: a divisor that is zero for a third of the programs,
    // so native code traps often.
    h.push(Instr::Li {
        d: 7,
        imm: bound % 3 - 1,
    });
    emit(helper, &mut h);
    h.push(Instr::Ret { a: 4 });
    let f = |name: &str, code| Function {
        name: name.into(),
        params: 2,
        regs: 8,
        code,
        tables: vec![],
    };
    let p = Program {
        functions: vec![f("main", code), f("h", h)],
        data: vec![],
        memory_words: 128,
        memory_len: 512,
        input_base: 0,
        entry: 0,
        imports: Vec::new(),
        source_offsets: Vec::new(),
    };
    verify::verify(&p).unwrap();
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn compiled_regions_match_the_interpreter(
        units in prop::collection::vec(main_unit(), 1..24),
        helper in prop::collection::vec(unit(), 0..12),
        inits in any::<[i64; 4]>(),
        args in any::<[i64; 2]>(),
        bound in 0i32..40,
        states in prop::collection::vec((any::<[i64; 6]>(), 0i64..30, prop::collection::vec(any::<i64>(), 64)), 3),
    ) {
        let p = program(&units, &helper, &inits, bound);
        let regions = profile_and_plan(&p, &args, &[]);
        let mut cache = CodeCache::new().unwrap();
        cache.compile_natives(&p).unwrap();
        let mut compiled = HashMap::new();
        // The helper runs whole and natively whenever the interpreter
        // calls it.
        compiled.insert((1, 0), cache.compile_function(&p, 1).unwrap());
        for r in &regions {
            let c = cache.compile(r).map_err(|e| TestCaseError::fail(format!("{e}\n{r}")))?;
            compiled.entry((r.func, r.head)).or_insert(c);
        }
        let (mixed, _) = run_mixed(&p, &args, &[], &compiled, 10_000_000);
        prop_assert_eq!(mixed, run_oracle(&p, &args, &[]));

        // Each region from random states (loop counter and bound kept
        // small so every loop ends).
        for r in &regions {
            for (vals, bound, mem) in &states {
                let mut regs = [0i64; 256];
                regs[..6].copy_from_slice(vals);
                regs[6] = *bound;
                check_against_reference(&p, r, regs, Memory::from(mem.clone()));
            }
        }
    }
}

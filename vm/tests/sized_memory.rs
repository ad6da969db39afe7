//! The ISA additions for compiled code (sized memory, the memory's length,
//! unsigned and bit operations, `select`, `trap`) through the assembler,
//! the verifier, the interpreter, the disassembler and the `.bc` format.

use toyvm_vm::interp::{self, TrapCode, TrapKind};
use toyvm_vm::{Error, Kind, Program, asm};

/// Runs `main` of `src` with `args`: its output and value, or its trap.
fn run(src: &str, args: &[i64]) -> Result<(String, i64), interp::Trap> {
    let p = asm::assemble(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut out = Vec::new();
    let input = interp::Input { args, file: &[] };
    match interp::run(&p, input, &mut out, &Default::default()) {
        Ok(o) => Ok((String::from_utf8(out).unwrap(), o.value)),
        Err(Error::Trap(t)) => Err(t),
        Err(e) => panic!("{e}"),
    }
}

fn value(src: &str, args: &[i64]) -> i64 {
    run(src, args).unwrap().1
}

fn trap(src: &str, args: &[i64]) -> TrapKind {
    run(src, args).unwrap_err().kind
}

#[test]
fn sized_stores_and_loads_share_the_words_little_endian() {
    let src = "
        .memory 4
        .func main(x)
            li r1, 0
            st r1, 0, x          # word 0 = x
            ld8u r2, r1, 0       # its low byte
            ld8s r3, r1, 7       # its top byte, sign-extended
            ld16u r4, r1, 3      # unaligned
            ld32s r5, r1, 5      # across words 0 and 1
            li r6, -2
            st16 r1, 9, r6       # bytes 9, 10 = fe ff
            ld r7, r1, 1         # word 1
            ld64 r8, r1, 0
            putn r2
            putc r9
            putn r3
            putc r9
            putn r4
            putc r9
            putn r5
            putc r9
            putn r7
            putc r9
            putn r8
            ret r2
        .end";
    let src = src.replace("putc r9", "li r9, 32\n putc r9");
    let (out, v) = run(&src, &[0x8123_4567_89ab_cdef_u64 as i64]).unwrap();
    assert_eq!(v, 0xef);
    let want = [
        0xef,
        0x81_u8 as i8 as i64,
        0x6789,      // bytes 3, 4 = 89 67
        0x0081_2345, // bytes 5..9 = 45 23 81 00
        0x00ff_fe00, // word 1: byte 9 = fe, byte 10 = ff
        0x8123_4567_89ab_cdef_u64 as i64,
    ];
    let got: Vec<i64> = out.split(' ').map(|s| s.parse().unwrap()).collect();
    assert_eq!(got, want);
}

#[test]
fn byte_addresses_are_the_low_32_bits_plus_the_offset() {
    // The base register's high bits are ignored; the offset is signed.
    let src = "
        .memory 2
        .func main(b)
            li r1, 77
            st8 b, 1, r1
            li r2, 0
            ld8u r3, r2, 1
            ret r3
        .end";
    assert_eq!(value(src, &[0x7fff_0000_0000]), 77);
    assert_eq!(value(src, &[-1_i64 << 32]), 77);
    // ea = 0xffff_ffff + 1: far past the memory.
    assert_eq!(
        trap(src, &[-1]),
        TrapKind::BytesOutOfBounds {
            addr: 1 << 32,
            bytes: 1,
            len: 16
        }
    );
}

#[test]
fn sized_accesses_trap_past_the_current_length_and_below_zero() {
    let load = |op: &str, at: i64| {
        let src = format!(".memory 2\n.func main(a)\n {op} r1, a, 0\n ret r1\n.end");
        run(&src, &[at])
    };
    assert!(load("ld64", 8).is_ok());
    assert_eq!(
        load("ld64", 9).unwrap_err().kind,
        TrapKind::BytesOutOfBounds {
            addr: 9,
            bytes: 8,
            len: 16
        }
    );
    assert!(load("ld32u", 12).is_ok());
    assert!(load("ld32u", 13).is_err());
    assert!(load("ld16s", 14).is_ok());
    assert!(load("ld16s", 15).is_err());
    assert!(load("ld8u", 15).is_ok());
    assert!(load("ld8u", 16).is_err());
    let below = ".memory 2\n.func main(a)\n st32 a, -1, a\n ret a\n.end";
    let t = run(below, &[0]).unwrap_err();
    assert_eq!(
        t.kind.to_string(),
        "memory access out of bounds: 4 bytes at byte address -1 (memory length 16 bytes)"
    );
    assert_eq!(t.pc.offset(), 0);
}

#[test]
fn the_length_starts_at_memlen_and_grows_to_the_capacity() {
    let src = "
        .memory 4                 # 32 bytes of capacity
        .memlen 8
        .func main(by)
            msize r1
            putn r1
            li r9, 32
            putc r9
            mgrow r2, by
            putn r2
            putc r9
            msize r1
            putn r1
            li r3, 0
            ld8u r4, r3, 11       # past 8 unless grown
            ret r4
        .end";
    assert_eq!(run(src, &[4]).unwrap(), ("8 8 12".into(), 0));
    assert_eq!(run(src, &[24]).unwrap().0, "8 8 32");
    // Past the capacity, or negative: -1, nothing changes.
    assert_eq!(
        run(src, &[25]).unwrap_err().kind,
        TrapKind::BytesOutOfBounds {
            addr: 11,
            bytes: 1,
            len: 8
        }
    );
    let text = |by| {
        let mut out = Vec::new();
        let p = asm::assemble(src).unwrap();
        let input = interp::Input {
            args: &[by],
            file: &[],
        };
        let _ = interp::run(&p, input, &mut out, &Default::default());
        String::from_utf8(out).unwrap()
    };
    assert_eq!(text(25), "8 -1 8");
    assert_eq!(text(-8), "8 -1 8");
    // A word access needs the whole word inside the length.
    let word = ".memory 4\n.memlen 8\n.func main(by)\n mgrow r1, by\n li r2, 1\n ld r3, r2, 0\n ret r3\n.end";
    assert_eq!(value(word, &[8]), 0);
    assert_eq!(trap(word, &[7]), TrapKind::OutOfBounds { addr: 1, size: 1 });
}

#[test]
fn the_length_outlives_one_call() {
    let p = asm::assemble(
        ".memory 4\n.memlen 8\n.func main()\n li r0, 8\n mgrow r1, r0\n msize r2\n ret r2\n.end",
    )
    .unwrap();
    let mut mem = interp::memory(&p, &[]).unwrap();
    for want in [16, 24, 32] {
        let call = interp::Call {
            func: 0,
            args: &[],
            input_len: 0,
        };
        let (r, _) = interp::call_with_host(
            &p,
            &mut mem,
            call,
            &mut Vec::new(),
            &mut interp::NoJit(&mut toyvm_vm::tuple::NoSink),
            &mut interp::NoHostFunctions,
            &Default::default(),
        );
        assert_eq!(r.unwrap().value, want);
        assert_eq!(mem.len_bytes(), want as u64);
    }
}

#[test]
fn arithmetic_branches_and_select() {
    let bin = |op: &str, a: i64, b: i64| {
        value(
            &format!(".func main(a, b)\n {op} r2, a, b\n ret r2\n.end"),
            &[a, b],
        )
    };
    assert_eq!(bin("divu", -2, 2), i64::MAX);
    assert_eq!(bin("remu", -1, 10), 5);
    assert_eq!(bin("rotl", 1, 65), 2);
    assert_eq!(bin("rotr", 1, 1), i64::MIN);
    assert_eq!(bin("rotl32", 0x8000_0000, 1), 1);
    assert_eq!(bin("rotr32", 1, 1), i32::MIN as i64);
    assert_eq!(bin("leu", -1, 1), 0);
    assert_eq!(
        trap(".func main(a, b)\n divu r2, a, b\n ret r2\n.end", &[1, 0]),
        TrapKind::DivisionByZero
    );
    assert_eq!(
        trap(".func main(a, b)\n remu r2, a, b\n ret r2\n.end", &[1, 0]),
        TrapKind::DivisionByZero
    );
    let un = |op: &str, a: i64| value(&format!(".func main(a)\n {op} r1, a\n ret r1\n.end"), &[a]);
    assert_eq!(un("sext8", 0x80), -128);
    assert_eq!(un("sext16", 0xffff), -1);
    assert_eq!(un("sext32", 0xffff_ffff), -1);
    assert_eq!(un("zext32", -1), 0xffff_ffff);
    assert_eq!((un("clz", 0), un("ctz", 0), un("popcnt", -1)), (64, 64, 64));
    let sel = ".func main(c)\n li r1, 10\n li r2, 20\n select r3, c, r1, r2\n ret r3\n.end";
    assert_eq!((value(sel, &[0]), value(sel, &[-5])), (20, 10));
    let br = |op: &str, a: i64, b: i64| {
        value(
            &format!(
                ".func main(a, b)\n {op} a, b, yes\n li r2, 0\n ret r2\nyes:\n li r2, 1\n ret r2\n.end"
            ),
            &[a, b],
        )
    };
    assert_eq!((br("bltu", 1, -1), br("bltu", -1, 1)), (1, 0));
    assert_eq!(
        (br("bgeu", -1, 1), br("bgeu", 1, -1), br("bgeu", 3, 3)),
        (1, 0, 1)
    );
}

#[test]
fn trap_stops_with_the_kind_its_code_names() {
    for code in TrapCode::ALL {
        let src = format!(".func main()\n li r0, 1\n trap {}\n.end", code.code());
        let t = run(&src, &[]).unwrap_err();
        assert_eq!(t.kind, TrapKind::Trap(code));
        assert_eq!(t.pc.offset(), 1);
        assert!(t.to_string().ends_with(code.message()), "{t}");
    }
    assert_eq!(TrapCode::Unreachable.message(), "unreachable executed");
    assert_eq!(TrapCode::from_code(7), None);
    assert_eq!(TrapCode::from_code(-1), None);
    let e = asm::assemble(".func main()\n trap 7\n.end").unwrap_err();
    assert!(e.to_string().contains("unknown trap code"), "{e}");
}

#[test]
fn loads_emit_value_tuples_and_unsigned_branches_edges() {
    let p = asm::assemble(
        ".memory 2\n.func main()\n li r0, 300\n li r1, 0\n st16 r1, 3, r0\n ld16u r2, r1, 3\n ld8s r3, r1, 3\n bltu r3, r2, out\n li r2, 0\nout:\n ret r2\n.end",
    )
    .unwrap();
    let mut tuples = Vec::new();
    let input = interp::Input {
        args: &[],
        file: &[],
    };
    interp::run_with_sink(&p, input, &mut Vec::new(), &mut tuples, &Default::default()).unwrap();
    let got: Vec<(Kind, u64, u64)> = tuples
        .iter()
        .map(|t| {
            let b = if t.kind == Kind::Edge {
                t.b & 0xffff
            } else {
                t.b
            };
            (t.kind, t.a & 0xffff, b)
        })
        .collect();
    // 300 = 0x12c, stored at byte 3: `ld8s` reads 0x2c = 44; 44 < 300
    // unsigned, so the branch at 5 goes to 7.
    assert_eq!(
        got,
        [
            (Kind::Value, 3, 300),
            (Kind::Value, 4, 44),
            (Kind::Edge, 5, 7)
        ]
    );
}

#[test]
fn verifier_checks_memlen_and_data_against_it() {
    for (src, want) in [
        (
            ".memory 2\n.memlen 12\n.func main()\n ret r0\n.end",
            "not a multiple of 8",
        ),
        (
            ".memory 2\n.memlen 24\n.func main()\n ret r0\n.end",
            "within memory of 2 words",
        ),
        (
            ".memory 4\n.memlen 8\n.data 1: 5\n.func main()\n ret r0\n.end",
            "does not fit",
        ),
    ] {
        let src = src.replace("ret r0", "li r0, 0\n ret r0");
        let e = asm::assemble(&src).unwrap_err().to_string();
        assert!(e.contains(want), "{src}: {e}");
    }
}

#[test]
fn text_and_bytes_round_trip_and_version_one_still_loads() {
    let src = "
        .memory 16
        .memlen 64
        .data 0: 7
        .func main(a)
            ld32s r1, a, -4
            st8 a, 100, r1
            msize r2
            mgrow r3, r2
            divu r4, r1, r2
            rotr32 r5, r4, r1
            sext16 r6, r5
            popcnt r7, r6
            select r8, r7, r6, r5
            leu r9, r8, r7
            bgeu r9, r8, done
            bltu r9, r8, done
            trap 6
        done:
            ret r9
        .end";
    let p = asm::assemble(src).unwrap();
    assert_eq!(p.memory_len, 64);
    let text = asm::disassemble(&p);
    assert!(text.contains(".memlen 64\n"), "{text}");
    assert_eq!(asm::assemble(&text).unwrap(), p);
    let bytes = p.to_bytes();
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2);
    assert_eq!(Program::load(&bytes).unwrap(), p);
    assert_eq!(Program::load(&bytes).unwrap().to_bytes(), bytes);
    // Without `.memlen` the length is the whole memory, and the text says
    // nothing of it.
    let whole = asm::assemble(".memory 3\n.func main()\n li r0, 0\n ret r0\n.end").unwrap();
    assert_eq!(whole.memory_len, 24);
    assert!(!asm::disassemble(&whole).contains(".memlen"));

    // A version-1 file: the MEMORY section without the length.
    let v2 = whole.to_bytes();
    let mut v1 = v2[..8].to_vec();
    v1.extend_from_slice(&1u16.to_le_bytes());
    v1.extend_from_slice(&v2[10..16]);
    // MEMORY: id, reserved, length 28 (was 36), words, input, entry.
    assert_eq!(v2[16], 1);
    assert_eq!(u32::from_le_bytes(v2[20..24].try_into().unwrap()), 28);
    v1.extend_from_slice(&v2[16..20]);
    v1.extend_from_slice(&20u32.to_le_bytes());
    v1.extend_from_slice(&v2[24..44]);
    v1.extend_from_slice(&v2[52..]);
    let old = Program::load(&v1).unwrap();
    assert_eq!(old, whole);
    // An unknown version: a clear error.
    let mut v9 = v2.clone();
    v9[8] = 9;
    let e = Program::load(&v9).unwrap_err().to_string();
    assert!(e.contains("unsupported version 9"), "{e}");
    assert!(e.contains("versions 1 to 2"), "{e}");
}

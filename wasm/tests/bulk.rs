//! Bulk memory against wasmi: `memory.fill`, `memory.copy` (overlapping
//! both ways), `memory.init` and `data.drop` over a grid of offsets and
//! lengths around the memory's and the segments' ends, each on a fresh
//! instance whose memory holds a pattern first; the result or trap and the
//! whole memory afterwards must be wasmi's (an out-of-bounds operator
//! writes nothing).

mod common;

use common::WasmTrap;
use common::fuzz::compare_run;

const MODULE: &str = r#"(module
  (memory (export "memory") 1 2)
  (data $p "\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\10\11\12\13\14\15\16\17\18\19\1a\1b\1c\1d\1e\1f\20\21\22\23\24\25")
  (data $a (i32.const 200) "active segment")
  (global $g (export "g") (mut i32) (i32.const 0))
  ;; Bytes that differ everywhere near both ends of the first page.
  (func $pattern
    (local $i i32)
    (loop $l
      (i32.store8 (local.get $i) (i32.add (i32.mul (local.get $i) (i32.const 7)) (i32.const 3)))
      (i32.store8 (i32.sub (i32.const 65535) (local.get $i)) (i32.xor (local.get $i) (i32.const 0x5a)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 300)))))
  (func (export "fill") (param i32 i32 i32)
    (call $pattern)
    (memory.fill (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1)))
  (func (export "copy") (param i32 i32 i32)
    (call $pattern)
    (memory.copy (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1)))
  (func (export "init") (param i32 i32 i32)
    (call $pattern)
    (memory.init $p (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1)))
  (func (export "init_active") (param i32 i32 i32)
    (memory.init $a (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1)))
  (func (export "drop_init") (param i32 i32 i32)
    (data.drop $p)
    (data.drop $p)
    (memory.init $p (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1)))
  (func (export "grown_copy") (param i32 i32 i32)
    (drop (memory.grow (i32.const 1)))
    (call $pattern)
    (memory.fill (i32.const 65536) (i32.const 0x77) (i32.const 65536))
    (memory.copy (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1)))
  (func (export "constants") (result i32)
    (call $pattern)
    (memory.copy (i32.const 5) (i32.const 3) (i32.const 40))
    (memory.fill (i32.const 100) (i32.const -1) (i32.const 9))
    (memory.init $p (i32.const 60) (i32.const 30) (i32.const 7))
    (i32.load (i32.const 100))))"#;

/// Offsets and lengths around 0, the 16-byte steps and the ends.
const POINTS: [i64; 14] = [
    0, 1, 3, 8, 15, 16, 17, 40, 65519, 65520, 65535, 65536, 65537, -1,
];

fn run(wasm: &[u8], export: &str, args: [i64; 3]) -> Result<Option<i64>, WasmTrap> {
    compare_run(wasm, export, &args).unwrap_or_else(|e| panic!("{export}{args:?}: {e}"))
}

#[test]
fn fill_and_copy_match_wasmi_at_every_edge() {
    let wasm = wat::parse_str(MODULE).unwrap();
    let (mut ok, mut trapped) = (0, 0);
    for &d in &POINTS {
        for &n in &POINTS {
            for r in [
                run(&wasm, "fill", [d, 0x1ab, n]),
                run(&wasm, "fill", [d, -1, n]),
            ] {
                match r {
                    Ok(_) => ok += 1,
                    Err(WasmTrap::OutOfBounds) => trapped += 1,
                    Err(e) => panic!("fill {d} {n}: {e:?}"),
                }
            }
            for &s in &POINTS {
                match run(&wasm, "copy", [d, s, n]) {
                    Ok(_) => ok += 1,
                    Err(WasmTrap::OutOfBounds) => trapped += 1,
                    Err(e) => panic!("copy {d} {s} {n}: {e:?}"),
                }
            }
        }
    }
    // Both outcomes are well represented.
    assert!(ok > 500 && trapped > 500, "{ok} ran, {trapped} trapped");
}

#[test]
fn overlapping_copies_are_memmove_both_ways() {
    let wasm = wat::parse_str(MODULE).unwrap();
    for n in [1, 7, 15, 16, 17, 31, 32, 33, 100, 299] {
        for shift in [1, 2, 7, 8, 9, 15, 16, 17, 50] {
            for base in [0, 10, 65536 - 350] {
                assert!(run(&wasm, "copy", [base + shift, base, n]).is_ok());
                assert!(run(&wasm, "copy", [base, base + shift, n]).is_ok());
            }
        }
    }
    // Across a grown memory's page boundary, and at its new end.
    for (d, s, n) in [
        (65530, 65520, 40),
        (65520, 65530, 40),
        (131072 - 16, 0, 16),
        (131072 - 15, 0, 16),
        (0, 131072 - 33, 33),
        (131072, 0, 0),
        (131073, 0, 0),
    ] {
        let _ = run(&wasm, "grown_copy", [d, s, n]);
    }
}

#[test]
fn memory_init_and_data_drop_match_wasmi() {
    let wasm = wat::parse_str(MODULE).unwrap();
    let segment = [0, 1, 15, 16, 17, 30, 36, 37, 38, -1];
    let mut ok = 0;
    for &d in &POINTS {
        for &s in &segment {
            for &n in &segment {
                if run(&wasm, "init", [d, s, n]).is_ok() {
                    ok += 1;
                }
                // A dropped segment (and an active one, dropped at
                // instantiation) has length 0.
                let dropped = run(&wasm, "drop_init", [d, s, n]);
                let active = run(&wasm, "init_active", [d, s, n]);
                assert_eq!(dropped, active, "{d} {s} {n}");
                if n != 0 || s != 0 {
                    assert_eq!(dropped, Err(WasmTrap::OutOfBounds), "{d} {s} {n}");
                }
            }
        }
    }
    assert!(ok > 100, "{ok}");
}

#[test]
fn constant_operands_run_alike() {
    let wasm = wat::parse_str(MODULE).unwrap();
    assert_eq!(compare_run(&wasm, "constants", &[]).unwrap(), Ok(Some(-1)));
}

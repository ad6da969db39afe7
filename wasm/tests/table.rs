//! Bulk memory's table operators against wasmi: `table.copy` (overlapping
//! both ways), `table.init` from a passive segment, from a dropped one and
//! from an active one (dropped at instantiation), and `elem.drop`, over a
//! grid of offsets and lengths around the table's and the segment's ends.
//! After each operator the export calls every entry through
//! `call_indirect` and returns a hash of what they return, so the result
//! shows the table's whole contents (or the trap, and the global shows
//! whether the operator itself trapped).

mod common;

use common::WasmTrap;
use common::fuzz::compare_run;

const MODULE: &str = r#"(module
  (type $t (func (result i32)))
  (type $u (func (param i32) (result i32)))
  ;; Entry 8 stays null, entry 9 is of another type.
  (table 10 funcref)
  (memory (export "memory") 1)
  (global $g (export "g") (mut i32) (i32.const 0))
  (func $f0 (type $t) (i32.const 100))
  (func $f1 (type $t) (i32.const 101))
  (func $f2 (type $t) (i32.const 102))
  (func $f3 (type $t) (i32.const 103))
  (func $f4 (type $t) (i32.const 104))
  (func $f5 (type $t) (i32.const 105))
  (func $f6 (type $t) (i32.const 106))
  (func $f7 (type $t) (i32.const 107))
  (func $other (type $u) (local.get 0))
  (elem $a (i32.const 0) $f0 $f1 $f2 $f3 $f4 $f5 $f6 $f7)
  (elem $p func $f7 $f6 $f5 $f4 $f3)
  (elem $b (i32.const 9) $other)
  ;; A hash of what entries 0-7 return.
  (func $hash (result i32)
    (local $i i32) (local $h i32)
    (loop $l
      (local.set $h (i32.add (i32.mul (local.get $h) (i32.const 131))
                             (call_indirect (type $t) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 8))))
    (local.get $h))
  (func (export "copy") (param i32 i32 i32) (result i32)
    (table.copy (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1))
    (call $hash))
  (func (export "init") (param i32 i32 i32) (result i32)
    (table.init $p (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1))
    (call $hash))
  (func (export "init_active") (param i32 i32 i32) (result i32)
    (table.init $a (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1))
    (call $hash))
  (func (export "drop_init") (param i32 i32 i32) (result i32)
    (elem.drop $p)
    (elem.drop $p)
    (table.init $p (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1))
    (call $hash))
  ;; The entry copied to `d` called (a null entry or one of another type
  ;; traps).
  (func (export "copy_probe") (param i32 i32 i32) (result i32)
    (table.copy (local.get 0) (local.get 1) (local.get 2))
    (global.set $g (i32.const 1))
    (call_indirect (type $t) (local.get 0))))"#;

/// Offsets and lengths around 0 and the ends (the table has 10 entries,
/// the passive segment 5).
const POINTS: [i64; 11] = [0, 1, 2, 4, 5, 7, 8, 9, 10, 11, -1];
/// Around the passive segment's ends.
const SEGMENT: [i64; 6] = [0, 1, 4, 5, 6, -1];

fn run(wasm: &[u8], export: &str, args: [i64; 3]) -> Result<Option<i64>, WasmTrap> {
    compare_run(wasm, export, &args).unwrap_or_else(|e| panic!("{export}{args:?}: {e}"))
}

#[test]
fn table_copy_matches_wasmi_at_every_edge_and_overlap() {
    let wasm = wat::parse_str(MODULE).unwrap();
    let (mut ok, mut trapped, mut hashes) = (0, 0, std::collections::HashSet::new());
    for &d in &POINTS {
        for &s in &POINTS {
            for &n in &POINTS {
                match run(&wasm, "copy", [d, s, n]) {
                    Ok(h) => {
                        ok += 1;
                        hashes.insert(h);
                    }
                    Err(WasmTrap::UndefinedElement) => trapped += 1,
                    // Entry 9 (another type) copied into 0-7.
                    Err(WasmTrap::SignatureMismatch) => {}
                    Err(e) => panic!("copy {d} {s} {n}: {e:?}"),
                }
                let _ = run(&wasm, "copy_probe", [d, s, n]);
            }
        }
    }
    // Both outcomes, and many different tables afterwards.
    assert!(
        ok > 100 && trapped > 300,
        "{ok} ran, {trapped} trapped, {} tables",
        hashes.len()
    );
    assert!(hashes.len() > 30, "{} different tables", hashes.len());
}

#[test]
fn table_init_and_elem_drop_match_wasmi() {
    let wasm = wat::parse_str(MODULE).unwrap();
    let mut ok = 0;
    for &d in &POINTS {
        for &s in &SEGMENT {
            for &n in &SEGMENT {
                if run(&wasm, "init", [d, s, n]).is_ok() {
                    ok += 1;
                }
                // A dropped segment and an active one (dropped at
                // instantiation) have length 0.
                let dropped = run(&wasm, "drop_init", [d, s, n]);
                let active = run(&wasm, "init_active", [d, s, n]);
                assert_eq!(dropped, active, "{d} {s} {n}");
                if n != 0 || s != 0 {
                    assert_eq!(dropped, Err(WasmTrap::UndefinedElement), "{d} {s} {n}");
                }
            }
        }
    }
    assert!(ok > 30, "{ok}");
    // A null entry and an entry of another type, copied and called.
    assert_eq!(run(&wasm, "copy_probe", [0, 2, 3]), Ok(Some(102)));
    assert_eq!(
        run(&wasm, "copy_probe", [0, 8, 2]),
        Err(WasmTrap::UndefinedElement)
    );
    assert_eq!(
        run(&wasm, "copy_probe", [0, 9, 1]),
        Err(WasmTrap::SignatureMismatch)
    );
}

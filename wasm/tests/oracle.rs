//! toyvm's interpreter against wasmi: the C programs (stdout, exit status)
//! and hand-written modules for each trap (its kind).

mod common;

use common::{Ending, WasmTrap, c_programs, toyvm_command, translate_command, wasmi_wasi};

#[test]
fn c_programs_print_what_wasmi_prints() {
    let programs = c_programs();
    assert!(programs.len() >= 8, "{} programs", programs.len());
    for p in &programs {
        let mut args = vec![p.name.as_str()];
        args.extend(p.args.iter().map(String::as_str));
        let oracle = wasmi_wasi::run_command(&p.wasm, &args);
        assert_eq!(
            String::from_utf8_lossy(&oracle.stdout),
            p.expected,
            "{}: wasmi's output is not the header's",
            p.name
        );
        assert_eq!(oracle.ending, Ending::Exit(0), "{}", p.name);
        let t = translate_command(&p.wasm);
        let run = toyvm_command(&t, &args, None);
        assert_eq!(
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&oracle.stdout),
            "{}",
            p.name
        );
        assert_eq!(run, oracle, "{}", p.name);
    }
}

#[test]
fn a_bad_argument_exits_as_in_wasmi() {
    // nqueens refuses n = 40 on stderr with status 2 (proc_exit).
    let p = c_programs()
        .into_iter()
        .find(|p| p.name == "nqueens")
        .unwrap();
    let args = ["nqueens", "40"];
    let oracle = wasmi_wasi::run_command(&p.wasm, &args);
    assert_eq!(oracle.ending, Ending::Exit(2));
    let run = toyvm_command(&translate_command(&p.wasm), &args, None);
    assert_eq!(run, oracle);
    assert!(!run.stderr.is_empty());
}

/// A WASI command whose `_start` runs `body`, with a one-page memory (at
/// most two), mutable globals $zero (0), $minus1 (-1), $min32 and $min64,
/// and a table of 4 whose entry 0 is $id: (i32) -> i32.
fn command(body: &str) -> Vec<u8> {
    let text = format!(
        r#"(module
          (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
          (type $i2i (func (param i32) (result i32)))
          (type $v2i (func (result i32)))
          (type $i2i_again (func (param i32) (result i32)))
          (memory (export "memory") 1 2)
          (global $zero (mut i32) (i32.const 0))
          (global $zero64 (mut i64) (i64.const 0))
          (global $minus1 (mut i32) (i32.const -1))
          (global $minus1_64 (mut i64) (i64.const -1))
          (global $min32 (mut i32) (i32.const 0x80000000))
          (global $min64 (mut i64) (i64.const 0x8000000000000000))
          (table 4 funcref)
          (elem (i32.const 0) $id)
          (func $id (param i32) (result i32) (local.get 0))
          (func (export "_start") {body}))"#
    );
    wat::parse_str(text).expect("valid wat")
}

/// Runs `body` under both engines; returns how they ended (equal).
fn both(body: &str) -> Ending {
    let wasm = command(body);
    let oracle = wasmi_wasi::run_command(&wasm, &["t"]);
    let run = toyvm_command(&translate_command(&wasm), &["t"], None);
    assert_eq!(run, oracle, "{body}");
    run.ending
}

#[track_caller]
fn traps(body: &str, kind: WasmTrap) {
    assert_eq!(both(body), Ending::Trap(kind), "{body}");
}

#[test]
fn unreachable_traps() {
    traps("unreachable", WasmTrap::Unreachable);
}

#[test]
fn division_by_zero_traps() {
    for op in ["i32.div_s", "i32.div_u", "i32.rem_s", "i32.rem_u"] {
        traps(
            &format!("(drop ({op} (i32.const 7) (global.get $zero)))"),
            WasmTrap::DivideByZero,
        );
        traps(
            &format!("(drop ({op} (i32.const 7) (i32.const 0)))"),
            WasmTrap::DivideByZero,
        );
    }
    for op in ["i64.div_s", "i64.div_u", "i64.rem_s", "i64.rem_u"] {
        traps(
            &format!("(drop ({op} (i64.const 7) (global.get $zero64)))"),
            WasmTrap::DivideByZero,
        );
    }
}

#[test]
fn signed_division_overflow_traps_and_its_remainder_does_not() {
    traps(
        "(drop (i32.div_s (global.get $min32) (global.get $minus1)))",
        WasmTrap::IntegerOverflow,
    );
    traps(
        "(drop (i64.div_s (global.get $min64) (global.get $minus1_64)))",
        WasmTrap::IntegerOverflow,
    );
    // MIN % -1 is 0; x / -1 is -x otherwise.
    assert_eq!(
        both(
            "(call $exit (i32.add (i32.rem_s (global.get $min32) (global.get $minus1))
                   (i32.div_s (i32.const 5) (global.get $minus1))))"
        ),
        Ending::Exit(-5)
    );
    assert_eq!(
        both(
            "(call $exit (i32.wrap_i64 (i64.add (i64.rem_s (global.get $min64) (global.get $minus1_64))
                   (i64.div_s (i64.const 9) (global.get $minus1_64)))))"
        ),
        Ending::Exit(-9)
    );
}

#[test]
fn out_of_bounds_loads_and_stores_trap() {
    for access in [
        "(drop (i32.load (i32.const 65536)))",
        "(drop (i32.load (i32.const 65533)))",
        "(drop (i64.load offset=65529 (i32.const 0)))",
        "(drop (i32.load8_u (i32.const -1)))",
        "(drop (i32.load offset=0xffffffff (i32.const 1)))",
        "(i32.store (i32.const 65534) (i32.const 1))",
        "(i64.store16 offset=65535 (i32.const 0) (i64.const 1))",
        "(i32.store8 (i32.const 0x7fffffff) (i32.const 1))",
    ] {
        traps(access, WasmTrap::OutOfBounds);
    }
    // The last bytes are in bounds.
    assert_eq!(
        both(
            "(i32.store (i32.const 65532) (i32.const 7)) (call $exit (i32.load8_u (i32.const 65532)))"
        ),
        Ending::Exit(7)
    );
}

#[test]
fn memory_grow_stops_at_the_maximum() {
    // Grows 1 -> 2 pages (returns 1), then fails (-1); size is 2; the new
    // page is zeroed and usable.
    assert_eq!(
        both(
            "(i32.store (i32.const 70000) (i32.const 0))
             (call $exit (i32.add (i32.add
                (i32.mul (memory.grow (i32.const 1)) (i32.const 100))
                (i32.mul (memory.grow (i32.const 1)) (i32.const 10)))
                (i32.add (memory.size) (i32.load (i32.const 70000)))))"
        ),
        Ending::Trap(WasmTrap::OutOfBounds),
        "the store before the grow is out of bounds"
    );
    assert_eq!(
        both(
            "(call $exit (i32.add (i32.add
                (i32.mul (memory.grow (i32.const 1)) (i32.const 100))
                (i32.mul (memory.grow (i32.const 1)) (i32.const 10)))
                (i32.add (memory.size) (i32.load (i32.const 70000)))))"
        ),
        Ending::Exit(100 - 10 + 2)
    );
    assert_eq!(
        both("(call $exit (memory.grow (i32.const -1)))"),
        Ending::Exit(-1)
    );
}

#[test]
fn call_indirect_checks_the_table_and_the_signature() {
    assert_eq!(
        both("(call $exit (call_indirect (type $i2i) (i32.const 42) (i32.const 0)))"),
        Ending::Exit(42)
    );
    // A structurally equal type is the same type.
    assert_eq!(
        both("(call $exit (call_indirect (type $i2i_again) (i32.const 43) (i32.const 0)))"),
        Ending::Exit(43)
    );
    traps(
        "(drop (call_indirect (type $i2i) (i32.const 1) (i32.const 1)))",
        WasmTrap::UndefinedElement,
    );
    traps(
        "(drop (call_indirect (type $i2i) (i32.const 1) (i32.const 4)))",
        WasmTrap::UndefinedElement,
    );
    traps(
        "(drop (call_indirect (type $i2i) (i32.const 1) (i32.const -1)))",
        WasmTrap::UndefinedElement,
    );
    traps(
        "(drop (call_indirect (type $v2i) (i32.const 0)))",
        WasmTrap::SignatureMismatch,
    );
}

#[test]
fn a_float_operator_traps_naming_itself_and_float_bits_move() {
    let wasm = command("(drop (f64.add (f64.const 1) (f64.const 2)))");
    let t = translate_command(&wasm);
    assert_eq!(t.unsupported.len(), 1);
    assert_eq!(t.unsupported[0].operator, "f64.add");
    let run = toyvm_command(&t, &["t"], None);
    assert_eq!(run.ending, Ending::Trap(WasmTrap::Unsupported));
    // Constants, reinterpretation, sign operations, loads and stores of
    // floats run.
    assert_eq!(
        both(
            "(f64.store (i32.const 8) (f64.neg (f64.const 2.5)))
             (f32.store (i32.const 16) (f32.copysign (f32.const 3) (f32.const -0)))
             (call $exit (i32.add
                (i32.wrap_i64 (i64.shr_u (i64.reinterpret_f64 (f64.abs (f64.load (i32.const 8)))) (i64.const 52)))
                (i32.shr_u (i32.load (i32.const 16)) (i32.const 31))))"
        ),
        Ending::Exit(0x400 + 1)
    );
}

#[test]
fn out_of_bounds_segments_trap_at_instantiation() {
    let wasm = wat::parse_str(
        r#"(module (memory (export "memory") 1)
             (data (i32.const 65530) "0123456789")
             (func (export "_start")))"#,
    )
    .unwrap();
    let oracle = wasmi_wasi::run_command(&wasm, &["t"]);
    let run = toyvm_command(&translate_command(&wasm), &["t"], None);
    assert_eq!(oracle.ending, Ending::Trap(WasmTrap::OutOfBounds));
    assert_eq!(run, oracle);
    let wasm = wat::parse_str(
        r#"(module (table 2 funcref) (func $f) (elem (i32.const 1) $f $f)
             (func (export "_start")))"#,
    )
    .unwrap();
    let oracle = wasmi_wasi::run_command(&wasm, &["t"]);
    let run = toyvm_command(&translate_command(&wasm), &["t"], None);
    assert_eq!(oracle.ending, Ending::Trap(WasmTrap::UndefinedElement));
    assert_eq!(run, oracle);
}

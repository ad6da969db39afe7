//! The shape of the translation: what toyvm code a few WebAssembly
//! functions become, names, and `toyvm dis` output assembling back.

use toyvm_vm::asm::{assemble, disassemble, format_instr};
use toyvm_wasm::{Entry, Options, Origin, translate};

fn module(text: &str) -> toyvm_wasm::Translation {
    let wasm = wat::parse_str(text).expect("valid wat");
    let opts = Options {
        entry: Entry::InstantiateOnly,
        ..Options::default()
    };
    translate(&wasm, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// The instructions of the program function named `name`, as text.
fn code(t: &toyvm_wasm::Translation, name: &str) -> Vec<String> {
    let p = &t.program;
    let f = &p.functions[p.function_index(name).expect("function") as usize];
    f.code.iter().map(|i| format_instr(p, f, i)).collect()
}

#[test]
fn i32_arithmetic_stays_sign_extended_and_computes_into_locals() {
    let t = module(
        r#"(module (func $f (param i32 i32) (result i32) (local i32)
             (local.set 2 (i32.add (local.get 0) (local.get 1)))
             (i32.mul (local.get 2) (i32.const 3))))"#,
    );
    // The sum goes straight into local 2 (r2), sign-extended; the product
    // by a constant is an immediate form.
    assert_eq!(
        code(&t, "f"),
        [
            "add r3, r0, r1",
            "sext32 r2, r3",
            "muli r3, r2, 3",
            "sext32 r3, r3",
            "ret r3"
        ]
    );
}

#[test]
fn comparisons_fuse_into_branches() {
    let t = module(
        r#"(module (func $count (param i32) (result i32) (local i32)
             (loop $top
               (local.set 1 (i32.add (local.get 1) (i32.const 1)))
               (br_if $top (i32.lt_u (local.get 1) (local.get 0))))
             (local.get 1)))"#,
    );
    let c = code(&t, "count");
    assert!(c.iter().any(|i| i.starts_with("bltu r1, r0,")), "{c:?}");
    assert!(!c.iter().any(|i| i.starts_with("ltu ")), "{c:?}");
    // Local 1 is read before it is written: zeroed first.
    assert_eq!(c[0], "li r1, 0");
}

#[test]
fn locals_written_before_read_are_not_zeroed() {
    let t = module(
        r#"(module (func $g (param i32) (result i32) (local i32)
             (local.set 1 (i32.const 5))
             (i32.add (local.get 1) (local.get 0))))"#,
    );
    let c = code(&t, "g");
    assert_eq!(c[0], "li r1, 5", "{c:?}");
}

#[test]
fn names_come_from_the_name_section_and_dis_output_assembles_back() {
    let t = module(
        r#"(module
             (import "env" "host.fn" (func $h (param i32) (result i32)))
             (memory 1 2)
             (global $g (mut i32) (i32.const 7))
             (table 2 funcref) (elem (i32.const 0) $add $h)
             (data (i32.const 3) "abc")
             (func $add (export "add") (param i32 i32) (result i32)
               (i32.add (local.get 0) (local.get 1)))
             (func $r1 (param i32) (result i32)
               (call_indirect (param i32 i32) (result i32)
                 (local.get 0) (global.get $g) (local.get 0)))
             (func $0bad (result i32)
               (block (result i32) (i32.const 1) (br_table 0 0 (i32.const 0))))
             (func (export "anon") (result i32) (memory.grow (i32.const 1))))"#,
    );
    let names: Vec<&str> = t.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "add",
            "r1_",
            "_0bad",
            "f4",
            "thunk.env.host.fn",
            "wasm_init",
            "wasm_entry"
        ]
    );
    assert!(matches!(
        t.functions[0].origin,
        Origin::Wasm { index: 1, .. }
    ));
    assert_eq!(t.imports[0].field, "host.fn");
    assert_eq!(t.program.imports[0].name, "env.host.fn");
    let text = disassemble(&t.program);
    let back = assemble(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // Assembly does not carry the translation's code offsets.
    let mut program = t.program.clone();
    program.source_offsets.clear();
    assert_eq!(back, program, "{text}");
}

#[test]
fn every_instruction_knows_its_webassembly_offset() {
    let t = module(r#"(module (func $f (param i32) (result i32) (i32.popcnt (local.get 0))))"#);
    let f = &t.functions[0];
    let Origin::Wasm { offset, .. } = f.origin else {
        panic!()
    };
    let offsets = &t.program.source_offsets[0];
    assert_eq!(offsets.len(), t.program.functions[0].code.len());
    assert!(
        offsets.iter().all(|&o| o > offset),
        "{offsets:?} after {offset}"
    );
    let pcs = 0..offsets.len() as u32;
    assert!(
        pcs.clone()
            .all(|pc| t.wasm_offset(0, pc) == Some(offsets[pc as usize]))
    );
    // The instantiation and the entry come from no operator.
    assert_eq!(t.wasm_offset(t.init, 0), None);
    assert_eq!(t.wasm_offset(t.program.entry, 0), None);
}

#[test]
fn counts_give_operators_read_against_instructions_emitted() {
    let t = module(
        r#"(module (func $f (param i32 i32) (result i32) (local i32)
             (local.set 2 (i32.add (local.get 0) (local.get 1)))
             (i32.mul (local.get 2) (i32.const 3)))
           (func $g (result i32) (block (result i32) (i32.const 1))))"#,
    );
    // $f: 7 operators and its `end`, into the 5 instructions of the first
    // test; $g: block, i32.const, end, end. The instantiation and entry
    // functions are not the module's and do not count.
    let c = t.counts();
    let g = code(&t, "g").len() as u64;
    assert_eq!((c.functions, c.operators), (2, 12));
    assert_eq!(c.instructions, 5 + g);
    assert_eq!(t.functions[0].operators, 8);
    // $f's body: its locals declaration (3 bytes), then 13 bytes of
    // operators; $g's: 1 + 6 (the size before each body is not counted).
    assert_eq!(t.functions[0].body_bytes, 16);
    assert_eq!(c.code_bytes, 16 + 7);
    assert!((c.per_operator() - (5 + g) as f64 / 12.0).abs() < 1e-12);
}

/// The `sext32`s in the first function of the module `wat` translates to.
fn sext32s(wat: &str) -> usize {
    use toyvm_vm::isa::Instr;
    module(wat).program.functions[0]
        .code
        .iter()
        .filter(|i| matches!(i, Instr::Sext32 { .. }))
        .count()
}

/// An i32 operand just computed that only add/sub/mul/shl/shr_u read keeps
/// no `sext32` of its own (the result is extended again); where the value
/// is read whole (a signed shift's value, a comparison, a result) it does.
#[test]
fn operands_read_only_in_their_low_bits_are_not_extended_twice() {
    let sexts = |body: &str| {
        sext32s(&format!(
            "(module (func $f (param i32 i32) (result i32) {body}))"
        ))
    };
    // mul then add: one extension, the add's.
    assert_eq!(
        sexts("(i32.add (i32.mul (local.get 0) (i32.const 3)) (i32.const 5))"),
        1
    );
    assert_eq!(
        sexts("(i32.sub (local.get 1) (i32.mul (local.get 0) (local.get 1)))"),
        1
    );
    assert_eq!(
        sexts("(i32.shr_u (i32.add (local.get 0) (local.get 1)) (i32.const 3))"),
        0
    );
    // shr_s reads the whole value: both stay.
    assert_eq!(
        sexts("(i32.shr_s (i32.add (local.get 0) (local.get 1)) (i32.const 3))"),
        1
    );
    assert_eq!(sexts("(i32.mul (local.get 0) (local.get 1))"), 1);
}

/// A store narrower than 64 bits keeps no `sext32` of the value it stores
/// (it writes the low bytes), nor of an address computed last.
#[test]
fn stores_do_not_extend_what_they_read_in_its_low_bits() {
    let sexts = |body: &str| {
        sext32s(&format!(
            "(module (memory 1) (func $f (param i32 i32 i64) {body}))"
        ))
    };
    // The value's extension goes, for every width below 64 bits.
    assert_eq!(
        sexts("(i32.store (local.get 0) (i32.add (local.get 0) (local.get 1)))"),
        0
    );
    assert_eq!(
        sexts("(i32.store8 (local.get 0) (i32.add (local.get 0) (local.get 1)))"),
        0
    );
    assert_eq!(
        sexts(
            "(i64.store32 (local.get 0) (i64.extend_i32_s (i32.add (local.get 0) (local.get 1))))"
        ),
        0
    );
    assert_eq!(
        sexts("(i64.store (local.get 0) (i64.extend_i32_s (i32.add (local.get 0) (local.get 1))))"),
        1
    );
    // The address's, when it is computed last.
    assert_eq!(
        sexts("(i32.store (i32.add (local.get 0) (local.get 1)) (local.get 1))"),
        0
    );
    // An address computed before the value keeps it.
    assert_eq!(
        sexts(
            "(i64.store (i32.add (local.get 0) (local.get 1)) (i64.extend_i32_s (i32.add (local.get 0) (local.get 1))))"
        ),
        2
    );
}

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
    // The sum goes straight into local 2 (r2), computed on 32 bits and
    // sign-extended by `addw` itself; the product by a constant is an
    // immediate form (`muliw`): no `sext32` after either.
    assert_eq!(
        code(&t, "f"),
        ["addw r2, r0, r1", "muliw r3, r2, 3", "ret r3"]
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
    // $f: 7 operators and its `end`, into the 3 instructions of the first
    // test; $g: block, i32.const, end, end. The instantiation and entry
    // functions are not the module's and do not count.
    let c = t.counts();
    let g = code(&t, "g").len() as u64;
    assert_eq!((c.functions, c.operators), (2, 12));
    assert_eq!(c.instructions, 3 + g);
    assert_eq!(t.functions[0].operators, 8);
    // $f's body: its locals declaration (3 bytes), then 13 bytes of
    // operators; $g's: 1 + 6 (the size before each body is not counted).
    assert_eq!(t.functions[0].body_bytes, 16);
    assert_eq!(c.code_bytes, 16 + 7);
    assert!((c.per_operator() - (3 + g) as f64 / 12.0).abs() < 1e-12);
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

/// i32 add, sub, mul and shifts are one instruction each on the low 32
/// bits, their result sign-extended (`addw` .. `ushriw`): no `sext32`
/// after them, whatever reads the value, no `andi` of a shift's count and
/// no `zext32` before `shr_u`.
#[test]
fn i32_arithmetic_is_one_instruction_without_extensions() {
    let f = |body: &str| {
        let t = module(&format!(
            "(module (func $f (param i32 i32) (result i32) {body}))"
        ));
        code(&t, "f")
    };
    assert_eq!(
        f("(i32.add (i32.mul (local.get 0) (i32.const 3)) (i32.const 5))"),
        ["muliw r2, r0, 3", "addiw r2, r2, 5", "ret r2"]
    );
    assert_eq!(
        f("(i32.sub (local.get 1) (i32.mul (local.get 0) (local.get 1)))"),
        ["mulw r3, r0, r1", "subw r2, r1, r3", "ret r2"]
    );
    // `x - k` is `x + -k`, i32::MIN included.
    assert_eq!(
        f("(i32.sub (local.get 0) (i32.const -2147483648))"),
        ["addiw r2, r0, -2147483648", "ret r2"]
    );
    assert_eq!(
        f("(i32.shr_u (i32.add (local.get 0) (local.get 1)) (i32.const 3))"),
        ["addw r2, r0, r1", "ushriw r2, r2, 3", "ret r2"]
    );
    assert_eq!(
        f("(i32.shl (local.get 0) (local.get 1))"),
        ["shlw r2, r0, r1", "ret r2"]
    );
    // shr_s by a constant stays `shri` (exact on a sign-extended value);
    // by a register it is `shrw` (its count modulo 32).
    assert_eq!(
        f("(i32.shr_s (i32.add (local.get 0) (local.get 1)) (i32.const 3))"),
        ["addw r2, r0, r1", "shri r2, r2, 3", "ret r2"]
    );
    assert_eq!(
        f("(i32.shr_s (local.get 0) (local.get 1))"),
        ["shrw r2, r0, r1", "ret r2"]
    );
    // `0 - x` is one instruction too: the low 32 bits times -1.
    assert_eq!(
        f("(i32.sub (i32.const 0) (local.get 0))"),
        ["muliw r2, r0, -1", "ret r2"]
    );
}

/// A store narrower than 64 bits keeps no `sext32` of the value it stores
/// (it writes the low bytes), nor of an address computed last
/// (`i32.div_u` ends with one; i32 add, sub, mul, negation and shifts
/// need none, see above).
#[test]
fn stores_do_not_extend_what_they_read_in_its_low_bits() {
    let sexts = |body: &str| {
        sext32s(&format!(
            "(module (memory 1) (func $f (param i32 i32 i64) {body}))"
        ))
    };
    // The value's extension goes, for every width below 64 bits.
    assert_eq!(
        sexts("(i32.store (local.get 0) (i32.div_u (local.get 1) (local.get 0)))"),
        0
    );
    assert_eq!(
        sexts("(i32.store8 (local.get 0) (i32.div_u (local.get 1) (local.get 0)))"),
        0
    );
    assert_eq!(
        sexts(
            "(i64.store32 (local.get 0) (i64.extend_i32_s (i32.div_u (local.get 1) (local.get 0))))"
        ),
        0
    );
    assert_eq!(
        sexts(
            "(i64.store (local.get 0) (i64.extend_i32_s (i32.div_u (local.get 1) (local.get 0))))"
        ),
        1
    );
    // The address's, when it is computed last.
    assert_eq!(
        sexts("(i32.store (i32.div_u (local.get 1) (local.get 0)) (local.get 1))"),
        0
    );
    // An address computed before the value keeps it.
    assert_eq!(
        sexts(
            "(i64.store (i32.div_u (local.get 1) (local.get 0)) (i64.extend_i32_s (i32.div_u (local.get 1) (local.get 0))))"
        ),
        2
    );
}

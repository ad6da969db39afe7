//! Malformed, truncated and hostile modules: a clear error, never a panic,
//! and nothing allocated that a size check did not bound first.

use toyvm_wasm::{Error, Options, translate};

fn tr(bytes: &[u8]) -> Result<toyvm_wasm::Translation, Error> {
    translate(bytes, &Options::default())
}

fn wat(text: &str) -> Vec<u8> {
    wat::parse_str(text).expect("valid wat")
}

fn leb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn section(id: u8, content: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb(content.len() as u64, out);
    out.extend_from_slice(content);
}

/// A module of `n` functions `() -> ()`, each `(local i32 * locals) end`.
fn functions(n: u64, locals: u64) -> Vec<u8> {
    let mut m = b"\0asm\x01\0\0\0".to_vec();
    section(1, &[1, 0x60, 0, 0], &mut m);
    let mut funcs = Vec::new();
    leb(n, &mut funcs);
    funcs.extend(std::iter::repeat_n(0u8, n as usize));
    section(3, &funcs, &mut m);
    let mut body = Vec::new();
    if locals > 0 {
        body.push(1);
        leb(locals, &mut body);
        body.push(0x7f);
    } else {
        body.push(0);
    }
    body.push(0x0b);
    let mut code = Vec::new();
    leb(n, &mut code);
    for _ in 0..n {
        leb(body.len() as u64, &mut code);
        code.extend_from_slice(&body);
    }
    section(10, &code, &mut m);
    m
}

fn nqueens() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../programs/c/nqueens.wasm"
    ))
    .unwrap()
}

#[test]
fn truncated_modules_are_errors() {
    let full = nqueens();
    assert!(tr(&full).is_ok());
    let step = full.len() / 400 + 1;
    let mut errors = 0;
    let cuts: Vec<usize> = (0..full.len())
        .step_by(step)
        .chain([1, 7, 8, 9, full.len() - 1])
        .collect();
    for &cut in &cuts {
        let prefix = &full[..cut];
        match tr(prefix) {
            Err(Error::Invalid { .. } | Error::InvalidFunction { .. }) => errors += 1,
            // A cut at a section's end leaves a valid module (its last
            // sections missing): then it translates, or lacks its `_start`.
            Ok(_) | Err(Error::Entry(_)) => {
                assert!(wasmparser::validate(prefix).is_ok(), "cut at {cut}")
            }
            Err(e) => panic!("cut at {cut}: {e}"),
        }
    }
    assert!(errors * 10 > cuts.len() * 9, "{errors} of {}", cuts.len());
}

#[test]
fn corrupted_modules_are_errors_or_verified_programs() {
    let full = nqueens();
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut translated = 0;
    // 60 modules: each is a whole translation of a 140 KB module.
    for _ in 0..60 {
        let mut m = full.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % m.len() as u64) as usize;
            m[at] ^= 1 << (next() % 8);
        }
        // `translate` verifies what it returns: Ok is a verified program.
        if tr(&m).is_ok() {
            translated += 1;
        }
    }
    // Most flips land in data or code and still translate.
    assert!(translated > 0);
}

#[test]
fn huge_memories_are_refused_or_capped() {
    let e = tr(&wat("(module (memory 65536) (func (export \"_start\")))")).unwrap_err();
    assert!(matches!(e, Error::Limit { .. }), "{e}");
    assert!(e.to_string().contains("65536 pages"), "{e}");
    // A huge maximum is lowered to the option's.
    let t = tr(&wat("(module (memory 1 65536) (func (export \"_start\")))")).unwrap();
    assert_eq!(t.layout.capacity, t.layout.base + 1024 * 65536);
    let small = Options {
        max_memory_pages: 2,
        ..Options::default()
    };
    let t = translate(
        &wat("(module (memory 1) (func (export \"_start\")))"),
        &small,
    )
    .unwrap();
    assert_eq!(t.layout.capacity, t.layout.base + 2 * 65536);
    // Past WebAssembly's own limit: invalid.
    assert!(tr(&wat_unchecked_memory(70000)).is_err());
}

/// A module declaring a memory of `pages` (not checked by wat).
fn wat_unchecked_memory(pages: u64) -> Vec<u8> {
    let mut m = b"\0asm\x01\0\0\0".to_vec();
    let mut mem = vec![1, 0];
    leb(pages, &mut mem);
    section(5, &mem, &mut m);
    m
}

#[test]
fn huge_tables_are_refused() {
    let e = tr(&wat(
        "(module (table 2000000 funcref) (func (export \"_start\")))",
    ))
    .unwrap_err();
    assert!(matches!(e, Error::Limit { .. }), "{e}");
    let e = tr(&wat(
        "(module (table 0xffffffff funcref) (func (export \"_start\")))",
    ))
    .unwrap_err();
    assert!(
        matches!(e, Error::Limit { .. } | Error::Invalid { .. }),
        "{e}"
    );
}

#[test]
fn deep_nesting_translates_without_recursion() {
    let depth = 20_000;
    let text = format!(
        "(module (func (export \"_start\") {} {}))",
        "(block ".repeat(depth),
        ")".repeat(depth)
    );
    assert!(tr(&wat(&text)).is_ok());
    let text = format!(
        "(module (func (export \"_start\") (param i32) {} {}))",
        "(if (local.get 0) (then (loop ".repeat(depth / 2),
        ")))".repeat(depth / 2)
    );
    let opts = Options {
        entry: toyvm_wasm::Entry::InstantiateOnly,
        ..Options::default()
    };
    assert!(translate(&wat(&text), &opts).is_ok());
}

#[test]
fn a_million_functions_are_refused_before_they_are_read() {
    let m = functions(1_000_000, 0);
    let e = tr(&m).unwrap_err();
    assert!(matches!(e, Error::Limit { .. }), "{e}");
    assert!(e.to_string().contains("1000000 functions"), "{e}");
}

#[test]
fn huge_locals_counts_are_refused_naming_the_function() {
    let e = tr(&functions(1, 300)).unwrap_err();
    assert!(matches!(e, Error::FunctionTooLarge { index: 0, .. }), "{e}");
    assert!(e.to_string().contains("function 0 (`f0`)"), "{e}");
    // Past the validator's own limit.
    assert!(tr(&functions(1, 4_000_000_000)).is_err());
    // The operand stack counts too.
    let text = format!(
        "(module (func $deep (export \"_start\") {} {}))",
        "i32.const 1 ".repeat(300),
        "drop ".repeat(300)
    );
    let e = tr(&wat(&text)).unwrap_err();
    assert!(matches!(e, Error::FunctionTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("`deep`"), "{e}");
}

#[test]
fn too_many_mutable_globals_are_refused() {
    let globals = "(global (mut i32) (i32.const 0))".repeat(70_000);
    let e = tr(&wat(&format!("(module {globals})"))).unwrap_err();
    assert!(matches!(e, Error::Limit { .. }), "{e}");
}

#[test]
fn imports_nobody_provides_are_link_errors_naming_module_and_field() {
    let e = tr(&wat(
        r#"(module (import "wasi_snapshot_preview1" "fd_read" (func (param i32 i32 i32 i32) (result i32))))"#,
    ))
    .unwrap_err();
    assert!(matches!(e, Error::Link { .. }), "{e}");
    assert!(
        e.to_string().contains("`wasi_snapshot_preview1`.`fd_read`"),
        "{e}"
    );
    let e = tr(&wat(
        r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32))))"#,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("fd_write"), "{e}");
    let e = tr(&wat(r#"(module (import "env" "memory" (memory 1)))"#)).unwrap_err();
    assert!(matches!(e, Error::Link { .. }), "{e}");
    // Other modules' functions are the embedder's, unless turned off.
    let m = wat(r#"(module (import "env" "f" (func (param i32))) (func (export "_start")))"#);
    let t = tr(&m).unwrap();
    assert_eq!(t.imports[0].module, "env");
    assert_eq!(t.imports[0].field, "f");
    let off = Options {
        host_imports: false,
        ..Options::default()
    };
    assert!(matches!(translate(&m, &off), Err(Error::Link { .. })));
}

#[test]
fn unsupported_proposals_are_named() {
    let e = tr(&wat("(module (func (result v128) (v128.const i64x2 0 0)))")).unwrap_err();
    assert!(e.to_string().to_lowercase().contains("simd"), "{e}");
    let e = tr(&wat(
        "(module (func (result i32) (ref.is_null (ref.null func))))",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("reference types"), "{e}");
    // Reference types' table operators are refused by the validator.
    let e = tr(&wat(
        "(module (table 2 funcref) (func (result i32) (table.size)))",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("reference types"), "{e}");
}

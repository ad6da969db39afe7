//! The whole translation: imports, names, each function, the import thunks,
//! the instantiation and entry functions, the memory image.

use toyvm_vm::Program;
use toyvm_vm::isa::{Instr, Reg};
use toyvm_vm::program::{Function, Import, MAX_IMPORTS};
use wasmparser::ValType;

use crate::func::{Callee, Shared};
use crate::layout::{Layout, image};
use crate::module::Module;
use crate::names::{Unique, sanitize};
use crate::wasi::{WASI_MODULE, WasiFn};
use crate::{
    Entry, Error, Export, FunctionInfo, HostImport, Options, Origin, Result, Translation,
    Unsupported, ValKind, emit,
};

/// Translates a WebAssembly module (binary format) into a verified toyvm
/// program.
pub fn translate(bytes: &[u8], opts: &Options) -> Result<Translation> {
    let mut m = Module::parse(bytes)?;
    let bodies = std::mem::take(&mut m.bodies);
    let layout = Layout::new(&m, opts)?;

    // Imports: WASI's functions (proc_exit becomes `halt`), the embedder's.
    let mut unique = Unique::default();
    let (mut callees, imports, host_imports) = link_imports(&m, opts, &mut unique)?;
    let n_imports = m.imports.len() as u32;
    let defined = m.funcs.len() as u32;
    if bodies.len() as u32 != defined {
        return Err(Error::Invalid {
            offset: bytes.len(),
            message: "function and code section counts differ".into(),
        });
    }
    for i in 0..defined {
        callees.push(Callee::Func(i));
    }
    // Names: the module's functions first, so they keep theirs.
    let names: Vec<String> = (0..defined)
        .map(|i| {
            let index = n_imports + i;
            let fallback = format!("f{index}");
            unique.take(sanitize(
                m.names.get(&index).copied().unwrap_or(""),
                &fallback,
            ))
        })
        .collect();

    // Thunks for imported functions that a table holds.
    let mut thunk_of = std::collections::HashMap::new();
    let mut thunks = Vec::new();
    for e in &m.elems {
        for &f in e.funcs.iter().flatten() {
            if f < n_imports && !thunk_of.contains_key(&f) {
                thunk_of.insert(f, defined + thunks.len() as u32);
                thunks.push(f);
            }
        }
    }
    let init_index = defined + thunks.len() as u32;
    let entry_index = init_index + 1;
    let func_value = |f: u32| -> i64 {
        let toyvm = if f < n_imports {
            thunk_of.get(&f).copied().unwrap_or(0)
        } else {
            f - n_imports
        };
        let ty = if f < n_imports {
            m.imports[f as usize].ty
        } else {
            m.funcs[(f - n_imports) as usize]
        };
        ((m.canonical[ty as usize] as i64 + 1) << 32) | toyvm as i64
    };

    let shared = Shared {
        module: &m,
        layout: &layout,
        callees,
    };
    let mut functions = Vec::with_capacity(entry_index as usize + 1);
    let mut infos = Vec::with_capacity(entry_index as usize + 1);
    let mut unsupported = Vec::new();
    let mut source_offsets = Vec::with_capacity(entry_index as usize + 1);
    for (i, body) in bodies.into_iter().enumerate() {
        let index = n_imports + i as u32;
        let offset = body.body.range().start as u32;
        let body_bytes = body.body.range().end as u32 - offset;
        let built = crate::dispatch::translate(&shared, index, &names[i], body)?;
        let f = functions.len() as u32;
        unsupported.extend(built.unsupported.iter().map(|&(pc, op)| Unsupported {
            function: f,
            pc,
            operator: op,
            offset: built.offsets.get(pc as usize).copied().unwrap_or(offset),
        }));
        functions.push(built.function);
        source_offsets.push(built.offsets);
        infos.push(FunctionInfo {
            name: names[i].clone(),
            origin: Origin::Wasm { index, offset },
            operators: built.operators,
            body_bytes,
        });
    }
    for &f in &thunks {
        let (function, info, offsets) =
            import_thunk(&m, f, shared.callees[f as usize], &mut unique);
        functions.push(function);
        infos.push(info);
        source_offsets.push(offsets);
    }

    // Instantiation: the segments' trap, else the start function.
    let img = image(&m, &layout, &func_value);
    let mut init = Vec::new();
    match img.trap {
        Some(code) => init.push(emit::trap(code)),
        None => {
            if let Some(start) = m.start {
                init.push(call(&shared, start, 0, 0, 0));
            }
            init.push(Instr::Li { d: 0, imm: 0 });
            init.push(Instr::Ret { a: 0 });
        }
    }
    close(&mut init);
    let init_name = unique.take("wasm_init".into());
    infos.push(FunctionInfo {
        name: init_name.clone(),
        origin: Origin::Init,
        operators: 0,
        body_bytes: 0,
    });
    functions.push(Function {
        name: init_name,
        params: 0,
        regs: 1,
        code: init,
        tables: Vec::new(),
    });

    // Exports.
    let exports: Vec<Export> = m
        .exports
        .iter()
        .filter(|(_, f)| *f >= n_imports || thunk_of.contains_key(f))
        .map(|&(name, f)| {
            let ty = m.func_type(f);
            Export {
                name: name.to_owned(),
                function: (func_value(f) & 0xffff_ffff) as u32,
                params: ty.params().iter().map(kind).collect(),
                results: ty.results().iter().map(kind).collect(),
            }
        })
        .collect();

    // The entry.
    let (entry_params, target) = entry_target(&m, &opts.entry)?;
    let entry = entry_code(&shared, init_index, &entry_params, target)?;
    let p = entry_params.len();
    let entry_name = unique.take("wasm_entry".into());
    infos.push(FunctionInfo {
        name: entry_name.clone(),
        origin: Origin::Entry,
        operators: 0,
        body_bytes: 0,
    });
    functions.push(Function {
        name: entry_name,
        params: p as u8,
        regs: p as u16 + 1,
        code: entry,
        tables: Vec::new(),
    });

    // The instantiation and the entry come from no operator: no offsets.
    source_offsets.resize(functions.len(), Vec::new());
    let memory_words = layout.capacity / 8;
    let program = Program {
        functions,
        data: img.segments,
        memory_words,
        memory_len: layout.initial_len,
        // At the end: no `--input` file fits (WebAssembly reads none).
        input_base: layout.initial_len / 8,
        entry: entry_index,
        imports,
        source_offsets,
    };
    toyvm_vm::verify::verify(&program)?;
    Ok(Translation {
        program,
        functions: infos,
        imports: host_imports,
        exports,
        layout,
        init: init_index,
        unsupported,
    })
}

/// The module's imports: WASI's functions (`proc_exit` becomes `halt`)
/// and, with [`Options::host_imports`], the embedder's; each WebAssembly
/// import's callee, the program's imports and what each is.
fn link_imports(
    m: &Module<'_>,
    opts: &Options,
    unique: &mut Unique,
) -> Result<(Vec<Callee>, Vec<Import>, Vec<HostImport>)> {
    let mut callees = Vec::with_capacity(m.imports.len() + m.funcs.len());
    let mut imports = Vec::new();
    let mut host_imports = Vec::new();
    for imp in &m.imports {
        let ty = &m.types[imp.ty as usize];
        let link = |why: String| Error::Link {
            module: imp.module.to_owned(),
            field: imp.field.to_owned(),
            why,
        };
        let wasi = if imp.module == WASI_MODULE {
            let f = WasiFn::from_name(imp.field)
                .ok_or_else(|| link("not a WASI function this host offers".into()))?;
            if ty.params() != f.params() || ty.results() != f.results() {
                return Err(link(format!(
                    "imported as {:?} -> {:?}, but WASI's is {:?} -> {:?}",
                    ty.params(),
                    ty.results(),
                    f.params(),
                    f.results()
                )));
            }
            if f == WasiFn::ProcExit {
                callees.push(Callee::Exit);
                continue;
            }
            Some(f)
        } else if opts.host_imports {
            None
        } else {
            return Err(link("host imports are off (Options::host_imports)".into()));
        };
        if imports.len() >= MAX_IMPORTS {
            return Err(Error::Limit {
                what: format!("more than {MAX_IMPORTS} imported functions"),
            });
        }
        callees.push(Callee::Host(imports.len() as u16));
        let name = unique.take(sanitize(
            &format!("{}.{}", imp.module, imp.field),
            &format!("import{}", imports.len()),
        ));
        imports.push(Import {
            name,
            params: ty.params().len() as u8,
        });
        host_imports.push(HostImport {
            module: imp.module.to_owned(),
            field: imp.field.to_owned(),
            wasi,
        });
    }
    Ok((callees, imports, host_imports))
}

/// The function the entry calls (`None`: instantiation only) and its
/// parameters.
fn entry_target(m: &Module<'_>, entry: &Entry) -> Result<(Vec<ValType>, Option<u32>)> {
    Ok(match entry {
        Entry::InstantiateOnly => (Vec::new(), None),
        Entry::Start => {
            let &(_, f) = m
            .exports
            .iter()
            .find(|(n, _)| *n == "_start")
            .ok_or_else(|| {
                Error::Entry("the module exports no `_start` (not a WASI command); choose an export with Options::entry".into())
            })?;
            let ty = m.func_type(f);
            if !ty.params().is_empty() || !ty.results().is_empty() {
                return Err(Error::Entry("`_start` takes or returns values".into()));
            }
            (Vec::new(), Some(f))
        }
        Entry::Export(name) => {
            let &(_, f) =
                m.exports.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    Error::Entry(format!("the module exports no function `{name}`"))
                })?;
            let ty = m.func_type(f);
            if ty.results().len() > 1 {
                return Err(Error::Entry(format!("`{name}` returns several values")));
            }
            (ty.params().to_vec(), Some(f))
        }
    })
}

/// The entry function's code: the instantiation, then `target` with the
/// entry's arguments (`params`), returning its value (0 without one).
fn entry_code(
    shared: &Shared<'_>,
    init_index: u32,
    params: &[ValType],
    target: Option<u32>,
) -> Result<Vec<Instr>> {
    let p = params.len();
    if p > 254 {
        return Err(Error::Entry(
            "the entry export takes more than 254 parameters".into(),
        ));
    }
    let d = p as Reg;
    let mut entry = vec![Instr::Call {
        d,
        f: init_index,
        a: d,
        n: 0,
    }];
    if let Some(f) = target {
        // Arguments as WebAssembly keeps them: i32 (and f32) sign-extended.
        for (i, t) in params.iter().enumerate() {
            if matches!(t, ValType::I32 | ValType::F32) {
                let r = i as Reg;
                entry.push(emit::sext(emit::Width::W32, r, r));
            }
        }
        entry.push(call(shared, f, d, 0, p as u8));
        if shared.module.func_type(f).results().is_empty() {
            entry.push(Instr::Li { d, imm: 0 });
        }
    } else {
        entry.push(Instr::Li { d, imm: 0 });
    }
    entry.push(Instr::Ret { a: d });
    Ok(entry)
}

/// The function a table holds for imported function `f`: it calls the
/// import (`callee`), with its source offsets.
fn import_thunk(
    m: &Module<'_>,
    f: u32,
    callee: Callee,
    unique: &mut Unique,
) -> (Function, FunctionInfo, Vec<u32>) {
    let imp = &m.imports[f as usize];
    let n = m.types[imp.ty as usize].params().len();
    let name = unique.take(sanitize(
        &format!("thunk.{}.{}", imp.module, imp.field),
        &format!("thunk{f}"),
    ));
    let d = n as Reg;
    let code = match callee {
        Callee::Host(h) => vec![
            Instr::Hcall {
                d,
                h,
                a: 0,
                n: n as u8,
            },
            Instr::Ret { a: d },
        ],
        _ => vec![Instr::Halt { a: 0 }],
    };
    let info = FunctionInfo {
        name: name.clone(),
        origin: Origin::ImportThunk { index: f },
        operators: 0,
        body_bytes: 0,
    };
    let offsets = vec![imp.offset as u32; code.len()];
    let function = Function {
        name,
        params: n as u8,
        regs: n as u16 + 1,
        code,
        tables: Vec::new(),
    };
    (function, info, offsets)
}

/// A call of WebAssembly function `f` with arguments `a..a+n`, result in `d`.
fn call(shared: &Shared<'_>, f: u32, d: Reg, a: Reg, n: u8) -> Instr {
    match shared.callees[f as usize] {
        Callee::Func(f) => Instr::Call { d, f, a, n },
        Callee::Host(h) => Instr::Hcall { d, h, a, n },
        Callee::Exit => Instr::Halt { a },
    }
}

/// Ends `code` with an instruction that does not fall through.
fn close(code: &mut Vec<Instr>) {
    if code.last().is_none_or(|i| i.op().falls_through()) {
        code.push(Instr::Jmp {
            target: code.len() as u32,
        });
    }
}

fn kind(t: &ValType) -> ValKind {
    match t {
        ValType::I64 => ValKind::I64,
        ValType::F32 => ValKind::F32,
        ValType::F64 => ValKind::F64,
        _ => ValKind::I32,
    }
}

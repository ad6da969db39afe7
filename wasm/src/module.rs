//! Reading and validating a module: everything but the function bodies'
//! instructions, which `func` translates.

use std::collections::HashMap;

use wasmparser::{
    ConstExpr, DataKind, ElementItems, ElementKind, ExternalKind, FuncToValidate, FuncType,
    FunctionBody, KnownCustom, Name, Operator, Parser, Payload, TypeRef, ValType, Validator,
    ValidatorResources, WasmFeatures,
};

use crate::{Error, Result};

/// Most entries a table may have: each is one word of toyvm memory below
/// WebAssembly address 0.
pub const MAX_TABLE_ENTRIES: u64 = 1 << 20;
/// Most mutable globals: each is one word of toyvm memory below
/// WebAssembly address 0.
pub const MAX_MUTABLE_GLOBALS: usize = 1 << 16;
/// Most functions a module may define: toyvm's limit less the functions
/// the front-end adds (import thunks, the instantiation and entry functions).
pub const MAX_DEFINED_FUNCTIONS: u32 = (toyvm_vm::program::MAX_FUNCTIONS as u32) / 2;

/// The features the validator accepts: WebAssembly 1.0 (with floats, which
/// translate into traps where they compute), mutable globals, the
/// sign-extension operators, the saturating float-to-int conversions
/// (floats again) and bulk memory (with its table operators).
pub fn features() -> WasmFeatures {
    WasmFeatures::WASM1
        | WasmFeatures::SIGN_EXTENSION
        | WasmFeatures::SATURATING_FLOAT_TO_INT
        | WasmFeatures::BULK_MEMORY
}

/// Most bytes of passive data segments a module may have (they are kept
/// in toyvm memory below WebAssembly address 0 for `memory.init`).
pub const MAX_PASSIVE_DATA_BYTES: u64 = 64 << 20;

/// An imported function.
#[derive(Clone, Debug)]
pub(crate) struct ImportedFunc<'a> {
    pub module: &'a str,
    pub field: &'a str,
    pub ty: u32,
    pub offset: usize,
}

/// A global: its type and, for an immutable one, its value; a mutable one
/// lives in memory, initialized with `init`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Global {
    pub mutable: bool,
    /// The initial value's bits (an i32 or f32 sign-extended from 32 bits).
    pub init: i64,
}

/// An element segment: function indices (`None`: a null entry), placed
/// in the table from `offset` on at instantiation (an active segment, then
/// dropped), or kept for `table.init` (`offset` is `None`: a passive
/// segment; a declared one is dropped at instantiation and keeps no items).
#[derive(Clone, Debug)]
pub(crate) struct Elem {
    pub offset: Option<u32>,
    pub funcs: Vec<Option<u32>>,
}

/// A data segment: active (placed at `offset` at instantiation, then
/// dropped) or passive (`offset` is `None`: kept for `memory.init`).
#[derive(Clone, Debug)]
pub(crate) struct Data<'a> {
    pub offset: Option<u32>,
    pub bytes: &'a [u8],
}

/// A function body awaiting translation, with its validator.
pub(crate) struct Body<'a> {
    pub validator: FuncToValidate<ValidatorResources>,
    pub body: FunctionBody<'a>,
}

/// What the translator needs of a module, validated.
#[derive(Default)]
pub(crate) struct Module<'a> {
    pub types: Vec<FuncType>,
    /// For each type, the index of the first structurally equal type:
    /// `call_indirect` compares these.
    pub canonical: Vec<u32>,
    pub imports: Vec<ImportedFunc<'a>>,
    /// The type index of each defined function.
    pub funcs: Vec<u32>,
    /// The table's size (tables do not grow without reference types).
    pub table: Option<u64>,
    /// Initial and maximum pages.
    pub memory: Option<(u64, Option<u64>)>,
    pub globals: Vec<Global>,
    pub exports: Vec<(&'a str, u32)>,
    pub start: Option<u32>,
    pub elems: Vec<Elem>,
    pub data: Vec<Data<'a>>,
    /// The data count section's count: `memory.init` and `data.drop` need
    /// one, so without it no segment is kept after instantiation.
    pub data_count: Option<u32>,
    pub bodies: Vec<Body<'a>>,
    pub names: HashMap<u32, &'a str>,
}

impl<'a> Module<'a> {
    /// The type of function `index` (imports first).
    pub fn func_type(&self, index: u32) -> &FuncType {
        let n = self.imports.len();
        let ty = match (index as usize).checked_sub(n) {
            None => self.imports[index as usize].ty,
            Some(i) => self.funcs[i],
        };
        &self.types[ty as usize]
    }

    /// Reads and validates `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Module<'a>> {
        let mut m = Module::default();
        let mut validator = Validator::new_with_features(features());
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(invalid)?;
            // Before the validator reads (and stores) them all.
            if let Payload::FunctionSection(s) = &payload
                && s.count() > MAX_DEFINED_FUNCTIONS
            {
                return Err(Error::Limit {
                    what: format!("{} functions (at most {MAX_DEFINED_FUNCTIONS})", s.count()),
                });
            }
            match validator.payload(&payload).map_err(invalid)? {
                wasmparser::ValidPayload::Func(validator, body) => {
                    m.bodies.push(Body { validator, body });
                    continue;
                }
                wasmparser::ValidPayload::Parser(_) => {
                    return Err(unsupported(0, "a component or nested module"));
                }
                _ => {}
            }
            m.payload(payload)?;
        }
        Ok(m)
    }

    fn payload(&mut self, payload: Payload<'a>) -> Result<()> {
        match payload {
            Payload::TypeSection(s) => {
                let mut seen: HashMap<(Vec<ValType>, Vec<ValType>), u32> = HashMap::new();
                for ty in s.into_iter_err_on_gc_types() {
                    let ty = ty.map_err(invalid)?;
                    let key = (ty.params().to_vec(), ty.results().to_vec());
                    let index = self.types.len() as u32;
                    self.canonical.push(*seen.entry(key).or_insert(index));
                    self.types.push(ty);
                }
            }
            Payload::ImportSection(s) => {
                for import in s.into_imports_with_offsets() {
                    let (offset, import) = import.map_err(invalid)?;
                    let kind = match import.ty {
                        TypeRef::Func(ty) => {
                            self.imports.push(ImportedFunc {
                                module: import.module,
                                field: import.name,
                                ty,
                                offset: offset as usize,
                            });
                            continue;
                        }
                        TypeRef::Memory(_) => "a memory",
                        TypeRef::Table(_) => "a table",
                        TypeRef::Global(_) => "a global",
                        _ => "this kind of import",
                    };
                    return Err(Error::Link {
                        module: import.module.to_owned(),
                        field: import.name.to_owned(),
                        why: format!(
                            "{kind} cannot be imported (only functions: WASI's and the embedder's)"
                        ),
                    });
                }
            }
            Payload::FunctionSection(s) => {
                for f in s {
                    self.funcs.push(f.map_err(invalid)?);
                }
            }
            Payload::TableSection(s) => {
                for t in s.into_iter_with_offsets() {
                    let (offset, t) = t.map_err(invalid)?;
                    if t.ty.initial > MAX_TABLE_ENTRIES {
                        return Err(Error::Limit {
                            what: format!(
                                "a table of {} entries at offset {offset:#x} (at most {MAX_TABLE_ENTRIES})",
                                t.ty.initial
                            ),
                        });
                    }
                    self.table = Some(t.ty.initial);
                }
            }
            Payload::MemorySection(s) => {
                for mem in s {
                    let mem = mem.map_err(invalid)?;
                    self.memory = Some((mem.initial, mem.maximum));
                }
            }
            Payload::GlobalSection(s) => {
                for g in s.into_iter_with_offsets() {
                    let (offset, g) = g.map_err(invalid)?;
                    let init = self.const_value(&g.init_expr, offset as usize)?;
                    self.globals.push(Global {
                        mutable: g.ty.mutable,
                        init,
                    });
                }
                let mutable = self.globals.iter().filter(|g| g.mutable).count();
                if mutable > MAX_MUTABLE_GLOBALS {
                    return Err(Error::Limit {
                        what: format!("{mutable} mutable globals (at most {MAX_MUTABLE_GLOBALS})"),
                    });
                }
            }
            Payload::ExportSection(s) => {
                for e in s {
                    let e = e.map_err(invalid)?;
                    if e.kind == ExternalKind::Func {
                        self.exports.push((e.name, e.index));
                    }
                }
            }
            Payload::StartSection { func, .. } => self.start = Some(func),
            Payload::DataCountSection { count, .. } => self.data_count = Some(count),
            Payload::ElementSection(s) => {
                for e in s {
                    let e = e.map_err(invalid)?;
                    let at = e.range.start as usize;
                    // A passive segment serves `table.init`, a declared
                    // one only `ref.func` (reference types): it is dropped
                    // at instantiation, its items are never read.
                    let offset = match e.kind {
                        ElementKind::Active { offset_expr, .. } => {
                            Some(self.const_value(&offset_expr, at)? as u32)
                        }
                        ElementKind::Passive => None,
                        ElementKind::Declared => {
                            self.elems.push(Elem {
                                offset: None,
                                funcs: Vec::new(),
                            });
                            continue;
                        }
                    };
                    // Bounded by the section's size: each item is one byte at least.
                    let funcs = match e.items {
                        ElementItems::Functions(items) => items
                            .into_iter()
                            .map(|f| f.map(Some))
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(invalid)?,
                        ElementItems::Expressions(_, exprs) => {
                            let mut funcs = Vec::new();
                            for expr in exprs {
                                let expr = expr.map_err(invalid)?;
                                funcs.push(element_expr(&expr, at)?);
                            }
                            funcs
                        }
                    };
                    self.elems.push(Elem { offset, funcs });
                }
            }
            Payload::DataSection(s) => {
                for d in s {
                    let d = d.map_err(invalid)?;
                    let at = d.range.start as usize;
                    let offset = match d.kind {
                        DataKind::Active { offset_expr, .. } => {
                            Some(self.const_value(&offset_expr, at)? as u32)
                        }
                        DataKind::Passive => None,
                    };
                    self.data.push(Data {
                        offset,
                        bytes: d.data,
                    });
                }
            }
            Payload::CustomSection(c) => {
                // A malformed name section is ignored, as engines do: names
                // are debugging information.
                if let KnownCustom::Name(names) = c.as_known() {
                    for name in names.flatten() {
                        if let Name::Function(map) = name {
                            for naming in map.into_iter().flatten() {
                                self.names.insert(naming.index, naming.name);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The value of a constant expression: a constant, or a defined
    /// global's value (imported globals are refused at the import).
    fn const_value(&self, expr: &ConstExpr<'_>, at: usize) -> Result<i64> {
        let mut ops = expr.get_operators_reader();
        let op = ops.read().map_err(invalid)?;
        Ok(match op {
            Operator::I32Const { value } => value as i64,
            Operator::I64Const { value } => value,
            Operator::F32Const { value } => value.bits() as i32 as i64,
            Operator::F64Const { value } => value.bits() as i64,
            Operator::GlobalGet { global_index } => {
                self.globals
                    .get(global_index as usize)
                    .ok_or_else(|| {
                        unsupported(at, "a constant expression reading an imported global")
                    })?
                    .init
            }
            _ => return Err(unsupported(at, "this constant expression")),
        })
    }
}

/// An element segment's item written as an expression: `ref.func f`, or
/// `ref.null` (a null entry).
fn element_expr(expr: &ConstExpr<'_>, at: usize) -> Result<Option<u32>> {
    let mut ops = expr.get_operators_reader();
    match ops.read().map_err(invalid)? {
        Operator::RefFunc { function_index } => Ok(Some(function_index)),
        Operator::RefNull { .. } => Ok(None),
        _ => Err(unsupported(at, "this element segment expression")),
    }
}

pub fn invalid(e: wasmparser::BinaryReaderError) -> Error {
    Error::Invalid {
        offset: e.offset() as usize,
        message: e.message().to_owned(),
    }
}

pub fn unsupported(offset: usize, what: impl Into<String>) -> Error {
    Error::Unsupported {
        offset,
        what: what.into(),
    }
}

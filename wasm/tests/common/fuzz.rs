//! The differential fuzzer: modules from wasm-smith, configured to the
//! subset the front-end translates, each export with integer parameters run
//! on a fresh instance under wasmi (with fuel) and under toyvm's
//! interpreter (with a fuel limit); the result, the trap kind, the memory
//! and the mutable globals afterwards must agree.
//!
//! This file is the one place the generator's configuration and the
//! comparison live: the lab's JIT campaign (`lab/examples/wasm_campaign.rs`)
//! includes it and adds its runs through [`fuzz_with`].

use std::collections::BTreeMap;

use arbitrary::Unstructured;
use toyvm_vm::interp::{self, Call, Config as RunConfig, NoJit};
use toyvm_vm::tuple::NoSink;
use toyvm_wasm::{Entry, Error, Options, ValKind, translate};
use wasmi::{Engine, Extern, Linker, Module, Store, Val};
use wasmparser::Operator as O;

use super::WasmTrap;

/// wasmi's fuel per run; toyvm gets `TOYVM_FUEL_FACTOR` times as many
/// instructions (a WebAssembly operator is at most a few toyvm ones).
pub const WASMI_FUEL: u64 = 20_000;
pub const TOYVM_FUEL_FACTOR: u64 = 40;
/// Deepest recursion either engine is given.
pub const MAX_DEPTH: usize = 500;

/// What a campaign saw.
#[derive(Debug, Default)]
pub struct Stats {
    pub modules: u64,
    /// Runs of an export under both engines, compared.
    pub compared: u64,
    /// Modules with a bulk memory operator (`memory.fill`, `memory.copy`,
    /// `memory.init`, `data.drop`).
    pub bulk: u64,
    /// Modules with a table operator of bulk memory (`table.copy`,
    /// `table.init`, `elem.drop`).
    pub table_ops: u64,
    /// Runs and modules not compared, by reason.
    pub skipped: BTreeMap<&'static str, u64>,
    pub mismatches: Vec<String>,
}

impl Stats {
    fn skip(&mut self, why: &'static str) {
        *self.skipped.entry(why).or_default() += 1;
    }

    /// Adds another campaign's figures to these.
    pub fn add(&mut self, o: Stats) {
        self.modules += o.modules;
        self.compared += o.compared;
        self.bulk += o.bulk;
        self.table_ops += o.table_ops;
        for (why, n) in o.skipped {
            *self.skipped.entry(why).or_default() += n;
        }
        self.mismatches.extend(o.mismatches);
    }
}

/// One export's run under toyvm's interpreter, for a further engine (the
/// JIT) to be compared with: how it ended, exactly, and the whole toyvm
/// memory afterwards.
pub struct Case<'a> {
    pub seed: u64,
    pub wasm: &'a [u8],
    /// The module translated with this export as the entry.
    pub translation: &'a toyvm_wasm::Translation,
    pub export: &'a str,
    pub args: &'a [i64],
    /// The interpreter's run.
    pub interpreted: &'a Exact,
}

/// How a toyvm run ended, exactly (a trap with its kind, function and pc),
/// and its memory afterwards, word by word.
#[derive(Debug, PartialEq, Eq)]
pub struct Exact {
    pub ending: Result<i64, String>,
    pub memory: Vec<i64>,
}

impl Exact {
    /// From a run's result and its memory.
    pub fn new(result: Result<i64, &toyvm_vm::Error>, memory: &[i64]) -> Exact {
        let ending = result.map_err(|e| match e {
            toyvm_vm::Error::Trap(t) => {
                format!("trap `{}` in `{}` at {}", t.kind, t.function, t.pc)
            }
            e => format!("error: {e}"),
        });
        Exact {
            ending,
            memory: memory.to_vec(),
        }
    }

    /// The first difference from `o`, in one line.
    pub fn difference(&self, o: &Exact) -> Option<String> {
        if self.ending != o.ending {
            return Some(format!("{:?} / {:?}", self.ending, o.ending));
        }
        if self.memory != o.memory {
            let at = self.memory.iter().zip(&o.memory).position(|(a, b)| a != b);
            return Some(format!(
                "memory differs (first at word {at:?}; {} / {} words)",
                self.memory.len(),
                o.memory.len()
            ));
        }
        None
    }
}

/// The generator's configuration: integers only, one memory with a small
/// maximum, one small table, no imports, every item exported.
pub fn smith_config() -> wasm_smith::Config {
    wasm_smith::Config {
        allow_floats: false,
        // memory.fill, memory.copy, memory.init, data.drop and passive
        // segments; its table operators (table.copy, table.init,
        // elem.drop) are `Reference` instructions, allowed below: without
        // reference types wasm-smith generates no other of that kind.
        bulk_memory_enabled: true,
        exceptions_enabled: false,
        gc_enabled: false,
        compact_imports_enabled: false,
        multi_value_enabled: false,
        reference_types_enabled: false,
        relaxed_simd_enabled: false,
        simd_enabled: false,
        saturating_float_to_int_enabled: false,
        sign_extension_ops_enabled: true,
        tail_call_enabled: false,
        threads_enabled: false,
        memory64_enabled: false,
        wide_arithmetic_enabled: false,
        extended_const_enabled: false,
        custom_page_sizes_enabled: false,
        max_imports: 0,
        max_memories: 1,
        max_memory32_bytes: 4 * 65536,
        memory_max_size_required: true,
        max_tables: 1,
        max_table_elements: 64,
        min_funcs: 2,
        max_funcs: 12,
        max_instructions: 200,
        max_globals: 8,
        max_types: 12,
        max_data_segments: 4,
        max_element_segments: 4,
        max_elements: 16,
        max_nesting_depth: 8,
        export_everything: true,
        allowed_instructions: wasm_smith::InstructionKinds::new(&[
            wasm_smith::InstructionKind::Numeric,
            wasm_smith::InstructionKind::Parametric,
            wasm_smith::InstructionKind::Variable,
            wasm_smith::InstructionKind::Memory,
            wasm_smith::InstructionKind::Control,
            wasm_smith::InstructionKind::Reference,
        ]),
        ..wasm_smith::Config::default()
    }
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The seed of module `k` of a campaign with seed `campaign`.
pub fn module_seed(campaign: u64, k: u64) -> u64 {
    campaign.wrapping_mul(1_000_003).wrapping_add(k)
}

/// The modules of `wasm/tests/corpus` (the WebAssembly text ones
/// assembled), by file name: what campaigns found, minimized.
pub fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wasm/tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wat" || e == "wasm"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = if p.extension().is_some_and(|e| e == "wat") {
                wat::parse_file(&p).unwrap_or_else(|e| panic!("{name}: {e}"))
            } else {
                std::fs::read(&p).unwrap()
            };
            (name, bytes)
        })
        .collect()
}

/// The module for `seed`, if the generator makes one.
pub fn module_for(seed: u64) -> Option<Vec<u8>> {
    let mut rng = Rng(seed);
    let len = 256 + (rng.next() % 4096) as usize;
    let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let mut u = Unstructured::new(&bytes);
    let m = wasm_smith::Module::new(smith_config(), &mut u).ok()?;
    Some(m.to_bytes())
}

fn arg(rng: &mut Rng, k: ValKind) -> i64 {
    let v = match rng.next() % 8 {
        0 => 0,
        1 => 1,
        2 => -1,
        3 => i64::MIN,
        4 => i64::MAX,
        5 => (rng.next() % 200) as i64 - 100,
        _ => rng.next() as i64,
    };
    if k == ValKind::I32 {
        v as i32 as i64
    } else {
        v
    }
}

/// How one engine's run ended, and what it left.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    ending: Result<Option<i64>, WasmTrap>,
    memory: Vec<u8>,
    /// The exported mutable globals' values, by name.
    globals: Vec<(String, i64)>,
    /// False when instantiation trapped.
    instantiated: bool,
}

/// Fuzzes the module of `seed`, adding to `stats`.
pub fn fuzz(seed: u64, stats: &mut Stats) {
    fuzz_with(seed, stats, &mut |_| Vec::new());
}

/// [`fuzz`], and for every export run the interpreter finished (within its
/// fuel), `more` runs it again its own ways and returns the differences it
/// found from the interpreter's run (each a mismatch).
pub fn fuzz_with(seed: u64, stats: &mut Stats, more: &mut dyn FnMut(&Case<'_>) -> Vec<String>) {
    match module_for(seed) {
        Some(wasm) => fuzz_module(seed, &wasm, stats, more),
        None => {
            stats.modules += 1;
            stats.skip("generator gave no module");
        }
    }
}

/// [`fuzz_with`] on a given module (a corpus's), its arguments drawn from
/// `seed`.
pub fn fuzz_module(
    seed: u64,
    wasm: &[u8],
    stats: &mut Stats,
    more: &mut dyn FnMut(&Case<'_>) -> Vec<String>,
) {
    stats.modules += 1;
    stats.bulk += u64::from(has_operator(wasm, |op| {
        matches!(
            op,
            O::MemoryFill { .. } | O::MemoryCopy { .. } | O::MemoryInit { .. } | O::DataDrop { .. }
        )
    }));
    stats.table_ops += u64::from(has_operator(wasm, |op| {
        matches!(
            op,
            O::TableCopy { .. } | O::TableInit { .. } | O::ElemDrop { .. }
        )
    }));
    let base = match translate(
        wasm,
        &Options {
            entry: Entry::InstantiateOnly,
            ..Options::default()
        },
    ) {
        Ok(t) => t,
        Err(Error::FunctionTooLarge { .. }) => {
            stats.skip("module: a function needs more than 256 registers");
            return;
        }
        Err(e) => {
            stats
                .mismatches
                .push(format!("seed {seed}: translation failed: {e}"));
            return;
        }
    };
    let mut rng = Rng(seed ^ 0x5eed);
    for export in &base.exports {
        if export
            .params
            .iter()
            .any(|k| !matches!(k, ValKind::I32 | ValKind::I64))
        {
            stats.skip("export with float parameters");
            continue;
        }
        let args: Vec<i64> = export.params.iter().map(|&k| arg(&mut rng, k)).collect();
        let opts = Options {
            entry: Entry::Export(export.name.clone()),
            ..Options::default()
        };
        let t = match translate(wasm, &opts) {
            Ok(t) => t,
            Err(e) => {
                stats.mismatches.push(format!(
                    "seed {seed}: translating for `{}`: {e}",
                    export.name
                ));
                continue;
            }
        };
        let Some(oracle) = run_wasmi(wasm, &export.name, &export.params, &args) else {
            stats.skip("run: wasmi failed to instantiate");
            continue;
        };
        let (mut ours, exact) = run_toyvm(
            wasm,
            &t,
            &args,
            !export.results.is_empty(),
            oracle.memory.len(),
        );
        if ours.ending != Err(WasmTrap::OutOfFuel) {
            let case = Case {
                seed,
                wasm,
                translation: &t,
                export: &export.name,
                args: &args,
                interpreted: &exact,
            };
            for m in more(&case) {
                stats.mismatches.push(format!(
                    "seed {seed}: export `{}` {args:?}: {m}",
                    export.name
                ));
            }
        }
        if !oracle.instantiated {
            // Nothing of a failed instantiation is observable but its trap.
            ours.memory.clear();
            ours.globals.clear();
        }
        let resource = |e: &Result<Option<i64>, WasmTrap>| {
            matches!(e, Err(WasmTrap::OutOfFuel | WasmTrap::StackOverflow))
        };
        if oracle.ending == Err(WasmTrap::OutOfFuel) {
            stats.skip("run: wasmi out of fuel");
            continue;
        }
        if resource(&oracle.ending) || (resource(&ours.ending) && oracle.ending == ours.ending) {
            stats.skip("run: stack overflow");
            continue;
        }
        stats.compared += 1;
        if oracle.ending != ours.ending
            || oracle.memory != ours.memory
            || oracle.globals != ours.globals
        {
            let what = if oracle.ending != ours.ending {
                format!("wasmi {:?}, toyvm {:?}", oracle.ending, ours.ending)
            } else if oracle.memory != ours.memory {
                let at = oracle
                    .memory
                    .iter()
                    .zip(&ours.memory)
                    .position(|(a, b)| a != b);
                format!(
                    "memory differs (first at {at:?}; lengths {} / {})",
                    oracle.memory.len(),
                    ours.memory.len()
                )
            } else {
                format!(
                    "globals: wasmi {:?}, toyvm {:?}",
                    oracle.globals, ours.globals
                )
            };
            stats.mismatches.push(format!(
                "seed {seed}: export `{}` {:?}: {what}",
                export.name, args
            ));
        }
    }
}

/// Runs `export` of `wasm` with `args` on fresh instances under wasmi and
/// toyvm's interpreter, and compares the result or trap kind, the memory
/// and the mutable globals afterwards: how the run ended, or the
/// difference.
pub fn compare_run(
    wasm: &[u8],
    export: &str,
    args: &[i64],
) -> Result<Result<Option<i64>, WasmTrap>, String> {
    let opts = Options {
        entry: Entry::Export(export.to_owned()),
        ..Options::default()
    };
    let t = translate(wasm, &opts).map_err(|e| format!("translation: {e}"))?;
    let e = t.export(export).ok_or("no such export")?;
    let oracle = run_wasmi(wasm, export, &e.params, args).ok_or("wasmi failed")?;
    let (ours, _) = run_toyvm(wasm, &t, args, !e.results.is_empty(), oracle.memory.len());
    if oracle.ending != ours.ending {
        return Err(format!(
            "wasmi {:?}, toyvm {:?}",
            oracle.ending, ours.ending
        ));
    }
    if oracle.memory != ours.memory {
        let at = oracle
            .memory
            .iter()
            .zip(&ours.memory)
            .position(|(a, b)| a != b);
        return Err(format!(
            "{:?} under both, but memory differs (first at {at:?}; lengths {} / {})",
            oracle.ending,
            oracle.memory.len(),
            ours.memory.len()
        ));
    }
    if oracle.globals != ours.globals {
        return Err(format!(
            "globals: wasmi {:?}, toyvm {:?}",
            oracle.globals, ours.globals
        ));
    }
    Ok(oracle.ending)
}

fn run_wasmi(wasm: &[u8], name: &str, params: &[ValKind], args: &[i64]) -> Option<Outcome> {
    let mut config = wasmi::Config::default();
    config.consume_fuel(true);
    config.set_max_recursion_depth(MAX_DEPTH);
    let engine = Engine::new(&config);
    let module = Module::new(&engine, wasm).ok()?;
    let mut store = Store::new(&engine, ());
    store.set_fuel(WASMI_FUEL).ok()?;
    let linker = Linker::<()>::new(&engine);
    let instance = match linker.instantiate_and_start(&mut store, &module) {
        Ok(i) => i,
        Err(e) => {
            return Some(Outcome {
                ending: Err(WasmTrap::from_wasmi(&e)),
                memory: Vec::new(),
                globals: Vec::new(),
                instantiated: false,
            });
        }
    };
    let func = instance.get_func(&store, name)?;
    let inputs: Vec<Val> = params
        .iter()
        .zip(args)
        .map(|(k, &a)| {
            if *k == ValKind::I32 {
                Val::I32(a as i32)
            } else {
                Val::I64(a)
            }
        })
        .collect();
    let mut outputs: Vec<Val> = func
        .ty(&store)
        .results()
        .iter()
        .map(|t| Val::default_for_ty(*t))
        .collect();
    let ending = match func.call(&mut store, &inputs, &mut outputs) {
        Ok(()) => Ok(outputs.first().map(|v| match v {
            Val::I32(x) => *x as i64,
            Val::I64(x) => *x,
            _ => 0,
        })),
        Err(e) => Err(WasmTrap::from_wasmi(&e)),
    };
    let mut memory = Vec::new();
    for e in instance.exports(&store) {
        if let Extern::Memory(m) = e.into_extern() {
            memory = m.data(&store).to_vec();
            break;
        }
    }
    let mut globals = Vec::new();
    for (name, _) in global_exports(wasm) {
        let Some(g) = instance.get_global(&store, &name) else {
            continue;
        };
        if !g.ty(&store).mutability().is_mut() {
            continue;
        }
        let v = match g.get(&store) {
            Val::I32(x) => x as i64,
            Val::I64(x) => x,
            _ => continue,
        };
        globals.push((name, v));
    }
    Some(Outcome {
        ending,
        memory,
        globals,
        instantiated: true,
    })
}

fn run_toyvm(
    wasm: &[u8],
    t: &toyvm_wasm::Translation,
    args: &[i64],
    has_result: bool,
    wasm_len: usize,
) -> (Outcome, Exact) {
    let mut mem = interp::memory(&t.program, &[]).expect("memory");
    let call = Call {
        func: t.program.entry,
        args,
        input_len: 0,
    };
    let cfg = RunConfig {
        fuel: Some(WASMI_FUEL * TOYVM_FUEL_FACTOR),
        max_depth: MAX_DEPTH,
        ..RunConfig::default()
    };
    let result = interp::call_with_host(
        &t.program,
        &mut mem,
        call,
        &mut std::io::sink(),
        &mut NoJit(&mut NoSink),
        &mut toyvm_vm::interp::NoHostFunctions,
        &cfg,
    )
    .0;
    let exact = Exact::new(result.as_ref().map(|o| o.value), &mem);
    let ending = match result {
        Ok(o) => Ok(has_result.then_some(o.value)),
        Err(toyvm_vm::Error::Trap(trap)) => Err(WasmTrap::from_toyvm(&trap.kind)),
        Err(e) => Err(WasmTrap::Other(e.to_string())),
    };
    let byte = |at: u64| (mem[(at / 8) as usize] >> (8 * (at % 8))) as u8;
    let base = t.layout.base;
    let memory: Vec<u8> = (0..wasm_len as u64).map(|i| byte(base + i)).collect();
    let globals = global_exports(wasm)
        .into_iter()
        .filter_map(|(name, index)| {
            let addr = t.layout.global_addr(index)?;
            Some((name, mem[(addr / 8) as usize]))
        })
        .collect();
    (
        Outcome {
            ending,
            memory,
            globals,
            instantiated: true,
        },
        exact,
    )
}

/// Whether a function of the module has an operator `is` picks.
fn has_operator(wasm: &[u8], is: impl Fn(&O<'_>) -> bool) -> bool {
    wasmparser::Parser::new(0)
        .parse_all(wasm)
        .flatten()
        .any(|payload| {
            let wasmparser::Payload::CodeSectionEntry(body) = payload else {
                return false;
            };
            let Ok(ops) = body.get_operators_reader() else {
                return false;
            };
            ops.into_iter().flatten().any(|op| is(&op))
        })
}

/// The module's exported globals: (name, global index).
fn global_exports(wasm: &[u8]) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm).flatten() {
        if let wasmparser::Payload::ExportSection(s) = payload {
            for e in s.into_iter().flatten() {
                if e.kind == wasmparser::ExternalKind::Global {
                    out.push((e.name.to_owned(), e.index));
                }
            }
        }
    }
    out
}

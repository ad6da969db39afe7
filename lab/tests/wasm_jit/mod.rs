//! The WebAssembly differential campaign's JIT side: each export run that
//! toyvm's interpreter finished (wasm/tests/common/fuzz.rs ran it under
//! wasmi and the interpreter) runs again as a sequence of calls of the
//! program's entry on one [`Instance`] ([`REPEATS`]: later calls run what
//! earlier ones compiled), interpreted and under the JIT with every
//! profiler model; each call must end exactly as the interpreter's did
//! (value, or trap kind, function and pc) with the same memory afterwards,
//! word by word, and the first call as the plain interpreter run did. One
//! model per module runs the entry once more through [`Runtime::run`] (the
//! path `toyvm run` takes) under the interpreter's fuel limit, so compiled
//! code meters fuel; that run must end the same.
//!
//! Included by `lab/examples/wasm_campaign.rs` and `lab/tests/wasm_campaign.rs`
//! beside `wasm/tests/common` (the generator, wasmi and the interpreter).

#![allow(dead_code)] // each includer uses a part

use std::time::Duration;

use toyvm::Runtime;
use toyvm::engine::{Engine, Instance, Module};
use toyvm::runtime::{JitOptions, JitStats, Limits};
use toyvm_vm::interp::Input;

use crate::common::fuzz::{Case, Exact, MAX_DEPTH, TOYVM_FUEL_FACTOR, WASMI_FUEL};

/// One way to run under the JIT.
#[derive(Clone, Debug)]
pub struct JitConfig {
    /// The profiler spec.
    pub spec: &'static str,
    pub jit: JitOptions,
}

/// Every model, at intervals short enough for the generated modules' short
/// runs (most are tens to hundreds of instructions) to end several, a
/// sampler that samples them (stratified's default samples every 256th
/// tuple), and regions of any length compiled, so that runs enter compiled
/// code (the campaign counts how many do, by model).
pub fn configs() -> Vec<JitConfig> {
    let jit = JitOptions {
        min_straight_instrs: 2,
        min_entries: 2,
        ..JitOptions::default()
    };
    [
        "perfect:interval=10",
        "multihash:interval=20",
        "singlehash:interval=20",
        "stratified:interval=20,sampler=H[P_4]_2048",
        "tagged:interval=10",
        "rap:interval=10",
        "conte:interval=10,period=10",
    ]
    .into_iter()
    .map(|spec| JitConfig {
        spec,
        jit: jit.clone(),
    })
    .collect()
}

/// What the JIT runs did, summed.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// By profiler spec: runs, and runs that entered compiled code.
    pub by_model: std::collections::BTreeMap<&'static str, (u64, u64)>,
    /// Runs under the JIT compared with the interpreter's.
    pub runs: u64,
    /// Of those, runs that entered compiled code at least once.
    pub compiled_runs: u64,
    /// Regions and functions compiled, over the runs.
    pub compiles: u64,
    /// Entries into compiled code, over the runs.
    pub region_entries: u64,
    /// Runs through `Runtime::run` under the fuel limit.
    pub fuel_runs: u64,
}

impl Totals {
    pub fn add(&mut self, o: &Totals) {
        for (spec, (r, c)) in &o.by_model {
            let e = self.by_model.entry(spec).or_default();
            e.0 += r;
            e.1 += c;
        }
        self.runs += o.runs;
        self.compiled_runs += o.compiled_runs;
        self.compiles += o.compiles;
        self.region_entries += o.region_entries;
        self.fuel_runs += o.fuel_runs;
    }

    fn count(&mut self, spec: &'static str, stats: Option<&JitStats>) {
        self.runs += 1;
        let entered = stats.is_some_and(|j| j.region_entries > 0);
        if let Some(j) = stats {
            self.compiles += j.compiles;
            self.region_entries += j.region_entries;
        }
        self.compiled_runs += u64::from(entered);
        let e = self.by_model.entry(spec).or_default();
        e.0 += 1;
        e.1 += u64::from(entered);
    }
}

/// How long a run under the JIT may take: the interpreter ended it within
/// its fuel (well under a second), so compiled code still running after
/// this is looping where the interpreter did not.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `f` on a thread of its own; `None` when it has not ended by
/// [`DEADLINE`] (the thread is left behind) or it panicked.
fn before_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("wasm-jit-run".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    rx.recv_timeout(DEADLINE).ok()
}

/// Calls the program's entry again this many times on the same instance
/// after its first run: the profile and the compiled code carry over from
/// call to call, so code compiled in one call runs in the next. (The entry
/// runs the instantiation function again each time, which checks the
/// segments and runs the start function (the memory image is the
/// program's, placed once), then calls the export: a call, where the
/// interpreter enters compiled code; a function the host calls directly
/// starts interpreted.) Memory and globals carry over from call to call,
/// alike under every engine.
pub const REPEATS: usize = 8;

/// The calls of one sequence: the program's entry, `1 + REPEATS` times.
fn calls(case: &Case<'_>) -> Vec<u32> {
    vec![case.translation.program.entry; 1 + REPEATS]
}

/// Runs `calls` on one instance of `program` (under `config`, or the
/// interpreter alone), each with `args`: how each call ended and the
/// memory after it. With `fuel`, each call gets that much, and the
/// sequence stops after the first call that runs out (it is not kept).
fn run_calls(
    program: toyvm_vm::Program,
    calls: Vec<u32>,
    args: Vec<i64>,
    config: Option<JitConfig>,
    fuel: Option<u64>,
) -> Result<(Vec<Exact>, Option<JitStats>), String> {
    let (spec, jit) = match config {
        Some(c) => (c.spec, Some(c.jit)),
        None => ("none", None),
    };
    let engine = Engine::builder()
        .profile_str(spec)
        .map_err(|e| e.to_string())?
        .jit(jit)
        .limits(Limits {
            fuel,
            max_depth: MAX_DEPTH,
            max_memory_words: None,
        })
        .build();
    let module = Module::new(&engine, program).map_err(|e| e.to_string())?;
    let mut instance = Instance::new(&module).map_err(|e| e.to_string())?;
    instance.set_output(std::io::sink());
    let mut out = Vec::new();
    for f in calls {
        if let Some(fuel) = fuel {
            instance.set_fuel(fuel).map_err(|e| e.to_string())?;
        }
        let result = instance.call_index(f, &args);
        let result = match &result {
            Ok(v) => Ok(*v),
            Err(toyvm::Error::Vm(toyvm_vm::Error::Trap(t)))
                if matches!(t.kind, toyvm_vm::interp::TrapKind::OutOfFuel { .. }) =>
            {
                break;
            }
            Err(toyvm::Error::Vm(e)) => Err(e),
            Err(e) => return Err(format!("the run failed: {e}")),
        };
        out.push(Exact::new(result, instance.memory()));
    }
    Ok((out, instance.stats().jit))
}

/// The export run by `Runtime::run` under `config` and `fuel`: how it
/// ended (the memory is not the runtime's to show).
fn run_runtime(
    program: toyvm_vm::Program,
    args: Vec<i64>,
    config: JitConfig,
    fuel: u64,
) -> Result<Result<i64, String>, String> {
    let rt = Runtime::builder(program)
        .profile_str(config.spec)
        .map_err(|e| e.to_string())?
        .jit(Some(config.jit))
        .fuel(Some(fuel))
        .max_depth(MAX_DEPTH)
        .build();
    let mut out = std::io::sink();
    let r = rt.run(
        Input {
            args: &args,
            file: &[],
        },
        &mut out,
    );
    Ok(match &r {
        Ok(report) => Exact::new(Ok(report.outcome.value), &[]).ending,
        Err(toyvm::Error::Vm(e)) => Exact::new(Err(e), &[]).ending,
        Err(e) => return Err(format!("the run failed: {e}")),
    })
}

/// Runs `case` under every configuration (and one through the runtime
/// under fuel); returns the differences from the interpreter's run.
pub fn check(case: &Case<'_>, configs: &[JitConfig], totals: &mut Totals) -> Vec<String> {
    let mut found = Vec::new();
    let program = &case.translation.program;
    let fuel = WASMI_FUEL * TOYVM_FUEL_FACTOR;
    // The interpreter's sequence, each call within the fuel.
    let (p, c, a) = (program.clone(), calls(case), case.args.to_vec());
    let want = match run_calls(p, c, a, None, Some(fuel)) {
        Ok((want, _)) => want,
        Err(e) => return vec![format!("the interpreter's instance: {e}")],
    };
    match want.first() {
        Some(first) => {
            if let Some(d) = case.interpreted.difference(first) {
                found.push(format!("interpreter / interpreter's instance: {d}"));
            }
        }
        None => return found,
    }
    let n = want.len();
    for c in configs {
        let (p, calls, a, cc) = (
            program.clone(),
            calls(case)[..n].to_vec(),
            case.args.to_vec(),
            c.clone(),
        );
        match before_deadline(move || run_calls(p, calls, a, Some(cc), None)) {
            None => found.push(format!(
                "--profile {}: the calls did not end within {} s (or panicked)",
                c.spec,
                DEADLINE.as_secs()
            )),
            Some(Err(e)) => found.push(format!("--profile {}: {e}", c.spec)),
            Some(Ok((got, stats))) => {
                totals.count(c.spec, stats.as_ref());
                let first = want
                    .iter()
                    .zip(&got)
                    .enumerate()
                    .find_map(|(i, (w, g))| w.difference(g).map(|d| format!("call {i}: {d}")));
                if let Some(d) = first {
                    found.push(format!("--profile {}: interpreter / JIT: {d}", c.spec));
                } else if got.len() != n {
                    found.push(format!("--profile {}: {} calls of {n}", c.spec, got.len()));
                }
            }
        }
    }
    if let Some(c) = configs.get(case.seed as usize % configs.len().max(1)) {
        let (p, a, cc) = (program.clone(), case.args.to_vec(), c.clone());
        match before_deadline(move || run_runtime(p, a, cc, fuel)) {
            None => found.push(format!(
                "Runtime::run --profile {} --fuel {fuel}: did not end (or panicked)",
                c.spec
            )),
            Some(Err(e)) => found.push(format!("Runtime::run --profile {}: {e}", c.spec)),
            Some(Ok(ending)) => {
                totals.fuel_runs += 1;
                if ending != case.interpreted.ending {
                    found.push(format!(
                        "Runtime::run --profile {} --fuel {fuel}: interpreter {:?}, JIT {:?}",
                        c.spec, case.interpreted.ending, ending
                    ));
                }
            }
        }
    }
    found
}

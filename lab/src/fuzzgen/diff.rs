//! The runner: a program interpreted and under each JIT configuration, and
//! the first difference.

use std::fmt;

use super::FuzzProgram;
use toyvm::Runtime;
use toyvm::runtime::{JitOptions, JitStats};
use toyvm_vm::interp::{Input, Trap};

/// The interpreter's step budget for one program: a backstop, never
/// reached by [`generate`](super::generate)'s programs in practice (checked by the tests).
pub const ORACLE_FUEL: u64 = 20_000_000;

/// One way to run a program under the JIT: a profiler spec and options.
#[derive(Clone, Debug)]
pub struct DiffConfig {
    /// The profiler spec, e.g. `multihash:interval=300`.
    pub spec: String,
    /// JIT options as the `toyvm run` flags that give them (for messages).
    pub flags: &'static str,
    /// The JIT options the run uses.
    pub jit: JitOptions,
}

impl fmt::Display for DiffConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--profile {}", self.spec)?;
        if !self.flags.is_empty() {
            write!(f, " {}", self.flags)?;
        }
        Ok(())
    }
}

/// Every model at short intervals (100 to 3,000 tuples, so the programs'
/// few thousand iterations see several interval ends), plus runs without
/// call or value specialization and one that compiles short regions.
pub fn configs() -> Vec<DiffConfig> {
    let plain = |spec: &str| DiffConfig {
        spec: spec.to_owned(),
        flags: "",
        jit: JitOptions::default(),
    };
    let mut v: Vec<DiffConfig> = [
        "perfect:interval=100",
        "perfect:interval=1000",
        "perfect:interval=3000",
        "multihash:interval=300",
        "multihash:interval=2000",
        "singlehash:interval=500",
        "stratified:interval=1000",
        "tagged:interval=1500",
        "rap:interval=700",
        "conte:interval=400",
    ]
    .into_iter()
    .map(plain)
    .collect();
    let mut no_call = plain("perfect:interval=500");
    no_call.flags = "--no-call-spec";
    no_call.jit.plan.specialize.call_share = 2.0;
    no_call.jit.plan.max_dispatch = 0;
    let mut no_value = plain("perfect:interval=500");
    no_value.flags = "--no-value-spec";
    no_value.jit.plan.specialize.value_share = 2.0;
    let mut short = plain("multihash:interval=250");
    short.flags = "(JitOptions::min_straight_instrs = 2)";
    short.jit.min_straight_instrs = 2;
    // Compiled code installed later than planned, and as soon as the
    // compiler thread has it (whenever that is: not repeatable, but the
    // output must still be the interpreter's).
    let mut late = plain("rap:interval=300");
    late.flags = "--install-lag 2000";
    late.jit.install_lag = 2000;
    let mut eager = plain("multihash:interval=600");
    eager.flags = "--async";
    eager.jit.async_install = true;
    v.extend([no_call, no_value, short, late, eager]);
    v
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// `main` returned this value.
    Value(i64),
    /// The program trapped.
    Trap {
        /// What trapped, as the trap kind prints (`division by zero`, `out
        /// of fuel ...`).
        message: String,
        /// The name of the function that trapped.
        function: String,
        /// The packed pc of the trapping instruction (function index high,
        /// offset low; see [`toyvm_vm::Pc`]).
        pc: u64,
    },
    /// Any other error (not expected from a valid program).
    Error(String),
    /// The run panicked (only seen where panics unwind).
    Panic(String),
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Value(v) => write!(f, "returned {v}"),
            End::Trap {
                message,
                function,
                pc,
            } => write!(
                f,
                "trap in `{function}` at instruction {} (pc {}): {message}",
                *pc as u32,
                toyvm_vm::Pc(*pc)
            ),
            End::Error(e) => write!(f, "error: {e}"),
            End::Panic(e) => write!(f, "panic: {e}"),
        }
    }
}

/// What one run printed and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Everything the run printed, up to its end (a trap included).
    pub output: Vec<u8>,
    /// How it ended.
    pub end: End,
    /// A digest of every host call, in order (0 for a program without
    /// imports; see [`super::host_imports`]).
    pub host: u64,
}

/// What the JIT did, summed over runs: the evidence that a campaign ran
/// compiled code and took its exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitTotals {
    /// Regions and whole functions compiled and installed.
    pub compiles: u64,
    /// Of those, compiles of a head compiled before.
    pub recompiles: u64,
    /// Installed regions dropped.
    pub drops: u64,
    /// Times the interpreter entered compiled code.
    pub region_entries: u64,
    /// Exits off a region's trace (a branch direction not compiled).
    pub side_exits: u64,
    /// Exits through a failing specialization guard.
    pub guard_failures: u64,
    /// Exits that hand one instruction (a call, `ret`, output, a trap) to
    /// the interpreter.
    pub interpret_exits: u64,
    /// Products strength-reduced in the regions compiled.
    pub reduced_products: u64,
    /// Calls compiled code made into the interpreter.
    pub interpreter_calls: u64,
    /// Runs cut short by a fuel limit inside the run (see [`check`]).
    pub fuel_cut: u64,
}

impl JitTotals {
    fn add_stats(&mut self, j: &JitStats) {
        self.compiles += j.compiles;
        self.recompiles += j.recompiles;
        self.drops += j.drops;
        self.region_entries += j.region_entries;
        self.side_exits += j.side_exits;
        self.guard_failures += j.guard_failures;
        self.interpret_exits += j.interpret_exits;
        self.reduced_products += j.reduced_products;
        self.interpreter_calls += j.interpreter_calls;
    }

    /// Adds another total to this one.
    pub fn add(&mut self, o: &JitTotals) {
        self.compiles += o.compiles;
        self.recompiles += o.recompiles;
        self.drops += o.drops;
        self.region_entries += o.region_entries;
        self.side_exits += o.side_exits;
        self.guard_failures += o.guard_failures;
        self.interpret_exits += o.interpret_exits;
        self.reduced_products += o.reduced_products;
        self.interpreter_calls += o.interpreter_calls;
        self.fuel_cut += o.fuel_cut;
    }
}

/// A program that agreed under every configuration.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// JIT runs compared with the interpreter's.
    pub runs: u64,
    /// How the interpreter's run ended.
    pub oracle: Option<End>,
    /// The interpreter ran out of [`ORACLE_FUEL`]; nothing was compared.
    pub out_of_fuel: bool,
    /// What the JIT did over the compared runs (the fuel-limited rerun
    /// not counted).
    pub jit: JitTotals,
}

/// A configuration whose run differs from the interpreter's.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The program that showed the difference, with its arguments.
    pub program: FuzzProgram,
    /// The configuration (empty when the program itself is invalid).
    pub config: String,
    /// The interpreter's run (absent when the program itself is invalid).
    pub want: Option<Observed>,
    /// The run under `config` (absent when the program itself is invalid).
    pub got: Option<Observed>,
    /// Why, in one line.
    pub what: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "MISMATCH under {}: {}", self.config, self.what)?;
        if let (Some(w), Some(g)) = (&self.want, &self.got) {
            writeln!(
                f,
                "  interpreter: {} ({} output bytes)",
                w.end,
                w.output.len()
            )?;
            writeln!(
                f,
                "  jit:         {} ({} output bytes)",
                g.end,
                g.output.len()
            )?;
            if w.output != g.output {
                let at = w
                    .output
                    .iter()
                    .zip(&g.output)
                    .position(|(a, b)| a != b)
                    .unwrap_or(w.output.len().min(g.output.len()));
                let window = |o: &[u8]| {
                    String::from_utf8_lossy(&o[at.saturating_sub(20)..(at + 40).min(o.len())])
                        .into_owned()
                };
                writeln!(f, "  output differs at byte {at}:")?;
                writeln!(f, "    interpreter: {:?}", window(&w.output))?;
                writeln!(f, "    jit:         {:?}", window(&g.output))?;
            }
            if w.host != g.host {
                writeln!(
                    f,
                    "  host calls' digest: interpreter {:#x}, jit {:#x}",
                    w.host, g.host
                )?;
            }
        }
        writeln!(f, "program (args {:?}):", self.program.args)?;
        f.write_str(&self.program.text)
    }
}

/// Runs `program` once under `fuel`: interpreted when `config` is `None`,
/// else under the JIT with that configuration (compiled code then counts
/// fuel too).
pub fn run(
    program: &toyvm_vm::Program,
    args: &[i64],
    config: Option<&DiffConfig>,
    fuel: Option<u64>,
) -> (Observed, Option<JitStats>) {
    if !program.imports.is_empty() {
        return run_hosted(program, args, config, fuel);
    }
    let mut output = Vec::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let builder = match config {
            None => Runtime::builder(program.clone())
                .profile_str(toyvm_profiler::spec::NONE)
                .map(|b| b.jit(None).fuel(fuel)),
            Some(c) => Runtime::builder(program.clone())
                .profile_str(&c.spec)
                .map(|b| b.jit(Some(c.jit.clone())).fuel(fuel)),
        };
        builder
            .and_then(|b| b.build().run(Input { args, file: &[] }, &mut output))
            .map(|report| (report.outcome.value, report.stats.jit))
    }));
    let (end, stats) = ended(result);
    (
        Observed {
            output,
            end,
            host: 0,
        },
        stats,
    )
}

/// How long one run under the JIT may take before [`check`] reports it as a
/// mismatch: the interpreter ended the same program within [`ORACLE_FUEL`]
/// instructions (well under a second), so compiled code still running after
/// this long is wrong, most likely looping where the interpreter did not.
pub const RUN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// [`run`] under the JIT on a thread of its own, or `None` when it has not
/// ended by [`RUN_DEADLINE`] (or its thread ended without an answer): a test or campaign then reports the program
/// instead of hanging on it. The late run's thread is left running (no
/// thread can be stopped from outside); the process ends it when it exits.
fn run_before_deadline(
    program: &toyvm_vm::Program,
    args: &[i64],
    config: &DiffConfig,
    fuel: Option<u64>,
) -> Option<(Observed, Option<JitStats>)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, a, c) = (program.clone(), args.to_vec(), config.clone());
    let spawned = std::thread::Builder::new()
        .name("toyvm-fuzz-run".into())
        .spawn(move || {
            let _ = tx.send(run(&p, &a, Some(&c), fuel));
        });
    match spawned {
        Ok(_) => rx.recv_timeout(RUN_DEADLINE).ok(),
        // No thread to be had: run here, without a deadline.
        Err(_) => Some(run(program, args, Some(config), fuel)),
    }
}

/// [`run`] for a program with imports: an [`toyvm::engine::Instance`]
/// with the fuzz host ([`super::host_imports`]) calls the entry function.
fn run_hosted(
    program: &toyvm_vm::Program,
    args: &[i64],
    config: Option<&DiffConfig>,
    fuel: Option<u64>,
) -> (Observed, Option<JitStats>) {
    use toyvm::engine::{Engine, Instance, Module};
    let log = std::sync::Arc::new(std::sync::Mutex::new(0u64));
    let output = SharedOutput::default();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (spec, jit) = match config {
            None => (toyvm_profiler::spec::NONE, None),
            Some(c) => (c.spec.as_str(), Some(c.jit.clone())),
        };
        let limits = toyvm::runtime::Limits {
            fuel,
            ..Default::default()
        };
        let engine = Engine::builder()
            .profile_str(spec)?
            .jit(jit)
            .limits(limits)
            .build();
        let module = Module::new(&engine, program.clone())?;
        let imports = super::host_imports(std::sync::Arc::clone(&log));
        let mut instance = Instance::with_imports(&module, imports, &[])?;
        instance.set_output(output.clone());
        let value = instance.call_index(program.entry, args)?;
        Ok((value, instance.stats().jit))
    }));
    let (end, stats) = ended(result);
    let host = *log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let output = std::mem::take(
        &mut *output
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    (Observed { output, end, host }, stats)
}

/// An instance's output, kept for the comparison.
#[derive(Clone, Default)]
struct SharedOutput(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How a run ended, and the JIT's statistics when it returned.
fn ended(
    result: std::thread::Result<toyvm::Result<(i64, Option<JitStats>)>>,
) -> (End, Option<JitStats>) {
    match result {
        Ok(Ok((value, stats))) => (End::Value(value), stats),
        Ok(Err(toyvm::Error::Vm(toyvm_vm::Error::Trap(Trap { kind, pc, function })))) => (
            End::Trap {
                message: kind.to_string(),
                function,
                pc: pc.0,
            },
            None,
        ),
        Ok(Err(e)) => (End::Error(e.to_string()), None),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            (End::Panic(msg), None)
        }
    }
}

/// Runs `case` interpreted, then under every configuration, and returns
/// the first run that differs from the interpreter's.
pub fn check(case: &FuzzProgram, configs: &[DiffConfig]) -> Result<Summary, Box<Mismatch>> {
    let invalid = |what: String| {
        Box::new(Mismatch {
            program: case.clone(),
            config: String::new(),
            want: None,
            got: None,
            what,
        })
    };
    let program = toyvm_vm::asm::assemble(&case.text)
        .map_err(|e| invalid(format!("invalid program: {e}")))?;
    let (want, _) = run(&program, &case.args, None, Some(ORACLE_FUEL));
    let mut summary = Summary::default();
    match &want.end {
        End::Trap { message, .. } if message.starts_with("out of fuel") => {
            summary.out_of_fuel = true;
            return Ok(summary);
        }
        End::Error(e) | End::Panic(e) => {
            return Err(invalid(format!("the interpreter failed: {e}")));
        }
        _ => {}
    }
    let late = |config: String| {
        Box::new(Mismatch {
            program: case.clone(),
            config,
            want: Some(want.clone()),
            got: None,
            what: format!(
                "the run did not end within {} s (the interpreter's ended within {ORACLE_FUEL} instructions)",
                RUN_DEADLINE.as_secs()
            ),
        })
    };
    for c in configs {
        let Some((got, stats)) = run_before_deadline(&program, &case.args, c, None) else {
            return Err(late(c.to_string()));
        };
        summary.runs += 1;
        if let Some(j) = &stats {
            summary.jit.add_stats(j);
        }
        if got != want {
            let what = if got.end != want.end {
                "the runs end differently"
            } else if got.output != want.output {
                "the outputs differ"
            } else {
                "the host received different calls"
            };
            return Err(Box::new(Mismatch {
                program: case.clone(),
                config: c.to_string(),
                want: Some(want),
                got: Some(got),
                what: what.to_owned(),
            }));
        }
    }
    // One configuration per program again under the oracle's fuel limit:
    // compiled code then counts its instructions, and the run, which the
    // interpreter finished within the limit, must end the same.
    if let Some(c) = configs.get(case.text.len() % configs.len().max(1)) {
        let Some((got, _)) = run_before_deadline(&program, &case.args, c, Some(ORACLE_FUEL)) else {
            return Err(late(format!("{c} with fuel {ORACLE_FUEL}")));
        };
        summary.runs += 1;
        if got != want {
            return Err(Box::new(Mismatch {
                program: case.clone(),
                config: format!("{c} with fuel {ORACLE_FUEL}"),
                want: Some(want),
                got: Some(got),
                what: "the runs differ under a fuel limit".to_owned(),
            }));
        }
    }
    // And once with a limit that cuts the run short, where it may fall in
    // compiled code, in an interpreted function compiled code called, or in
    // compiled code that interpreted code called: both runs run out of
    // fuel, and the JIT's, which may stop up to one basic block of compiled
    // code later, has printed at least what the interpreter's printed and
    // no more than the whole run prints.
    if let (Some(c), Some(steps)) = (configs.get(case.args.len() % configs.len().max(1)), {
        let (_, steps) = oracle_steps(&program, &case.args);
        steps.filter(|&s| s >= 1000 && matches!(want.end, End::Value(_)))
    }) {
        let limit = steps / 2 + case.text.len() as u64 % (steps / 4);
        let (cut, _) = run(&program, &case.args, None, Some(limit));
        let Some((got, _)) = run_before_deadline(&program, &case.args, c, Some(limit)) else {
            return Err(late(format!("{c} with fuel {limit}")));
        };
        summary.runs += 1;
        summary.jit.fuel_cut += 1;
        let out_of_fuel = |o: &Observed| matches!(&o.end, End::Trap { message, .. } if message.starts_with("out of fuel"));
        let ok = out_of_fuel(&cut)
            && out_of_fuel(&got)
            && got.output.starts_with(&cut.output)
            && want.output.starts_with(&got.output);
        if !ok {
            return Err(Box::new(Mismatch {
                program: case.clone(),
                config: format!("{c} with fuel {limit}"),
                want: Some(cut),
                got: Some(got),
                what: "the runs differ when fuel runs out part-way".to_owned(),
            }));
        }
    }
    summary.oracle = Some(want.end);
    Ok(summary)
}

/// The interpreter's instruction count for a run of `program` (within
/// [`ORACLE_FUEL`]), when it ends without a trap.
fn oracle_steps(program: &toyvm_vm::Program, args: &[i64]) -> (Option<i64>, Option<u64>) {
    if !program.imports.is_empty() {
        // Host calls have effects outside the run (the digest): keep the
        // cut to programs without imports.
        return (None, None);
    }
    let rt = Runtime::builder(program.clone())
        .profile_str(toyvm_profiler::spec::NONE)
        .map(|b| b.jit(None).fuel(Some(ORACLE_FUEL)).count_instructions(true));
    match rt.and_then(|b| {
        b.build()
            .run(Input { args, file: &[] }, &mut std::io::sink())
    }) {
        Ok(r) => (Some(r.outcome.value), Some(r.stats.instructions)),
        Err(_) => (None, None),
    }
}

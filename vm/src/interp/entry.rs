//! The interpreter's entry points: how to run a program ([`Config`],
//! [`Input`]), what a run gives back ([`Outcome`]), and the ways in (a
//! whole run, with or without a sink or a host; one call of a function,
//! for embedders), all over the one dispatch loop in the parent module.

use std::io::Write;

use super::*;

/// How to run a program.
#[derive(Clone, Debug)]
pub struct Config {
    /// Stop with a trap after this many executed instructions.
    pub fuel: Option<u64>,
    /// Count executed instructions and emitted tuples (for statistics),
    /// even without a fuel limit.
    pub count_steps: bool,
    /// Deepest call nesting before a stack-overflow trap.
    pub max_depth: usize,
    /// Which tuple kinds to emit into the sink.
    pub kinds: KindSet,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fuel: None,
            count_steps: false,
            max_depth: 1 << 16,
            kinds: KindSet::ALL,
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The entry function's return value, or `halt`'s operand.
    pub value: i64,
    /// Instructions executed, when counted.
    pub steps: Option<u64>,
    /// Tuples emitted per kind (value, edge, call), counted when
    /// [`Config::count_steps`] is on (zero otherwise).
    pub tuples: [u64; 3],
}

impl Outcome {
    /// The process exit status this run maps to: the low byte of `value`.
    pub fn exit_status(&self) -> u8 {
        self.value as u8
    }
}

/// A program's input: its arguments (the entry function's parameters) and
/// the optional input file's bytes.
#[derive(Clone, Debug, Default)]
pub struct Input<'a> {
    /// The entry function's arguments, one per parameter (a different
    /// count is a usage error).
    pub args: &'a [i64],
    /// The input file's bytes, loaded one byte per word at
    /// [`Program::input_base`] before the run (see `inlen`).
    pub file: &'a [u8],
}

/// Runs a program to completion without profiling.
pub fn run(p: &Program, input: Input<'_>, out: &mut dyn Write, cfg: &Config) -> Result<Outcome> {
    run_with_sink(p, input, out, &mut NoSink, cfg)
}

/// Runs a program to completion, streaming tuples into `sink`.
pub fn run_with_sink<S: TupleSink + ?Sized>(
    p: &Program,
    input: Input<'_>,
    out: &mut dyn Write,
    sink: &mut S,
    cfg: &Config,
) -> Result<Outcome> {
    run_with_host(p, input, out, &mut NoJit(sink), cfg)
}

/// Runs a program to completion, streaming tuples into `host` and running
/// the compiled code it supplies (see [`Host`]).
pub fn run_with_host<S: Host>(
    p: &Program,
    input: Input<'_>,
    out: &mut dyn Write,
    sink: &mut S,
    cfg: &Config,
) -> Result<Outcome> {
    run_hosted(p, input, out, sink, &mut NoHostFunctions, cfg)
}

/// [`run_with_host`] for a program with imports: its `hcall`s call
/// `host_fns` (which must offer every import; see [`HostFunctions`]).
pub fn run_hosted<S: Host>(
    p: &Program,
    input: Input<'_>,
    out: &mut dyn Write,
    sink: &mut S,
    host_fns: &mut dyn HostFunctions,
    cfg: &Config,
) -> Result<Outcome> {
    let entry = p.entry_function();
    check_arity(entry, input.args.len())?;
    let mut mem = memory(p, input.file)?;
    let call = Call {
        func: p.entry,
        args: input.args,
        input_len: input.file.len(),
    };
    call_with_host(p, &mut mem, call, out, sink, host_fns, cfg).0
}

/// The functions a host provides to a program's `hcall`s, by import index
/// (see [`Program::imports`]).
pub trait HostFunctions {
    /// Calls import `index` with `args` (as many as it is imported with)
    /// and the program's memory, the whole words within its current length
    /// (the word view; its bytes are the byte view, `bytemuck::cast_slice`,
    /// little-endian), so a host function can neither read nor write past
    /// the length; returns its result, or the failure that becomes the
    /// program's trap ([`TrapKind::Host`], which keeps the [`HostError`]).
    fn call(
        &mut self,
        index: u16,
        args: &[i64],
        mem: &mut [i64],
    ) -> std::result::Result<i64, HostError>;
}

impl From<String> for HostError {
    fn from(message: String) -> Self {
        HostError::msg(message)
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> Self {
        HostError::msg(message)
    }
}

/// No host functions: every `hcall` traps. Runs without a host (`toyvm
/// run`) refuse programs with imports before they start.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHostFunctions;

impl HostFunctions for NoHostFunctions {
    fn call(&mut self, _: u16, _: &[i64], _: &mut [i64]) -> std::result::Result<i64, HostError> {
        Err(HostError::msg("no host provides it"))
    }
}

/// One call into a program: a function, its arguments, and the length of
/// the input file in memory (what `inlen` reads).
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The function's index in [`Program::functions`].
    pub func: u32,
    /// Its arguments, one per parameter.
    pub args: &'a [i64],
    /// What `inlen` returns: the input file's length in bytes.
    pub input_len: usize,
}

/// A program's memory as a run starts with it: [`Program::memory_words`]
/// zeroed words, of which the first [`Program::memory_len`] bytes are the
/// current length, with the data segments in place and `file`'s bytes, one
/// per word, at [`Program::input_base`].
///
/// Errors (nothing is allocated) when the file does not fit, or when the
/// host cannot give the memory `.memory` asks for.
pub fn memory(p: &Program, file: &[u8]) -> Result<Memory> {
    let needed = p.input_base as usize + file.len();
    let len_words = p.memory_len / 8;
    if needed as u64 > len_words {
        return Err(Error::Usage(format!(
            "the input file ({} bytes) does not fit at address {} in memory of {len_words} words; raise `.memory`",
            file.len(),
            p.input_base,
        )));
    }
    // `.memory` may ask for up to 1 GiB: `Memory::zeroed` asks for it
    // fallibly, so a host that cannot give it gets an error instead of an abort.
    let words = p.memory_words as usize;
    let mut mem = Memory::zeroed(words).ok_or(Error::NoMemory {
        words: p.memory_words,
    })?;
    mem.set_initial_length(p.memory_len);
    for seg in &p.data {
        let at = seg.addr as usize;
        mem[at..at + seg.words.len()].copy_from_slice(&seg.words);
    }
    let base = p.input_base as usize;
    for (slot, &b) in mem[base..].iter_mut().zip(file) {
        *slot = b as i64;
    }
    Ok(mem)
}

/// A usage error unless `f` takes `given` arguments.
fn check_arity(f: &crate::program::Function, given: usize) -> Result<()> {
    if given == f.params as usize {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "`{}` takes {} argument{}, {} given",
        f.name,
        f.params,
        if f.params == 1 { "" } else { "s" },
        given
    )))
}

/// Runs one call of `p` on `mem` (the program's memory, kept by the
/// caller between calls: see [`memory`]), streaming tuples into `host` and
/// running the compiled code it supplies, as [`run_with_host`] runs the
/// entry function, with `host_fns` answering its `hcall`s. A call ends at
/// the function's `ret` or at a `halt`.
///
/// Returns the outcome and, apart from it (so a trap does not lose it),
/// the instructions executed: counted with [`Config::fuel`] or
/// [`Config::count_steps`], 0 otherwise.
///
/// The memory's current length is part of it: an `mgrow` in one call is
/// seen by the next.
///
/// Whatever the call wrote to `out` has been flushed when it returns, trap
/// or not: every write to `out` is followed by a flush of it (a failed
/// flush is the call's error unless it failed otherwise), so the caller
/// has nothing to flush.
///
/// # Panics
///
/// If `mem`'s capacity is not [`Program::memory_words`] (take it from
/// [`memory`]) or `call.func` is not a function of `p`.
pub fn call_with_host<S: Host>(
    p: &Program,
    mem: &mut Memory,
    call: Call<'_>,
    out: &mut dyn Write,
    sink: &mut S,
    host_fns: &mut dyn HostFunctions,
    cfg: &Config,
) -> (Result<Outcome>, u64) {
    assert_eq!(
        mem.capacity_words() as u64,
        p.memory_words,
        "memory is `.memory` long"
    );
    if let Err(e) = check_arity(&p.functions[call.func as usize], call.args.len()) {
        return (Err(e), 0);
    }
    let fns = fn_views(p);
    let mut m = Machine::new(p, &fns, call, mem, out, host_fns);
    let mut buf = crate::tuple::spare_buffer();
    let mut em = Emitter::new(sink, &mut buf, cfg.kinds);
    em.count = cfg.count_steps;
    let counting = cfg.fuel.is_some() || cfg.count_steps;
    let fuel = cfg.fuel.unwrap_or(u64::MAX);
    m.fuel_limit = fuel;
    // A run that emits nothing (no sink, or every kind masked off) uses a
    // loop compiled without any emission code, keeping only the sink's JIT
    // hooks.
    // The usual profiling run emits every kind: its loop knows that at
    // compile time, so no per-tuple flag is kept in a register or loaded.
    let kinds = if !S::ACTIVE {
        EMIT_NONE
    } else {
        match (em.value, em.edge, em.call) {
            (false, false, false) => EMIT_NONE,
            (true, true, true) => EMIT_ALL,
            _ => EMIT_SOME,
        }
    };
    let result = m
        .exec_as(&mut em, counting, kinds, fuel, cfg.max_depth, 0)
        .map(Ended::value);
    em.flush();
    let counts = em.counts;
    crate::tuple::recycle_buffer(buf);
    let flushed = m.flush_output();
    let steps = if counting { m.steps } else { 0 };
    let outcome = result.and_then(|value| {
        flushed?;
        Ok(Outcome {
            value,
            steps: counting.then_some(m.steps),
            tuples: counts,
        })
    });
    m.recycle();
    (outcome, steps)
}

impl Machine<'_, '_, '_> {
    /// [`exec`](Self::exec) compiled for `counting` (fuel or step
    /// counting) and `emit` (one of the `EMIT_*` choices).
    pub(super) fn exec_as<S: Host>(
        &mut self,
        em: &mut Emitter<'_, '_, S>,
        counting: bool,
        emit: u8,
        fuel: u64,
        max_depth: usize,
        depth_base: usize,
    ) -> Result<Ended> {
        let (d, b) = (max_depth, depth_base);
        match (counting, emit) {
            (true, EMIT_ALL) => self.exec::<S, true, EMIT_ALL>(em, fuel, d, b),
            (true, EMIT_SOME) => self.exec::<S, true, EMIT_SOME>(em, fuel, d, b),
            (true, _) => self.exec::<S, true, EMIT_NONE>(em, fuel, d, b),
            (false, EMIT_ALL) => self.exec::<S, false, EMIT_ALL>(em, fuel, d, b),
            (false, EMIT_SOME) => self.exec::<S, false, EMIT_SOME>(em, fuel, d, b),
            (false, _) => self.exec::<S, false, EMIT_NONE>(em, fuel, d, b),
        }
    }
}

//! toyvm: a profile-driven dynamic optimizer runtime.
//!
//! A bytecode VM ([`toyvm_vm`]) streams value, edge and call tuples into a
//! model of a hardware profiler ([`toyvm_profiler`]); at every interval end
//! the model's hot candidates drive superblock formation and value
//! specialization compiled with Cranelift ([`toyvm_optimizer`]), with
//! guarded side exits back to the interpreter. [`Runtime`] ties them
//! together:
//!
//! ```
//! use toyvm::Runtime;
//! use toyvm::vm::{asm, interp::Input};
//!
//! let program = asm::assemble(
//!     ".func main(n)\n li r1, 0\n li r2, 1\n top: add r1, r1, r2\n loop r2, n, top\n ret r1\n.end",
//! )?;
//! let report_program = program.clone();
//! let report = Runtime::builder(program)
//!     .profile_str("multihash:interval=1000")?
//!     .build()
//!     .run(Input { args: &[100_000], file: &[] }, &mut std::io::sink())?;
//! assert_eq!(report.outcome.value, 5_000_050_000);
//! // The loop became hot in the first interval and ran as compiled code.
//! assert!(report.stats.jit.unwrap().compiles >= 1);
//!
//! // Embedded: the same program as a module, its function looked up once
//! // (checked to take one argument) and called as often as the host likes.
//! use toyvm::engine::{Engine, Instance, Module};
//! let engine = Engine::builder().profile_str("multihash:interval=1000")?.build();
//! let module = Module::new(&engine, report_program)?;
//! let mut instance = Instance::new(&module)?;
//! let sum = instance.get_typed_func::<1>("main")?;
//! assert_eq!(sum.call(&mut instance, [100_000])?, 5_000_050_000);
//! assert_eq!(sum.call(&mut instance, [10])?, 55);
//! # Ok::<(), toyvm::Error>(())
//! ```
//!
//! [`record::RecordSink`] writes a run's tuple stream as a trace for
//! `toyvm profile`.
//!
//! Use this crate to run toyvm programs with the profile-driven JIT from
//! Rust: [`Runtime`] for one whole run from `main`, [`engine`] to embed the
//! VM in a host (functions called by name, host functions, limits, code
//! shared between instances), [`feedback`] to drive your own VM's JIT with
//! toyvm's profiler models and policy. It carries no tool: the `toyvm`
//! command's research tools (compare, reproduce, verify, synth, the fuzz
//! generator) are the `toyvm-lab` crate, the command line `toyvm-cli`.
//! To profile your own VM's events, use [`toyvm_profiler`] alone.
#![deny(missing_docs)]

pub mod engine;
pub mod feedback;
pub mod record;
pub mod run;
pub mod runtime;

pub use run::{RunReport, Runtime, RuntimeBuilder, Stats, TupleCounts};

/// Everything that can go wrong in the runtime.
///
/// `#[non_exhaustive]`, as the error enums of [`toyvm_vm`],
/// [`toyvm_profiler`] and [`toyvm_optimizer`] are: a new kind of failure
/// is not a breaking change, so a `match` outside the crate needs a
/// wildcard arm:
///
/// ```compile_fail
/// fn class(e: &toyvm::Error) -> u8 {
///     use toyvm::Error as E;
///     match e {
///         E::Vm(_) | E::Profiler(_) | E::Jit(_) | E::Io { .. } | E::Thread { .. } => 1,
///         E::MemoryLimit { .. } | E::Link(_) | E::NoSuchFunction(_) | E::Arity { .. } => 2,
///         E::MemoryAccess { .. } | E::Usage(_) | E::Model(_) => 3,
///     }
/// }
/// ```
///
/// ```compile_fail
/// fn class(e: &toyvm::vm::Error) -> u8 {
///     use toyvm::vm::Error as E;
///     match e {
///         E::Decode { .. } | E::Asm { .. } | E::Verify { .. } | E::Trap(_) => 1,
///         E::Usage(_) | E::NoMemory { .. } | E::Output(_) => 2,
///     }
/// }
/// ```
///
/// ```compile_fail
/// fn class(e: &toyvm::profiler::Error) -> u8 {
///     use toyvm::profiler::Error as E;
///     match e {
///         E::Spec { .. } | E::TraceText { .. } | E::TraceBinary { .. } | E::Import { .. } => 1,
///         E::UnsupportedKind { .. } | E::Io(_) | E::TooManyModels { .. } => 2,
///     }
/// }
/// ```
///
/// ```compile_fail
/// fn class(e: &toyvm::optimizer::Error) -> u8 {
///     use toyvm::optimizer::Error as E;
///     match e {
///         E::NoSuchFunction { .. } | E::Parse { .. } | E::InvalidRegion { .. } => 1,
///         E::Host(_) | E::Codegen { .. } => 2,
///     }
/// }
/// ```
///
/// With the wildcard arm, the same `match` compiles:
///
/// ```
/// fn class(e: &toyvm::Error) -> u8 {
///     use toyvm::Error as E;
///     match e {
///         E::Vm(_) | E::Profiler(_) | E::Jit(_) => 1,
///         E::Usage(_) | E::NoSuchFunction(_) | E::Arity { .. } => 2,
///         _ => 3,
///     }
/// }
/// assert_eq!(class(&toyvm::Error::Usage("x".into())), 2);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Loading, verifying or running the program failed (a trap included:
    /// `Vm(toyvm_vm::Error::Trap(_))`).
    #[error(transparent)]
    Vm(#[from] toyvm_vm::Error),
    /// A profiler spec, trace or model failed.
    #[error(transparent)]
    Profiler(#[from] toyvm_profiler::Error),
    /// The JIT could not be set up (Cranelift on this host, or the
    /// program's native functions).
    #[error("JIT: {0}")]
    Jit(#[from] toyvm_optimizer::Error),
    /// A file the run writes (e.g. a `--dump-clif` directory) could not be
    /// created.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A thread of the run (the run's own, the model's, the compiler's)
    /// could not be started.
    #[error("cannot start the {what}'s thread: {source}")]
    Thread {
        /// Whose thread: `run`, `profiler model`, `compiler`, `instance`.
        what: &'static str,
        /// Why the system refused it.
        source: std::io::Error,
    },
    /// The program asks for more memory (`.memory`) than the configured
    /// limit allows (see [`runtime::Limits::max_memory_words`]).
    #[error(
        "memory limit: the program asks for {words} words of memory (`.memory`), over the limit of {limit} words"
    )]
    MemoryLimit {
        /// The words the program asks for.
        words: u64,
        /// The limit.
        limit: u64,
    },
    /// The module imports a host function the host does not provide, or
    /// provides with another number of arguments (or a run without a host,
    /// such as `toyvm run`, was given a program with imports).
    #[error("link: {0}")]
    Link(String),
    /// The host named a function the module does not have.
    #[error("no function `{0}` in the module")]
    NoSuchFunction(String),
    /// The host called a function with another number of arguments than
    /// it takes, or looked it up as taking another number
    /// ([`engine::Module::get_typed_func`]); nothing ran.
    #[error(
        "`{function}` takes {expected} argument{}, {given} given",
        if *.expected == 1 { "" } else { "s" }
    )]
    Arity {
        /// The function's name.
        function: String,
        /// The arguments it takes.
        expected: usize,
        /// The arguments given.
        given: usize,
    },
    /// The host read or wrote guest memory outside it.
    #[error(
        "memory access of {len} words at address {addr} is out of bounds (memory has {size} words)"
    )]
    MemoryAccess {
        /// The first word address.
        addr: u64,
        /// The words asked for.
        len: usize,
        /// The memory's size in words.
        size: u64,
    },
    /// Bad arguments or configuration given by the caller.
    #[error("{0}")]
    Usage(String),
    /// The profiler model's thread panicked (a bug in a model, reported
    /// rather than lost).
    #[error("the profiler model's thread panicked: {0}")]
    Model(String),
}

impl Error {
    /// The failure of the host function whose trap this is (a
    /// [`engine::HostError`], the embedder's own error in it when the host
    /// gave one: [`engine::HostError::downcast_ref`]); `None` for any other
    /// error.
    ///
    /// ```
    /// use toyvm::engine::{Engine, HostError, Imports, Instance, Module};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Refused(i64);
    /// impl std::fmt::Display for Refused {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         write!(f, "refused {}", self.0)
    ///     }
    /// }
    /// impl std::error::Error for Refused {}
    ///
    /// let src = ".import check 1\n.func f(n)\n hcall r1, check, n, 1\n ret r1\n.end\n.entry f";
    /// let module = Module::from_bytes(&Engine::default(), src.as_bytes())?;
    /// let mut imports = Imports::new();
    /// imports.define("check", 1, |args, _| match args[0] {
    ///     n if n < 0 => Err(HostError::new(Refused(n))),
    ///     n => Ok(n),
    /// });
    /// let mut instance = Instance::with_imports(&module, imports, &[])?;
    /// let e = instance.call("f", &[-3]).unwrap_err();
    /// assert!(e.to_string().ends_with("host function `check` failed: refused -3"));
    /// let host = e.host_error().expect("the host's failure");
    /// assert_eq!(host.downcast_ref::<Refused>(), Some(&Refused(-3)));
    /// # Ok::<(), toyvm::Error>(())
    /// ```
    pub fn host_error(&self) -> Option<&engine::HostError> {
        match self {
            Error::Vm(toyvm_vm::Error::Trap(toyvm_vm::interp::Trap {
                kind: toyvm_vm::interp::TrapKind::Host { message, .. },
                ..
            })) => Some(message),
            _ => None,
        }
    }
}

/// The runtime's result, with [`Error`] by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use toyvm_optimizer as optimizer;
pub use toyvm_profiler as profiler;
pub use toyvm_vm as vm;

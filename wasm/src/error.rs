//! The one error type of the front-end.

/// Why a module could not be translated. Messages name the WebAssembly
/// function (index and name, where the module has one) and the byte offset
/// in the module where the problem is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a valid WebAssembly module (or use a proposal the
    /// front-end does not enable: SIMD, threads, reference types, ...).
    #[error("invalid or unsupported WebAssembly at offset {offset:#x}: {message}")]
    Invalid {
        /// Byte offset in the module.
        offset: usize,
        /// What the validator said.
        message: String,
    },
    /// A function body is invalid, or uses a proposal the front-end does
    /// not enable.
    #[error("function {index} (`{name}`) at code offset {offset:#x}: {message}")]
    InvalidFunction {
        /// The function's WebAssembly index (imports count first).
        index: u32,
        /// Its name from the name section, or `f<index>`.
        name: String,
        /// Byte offset in the module.
        offset: usize,
        /// What the validator said.
        message: String,
    },
    /// A valid module uses something the front-end does not translate.
    #[error("unsupported at offset {offset:#x}: {what}")]
    Unsupported {
        /// Byte offset in the module (0 when it is the module as a whole).
        offset: usize,
        /// What is not supported.
        what: String,
    },
    /// A function needs more of something than toyvm offers (registers,
    /// instructions, jump tables).
    #[error("function {index} (`{name}`) at code offset {offset:#x}: {what}")]
    FunctionTooLarge {
        /// The function's WebAssembly index.
        index: u32,
        /// Its name.
        name: String,
        /// Byte offset in the module where the limit was passed.
        offset: usize,
        /// Which limit.
        what: String,
    },
    /// The module is larger than a limit of the front-end or of toyvm
    /// (functions, memory, table, globals).
    #[error("module too large: {what}")]
    Limit {
        /// Which limit, with the figures.
        what: String,
    },
    /// An import no host of the front-end provides (WASI functions other
    /// than the supported ones, imported memories, tables and globals).
    #[error("link error: import `{module}`.`{field}` is not provided: {why}")]
    Link {
        /// The import's module name.
        module: String,
        /// The import's field name.
        field: String,
        /// Why (unknown function, wrong signature, kind not supported).
        why: String,
    },
    /// The entry asked for by [`Options::entry`](crate::Options::entry)
    /// is missing or has a type the entry cannot call.
    #[error("entry: {0}")]
    Entry(String),
    /// The translated program failed toyvm's verifier: a bug in the
    /// front-end, reported rather than hidden.
    #[error("the translated program does not verify (a front-end bug): {0}")]
    Verify(#[from] toyvm_vm::Error),
}

/// The front-end's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
